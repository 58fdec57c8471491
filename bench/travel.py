#!/usr/bin/env python
"""Time travel in a long session: how long a jump or a step back takes, and what it holds.

    .venv/bin/python bench/travel.py [--nodes 500] [--init-pods 500] [--pods 1000]
                                     [--events 1000000] [--jumps 30] [--seed 1] [--no-checkpoints]

A session is created from a generated SchedulingBasic scenario (bench/workloads.py) in a
throw-away SQLite database, and run on the page's own path (``runner.control`` run-until,
in slices, as the Run button does) until at least ``--events`` trace events are recorded.
Then ``--jumps`` jumps to positions drawn with a seeded random generator, and as many
"back" steps after each, are timed as the page's server does them: ``runner.control`` (the
live session moves, the position is persisted) and then ``frames.render_frame`` (every panel
the page receives, rendered). Prints p50 / p95 / max of each, the checkpoints kept and their
bytes, the session's estimated bytes, and the process's peak RSS after the run and at the end.

``--no-checkpoints`` sets a checkpoint interval larger than the run: every move behind the head
replays from the start (what sessions did before checkpoints), for comparison.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _summary(name, xs):
    return (f"{name}: n={len(xs)} p50={statistics.median(xs) * 1000:.0f} ms "
            f"p95={_pct(xs, 0.95) * 1000:.0f} ms max={max(xs) * 1000:.0f} ms")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--init-pods", type=int, default=500)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--jumps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-checkpoints", action="store_true")
    a = ap.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="travel-")
    os.environ["DATABASE_PATH"] = os.path.join(tmp, "db.sqlite3")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "visualizer.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    import yaml
    import workloads
    from visualizer import frames, runner

    if a.no_checkpoints:
        runner.CHECKPOINT_OPTIONS = {"min_events": 10 ** 12}
    text = yaml.safe_dump(workloads.scheduling_basic(a.nodes, a.init_pods, a.pods), sort_keys=False)
    session = runner.create_session(text, "travel.yaml")
    sid = session.pk

    t0 = time.perf_counter()
    until = 0.0
    while True:
        with runner.open_live(sid) as live:
            n = live.high_water
        if n >= a.events:
            break
        until += 1.0
        while runner.control(sid, {"action": "run-until", "until": until})["more"]:
            pass
        with runner.open_live(sid) as live:
            if live.high_water == n and until > 30:
                break           # the run ended before --events
    build = time.perf_counter() - t0
    with runner.open_live(sid) as live:
        head = live.high_water
        cps = live.checkpointer.checkpoints
        est = live.estimated_bytes() if callable(getattr(live, "estimated_bytes", None)) else live.estimated_bytes
        print(f"SchedulingBasic nodes={a.nodes} init={a.init_pods} pods={a.pods}: {head:,} events in "
              f"{build:.1f} s (virtual {until:g} s); checkpoints={len(cps)} "
              f"({sum(cp.nbytes for cp in cps) / 2**20:.1f} MiB, min_events now "
              f"{live.checkpointer.min_events:,}, last take {cps[-1].seconds * 1000:.0f} ms)"
              if cps else f"{head:,} events in {build:.1f} s; no checkpoints")
        print(f"session estimated bytes: {est / 2**20:.0f} MiB; peak RSS so far (the run) "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")

    rng = random.Random(a.seed)
    jump, jump_frame, back, back_frame, frame = [], [], [], [], []

    def timed(msg, moved, moved_and_shown):
        t = time.perf_counter()
        runner.control(sid, msg)
        t1 = time.perf_counter()
        frames.render_frame(sid)
        t2 = time.perf_counter()
        moved.append(t1 - t)
        moved_and_shown.append(t2 - t)
        frame.append(t2 - t1)
    for _ in range(a.jumps):
        timed({"action": "jump", "position": rng.randrange(0, head)}, jump, jump_frame)
        timed({"action": "back"}, back, back_frame)
    if not jump:
        return
    print(_summary("jump (control)", jump))
    print(_summary("jump + render_frame", jump_frame))
    print(_summary("back (control)", back))
    print(_summary("back + render_frame", back_frame))
    print(_summary("render_frame alone", frame))
    print("render_frame ms, in order:", " ".join(f"{x * 1000:.0f}" for x in frame))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
