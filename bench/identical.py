"""Are two engines' outputs byte-identical on a benchmark workload?

    .venv/bin/python bench/identical.py --engine-root /tmp/engine-before [--workload SchedulingBasic]
                                        [--nodes N] [--pods N] [--init-pods N] [--no-trace]

Runs the workload (bench/workloads.py, as bench/run.py builds it) to the end with the engine in
ENGINE_ROOT and with this checkout's, each in its own process, and compares the sha256 of the
JSON Lines trace (`--trace`'s bytes, hashed as they are written, never stored) and of the final
state (`--state`'s JSON). Exit status 0 when both match. An optimisation must keep both
(docs/benchmarks.md); tests/engine/test_golden.py checks the small workloads, this the big ones.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class _Hasher:
    def __init__(self):
        self.h = hashlib.sha256()
        self.n = 0

    def write(self, s: str) -> int:
        b = s.encode()
        self.h.update(b)
        self.n += len(b)
        return len(s)

    def flush(self):
        pass


def _child(args) -> None:
    sys.path.insert(0, args.engine_root or str(ROOT))
    sys.path.insert(0, str(HERE))
    from workloads import WORKLOADS, default_init_pods
    from engine import Engine, Scenario, Trace
    from engine.trace import JsonLinesWriter
    builder, d_nodes, d_init, d_pods = WORKLOADS[args.workload]
    nodes = args.nodes or d_nodes
    pods = args.pods or d_pods
    init = args.init_pods if args.init_pods is not None else (
        d_init if nodes == d_nodes else default_init_pods(args.workload, nodes))
    scenario = Scenario.from_dict(builder(nodes, init, pods), f"<bench {args.workload}>")
    out = _Hasher()
    trace = Trace(enabled=not args.no_trace)
    if not args.no_trace:
        trace.add_sink(JsonLinesWriter(out))
    t = time.process_time()
    eng = Engine(scenario, trace)
    eng.run()
    state = json.dumps(eng.state(), sort_keys=True, separators=(",", ":")).encode()
    print(json.dumps({"trace": out.h.hexdigest() if not args.no_trace else None, "traceBytes": out.n,
                      "state": hashlib.sha256(state).hexdigest(), "cpu": round(time.process_time() - t, 2)}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/identical.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine-root", required=True, help="the other engine (bench/snapshot_engine.sh)")
    ap.add_argument("--workload", default="SchedulingBasic", choices=["SchedulingBasic", "PreemptionBasic"])
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--pods", type=int)
    ap.add_argument("--init-pods", type=int)
    ap.add_argument("--no-trace", action="store_true", help="compare the states only, run with the trace off")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        _child(args)
        return 0
    results = {}
    for label, root in (("other", args.engine_root), ("this", "")):
        cmd = [sys.executable, __file__, "--_child", "--engine-root", root, "--workload", args.workload]
        for k in ("nodes", "pods", "init_pods"):
            v = getattr(args, k)
            if v is not None:
                cmd += [f"--{k.replace('_', '-')}", str(v)]
        if args.no_trace:
            cmd.append("--no-trace")
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            return 2
        results[label] = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"{label:5} {root or ROOT}: {results[label]}")
    same = all(results["other"][k] == results["this"][k] for k in ("trace", "traceBytes", "state"))
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
