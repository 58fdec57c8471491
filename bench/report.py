#!/usr/bin/env python
"""The pending-pods report (visualizer/report.py): how long its run takes, and what it keeps.

    .venv/bin/python bench/report.py [--nodes 40] [--running 30] [--pending 100] [--repeat 3]

A ``kubectl get nodes,pods -o yaml`` List is generated (``--nodes`` workers of 8 CPU / 32 GiB,
``--running`` pods bound to the first nodes, ``--pending`` pods of 500m / 1 GiB with no node,
one pod too large for any node and one of another scheduler), imported as the web page imports
it (``engine.importers.import_files``), and the report's run is timed as the page makes it:
``engine.compare.drive`` to idle with the trace kept (capped at ``REPORT_MAX_EVENTS``), then
``engine.explain.explain_events``. Also timed for comparison: ``explain_run`` (the CLI's
``engine explain``: the trace streamed, not kept) and the engine with the trace off. Prints the
median of ``--repeat`` runs, the events and what the kept trace takes (``EventLog.nbytes``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import Scenario                                     # noqa: E402
from engine import compare as cmp                               # noqa: E402
from engine.explain import explain_events, explain_run          # noqa: E402
from engine.importers import dump_scenario, import_files        # noqa: E402
from engine.scheduler import Engine                             # noqa: E402
from engine.trace import Trace                                  # noqa: E402


def dump(nodes: int, running: int, pending: int) -> dict:
    items = []
    for i in range(nodes):
        name = f"ip-10-0-{i // 250}-{i % 250 + 11}.eu-west-1.compute.internal"
        items.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                            "topology.kubernetes.io/zone": f"eu-west-1{'abc'[i % 3]}"}},
                      "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                                 "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "110"}}})

    def pod(ns, name, cpu, memory, node=None, scheduler="default-scheduler"):
        p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
             "spec": {"schedulerName": scheduler, "containers": [
                 {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
             "status": {"phase": "Running" if node else "Pending"}}
        if node:
            p["spec"]["nodeName"] = node
        return p
    for i in range(running):
        items.append(pod("shop", f"web-{i}", "2", "8Gi", node=items[i % nodes]["metadata"]["name"]))
    for i in range(pending):
        items.append(pod("work", f"p-{i}", "500m", "1Gi"))
    items.append(pod("analytics", "etl-0", "2", "48Gi"))
    items.append(pod("batch", "volcano-0", "1", "1Gi", scheduler="volcano"))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--running", type=int, default=30)
    ap.add_argument("--pending", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from visualizer.report import REPORT_MAX_EVENTS
    imported = import_files([("dump.yaml", yaml.safe_dump(dump(args.nodes, args.running, args.pending)))])
    scenario = Scenario.from_text(dump_scenario(imported.scenario))

    def report():
        run = cmp.drive(scenario, (), max_events=REPORT_MAX_EVENTS)
        return run, explain_events(scenario, run.events, run.stepper.engine)

    t_report, (run, rep) = timed(report, args.repeat)
    t_stream, _ = timed(lambda: explain_run(scenario), args.repeat)

    def off():
        e = Engine(scenario, Trace(enabled=False))
        e.run()
    t_off, _ = timed(off, args.repeat)
    nbytes = getattr(run.stepper.events, "nbytes", lambda: 0)()
    print(f"{args.nodes} nodes, {args.running} running, {args.pending + 2} pending: "
          f"{len(run.events):,} events{' (cut at REPORT_MAX_EVENTS)' if run.truncated else ''}, kept trace {nbytes / 1e6:.1f} MB")
    print(f"  report run (trace kept) + explain_events: {t_report:.2f} s   counts {rep['counts']}")
    print(f"  explain_run (the CLI; trace streamed):    {t_stream:.2f} s")
    print(f"  engine with the trace off:                 {t_off:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
