"""A held-out scheduler extender for the tests: written against upstream's wire types
(k8s.io/kube-scheduler/extender/v1/types.go, v1.28) and upstream's test double
(pkg/scheduler/testing/fake_extender.go: FakeExtender), not against the engine's code. It reads
the requests by the Go field names (ExtenderArgs ``Pod``, ``Nodes`` (a NodeList: ``items``),
``NodeNames``; ExtenderPreemptionArgs ``Pod``, ``NodeNameToVictims``,
``NodeNameToMetaVictims``; ExtenderBindingArgs ``PodName``, ``PodNamespace``, ``PodUID``,
``Node``) and answers with ExtenderFilterResult, HostPriorityList, ExtenderPreemptionResult and
ExtenderBindingResult as Go's encoding/json would write them.

It listens on 127.0.0.1 only, on a free port, in a thread.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUCCESS, UNSCHEDULABLE, UU, ERROR = "Success", "Unschedulable", "UnschedulableAndUnresolvable", "Error"


# fake_extender.go's predicates and prioritizers, as functions of (pod, node name)
def true_predicate(pod, node):
    return SUCCESS, ""


def false_predicate(pod, node):
    return UNSCHEDULABLE, f'pod is unschedulable on the node "{node}"'


def error_predicate(pod, node):
    return ERROR, "some error"


def only(name):
    """Node1PredicateExtender / Node2PredicateExtender."""
    def pred(pod, node):
        return (SUCCESS, "") if node == name else (UNSCHEDULABLE, f'node "{node}" is not allowed')
    return pred


def prefer(name):
    """Node1PrioritizerExtender / Node2PrioritizerExtender: 10 for that node, 1 for others."""
    def prio(pod, nodes):
        return [(n, 10 if n == name else 1) for n in nodes]
    return prio


def error_prioritizer(pod, nodes):
    raise RuntimeError("some error")


class FakeExtender:
    """FakeExtender over HTTP: ``predicates`` (run in order, the first non-Success decides),
    ``prioritizers`` ([(function, weight)]: scores combined as score × weight, like
    FakeExtender.Prioritize; the extender's own weight is the scheduler's configuration),
    ``delay`` (seconds to sleep before answering any call), ``replies`` (verb -> (HTTP status,
    raw body): answered as is), ``preempt_keep`` (node names whose candidates are kept; None:
    those whose predicates pass, as FakeExtender.ProcessPreemption without a node cache)."""

    def __init__(self, predicates=(), prioritizers=(), delay=0.0, replies=None, preempt_keep=None,
                 bind_error=""):
        self.predicates = list(predicates)
        self.prioritizers = list(prioritizers)
        self.delay = delay
        self.replies = dict(replies or {})
        self.preempt_keep = preempt_keep
        self.bind_error = bind_error
        self.calls = []             # (verb, the parsed request)
        self.lock = threading.Lock()

    @staticmethod
    def node_names(args):
        if args.get("Nodes") is not None:
            return [n["metadata"]["name"] for n in args["Nodes"]["items"] or []]
        return list(args.get("NodeNames") or [])

    def run_predicates(self, pod, node):
        for p in self.predicates:
            code, msg = p(pod, node)
            if code != SUCCESS:
                return code, msg
        return SUCCESS, ""

    def filter(self, args):
        pod = args["Pod"]
        names = self.node_names(args)
        kept, failed, uu = [], {}, {}
        for n in names:
            code, msg = self.run_predicates(pod, n)
            if code == SUCCESS:
                kept.append(n)
            elif code == UNSCHEDULABLE:
                failed[n] = f'FakeExtender: node "{n}" failed'
            elif code == UU:
                uu[n] = f'FakeExtender: node "{n}" failed and unresolvable'
            else:
                return {"Nodes": None, "NodeNames": None, "FailedNodes": None,
                        "FailedAndUnresolvableNodes": None, "Error": msg}
        if args.get("Nodes") is not None:
            items = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] in kept]
            return {"Nodes": {"metadata": {}, "items": items}, "NodeNames": None, "FailedNodes": failed,
                    "FailedAndUnresolvableNodes": uu, "Error": ""}
        return {"Nodes": None, "NodeNames": kept, "FailedNodes": failed, "FailedAndUnresolvableNodes": uu,
                "Error": ""}

    def prioritize(self, args):
        names = self.node_names(args)
        combined = {}
        for fn, weight in self.prioritizers:
            if weight == 0:
                continue
            for host, score in fn(args["Pod"], names):
                combined[host] = combined.get(host, 0) + score * weight
        return [{"Host": h, "Score": s} for h, s in combined.items()]

    def preempt(self, args):
        if args.get("NodeNameToMetaVictims") is not None:
            given = {n: ([p["UID"] for p in v["Pods"]], v["NumPDBViolations"])
                     for n, v in args["NodeNameToMetaVictims"].items()}
        else:
            given = {n: ([p["metadata"]["uid"] for p in v["Pods"]], v["NumPDBViolations"])
                     for n, v in args["NodeNameToVictims"].items()}
        out = {}
        for n, (uids, pdb) in given.items():
            if self.preempt_keep is not None:
                keep = n in self.preempt_keep
            else:
                # selectVictimsOnNodeByExtender without a node cache: the predicates decide;
                # an Error is the call's error
                code, msg = self.run_predicates(args["Pod"], n)
                if code == ERROR:
                    raise RuntimeError(msg)
                keep = code == SUCCESS
            if keep:
                out[n] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": pdb}
        return {"NodeNameToMetaVictims": out}

    def bind(self, args):
        return {"Error": self.bind_error}


class Server:
    """``with Server(FakeExtender(...)) as s:`` serves it at ``s.url`` (…/ext)."""

    def __init__(self, ext: FakeExtender):
        self.ext = ext
        ext_ = ext

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                verb = self.path.rsplit("/", 1)[-1]
                args = json.loads(body)
                with ext_.lock:
                    ext_.calls.append((verb, args, body))
                if ext_.delay:
                    time.sleep(ext_.delay)
                if verb in ext_.replies:
                    status, raw = ext_.replies[verb]
                    data = raw.encode()
                else:
                    status = 200
                    try:
                        obj = {"filter": ext_.filter, "prioritize": ext_.prioritize, "preempt": ext_.preempt,
                               "bind": ext_.bind}[verb](args)
                        data = json.dumps(obj).encode()
                    except (KeyError, RuntimeError) as e:
                        status, data = 500, str(e).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass            # the client gave up (a timeout)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/ext"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def verbs(self):
        return [v for v, _a, _b in self.ext.calls]
