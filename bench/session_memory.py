#!/usr/bin/env python
"""What one web session holds in memory at scale: a Stepper (the compact EventLog trace the
page reads) with the page's moment recorder, run to the end of a SchedulingBasic workload.

    python bench/session_memory.py --nodes 5000 --init-pods 1000 --pods 10000 [--list]
    python bench/session_memory.py --workload PreemptionBasic --nodes 500 --init-pods 2000 --pods 500 --page

Prints the events kept, bytes per event (EventLog.nbytes), the run's CPU seconds and the
process's peak RSS. ``--list`` keeps the events as a list of dicts instead (what the session
kept before the compact store), for comparison. ``--page`` runs the scenario on the page's own
path instead (in a throw-away SQLite database, ``runner.create_session`` and then
``runner.control`` run-until in slices, as the Run form does: the moment recorder, the
checkpoints and the row persisted after each slice), and prints its CPU seconds beside those of
a headless Stepper of the same run (the trace in memory, nothing attached).
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
    ap.add_argument("--page", action="store_true", help="run on the page's path (runner.control run-until)")
    a = ap.parse_args(argv)
    if a.page:
        return page_path(a)
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


def page_path(a):
    """The run to the end on the page's path, against a headless Stepper of the same run."""
    import json
    import os
    import tempfile
    os.environ["DATABASE_PATH"] = os.path.join(tempfile.mkdtemp(prefix="session-memory-"), "db.sqlite3")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "visualizer.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    import workloads
    from engine import Scenario
    from engine.stepper import Stepper
    from visualizer import frames, runner
    fn = workloads.scheduling_basic if a.workload == "SchedulingBasic" else workloads.preemption_basic
    data = fn(a.nodes, a.init_pods, a.pods)
    st = Stepper(Scenario.from_dict(data))
    t0 = time.process_time()
    st.advance_to_end()
    headless = time.process_time() - t0
    del st
    session = runner.create_session(json.dumps(data), "session-memory.json")
    frames.render_frame(session.pk)          # opens the live session, as the page does
    t0, w0, slices = time.process_time(), time.perf_counter(), 1
    while runner.control(session.pk, {"action": "run-until", "until": 3600})["more"]:
        slices += 1
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    with runner.open_live(session.pk) as live:
        n, checkpoints = live.high_water, len(live.checkpointer.checkpoints)
    print(f"{a.workload} nodes={a.nodes} init={a.init_pods} pods={a.pods}: {n:,} events; headless Stepper "
          f"cpu={headless:.2f}s ({a.pods / headless:.0f} measured pods per CPU-second); page's path "
          f"cpu={cpu:.2f}s wall={wall:.2f}s ({a.pods / cpu:.0f} measured pods per CPU-second, {slices} slices, "
          f"{checkpoints} checkpoints): {cpu / headless:.2f}x")


if __name__ == "__main__":
    main()
