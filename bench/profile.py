#!/usr/bin/env python
"""Run one benchmark workload under cProfile and print the hotspots.

    python bench/profile.py [--workload NAME] [--nodes N] [--pods N] [--init-pods N]
                            [--trace off|file|memory] [--phase measured|all] [--top 30] [--out FILE.pstats]

The scenario is built exactly as bench/run.py builds it.  By default only the measured phase
(``Engine.run()`` after the init pods are scheduled with ``run(until=0)``) is profiled, the same
call bench/run.py times; ``--phase all`` profiles Engine construction and the init phase too.
Prints the top N functions by cumulative time and by total (own) time.
"""
from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the stdlib's ``profile``, which cProfile imports: take the script's
# own directory off sys.path before importing it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import cProfile  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENGINE_ROOT = Path(os.environ.get("BENCH_ENGINE_ROOT") or ROOT)
for _i, _a in enumerate(sys.argv):
    if _a == "--engine-root" and _i + 1 < len(sys.argv):
        ENGINE_ROOT = Path(sys.argv[_i + 1]).resolve()
sys.path.insert(0, str(ENGINE_ROOT))
sys.path.append(str(_HERE))

from workloads import WORKLOADS, default_init_pods  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python bench/profile.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="SchedulingBasic")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--pods", type=int, help="measured pods")
    ap.add_argument("--init-pods", type=int)
    ap.add_argument("--trace", choices=["off", "file", "memory"], default="off")
    ap.add_argument("--phase", choices=["measured", "all"], default="measured")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", metavar="FILE", help="also save the raw pstats to FILE")
    ap.add_argument("--engine-root", metavar="DIR", help="import engine/ from DIR")
    args = ap.parse_args(argv)

    from engine import Engine, Scenario, Trace
    from engine.trace import JsonLinesWriter

    builder, d_nodes, d_init, d_pods = WORKLOADS[args.workload]
    nodes = args.nodes if args.nodes is not None else d_nodes
    pods = args.pods if args.pods is not None else d_pods
    init = args.init_pods if args.init_pods is not None else (
        d_init if nodes == d_nodes else default_init_pods(args.workload, nodes))
    scenario = Scenario.from_dict(builder(nodes, init, pods), f"<bench {args.workload}>")

    trace = Trace(enabled=False)
    fh = None
    if args.trace == "file":
        fh = tempfile.TemporaryFile("w", encoding="utf-8")
        trace.add_sink(JsonLinesWriter(fh))
    elif args.trace == "memory":         # what the web UI keeps (engine/tracestore.py)
        from engine.tracestore import EventLog
        trace.add_sink(EventLog())

    prof = cProfile.Profile()
    if args.phase == "all":
        prof.enable()
    engine = Engine(scenario, trace)
    engine.run(until=0)
    if args.phase == "measured":
        prof.enable()
    t = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - t
    prof.disable()
    if fh is not None:
        fh.close()

    print(f"# {args.workload}: {nodes} nodes, {init} init pods, {pods} measured pods, "
          f"trace={args.trace}, profiled phase={args.phase}; measured run() took {wall:.2f}s "
          f"under cProfile (engine from {ENGINE_ROOT}"
          + (f", commit {(ENGINE_ROOT / '.engine-commit').read_text().strip()}"
             if (ENGINE_ROOT / ".engine-commit").exists() else "") + ")")
    if args.out:
        prof.dump_stats(args.out)
    for key, title in (("cumulative", "cumulative time"), ("tottime", "total (own) time")):
        print(f"\n## top {args.top} by {title}\n")
        st = pstats.Stats(prof, stream=sys.stdout)
        st.sort_stats(key).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
