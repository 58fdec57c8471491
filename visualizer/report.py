"""The pending-pods report of a session (issue 25): what happened to every pod that was pending
at the start (for an imported cluster: pending in the dump), and what-ifs that change the
cluster and show which pods now fit.

The report is ``engine.explain``'s, the one ``python -m engine explain`` prints, read from a run
of the session's scenario **with the cluster events injected into the session** (at the
positions and times they were recorded), taken until it is idle (``engine.compare.drive``, the
replay the comparison page uses). So a what-if is an ordinary injection: it goes through the
inject form's code path (``runner.control``), is recorded with the session, appears on the
session page and in every export, and the report is simply computed again. When the session
has injections, the report also runs the scenario without them and says, for each pod, what
they changed.

The runs are cached per (scenario, injections, plugin code) in this process (a handful of
sessions); a pod's history in the report is read from the cached run (``visualizer.history``
on it), so it shows the pod's whole run, wherever the session's page stands.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
from collections import OrderedDict

from engine import US
from engine import compare as cmp
from engine.explain import explain_events
from visualizer.formatting import seconds

REPORT_MAX_EVENTS = 2_000_000    # trace events of one report run (bounded memory and time: bench/report.py); it says so when cut
CACHE_SIZE = 4                   # report runs kept in this process
NODE_LIMIT = 2000                # nodes offered in the what-if forms' lists
LIKE_LIMIT = 50                  # pending pods whose "a node like X" link names X

_cache: OrderedDict = OrderedDict()
_lock = threading.Lock()


class ReportRun:
    """A report's run, shaped like a live session for ``visualizer.history.pod_history``
    (``stepper``, ``timeline``): everything it did, shown."""

    def __init__(self, run: cmp.Run):
        self.run = run
        self.stepper = run.stepper
        self.timeline = run.stepper.events


def _key(row) -> str:
    h = hashlib.sha256()
    for part in (row.scenario_text, row.source, json.dumps(row.injections or [], sort_keys=True),
                 json.dumps(row.plugin_code or {}, sort_keys=True)):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _injections(row) -> list:
    return [(int(i["position"]), int(i["timeUs"]), i["verb"], i["body"]) for i in row.injections or []]


def _compute(row) -> dict:
    from visualizer import runner
    scenario = runner.parsed_scenario(row.scenario_text, row.source or "<input>")
    injections = _injections(row)
    # scheduler extenders: the session's recorded replies first (a copy; calls beyond them go out)
    records = getattr(row, "extender_records", None) or []
    run = cmp.drive(scenario, injections, max_events=REPORT_MAX_EVENTS,
                    extender_transport=runner.extender_transport(scenario, records))
    report = explain_events(scenario, run.events, run.stepper.engine)
    base = None
    if injections:
        base_run = cmp.drive(scenario, (), max_events=REPORT_MAX_EVENTS,
                             extender_transport=runner.extender_transport(scenario, records))
        base = explain_events(scenario, base_run.events, base_run.stepper.engine)
    return {"report": report, "base": base, "run": ReportRun(run), "scenario": scenario,
            "truncated": run.truncated, "time": run.clock_us / US, "events": len(run.events)}


def computed(row) -> dict:
    """The cached report run of session ``row`` (computed if its inputs changed)."""
    key = _key(row)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    result = _compute(row)
    with _lock:
        _cache[key] = result
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def clear() -> None:
    with _lock:
        _cache.clear()


# ---------------------------------------------------------------------- what the page shows

def _pod_view(p, before) -> dict:
    v = dict(p)
    v["time_s"] = seconds(p["time"]) if p.get("time") is not None else None
    if before is not None and (before["outcome"], before["node"]) != (p["outcome"], p["node"]):
        v["before"] = before
        v["moved"] = before["outcome"] == p["outcome"]      # the same outcome on another node
    v["gated"] = p["outcome"] == "pending" and not p["attempts"] and "SchedulingGates" in p["plugins"]
    return v


def present(row, c: dict) -> dict:
    """The report page's context from ``c``, the row's ``computed`` run: pods grouped (still
    pending first), what the injections changed, the nodes for the what-ifs."""
    report, base = c["report"], c["base"]
    before = {p["pod"]: p for p in base["pods"]} if base else {}
    pods = [_pod_view(p, before.get(p["pod"])) for p in report["pods"]]
    groups = {o.replace("-", "_"): [p for p in pods if p["outcome"] == o]
              for o in ("pending", "binding", "bound", "deleted", "not-ours")}
    likes = c.setdefault("likes", {})     # each scans the run's events: once per cached run
    for p in [p for p in groups["pending"] if not p["gated"]][:LIKE_LIMIT]:
        if p["pod"] not in likes:
            likes[p["pod"]] = best_node_to_copy(c, p["pod"], with_reason=True)
        p["like"], p["like_fit_only"] = likes[p["pod"]]
    changed = [p for p in pods if "before" in p and not p["moved"]]
    moved = [p for p in pods if p.get("moved")]
    now_fit = [p for p in changed if p["outcome"] in ("bound", "binding") and p["before"]["outcome"] == "pending"]
    engine = c["run"].stepper.engine
    return {"report": report, "groups": groups, "counts": report["counts"], "total": report["total"],
            "changed": changed, "moved": moved, "now_fit": now_fit, "injections": describe_injections(row),
            "suggested": next((p["like"] for p in groups["pending"] if p.get("like")), None),
            "time": seconds(c["time"]), "events": c["events"], "truncated": c["truncated"],
            "max_events": REPORT_MAX_EVENTS, "nodes": sorted(engine.nodes)[:NODE_LIMIT],
            "node_count": len(engine.nodes)}


def describe_injections(row) -> list:
    out = []
    for i in row.injections or []:
        body = i.get("body") or {}
        kind = body.get("kind", "?")
        meta = body.get("metadata") or {}
        name = meta.get("name") or body.get("name") or "?"
        ns = meta.get("namespace") or body.get("namespace")
        out.append({"verb": i.get("verb"), "kind": kind, "name": f"{ns}/{name}" if ns and kind == "Pod" else name,
                    "time": seconds(int(i.get("timeUs", 0)) / US)})
    return out


# ---------------------------------------------------------------------- what-if forms, prefilled

NODE_STATUS_KEYS = ("capacity", "allocatable")


def node_like(engine, name: str, new_name: str) -> dict:
    """A manifest for a new node like ``name``: its labels (the hostname label renamed), taints,
    unschedulable flag, capacity and allocatable; nothing it runs."""
    node = engine.nodes[name]
    src = node.manifest or {}
    meta = src.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    if "kubernetes.io/hostname" in labels:
        labels["kubernetes.io/hostname"] = new_name
    out = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": new_name}}
    if labels:
        out["metadata"]["labels"] = labels
    spec = {k: copy.deepcopy(v) for k, v in (src.get("spec") or {}).items() if k in ("taints", "unschedulable")}
    if spec:
        out["spec"] = spec
    status = {k: copy.deepcopy(v) for k, v in (src.get("status") or {}).items() if k in NODE_STATUS_KEYS}
    if status:
        out["status"] = status
    return out


_WHATIF_SUFFIX = re.compile(r"(-whatif-\d+)+$")


def free_name(engine, base: str) -> str:
    """``<base>-whatif-<n>`` with the first ``n`` no node has (a copy of a copy counts on
    from the original's name)."""
    base = _WHATIF_SUFFIX.sub("", base)
    for i in range(1, 10_000):
        name = f"{base}-whatif-{i}" if len(base) < 230 else f"whatif-{i}"
        if name not in engine.nodes:
            return name
    return "whatif-node"


def pod_requests(engine, key: str) -> str:
    """The pod's requests as Kubernetes writes them (``cpu 2, memory 48Gi``), for the
    what-if forms; empty if it requests nothing."""
    from visualizer.panels.common import quantity
    pod = engine.pods.get(key)
    if pod is None:
        return ""
    reqs = getattr(pod, "requests", None) or {}
    return ", ".join(f"{r} {quantity(r, v)}" for r, v in sorted(reqs.items()) if v)


POD_DROP_META = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "ownerReferences")


def pod_manifest(engine, key: str) -> dict | None:
    """The pod's manifest as the scenario gave it, without its status and server-set fields:
    the text of "change this pod's requests" (an update of the pending pod)."""
    pod = engine.pods.get(key)
    if pod is None:
        return None
    src = copy.deepcopy(pod.manifest or {})
    src.pop("status", None)
    meta = src.setdefault("metadata", {})
    for k in POD_DROP_META:
        meta.pop(k, None)
    src.setdefault("apiVersion", "v1")
    src.setdefault("kind", "Pod")
    return src


def best_node_to_copy(c, pod_key: str, with_reason: bool = False):
    """The node a "node like X" what-if starts from for a pending pod: among the nodes its last
    cycle's Filter rejected only for resources (NodeResourcesFit), the largest; else the largest
    node (by allocatable cpu, then memory). ``with_reason``: ``(node, whether it only lacked
    resources)``."""
    engine = c["run"].stepper.engine
    if not engine.nodes:
        return (None, False) if with_reason else None
    only_fit = _nodes_rejected_only_by_fit(c["run"], pod_key)

    def size(name):
        a = getattr(engine.nodes[name], "allocatable", None) or {}
        return (a.get("cpu", 0) or 0, a.get("memory", 0) or 0)
    fit_only = [n for n in only_fit if n in engine.nodes]
    pool = sorted(fit_only or engine.nodes)
    best = max(pool, key=size)      # the first of the largest by name: an original before its copies
    return (best, bool(fit_only)) if with_reason else best


def _nodes_rejected_only_by_fit(run: ReportRun, pod_key: str) -> list:
    """The nodes whose only Filter rejection in the pod's last cycle was NodeResourcesFit."""
    from visualizer.events import backward, forward
    events = run.timeline
    n = len(events)
    last = next((e["seq"] for e in backward(events, n, quiet=False, types={"CycleStart"})
                 if e.get("pod") == pod_key), None)
    if last is None:
        return []
    rejected: dict = {}
    for e in forward(events, last + 1, n, types={"PluginResult", "CycleEnd"}):
        if e["type"] == "CycleEnd":
            if e.get("pod") == pod_key:
                break
            continue
        if e.get("pod") == pod_key and e.get("point") == "Filter" and e.get("node") and not e.get("dryRun") \
                and e.get("code") not in ("Success", "Skip"):
            rejected.setdefault(e["node"], set()).add(e.get("plugin"))
    return [n for n, plugins in rejected.items() if plugins == {"NodeResourcesFit"}]


# ---------------------------------------------------------------------- a what-if, checked

WHATIF_KINDS = ("Node", "Pod")
_INJECT_PLACE = re.compile(r"^inject\[\d+\]\.(create|update|delete)\.?")


def check_whatif(engine, verb: str, body: dict) -> list:
    """What makes a what-if a no-op or not a what-if at all, against the cluster as the
    session shows it (``engine``): deleting or updating a node or pod that is not there,
    creating one that is, changing a pod that is no longer pending (v1.28 lets no bound pod's
    requests or node change). The session page's inject form allows these (they are skipped
    actions, a lesson in themselves); a what-if that changes nothing would only mislead."""
    kind = body.get("kind")
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    name = meta.get("name") if verb != "delete" else body.get("name")
    ns = (meta.get("namespace") if verb != "delete" else body.get("namespace")) or "default"
    if kind not in WHATIF_KINDS:
        return [f"kind: {str(kind)[:60]!r}: a what-if adds, removes or changes a Node or a Pod"]
    if not isinstance(name, str) or not name:
        return []        # the engine's validation names what is missing
    if kind == "Node":
        here = name in engine.nodes
        label = f"node {name}"
    else:
        key = f"{ns}/{name}"
        here = key in engine.pods
        label = f"pod {key}"
    if verb == "create" and here:
        return [f"metadata.name: {label[:300]} is already in the cluster: give the new one another name"]
    if verb in ("update", "delete") and not here:
        return [f"{'metadata.name' if verb == 'update' else 'name'}: {label[:300]} is not in the cluster now"]
    if verb == "update" and kind == "Pod":
        pod = engine.pods[f"{ns}/{name}"]
        if pod.node_name:
            return [f"{label[:300]} is bound to {pod.node_name}: only a pending pod's requests can change "
                    "(Kubernetes v1.28 does not let a bound pod's requests or node change)"]
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        if spec.get("nodeName"):
            return ["spec.nodeName: a what-if leaves the choice of node to the scheduler: remove spec.nodeName"]
    return []


def plain_problem(problem: str) -> str:
    """An injection's problem with its place as the report's form has it (``the manifest:
    status.allocatable.memory: ...``), not the inject list's ``inject[3].create.``."""
    rest = _INJECT_PLACE.sub("", problem)
    return problem if rest == problem else f"the manifest: {rest}"
