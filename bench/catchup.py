#!/usr/bin/env python
"""Another process's change: what a server process pays to bring its copy of a session up to
date, by rebuilding it from the database (a new ``Timeline`` replaying the whole run, as
before issue 27's catch-up) or by running its copy on (``Timeline.extend_head``).

    .venv/bin/python bench/catchup.py [--nodes 500] [--pending 1000] [--at 20000] [--steps 10] [--repeat 3]

The cluster is bench/report.py's kubectl List (``--nodes`` workers, ``--pending`` pods), imported
as the page imports it. A copy stands after ``--at`` events; "another process" then moves the run
on by ``--steps`` scheduling cycles; the copy catches up (or is rebuilt). Both end with the same
events (checked). Prints the median of ``--repeat``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import Scenario                                     # noqa: E402
from engine.checkpoint import Checkpointer                      # noqa: E402
from engine.importers import dump_scenario, import_files        # noqa: E402
from engine.timeline import Timeline                            # noqa: E402
from report import dump                                         # noqa: E402  (bench/report.py)


def timeline(scenario, high_water, clock_us):
    return Timeline(scenario, [], high_water, clock_us, high_water, checkpointer=Checkpointer(budget_bytes=256 << 20),
                    action_of=lambda i, inj: None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--at", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    imported = import_files([("dump.yaml", yaml.safe_dump(dump(args.nodes, 0, args.pending)))])
    scenario = Scenario.from_text(dump_scenario(imported.scenario))

    # where the copy stands, and where the other process took the run
    other = timeline(scenario, 0, 0)
    while other.high_water < args.at and other.step("event"):
        pass
    at, at_clock = other.high_water, other.head_clock_us
    for _ in range(args.steps):
        other.step("cycle")
    target, target_clock = other.high_water, other.head_clock_us
    expected = list(other.events[:target])

    rebuild_times, catch_times = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        fresh = timeline(scenario, target, target_clock)
        rebuild_times.append(time.perf_counter() - t)
        assert list(fresh.events[:target]) == expected
        copy = timeline(scenario, at, at_clock)
        t = time.perf_counter()
        ok = copy.extend_head(target, target_clock)
        catch_times.append(time.perf_counter() - t)
        assert ok and list(copy.events[:target]) == expected
    print(f"{args.nodes} nodes, {args.pending} pending pods; the copy at {at:,} events, the other process "
          f"{args.steps} cycles on ({target - at:,} events more, {target:,} in all)")
    print(f"  rebuild from the database (replay the whole run): {statistics.median(rebuild_times) * 1000:9.2f} ms")
    print(f"  catch up (run the copy on):                       {statistics.median(catch_times) * 1000:9.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
