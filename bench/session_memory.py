#!/usr/bin/env python
"""What one web session holds in memory at scale: a Stepper (the compact EventLog trace the
page reads) with the page's moment recorder, run to the end of a SchedulingBasic workload.

    python bench/session_memory.py --nodes 5000 --init-pods 1000 --pods 10000 [--list]

Prints the events kept, bytes per event (EventLog.nbytes), the run's CPU seconds and the
process's peak RSS. ``--list`` keeps the events as a list of dicts instead (what the session
kept before the compact store), for comparison.
"""
import argparse
import gc
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init-pods", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--workload", default="SchedulingBasic", choices=("SchedulingBasic", "PreemptionBasic"))
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    import workloads
    from engine import Scenario
    from engine.stepper import Stepper
    fn = workloads.scheduling_basic if a.workload == "SchedulingBasic" else workloads.preemption_basic
    sc = Scenario.from_dict(fn(a.nodes, a.init_pods, a.pods))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    st = Stepper(sc)
    if a.list:   # the same trace, its events kept as dicts
        st.events = []
        st.trace._sinks = [(st.events.append, None)]
    from visualizer import moment
    moment.attach(st)
    t0 = time.process_time()
    st.advance_to_end()
    cpu = time.process_time() - t0
    n = len(st.events)
    per = (st.events.nbytes() / n) if hasattr(st.events, "nbytes") else float("nan")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    bound = sum(1 for p in st.engine.pods.values() if p.node_name)
    print(f"{a.workload} nodes={a.nodes} init={a.init_pods} pods={a.pods} store={'list' if a.list else 'EventLog'} "
          f"events={n:,} bytes/event={per:.1f} cpu={cpu:.1f}s bound={bound} "
          f"maxrss={rss / 1024:.0f}MiB (before the engine {rss0 / 1024:.0f}MiB)")


if __name__ == "__main__":
    main()
