#!/usr/bin/env python3
"""A small scheduler extender (standard library only) that speaks kube-scheduler v1.28's
extender protocol (k8s.io/kube-scheduler/extender/v1 types, as Go's encoding/json writes them).

It decides by node labels, read from the Node objects it is sent (``Nodes.items``); it keeps
the labels of the nodes it has seen, and with ``nodeCacheCapable`` (node names only) it knows
no others: a real extender would watch the nodes itself. Run it without ``nodeCacheCapable``:

- ``POST /filter`` (ExtenderArgs -> ExtenderFilterResult): a node labelled
  ``extender.example.com/pool=never`` fails and preemption cannot help there
  (FailedAndUnresolvableNodes); a pod that requests ``example.com/gpu`` fails on a node without
  the label ``extender.example.com/gpu=true`` (FailedNodes); every other node passes.
- ``POST /prioritize`` (ExtenderArgs -> HostPriorityList): a node's score is its label
  ``extender.example.com/score`` (an integer 0..10), 0 without it: "prefer nodes with label X".
- ``POST /preempt`` (ExtenderPreemptionArgs -> ExtenderPreemptionResult): keeps every
  candidate but those labelled ``extender.example.com/pool=no-preemption``, with their victims.
- ``POST /bind`` (ExtenderBindingArgs -> ExtenderBindingResult): accepts the binding and
  remembers it (GET /bindings lists them); a node named in ``--refuse-bind`` is refused.

Run it (it listens on 127.0.0.1 only):

    python docs/examples/extender_server.py --port 8888

then let the engine call it and run the example scenario:

    SCHEDULER_EXTENDERS=http://127.0.0.1:8888/scheduler \\
        python -m engine run docs/examples/extender.yaml

See docs/extenders.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/scheduler"
GPU = "example.com/gpu"


def _labels(node: dict) -> dict:
    return ((node or {}).get("metadata") or {}).get("labels") or {}


def _wants_gpu(pod: dict) -> bool:
    spec = (pod or {}).get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        if GPU in (res.get("requests") or {}) or GPU in (res.get("limits") or {}):
            return True
    return False


class Extender:
    def __init__(self, refuse_bind=()):
        self.nodes = {}                 # name -> labels, from the nodes it was sent
        self.bindings = []
        self.refuse_bind = set(refuse_bind)
        self.lock = threading.Lock()

    def _node_labels(self, args: dict) -> list:
        """[(name, labels)] of the ExtenderArgs' nodes (NodeNames: from the nodes seen before)."""
        if args.get("Nodes") is not None:
            out = []
            for n in args["Nodes"].get("items") or []:
                name = n["metadata"]["name"]
                with self.lock:
                    self.nodes[name] = _labels(n)
                out.append((name, _labels(n)))
            return out
        with self.lock:
            return [(name, self.nodes.get(name, {})) for name in args.get("NodeNames") or []]

    def filter(self, args: dict) -> dict:
        nodes = self._node_labels(args)
        gpu = _wants_gpu(args.get("Pod"))
        passed, failed, unresolvable = [], {}, {}
        for name, labels in nodes:
            if labels.get("extender.example.com/pool") == "never":
                unresolvable[name] = "extender: the node's pool takes no pods"
            elif gpu and labels.get("extender.example.com/gpu") != "true":
                failed[name] = "extender: the node has no GPU"
            else:
                passed.append(name)
        result = {"Nodes": None, "NodeNames": None, "FailedNodes": failed,
                  "FailedAndUnresolvableNodes": unresolvable, "Error": ""}
        if args.get("Nodes") is not None:
            keep = set(passed)
            result["Nodes"] = {"metadata": {}, "items": [n for n in args["Nodes"].get("items") or []
                                                         if n["metadata"]["name"] in keep]}
        else:
            result["NodeNames"] = passed
        return result

    def prioritize(self, args: dict) -> list:
        out = []
        for name, labels in self._node_labels(args):
            try:
                score = max(0, min(10, int(labels.get("extender.example.com/score", "0"))))
            except ValueError:
                score = 0
            out.append({"Host": name, "Score": score})
        return out

    def preempt(self, args: dict) -> dict:
        meta = {}
        if args.get("NodeNameToMetaVictims") is not None:
            given = {n: [p["UID"] for p in (v or {}).get("Pods") or []] for n, v in args["NodeNameToMetaVictims"].items()}
            pdb = {n: (v or {}).get("NumPDBViolations", 0) for n, v in args["NodeNameToMetaVictims"].items()}
        else:
            given = {n: [p["metadata"]["uid"] for p in (v or {}).get("Pods") or []]
                     for n, v in (args.get("NodeNameToVictims") or {}).items()}
            pdb = {n: (v or {}).get("NumPDBViolations", 0) for n, v in (args.get("NodeNameToVictims") or {}).items()}
        for name, uids in given.items():
            with self.lock:
                labels = self.nodes.get(name, {})
            if labels.get("extender.example.com/pool") == "no-preemption":
                continue
            meta[name] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": pdb[name]}
        return {"NodeNameToMetaVictims": meta}

    def bind(self, args: dict) -> dict:
        if args.get("Node") in self.refuse_bind:
            return {"Error": f"extender: binding to {args.get('Node')} is refused"}
        with self.lock:
            self.bindings.append({k: args.get(k) for k in ("PodName", "PodNamespace", "PodUID", "Node")})
        return {"Error": ""}


def make_handler(ext: Extender):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):      # quiet
            pass

        def _reply(self, code: int, obj) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == PREFIX + "/bindings":
                with ext.lock:
                    return self._reply(200, list(ext.bindings))
            self._reply(404, {"error": "not found"})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            try:
                args = json.loads(self.rfile.read(n) or b"null")
            except ValueError:
                return self._reply(400, {"error": "not JSON"})
            verb = self.path[len(PREFIX) + 1:] if self.path.startswith(PREFIX + "/") else None
            fn = {"filter": ext.filter, "prioritize": ext.prioritize, "preempt": ext.preempt,
                  "bind": ext.bind}.get(verb)
            if fn is None:
                return self._reply(404, {"error": "not found"})
            self._reply(200, fn(args or {}))
    return Handler


def serve(port: int = 0, refuse_bind=()):
    """Start the extender on 127.0.0.1:``port`` (0: a free port) in a thread; returns
    ``(server, extender)``; ``server.server_address[1]`` is the port, ``server.shutdown()``
    stops it."""
    ext = Extender(refuse_bind)
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(ext))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, ext


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8888)
    ap.add_argument("--refuse-bind", action="append", default=[], metavar="NODE")
    a = ap.parse_args(argv)
    ext = Extender(a.refuse_bind)
    server = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(ext))
    print(f"extender listening on http://127.0.0.1:{server.server_address[1]}{PREFIX}", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
