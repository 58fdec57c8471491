"""Scheduler extenders over HTTP (upstream v1.28: ``pkg/scheduler/extender.go`` HTTPExtender,
``pkg/scheduler/framework/extender.go`` the Extender interface, the wire types of
``k8s.io/kube-scheduler/extender/v1/types.go``, and where the scheduler calls them:
``schedule_one.go`` findNodesThatPassExtenders, prioritizeNodes and extendersBinding,
``framework/preemption/preemption.go`` callExtenders). See docs/extenders.md.

Three parts:

- the wire format: requests encoded as Go's ``encoding/json`` writes the v1 types (struct
  field names as written, no tags: ``{"Pod":…,"Nodes":…,"NodeNames":…}``; maps with sorted
  keys; ``<``, ``>``, ``&`` escaped), replies decoded as Go's decoder reads them (field names
  matched case-insensitively, ``null`` leaving the zero value, a value of the wrong JSON type
  failing the whole call);
- the transports: every HTTP exchange goes through an object with ``call(seq, request) ->
  ExtenderReply``. ``HTTPTransport`` posts with ``http.client`` (no proxies, no redirects) to
  the urlPrefixes the process's ``SCHEDULER_EXTENDERS`` allows, bounded by the extender's
  ``httpTimeout``, timing each call with the clock its caller passes; ``RecordingTransport``
  keeps every reply (body, error or timeout, latency) in a JSON-serialisable list and answers
  the calls it already holds from that list; ``ReplayTransport`` answers from such a list only
  and never calls out. The engine never reads a clock: the latency in the trace is the one
  the transport reports (recorded, then replayed), so a replay's trace is byte-identical;
- the scheduler's side: ``Extender`` (HTTPExtender: IsInterested, Filter, Prioritize,
  ProcessPreemption, Bind) and the four places the scheduling and binding cycles call them,
  each call traced as an ``ExtenderCall`` event plus, for Filter, Prioritize and Bind,
  ``PluginResult`` events whose ``plugin`` is the extender's name (its urlPrefix) and which
  carry ``extender: true`` (docs/state-and-trace.md).
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import urllib.parse

from .framework.interface import Code, Status

ENV_VAR = "SCHEDULER_EXTENDERS"
MAX_EXTENDER_PRIORITY = 10          # extenderv1.MaxExtenderPriority
MAX_NODE_SCORE = 100                # framework.MaxNodeScore
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
RECORD_KIND = "ExtenderRecord"


def normalize_prefix(url: str) -> str:
    """A urlPrefix as the allowlist compares it: without trailing slashes (extender.go's send
    trims them too before appending ``/verb``)."""
    return url.strip().rstrip("/")


def allowed_prefixes(environ=None) -> set:
    """The urlPrefixes this process may call: ``SCHEDULER_EXTENDERS``, comma-separated."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR, "") or ""
    return {normalize_prefix(p) for p in raw.split(",") if p.strip()}


# ============================================================================ Go's encoding/json

def go_json(obj) -> bytes:
    """``json.Marshal`` as Go writes it: compact, UTF-8, HTML characters escaped. (A NaN or an
    infinity, which no Kubernetes object can hold but a manifest's unknown field may, is
    written as the string YAML spells it.)"""
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_go_value)
    except ValueError:
        text = json.dumps(_finite(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          default=_go_value)
    text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return text.encode("utf-8")


def _go_value(v):
    """What YAML reads but JSON has no type for: a timestamp as metav1.Time writes it (RFC 3339,
    UTC, whole seconds), a date as written, bytes in base64 (Go's []byte), anything else as text."""
    import base64
    import datetime as _dt
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    return str(v)


def _finite(v):
    if isinstance(v, float) and v != v:
        return ".nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return ".inf" if v > 0 else "-.inf"
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def pod_object(pod) -> dict:
    """The v1.Pod as the API (the informer) would hand it to the scheduler: the manifest the
    engine holds, with what the API server set (uid, namespace, the resolved priority, the
    node it is bound to, its nominated node). Like objects from an informer it carries no
    apiVersion/kind."""
    m = dict(pod.manifest) if isinstance(pod.manifest, dict) else {}      # what changes is copied
    m.pop("apiVersion", None)
    m.pop("kind", None)
    md = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
    md = dict(md, name=pod.name, namespace=pod.namespace)
    if pod.uid:
        md["uid"] = pod.uid
    m["metadata"] = md
    spec = dict(m.get("spec") if isinstance(m.get("spec"), dict) else {})
    spec["priority"] = pod.priority
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    m["spec"] = spec
    if pod.nominated_node_name:
        status = dict(m.get("status") if isinstance(m.get("status"), dict) else {})
        status["nominatedNodeName"] = pod.nominated_node_name
        m["status"] = status
    return m


def node_object(node) -> dict:
    """The v1.Node from the manifest the engine holds (no apiVersion/kind)."""
    m = dict(node.manifest) if isinstance(node.manifest, dict) else {}    # what changes is copied
    m.pop("apiVersion", None)
    m.pop("kind", None)
    md = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
    m["metadata"] = dict(md, name=node.name)
    return m


class ExtenderCallError(Exception):
    """A call that failed: the message is the error kube-scheduler would report."""


_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _json_type(v) -> str:
    return _JSON_TYPE.get(type(v), "value")


def _field(obj: dict, name: str):
    """A struct field as Go's decoder finds it: the key equal to the field's name, or one
    equal under case folding; with several, the last in the document wins."""
    if name in obj and not any(k != name and k.lower() == name.lower() for k in obj):
        return obj[name]
    found = None
    low = name.lower()
    for k, v in obj.items():
        if k.lower() == low:
            found = (v,)
    return found[0] if found else None


def _bad(v, where: str, gotype: str):
    shown = _json_type(v)
    if shown == "number":
        shown = f"number {json.dumps(v)}"
    return ExtenderCallError(f"json: cannot unmarshal {shown} into Go struct field {where} of type {gotype}")


def _string(v, where):
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _bad(v, where, "string")
    return v


def _int64(v, where):
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**63:
        raise _bad(v, where, "int64")
    return v


def _object(v, where, gotype):
    if v is not None and not isinstance(v, dict):
        raise _bad(v, where, gotype)
    return v


def _list(v, where, gotype):
    if v is not None and not isinstance(v, list):
        raise _bad(v, where, gotype)
    return v


def _string_map(v, where):
    if _object(v, where, "v1.FailedNodesMap") is None:
        return {}
    return {k: _string(x, where) for k, x in v.items()}


def _top(body: str, gotype: str):
    """The reply's top-level JSON value (Go's json.Decoder.Decode: the first value; an empty
    body is ``EOF``; ``null`` leaves the zero value)."""
    if not body.strip():
        raise ExtenderCallError("EOF")
    try:
        value, _end = json.JSONDecoder(parse_constant=_no_constant).raw_decode(body.lstrip())
    except ValueError as e:
        raise ExtenderCallError(f"invalid character in the extender's JSON reply: {e}") from None
    if value is not None and not isinstance(value, dict if gotype != "v1.HostPriorityList" else list):
        raise ExtenderCallError(f"json: cannot unmarshal {_json_type(value)} into Go value of type {gotype}")
    return value


def _no_constant(name):
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def decode_filter_result(body: str) -> dict:
    """ExtenderFilterResult: ``Nodes`` (a v1.NodeList: its ``items``' names, or None),
    ``NodeNames`` (or None), ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``."""
    v = _top(body, "v1.ExtenderFilterResult") or {}
    out = {"Nodes": None, "NodeNames": None}
    nodes = _object(_field(v, "Nodes"), "ExtenderFilterResult.Nodes", "v1.NodeList")
    if nodes is not None:
        items = _list(_field(nodes, "items"), "ExtenderFilterResult.Nodes.items", "[]v1.Node") or []
        names = []
        for it in items:
            it = _object(it, "ExtenderFilterResult.Nodes.items", "v1.Node") or {}
            md = _object(_field(it, "metadata"), "ExtenderFilterResult.Nodes.items.metadata", "v1.ObjectMeta") or {}
            names.append(_string(_field(md, "name"), "ExtenderFilterResult.Nodes.items.metadata.name"))
        out["Nodes"] = names
    nn = _list(_field(v, "NodeNames"), "ExtenderFilterResult.NodeNames", "[]string")
    if nn is not None:
        out["NodeNames"] = [_string(x, "ExtenderFilterResult.NodeNames") for x in nn]
    out["FailedNodes"] = _string_map(_field(v, "FailedNodes"), "ExtenderFilterResult.FailedNodes")
    out["FailedAndUnresolvableNodes"] = _string_map(_field(v, "FailedAndUnresolvableNodes"),
                                                    "ExtenderFilterResult.FailedAndUnresolvableNodes")
    out["Error"] = _string(_field(v, "Error"), "ExtenderFilterResult.Error")
    return out


def decode_host_priority_list(body: str) -> list:
    """HostPriorityList: ``[(Host, Score)]``; Score must be an integer (an int64)."""
    v = _top(body, "v1.HostPriorityList") or []
    out = []
    for hp in v:
        hp = _object(hp, "HostPriorityList", "v1.HostPriority") or {}
        out.append((_string(_field(hp, "Host"), "HostPriority.Host"),
                    _int64(_field(hp, "Score"), "HostPriority.Score")))
    return out


def decode_preemption_result(body: str) -> dict:
    """ExtenderPreemptionResult: ``NodeNameToMetaVictims``: node -> ([UID], NumPDBViolations)
    or None (a null entry)."""
    v = _top(body, "v1.ExtenderPreemptionResult") or {}
    m = _object(_field(v, "NodeNameToMetaVictims"), "ExtenderPreemptionResult.NodeNameToMetaVictims",
                "map[string]*v1.MetaVictims") or {}
    out = {}
    for node, mv in m.items():
        mv = _object(mv, "ExtenderPreemptionResult.NodeNameToMetaVictims", "v1.MetaVictims")
        if mv is None:
            out[node] = None
            continue
        pods = _list(_field(mv, "Pods"), "MetaVictims.Pods", "[]*v1.MetaPod") or []
        uids = [_string(_field(_object(p, "MetaVictims.Pods", "v1.MetaPod") or {}, "UID"), "MetaPod.UID")
                for p in pods]
        out[node] = (uids, _int64(_field(mv, "NumPDBViolations"), "MetaVictims.NumPDBViolations"))
    return out


def decode_binding_result(body: str) -> str:
    """ExtenderBindingResult: its ``Error``."""
    v = _top(body, "v1.ExtenderBindingResult") or {}
    return _string(_field(v, "Error"), "ExtenderBindingResult.Error")


# ============================================================================ transports

class ExtenderRequest:
    """One POST to an extender: ``extender`` (its urlPrefix, as configured), ``verb`` (filter,
    prioritize, preempt or bind: which call), ``url`` (urlPrefix + "/" + the configured verb),
    ``body`` (the JSON bytes), ``timeout`` (seconds: its httpTimeout)."""
    __slots__ = ("extender", "verb", "url", "body", "timeout")

    def __init__(self, extender, verb, url, body, timeout):
        self.extender = extender
        self.verb = verb
        self.url = url
        self.body = body
        self.timeout = timeout

    def digest(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


class ExtenderReply:
    """What came back: ``status`` (the HTTP status, or None when nothing came back), ``body``
    (the reply's text), ``error`` (why nothing usable came back: refused connection, timeout,
    URL not allowed…), ``timed_out``, ``latency`` (seconds, by the transport's clock)."""
    __slots__ = ("status", "body", "error", "timed_out", "latency")

    def __init__(self, status=None, body=None, error=None, timed_out=False, latency=0.0):
        self.status = status
        self.body = body
        self.error = error
        self.timed_out = timed_out
        self.latency = latency


class ExtenderReplayError(Exception):
    """A replay that does not match its record (a call the record does not hold, or holds for
    another extender, verb or request)."""


def record_entry(seq: int, req: ExtenderRequest, reply: ExtenderReply) -> dict:
    """One call of a record (a JSON-serialisable dict)."""
    return {"call": seq, "extender": req.extender, "verb": req.verb, "url": req.url,
            "request": req.digest(), "status": reply.status, "body": reply.body, "error": reply.error,
            "timedOut": bool(reply.timed_out), "latency": reply.latency}


def reply_from_entry(e: dict) -> ExtenderReply:
    return ExtenderReply(e.get("status"), e.get("body"), e.get("error"), bool(e.get("timedOut")),
                         e.get("latency") or 0.0)


def _mismatch(seq: int, e: dict, req: ExtenderRequest):
    """Why the recorded call ``e`` is not the call ``req`` made now, or None."""
    for key, now in (("extender", req.extender), ("verb", req.verb), ("url", req.url), ("request", req.digest())):
        if e.get(key) != now:
            what = "request body" if key == "request" else key
            return (f"extender call {seq} does not match the record: its {what} is {now!r}, the record's "
                    f"{e.get(key)!r} (the scenario or the run differs from the recorded one)")
    return None


class HTTPTransport:
    """Posts to extenders over HTTP (``http.client``: no proxies from the environment, no
    redirects followed), only to the urlPrefixes ``allowed`` (default: ``SCHEDULER_EXTENDERS``
    read when the transport is made). A call takes at most its request's timeout: connecting,
    sending and reading the reply share that deadline (as Go's http.Client.Timeout). ``clock``
    (e.g. ``time.perf_counter``, passed by the caller: the engine never reads a clock) times
    each call."""

    def __init__(self, clock, allowed=None):
        self.clock = clock
        self.allowed = set(allowed) if allowed is not None else allowed_prefixes()
        self.allowed = {normalize_prefix(a) for a in self.allowed}

    def call(self, seq: int, req: ExtenderRequest) -> ExtenderReply:
        prefix = normalize_prefix(req.extender)
        if prefix not in self.allowed or not req.url.startswith(prefix + "/"):
            return ExtenderReply(error=f'Post "{req.url}": refused: {req.extender} is not in {ENV_VAR}, '
                                       f'the extenders this process may call')
        try:
            parts = urllib.parse.urlsplit(req.url)
            port = parts.port or 80
        except ValueError as e:
            return ExtenderReply(error=f'Post "{req.url}": {e}')
        if parts.scheme != "http" or not parts.hostname:
            return ExtenderReply(error=f'Post "{req.url}": unsupported URL (only http:// is called)')
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        start = self.clock()
        deadline = start + req.timeout
        conn = None
        try:
            conn = http.client.HTTPConnection(parts.hostname, port, timeout=max(req.timeout, 0.001))
            conn.connect()
            sock = conn.sock        # kept: the connection lets go of it once the reply is read
            sock.settimeout(max(deadline - self.clock(), 0.001))
            conn.request("POST", path, body=req.body, headers={"Content-Type": "application/json"})
            sock.settimeout(max(deadline - self.clock(), 0.001))
            resp = conn.getresponse()
            chunks, size = [], 0
            while True:
                left = deadline - self.clock()
                if left <= 0:
                    raise socket.timeout("timed out")
                sock.settimeout(left)
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise _TooLarge()
                chunks.append(chunk)
            body = b"".join(chunks).decode("utf-8", errors="replace")
            return ExtenderReply(resp.status, body, None, False, self._since(start))
        except (socket.timeout, TimeoutError):
            return ExtenderReply(error=f'Post "{req.url}": context deadline exceeded (Client.Timeout '
                                       f'exceeded while awaiting headers)', timed_out=True,
                                 latency=self._since(start))
        except _TooLarge:
            return ExtenderReply(error=f'Post "{req.url}": the reply is larger than {MAX_RESPONSE_BYTES} bytes',
                                 latency=self._since(start))
        except ConnectionRefusedError:
            return ExtenderReply(error=f'Post "{req.url}": dial tcp {parts.hostname}:{port}: '
                                       f'connect: connection refused', latency=self._since(start))
        except (OSError, http.client.HTTPException, ValueError) as e:
            reason = (e.strerror if isinstance(e, OSError) and e.strerror else str(e)) or type(e).__name__
            return ExtenderReply(error=f'Post "{req.url}": {reason}', latency=self._since(start))
        finally:
            if conn is not None:
                conn.close()

    def _since(self, start) -> float:
        return round(max(self.clock() - start, 0.0), 6)


class _TooLarge(Exception):
    pass


class RecordingTransport:
    """Records every call of the run (``records``: a JSON-serialisable list, one dict per call,
    ``records[i]["call"] == i``). Given the records of an earlier run (a web session's, after
    time travel or a restart), it answers the calls they hold from them and never calls out
    for those; the first call that differs from its record (a new branch) drops the record
    from there on and calls ``inner``."""

    def __init__(self, inner, records=None):
        self.inner = inner
        self.records = list(records or [])

    def call(self, seq: int, req: ExtenderRequest) -> ExtenderReply:
        if seq < len(self.records):
            e = self.records[seq]
            if _mismatch(seq, e, req) is None:
                return reply_from_entry(e)
            del self.records[seq:]
        elif seq > len(self.records):
            raise ExtenderReplayError(f"extender call {seq} comes after the {len(self.records)} calls the "
                                      f"record holds (a gap)")
        reply = self.inner.call(seq, req)
        self.records.append(record_entry(seq, req, reply))
        return reply

    def truncate(self, n: int) -> None:
        """Forget the calls from ``n`` on (a branch of the run replaced them)."""
        del self.records[n:]


class ReplayTransport:
    """Answers every call from a record and never calls out. A call the record does not hold,
    or holds for another extender, verb, URL or request body, raises ExtenderReplayError."""

    def __init__(self, records):
        self.records = list(records)

    def call(self, seq: int, req: ExtenderRequest) -> ExtenderReply:
        if seq >= len(self.records):
            raise ExtenderReplayError(f"the record holds {len(self.records)} extender calls; call {seq} "
                                      f"({req.verb} to {req.url}) is not in it")
        e = self.records[seq]
        why = _mismatch(seq, e, req)
        if why is not None:
            raise ExtenderReplayError(why)
        return reply_from_entry(e)


class NoTransport:
    """The engine's transport when its caller gave none: every call fails (and says why)."""

    def call(self, seq: int, req: ExtenderRequest) -> ExtenderReply:
        return ExtenderReply(error=f'Post "{req.url}": no extender transport was given to the engine '
                                   f'(the CLI and the server give one; see docs/extenders.md)')


def dump_record(records: list) -> str:
    """A record file (``--extender-record``): JSON."""
    return json.dumps({"kind": RECORD_KIND, "calls": records}, indent=1, ensure_ascii=False) + "\n"


def load_record(text: str) -> list:
    """The calls of a record file; ValueError if it is not one."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("kind") != RECORD_KIND or not isinstance(data.get("calls"), list):
        raise ValueError(f"not an extender record (a JSON object with kind: {RECORD_KIND} and calls)")
    for i, e in enumerate(data["calls"]):
        if not isinstance(e, dict) or e.get("call") != i:
            raise ValueError(f"calls[{i}]: not the record of extender call {i}")
        if e.get("body") is not None and not isinstance(e.get("body"), str) or \
                e.get("status") is not None and (isinstance(e.get("status"), bool) or not isinstance(e.get("status"), int)) or \
                not isinstance(e.get("latency", 0), (int, float)) or isinstance(e.get("latency", 0), bool):
            raise ValueError(f"calls[{i}]: status, body or latency has the wrong type")
    return data["calls"]


# ============================================================================ the extenders

class Extender:
    """HTTPExtender (extender.go) for one configured extender. ``call`` is the engine's
    ``_extender_call`` (numbering the calls and handing them to its transport)."""

    def __init__(self, cfg, call):
        self.cfg = cfg
        self.name = cfg.url_prefix          # Name(): the extenderURL
        self.managed = frozenset(n for n, _ in cfg.managed_resources)
        self._call = call

    def is_ignorable(self) -> bool:
        return self.cfg.ignorable

    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    def is_interested(self, pod) -> bool:
        """IsInterested: no managed resources, or a container or init container of the pod
        names one of them in its requests or limits."""
        if not self.managed:
            return True
        spec = pod.manifest.get("spec") if isinstance(pod.manifest, dict) else None
        if not isinstance(spec, dict):
            return False
        for which in ("containers", "initContainers"):
            for c in spec.get(which) or ():
                res = c.get("resources") if isinstance(c, dict) else None
                if not isinstance(res, dict):
                    continue
                for part in ("requests", "limits"):
                    names = res.get(part)
                    if isinstance(names, dict) and any(n in self.managed for n in names):
                        return True
        return False

    def send(self, verb_kind: str, verb: str, args) -> tuple:
        """send: POST ``args`` to urlPrefix/verb. Returns (ExtenderReply, request)."""
        url = self.cfg.url_prefix.rstrip("/") + "/" + verb
        req = ExtenderRequest(self.name, verb_kind, url, go_json(args), self.cfg.http_timeout / 1_000_000)
        return self._call(req), req

    @staticmethod
    def reply_body(reply: ExtenderReply, verb: str, url: str) -> str:
        """The body of a 200 reply, or ExtenderCallError as send reports it."""
        if reply.error is not None:
            raise ExtenderCallError(reply.error)
        if reply.status != 200:
            raise ExtenderCallError(f"failed {verb} with extender at URL {url}, code {reply.status}")
        return reply.body or ""

    def node_args(self, pod, nodes) -> dict:
        """ExtenderArgs: the pod, and the nodes (a v1.NodeList) or, nodeCacheCapable, their names."""
        if self.cfg.node_cache_capable:
            return {"Pod": pod_object(pod), "Nodes": None, "NodeNames": [ni.name for ni in nodes]}
        return {"Pod": pod_object(pod),
                "Nodes": {"metadata": {}, "items": [node_object(ni.node) for ni in nodes] if nodes else None},
                "NodeNames": None}


def _emit_call(trace, ext, pod_key, cycle, seq, verb, url, nodes, reply, error, ignored, results, **more):
    if trace.enabled:
        trace.emit("ExtenderCall", pod=pod_key, cycle=cycle, call=seq, extender=ext.name, verb=verb, url=url,
                   nodes=nodes, status=reply.status if reply is not None else None, error=error,
                   timedOut=bool(reply.timed_out) if reply is not None else False, ignored=ignored,
                   latency=reply.latency if reply is not None else 0.0, results=results, **more)


def find_nodes_that_pass_extenders(loop, fwk, pod, feasible, statuses, nominated=False):
    """findNodesThatPassExtenders (schedule_one.go): the interested extenders in order, each
    given the nodes the previous ones kept; failedAndUnresolvable -> UnschedulableAndUnresolvable
    (with the reasons the node already had), failed -> Unschedulable (a reason appended to the
    node's status, or a new one), unless unresolvable too. A call error fails the cycle
    (``(None, Status(Error))``) unless the extender is ignorable (then it is skipped).
    Returns ``(nodes, None)``. ``nominated``: the pod's nominated node alone is evaluated
    (evaluateNominatedNode), where an error only ends that evaluation (upstream logs it and the
    full pass follows): it is traced as ignored."""
    tr = loop.trace
    for ext in loop.extenders:
        if not feasible:
            break
        if not ext.is_interested(pod) or not ext.cfg.filter_verb:
            continue        # no filterVerb: Filter returns the nodes unchanged without a call
        seq = loop.extender_calls
        reply, req = ext.send("filter", ext.cfg.filter_verb, ext.node_args(pod, feasible))
        by_name = {ni.name: ni for ni in feasible}
        try:
            body = ext.reply_body(reply, ext.cfg.filter_verb, req.url)
            res = decode_filter_result(body)
            if res["Error"]:
                raise ExtenderCallError(res["Error"])
            if ext.cfg.node_cache_capable and res["NodeNames"] is not None:
                for n in res["NodeNames"]:
                    if n not in by_name:
                        raise ExtenderCallError(f"extender {ext.name!r} claims a filtered node {n!r} which is "
                                                f"not found in the input node list")
                kept_names = res["NodeNames"]
            elif res["Nodes"] is not None:
                kept_names = res["Nodes"]
            else:
                kept_names = []
            snap = fwk.snapshot()
            kept = []
            for n in kept_names:
                ni = by_name.get(n)
                if ni is None:
                    try:
                        ni = snap.get(n)
                    except KeyError:
                        raise ExtenderCallError(f"extender {ext.name!r} returned node {n!r}, which is not a "
                                                f"node of the cluster") from None
                kept.append(ni)
        except ExtenderCallError as e:
            err = str(e)
            ignored = ext.is_ignorable() or nominated
            code = "Skip" if ignored else "Error"
            _emit_call(tr, ext, pod.key, fwk.cycle, seq, "filter", req.url, len(feasible), reply, err,
                       ignored, None)
            if tr.enabled:
                for ni in feasible:
                    tr.emit("PluginResult", pod=pod.key, cycle=fwk.cycle, point="Filter", plugin=ext.name,
                            node=ni.name, code=code, reasons=[err], score=None, dryRun=False, extender=True)
            if ext.is_ignorable():
                continue
            return None, Status(Code.Error, [err])
        uu, failed = res["FailedAndUnresolvableNodes"], res["FailedNodes"]
        for name in sorted(uu):
            prev = statuses.get(name)
            reasons = (list(prev.reasons) if prev is not None else []) + [uu[name]]
            statuses[name] = Status(Code.UnschedulableAndUnresolvable, reasons)
        for name in sorted(failed):
            if name in uu:
                continue        # failedAndUnresolvable takes precedence
            prev = statuses.get(name)
            if prev is None:
                statuses[name] = Status(Code.Unschedulable, [failed[name]])
            else:
                # AppendReason on the node's status (a copy: statuses may be shared)
                statuses[name] = Status(prev.code, list(prev.reasons) + [failed[name]], prev.failed_plugin,
                                        err=prev.err)
        if tr.enabled:
            kept_set = set(kept_names)
            results = {}
            order = [ni.name for ni in feasible] + sorted((set(uu) | set(failed)) - set(by_name))
            for name in order:
                if name in uu:
                    results[name] = {"code": "UnschedulableAndUnresolvable", "reason": uu[name]}
                elif name in failed:
                    results[name] = {"code": "Unschedulable", "reason": failed[name]}
                elif name in kept_set:
                    results[name] = {"code": "Success", "reason": None}
                else:
                    results[name] = {"code": "Unschedulable", "reason": None}
            _emit_call(tr, ext, pod.key, fwk.cycle, seq, "filter", req.url, len(feasible), reply, None, False,
                       results, passed=len(kept))
            for name, r in results.items():
                tr.emit("PluginResult", pod=pod.key, cycle=fwk.cycle, point="Filter", plugin=ext.name,
                        node=name, code=r["code"], reasons=[r["reason"]] if r["reason"] is not None else [],
                        score=None, dryRun=False, extender=True)
        feasible = kept
    return feasible, None


def prioritize_with_extenders(loop, fwk, pod, nodes, scores):
    """prioritizeNodes' extender part (schedule_one.go): each interested extender with a
    prioritizeVerb scores the nodes; a node's extender score is score × weight ×
    (MaxNodeScore / MaxExtenderPriority), added to its plugins' total (hosts the extender
    names that are not among the nodes count for nothing; a host named twice counts twice).
    A call that fails gives no score, whether or not the extender is ignorable.
    ``scores`` is run_score_plugins' ScoreResults; returns a new one."""
    tr = loop.trace
    names = list(scores.names) if getattr(scores, "names", None) is not None else [n for n, _, _ in scores]
    totals = list(scores.totals) if getattr(scores, "totals", None) is not None else [t for _, t, _ in scores]
    index = {n: i for i, n in enumerate(names)}
    columns = []
    for ext in loop.extenders:
        if not ext.is_interested(pod) or not ext.cfg.prioritize_verb:
            continue
        seq = loop.extender_calls
        reply, req = ext.send("prioritize", ext.cfg.prioritize_verb, ext.node_args(pod, nodes))
        try:
            hosts = decode_host_priority_list(ext.reply_body(reply, ext.cfg.prioritize_verb, req.url))
        except ExtenderCallError as e:
            err = str(e)
            _emit_call(tr, ext, pod.key, fwk.cycle, seq, "prioritize", req.url, len(nodes), reply, err, True, None)
            if tr.enabled:
                for n in names:
                    tr.emit("PluginResult", pod=pod.key, cycle=fwk.cycle, point="Score", plugin=ext.name, node=n,
                            code="Skip", reasons=[err], score=None, dryRun=False, extender=True)
            continue
        w = ext.cfg.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        raw = [0] * len(names)
        for host, score in hosts:
            i = index.get(host)
            if i is not None:
                raw[i] += score
        for i, s in enumerate(raw):
            totals[i] += s * w
        columns.append((ext.name, raw, raw, w))
        if tr.enabled:
            _emit_call(tr, ext, pod.key, fwk.cycle, seq, "prioritize", req.url, len(nodes), reply, None, False,
                       {n: raw[i] for i, n in enumerate(names)}, weight=ext.cfg.weight)
            const = {"pod": pod.key, "cycle": fwk.cycle, "point": "Score", "plugin": ext.name, "code": "Success",
                     "reasons": [], "dryRun": False, "extender": True}
            tr.emit_batch("PluginResult", ("pod", "cycle", "point", "plugin", "node", "code", "reasons", "score",
                                           "dryRun", "extender"), const, {"node": names, "score": raw}, len(names))
            const = dict(const, point="NormalizeScore", weight=w)
            tr.emit_batch("PluginResult", ("pod", "cycle", "point", "plugin", "node", "code", "reasons", "score",
                                           "weight", "weightedScore", "dryRun", "extender"), const,
                          {"node": names, "score": raw, "weightedScore": [s * w for s in raw]}, len(names))
    out = scores.__class__(zip(names, totals, [None] * len(names)))     # a runtime.ScoreResults
    out.names, out.totals = names, totals
    table = getattr(scores, "table", None)
    out.table = (table[0], list(table[1]) + columns) if table is not None else None
    return out


def call_extenders_for_preemption(h, pod, candidates, make_candidate):
    """callExtenders (framework/preemption/preemption.go): each extender that supports
    preemption and is interested in the pod gets the candidates' victims
    (ExtenderPreemptionArgs: the pods, or, nodeCacheCapable, their UIDs) and returns the nodes
    and victims it accepts (as MetaVictims, converted back to the pods on those nodes); the
    next extender gets what the previous returned. A node without victims in the reply is
    an error, or dropped for an ignorable extender; a failed call is an error, or skipped for
    an ignorable one. Returns ``(candidates, None)`` or ``(None, Status(Error))``; the
    candidates in node order as they came, nodes the extenders added after them by name
    (upstream builds them from a map, in random order)."""
    exts = [e for e in getattr(h, "extenders", ()) or ()]
    if not exts or not candidates:
        return candidates, None
    tr = h.trace
    order = [c.name for c in candidates]
    victims_map = {}
    for c in candidates:
        victims_map[c.name] = (list(c.victims), c.num_pdb_violations)
    snap = h.snapshot()
    for ext in exts:
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        seq = h.host.extender_calls
        if ext.cfg.node_cache_capable:
            args = {"Pod": pod_object(pod), "NodeNameToVictims": None, "NodeNameToMetaVictims": {
                n: {"Pods": [{"UID": p.uid} for p in v], "NumPDBViolations": k}
                for n, (v, k) in sorted(victims_map.items())}}
        else:
            args = {"Pod": pod_object(pod), "NodeNameToVictims": {
                n: {"Pods": [pod_object(p) for p in v], "NumPDBViolations": k}
                for n, (v, k) in sorted(victims_map.items())}, "NodeNameToMetaVictims": None}
        reply, req = ext.send("preempt", ext.cfg.preempt_verb, args)
        sent = len(victims_map)
        try:
            meta = decode_preemption_result(ext.reply_body(reply, ext.cfg.preempt_verb, req.url))
            new = {}
            for node, mv in meta.items():
                if mv is None:
                    new[node] = None
                    continue
                try:
                    ni = snap.get(node)
                except KeyError:
                    raise ExtenderCallError(f'nodeinfo not found for node name "{node}"') from None
                by_uid = {p.uid: p for p in ni.pods}
                pods = []
                for uid in mv[0]:
                    p = by_uid.get(uid)
                    if p is None:
                        raise ExtenderCallError(f"extender: {ext.name} claims to preempt pod (UID: {uid}) on "
                                                f"node: {node}, but the pod is not found on that node")
                    pods.append(p)
                new[node] = (pods, mv[1])
        except ExtenderCallError as e:
            err = str(e)
            _emit_call(tr, ext, pod.key, h.cycle, seq, "preempt", req.url, sent, reply, err, ext.is_ignorable(), None)
            if ext.is_ignorable():
                continue
            return None, Status(Code.Error, [err])
        dropped = []
        for node in sorted(new):
            v = new[node]
            if v is None or not v[0]:
                if ext.is_ignorable():
                    del new[node]
                    dropped.append(node)
                    continue
                err = f'expected at least one victim pod on node "{node}"'
                _emit_call(tr, ext, pod.key, h.cycle, seq, "preempt", req.url, sent, reply, err, False, None)
                return None, Status(Code.Error, [err])
        victims_map = new
        if tr.enabled:
            _emit_call(tr, ext, pod.key, h.cycle, seq, "preempt", req.url, sent, reply, None, False,
                       {n: {"victims": [p.key for p in v], "pdbViolations": k}
                        for n, (v, k) in sorted(victims_map.items())}, droppedNoVictims=dropped)
        if not victims_map:
            break
    names = [n for n in order if n in victims_map] + sorted(n for n in victims_map if n not in set(order))
    return [make_candidate(n, victims_map[n][0], victims_map[n][1]) for n in names], None


def extenders_binding(loop, fwk, pod, node, cycle):
    """extendersBinding (schedule_one.go): the first extender that binds and is interested in
    the pod binds it (ExtenderBindingArgs) instead of the bind plugins. Returns ``(bound,
    status)``: ``(False, None)`` when no extender binds the pod, else ``(True, None)`` on
    success or ``(True, Status(Error))``."""
    tr = loop.trace
    for ext in loop.extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        seq = loop.extender_calls
        reply, req = ext.send("bind", ext.cfg.bind_verb, {"PodName": pod.name, "PodNamespace": pod.namespace,
                                                          "PodUID": pod.uid, "Node": node})
        err = None
        try:
            e = decode_binding_result(ext.reply_body(reply, ext.cfg.bind_verb, req.url))
            if e:
                err = e
        except ExtenderCallError as ex:
            err = str(ex)
        _emit_call(tr, ext, pod.key, cycle, seq, "bind", req.url, 1, reply, err, False,
                   {node: {"code": "Error" if err else "Success", "reason": err}})
        if tr.enabled:
            tr.emit("PluginResult", pod=pod.key, cycle=cycle, point="Bind", plugin=ext.name, node=node,
                    code="Error" if err else "Success", reasons=[err] if err else [], score=None, dryRun=False,
                    extender=True)
        return True, (Status(Code.Error, [err]) if err else None)
    return False, None


def build_extenders(configs, call) -> list:
    """The extenders as buildExtenders orders them (scheduler.go): the non-ignorable ones in
    configuration order, then the ignorable ones."""
    exts = [Extender(c, call) for c in configs]
    return [e for e in exts if not e.is_ignorable()] + [e for e in exts if e.is_ignorable()]
