#!/usr/bin/env python
"""Scheduling-throughput benchmarks for the engine, in the shape of upstream's scheduler_perf.

    python bench/run.py [--workload NAME] [--nodes N] [--pods N] [--init-pods N]
                        [--trace off|file|memory|both] [--json OUT] [--tracemalloc separate|same|off]
                        [--time-limit SECONDS] [--progress SECONDS]

Without --workload, every workload runs at its upstream 500Nodes size.  Each measurement runs in
a fresh child process (so ru_maxrss is that measurement's own high-water mark):

1. the scenario dict is built in memory and loaded with Scenario.from_dict (not timed);
2. init phase: ``Engine.run(until=0)`` schedules the init pods (pending at t=0) -- timed and
   reported separately, as upstream's createPods op waits for them before measuring;
3. measured phase: ``Engine.run()`` applies the measured pods' create actions (t=1s) and runs
   to idle.  Only this call is the measured wall time (time.perf_counter).

Pods scheduled = measured pods bound: with the trace off, measured pods in phase Running in
``engine.state()``; with the trace written to a file, ``Bound`` events of measured pods in the
file.  Peak memory: tracemalloc's peak over Engine construction and both phases (by default
from a second, untimed run with tracemalloc on, so tracing allocations does not slow the timed
run) and ru_maxrss of the timed child process (which also holds the scenario and interpreter).
See docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# --engine-root DIR (or BENCH_ENGINE_ROOT) benchmarks the engine/ package found in DIR instead,
# e.g. a frozen copy taken while others keep editing the working tree.
ENGINE_ROOT = Path(os.environ.get("BENCH_ENGINE_ROOT") or ROOT)
for _i, _a in enumerate(sys.argv):
    if _a == "--engine-root" and _i + 1 < len(sys.argv):
        ENGINE_ROOT = Path(sys.argv[_i + 1]).resolve()
    elif _a.startswith("--engine-root="):
        ENGINE_ROOT = Path(_a.split("=", 1)[1]).resolve()
sys.path.insert(0, str(ENGINE_ROOT))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from workloads import WORKLOADS, default_init_pods  # noqa: E402

MEASURED_PREFIX = {"SchedulingBasic": "default/pod-", "PreemptionBasic": "default/high-pod-"}


def _maxrss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def _count_bound_in_file(path, start, prefix):
    """Bound events of measured pods (and all Bound events) after byte offset ``start``."""
    measured = total = 0
    with open(path, "rb") as fh:
        fh.seek(start)
        for line in fh:
            if b'"type":"Bound"' not in line:
                continue
            ev = json.loads(line)
            if ev.get("type") != "Bound":
                continue
            total += 1
            if ev["pod"].startswith(prefix):
                measured += 1
    return measured, total


def imported_workload(config, test_case, workload):
    """A scheduler_perf workload as ``python -m engine import CONFIG --test-case --workload``
    makes it: (scenario dict, its nodes, init pods, measured pods, the measured op's virtual time
    in microseconds, the time the next op comes or None, the measured pods' key prefixes).

    scheduler_perf measures the pods of the ``createPods`` ops with ``collectMetrics: true``
    (``ImportResult.measured``); every pod created before that op is an init pod. The measured
    phase runs from that op's virtual time up to the next op's (1 s later, the importer's
    ``--op-interval``), or to idle when it is the last."""
    from engine.importers import import_paths
    imported = import_paths([config], test_case=test_case, workload=workload)
    if not imported.measured:
        raise SystemExit(f"{config}: {test_case}/{workload} has no createPods op with collectMetrics: true")
    data = imported.scenario
    start = min(t for t, _ in imported.measured)
    prefixes = tuple(sorted({f"{ns}/" for t, ns in imported.measured if t == start}))
    nodes = sum(1 for o in data.get("objects", []) if o.get("kind") == "Node")
    nodes += sum(1 for a in data.get("actions", []) if "create" in a and a["create"].get("kind") == "Node")

    def pods_at(cond):
        n = sum(1 for o in data.get("objects", []) if o.get("kind") == "Pod" and cond(0, o))
        return n + sum(1 for a in data.get("actions", []) if "create" in a and a["create"].get("kind") == "Pod"
                       and cond(_at_us(a["at"]), a["create"]))

    def measured(t, o):
        return t == start and f'{o["metadata"].get("namespace", "default")}/'.startswith(prefixes)
    init = pods_at(lambda t, o: t < start)
    pods = pods_at(measured)
    later = [_at_us(a["at"]) for a in data.get("actions", []) if _at_us(a["at"]) > start]
    return data, nodes, init, pods, start, (min(later) if later else None), prefixes


def _at_us(at) -> int:
    """A scenario action's ``at`` (seconds, or a duration string) in microseconds."""
    if isinstance(at, (int, float)):
        return int(round(at * 1_000_000))
    from engine.quantity import parse_duration
    return int(parse_duration(at))


def measure(workload, nodes, init_pods, pods, trace_mode, use_tracemalloc=False,
            time_limit=None, progress=None, keep_trace=None, config=None, test_case=None) -> dict:
    """One measurement, in this process.  Returns a result dict. With ``config`` (a
    scheduler_perf performance-config.yaml), ``test_case`` and ``workload`` name one of its
    workloads (``imported_workload``); ``nodes``, ``init_pods`` and ``pods`` are then its own."""
    from engine import Engine, Scenario, Trace
    from engine.trace import JsonLinesWriter
    import tracemalloc

    t = time.perf_counter()
    init_until, measured_until = 0, None
    if config is not None:
        data, nodes, init_pods, pods, start, next_op, prefix = imported_workload(config, test_case, workload)
        # measured pods at t=0 (no init pods before them): no init phase; the measured one then
        # includes loading the objects (the engine's first unit)
        init_until = start - 1 if start > 0 else None
        measured_until = next_op - 1 if next_op is not None else None
        label = f"{test_case}/{workload}"
    else:
        builder = WORKLOADS[workload][0]
        prefix = MEASURED_PREFIX[workload]
        data = builder(nodes, init_pods, pods)
        label = workload
    scenario = Scenario.from_dict(data, f"<bench {label}>")
    build_s = time.perf_counter() - t
    del data  # the Scenario keeps its own reference (raw); nothing else is needed
    gc.collect()
    rss_before = _maxrss_bytes()

    trace_path = None
    fh = None
    trace = Trace(enabled=False)
    if trace_mode == "file":
        if keep_trace:
            trace_path = keep_trace
            fh = open(trace_path, "w", encoding="utf-8")
        else:
            fd, trace_path = tempfile.mkstemp(prefix="bench-trace-", suffix=".jsonl")
            fh = os.fdopen(fd, "w", encoding="utf-8")
        trace.add_sink(JsonLinesWriter(fh))

    store = None
    if trace_mode == "memory":
        # what the web UI keeps: the compact store (engine/tracestore.py); an engine from
        # before it existed keeps a list of dicts
        try:
            from engine.tracestore import EventLog
            store = EventLog()
        except ImportError:
            store = []
        trace.add_sink(store if not isinstance(store, list) else store.append)

    if use_tracemalloc:
        tracemalloc.start()
    try:
        engine = Engine(scenario, trace)
        load_start = os.getloadavg()[0]
        t0 = time.perf_counter()
        c0 = time.process_time()
        if init_until is not None:
            engine.run(until=init_until)
        c1 = time.process_time()
        t1 = time.perf_counter()
        init_bound = len(engine.metrics["pod_scheduling_attempts"])
        running_before = sum(1 for k, p in engine.state()["pods"].items()
                             if p["phase"] == "Running" and k.startswith(prefix)) if config is not None else 0
        init_pos = None
        if fh is not None:
            fh.flush()
            init_pos = fh.tell()

        partial = False
        t2 = time.perf_counter()
        c2 = time.process_time()
        if time_limit is None and progress is None:
            engine.run(until=measured_until)
        else:
            # the same loop as Engine.run(), checking the clock every 64 steps
            steps = 0
            next_report = t2 + progress if progress else None
            deadline = t2 + time_limit if time_limit else None
            while engine.step(measured_until):
                steps += 1
                if steps & 63:
                    continue
                now = time.perf_counter()
                if next_report is not None and now >= next_report:
                    done = len(engine.metrics["pod_scheduling_attempts"]) - init_bound
                    print(f"[progress] {label} trace={trace_mode} {now - t2:.0f}s: "
                          f"{done} binds in the measured phase, virtual t={engine.now / 1e6:g}s",
                          file=sys.stderr, flush=True)
                    next_report = now + progress
                if deadline is not None and now >= deadline:
                    partial = True
                    break
            if not partial and measured_until is None:
                engine.idle_reached = True
        c3 = time.process_time()
        t3 = time.perf_counter()
        load_end = os.getloadavg()[0]
        tm_peak = None
        if use_tracemalloc:
            tm_peak = tracemalloc.get_traced_memory()[1]
    finally:
        if use_tracemalloc:
            tracemalloc.stop()
        if fh is not None:
            fh.close()

    rss = _maxrss_bytes()
    measured_s = t3 - t2
    binds_in_measured_phase = len(engine.metrics["pod_scheduling_attempts"]) - init_bound
    state = engine.state()
    running = [k for k, p in state["pods"].items() if p["phase"] == "Running"]
    measured_running = sum(1 for k in running if k.startswith(prefix)) - running_before
    init_running_after_init = init_bound  # every bind in run(until=0) is an init pod
    res = {
        "workload": label, "config": config, "nodes": nodes, "initPods": init_pods, "measuredPods": pods,
        "trace": trace_mode, "tracemallocDuringRun": use_tracemalloc,
        "buildSeconds": round(build_s, 4),
        "initSeconds": round(t1 - t0, 4), "initPodsBound": init_running_after_init,
        "initPodsPerSecond": round(init_running_after_init / (t1 - t0), 2) if t1 > t0 else None,
        "measuredSeconds": round(measured_s, 4),
        "measuredCpuSeconds": round(c3 - c2, 4), "initCpuSeconds": round(c1 - c0, 4),
        "loadavg1Start": load_start, "loadavg1End": load_end,
        "partial": partial,
        "virtualTimeEnd": engine.now / 1e6,
        "schedulingCycles": state["schedulingCycle"],
        "preemptionVictims": state["metrics"]["preemption_victims_total"],
        "bindsInMeasuredPhase": binds_in_measured_phase,
        "runningPodsAtEnd": len(running),
        "maxrssBytes": rss, "maxrssBeforeEngineBytes": rss_before,
        "tracemallocPeakBytes": tm_peak,
    }
    if trace_mode == "file":
        measured_bound, bound_events = _count_bound_in_file(trace_path, init_pos, prefix)
        res["measuredPodsBound"] = measured_bound
        res["boundEventsInMeasuredPhase"] = bound_events
        res["traceBytes"] = os.path.getsize(trace_path)
        res["traceBytesMeasuredPhase"] = res["traceBytes"] - init_pos
        res["traceEvents"] = engine.trace.seq
        res["countedFrom"] = "Bound events in the trace file"
        if not keep_trace:
            os.unlink(trace_path)
        else:
            res["tracePath"] = trace_path
    else:
        res["measuredPodsBound"] = measured_running
        res["countedFrom"] = "measured pods in phase Running in engine.state()"
        res["traceBytes"] = None
    if store is not None:
        res["traceEvents"] = len(store)
        res["traceStore"] = type(store).__name__
        res["traceStoreBytes"] = store.nbytes() if hasattr(store, "nbytes") else None
        res["traceStoreBytesPerEvent"] = (round(res["traceStoreBytes"] / len(store), 1)
                                          if res["traceStoreBytes"] and len(store) else None)
    res["measuredPodsRunningAtEnd"] = measured_running
    res["podsPerSecond"] = round(res["measuredPodsBound"] / measured_s, 2) if measured_s > 0 else None
    res["podsPerCpuSecond"] = round(res["measuredPodsBound"] / (c3 - c2), 2) if c3 > c2 else None
    return res


# ---------------------------------------------------------------------------- orchestration

def engine_digest(root=None) -> str:
    """sha256 (12 hex digits) over engine/**/*.py under the engine root: which code was measured."""
    import hashlib
    h = hashlib.sha256()
    base = Path(root or ENGINE_ROOT) / "engine"
    for f in sorted(base.rglob("*.py")):
        h.update(str(f.relative_to(base)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _child(spec: dict) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--engine-root", str(ENGINE_ROOT),
           "--_child", json.dumps(spec)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"benchmark child failed ({p.returncode}): {' '.join(cmd)}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _mib(b):
    return "-" if b is None else f"{b / 2**20:.1f}"


def print_table(results, out=sys.stdout):
    cols = [("workload", max([15] + [len(r["workload"]) for r in results])), ("nodes", 6), ("init", 6), ("pods", 6), ("trace", 5),
            ("bound", 6), ("wall s", 8), ("pods/s", 8), ("cpu s", 8), ("pods/cpu-s", 10),
            ("init s", 7), ("tm peak MiB", 11),
            ("maxrss MiB", 10), ("trace MiB", 9)]
    head = " ".join(f"{n:>{w}}" for n, w in cols)
    print(head, file=out)
    print("-" * len(head), file=out)
    for r in results:
        vals = [r["workload"], r["nodes"], r["initPods"], r["measuredPods"], r["trace"],
                f'{r["measuredPodsBound"]}{"*" if r["partial"] else ""}',
                f'{r["measuredSeconds"]:.2f}', f'{r["podsPerSecond"]:.1f}',
                f'{r["measuredCpuSeconds"]:.2f}', f'{r["podsPerCpuSecond"]:.1f}', f'{r["initSeconds"]:.2f}',
                _mib(r.get("tracemallocPeakBytes")), _mib(r["maxrssBytes"]), _mib(r.get("traceBytes"))]
        print(" ".join(f"{str(v):>{w}}" for v, (_, w) in zip(vals, cols)), file=out)
    if any(r["partial"] for r in results):
        print("* partial: stopped by --time-limit; pods/s is the rate so far", file=out)


def _git_describe():
    if ENGINE_ROOT.resolve() != ROOT.resolve():
        marker = ENGINE_ROOT / ".engine-commit"   # written by bench/snapshot_engine.sh
        return marker.read_text().strip() if marker.exists() else None
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "diff", "--stat", "HEAD", "--", "engine"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty(engine/)" if dirty else "")
    except OSError:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python bench/run.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", action="append",
                    help="workload to run (repeatable): one of " + ", ".join(sorted(WORKLOADS)) + "; default: all. "
                         "With --config: the config's workload name (e.g. 5000Nodes)")
    ap.add_argument("--config", metavar="PERFORMANCE_CONFIG",
                    help="a scheduler_perf performance-config.yaml (kubernetes v1.28 "
                         "test/integration/scheduler_perf/config/): run --test-case's --workload, "
                         "imported as `python -m engine import` does, its measured phase as scheduler_perf measures it")
    ap.add_argument("--test-case", action="append", metavar="NAME",
                    help="with --config: the test case (repeatable; each with every --workload)")
    ap.add_argument("--nodes", type=int, help="nodes (default: the workload's upstream 500Nodes size)")
    ap.add_argument("--pods", type=int, help="measured pods (default: upstream's measurePods)")
    ap.add_argument("--init-pods", type=int,
                    help="init pods scheduled before measurement (default: upstream's initPods for "
                         "500/5000 nodes, else proportional)")
    ap.add_argument("--trace", choices=["off", "file", "memory", "both"], default="both")
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON")
    ap.add_argument("--tracemalloc", choices=["separate", "same", "off"], default="separate",
                    help="separate: a second, untimed run per measurement with tracemalloc on "
                         "(default); same: trace allocations during the timed run (slower); off")
    ap.add_argument("--time-limit", type=float, metavar="SECONDS",
                    help="stop the measured phase after SECONDS of wall time and report the partial rate")
    ap.add_argument("--progress", type=float, metavar="SECONDS",
                    help="print progress to stderr every SECONDS during the measured phase")
    ap.add_argument("--keep-trace", metavar="PATH", help="keep the trace file (trace=file only)")
    ap.add_argument("--in-process", action="store_true",
                    help="measure in this process instead of a child per measurement")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="time each measurement N times (fresh processes) and report the fastest")
    ap.add_argument("--engine-root", metavar="DIR",
                    help="import engine/ from DIR (default: this checkout)")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._child:
        spec = json.loads(args._child)
        print(json.dumps(measure(**spec)))
        return 0

    modes = ["off", "file"] if args.trace == "both" else [args.trace]
    results = []
    if args.config:
        if not args.test_case or not args.workload:
            ap.error("--config needs --test-case and --workload")
        for tc in args.test_case:
            for w in args.workload:
                for mode in modes:
                    spec = dict(workload=w, test_case=tc, config=str(Path(args.config).resolve()), nodes=None,
                                init_pods=None, pods=None, trace_mode=mode,
                                use_tracemalloc=args.tracemalloc == "same", time_limit=args.time_limit,
                                progress=args.progress, keep_trace=args.keep_trace if mode == "file" else None)
                    results.append(_measured(spec, args))
        return _report(results, args, argv)
    unknown = [w for w in args.workload or () if w not in WORKLOADS]
    if unknown:
        ap.error(f"--workload {unknown[0]}: one of {', '.join(sorted(WORKLOADS))} (or use --config)")
    workloads = args.workload or sorted(WORKLOADS, key=lambda w: w != "SchedulingBasic")
    for w in workloads:
        _, d_nodes, d_init, d_pods = WORKLOADS[w]
        nodes = args.nodes if args.nodes is not None else d_nodes
        pods = args.pods if args.pods is not None else d_pods
        init = args.init_pods if args.init_pods is not None else (
            d_init if nodes == d_nodes else default_init_pods(w, nodes))
        for mode in modes:
            spec = dict(workload=w, nodes=nodes, init_pods=init, pods=pods, trace_mode=mode,
                        use_tracemalloc=args.tracemalloc == "same", time_limit=args.time_limit,
                        progress=args.progress,
                        keep_trace=args.keep_trace if mode == "file" else None)
            print(f"# {w}: {nodes} nodes, {init} init pods, {pods} measured pods, trace={mode} ...",
                  file=sys.stderr, flush=True)
            results.append(_measured(spec, args))
    return _report(results, args, argv)


def _measured(spec, args) -> dict:
    """One measurement as the options ask: in a child process (or this one), ``--repeat``
    times (the fastest kept), and a separate tracemalloc pass."""
    if spec.get("config"):
        print(f"# {spec['test_case']}/{spec['workload']} from {spec['config']}, trace={spec['trace_mode']} ...",
              file=sys.stderr, flush=True)
    runs = [measure(**spec) if args.in_process else _child(spec) for _ in range(args.repeat)]
    r = min(runs, key=lambda x: x["measuredSeconds"])
    if args.repeat > 1:
        r = dict(r, repeats=args.repeat,
                 allMeasuredSeconds=[x["measuredSeconds"] for x in runs],
                 allMeasuredCpuSeconds=[x["measuredCpuSeconds"] for x in runs],
                 maxrssBytes=max(x["maxrssBytes"] for x in runs))
    if args.tracemalloc == "separate":
        print("#   tracemalloc pass ...", file=sys.stderr, flush=True)
        spec2 = dict(spec, use_tracemalloc=True, progress=None, keep_trace=None)
        r2 = measure(**spec2) if args.in_process else _child(spec2)
        r["tracemallocPeakBytes"] = r2["tracemallocPeakBytes"]
        r["tracemallocRunSeconds"] = r2["measuredSeconds"]
        r["tracemallocRunPartial"] = r2["partial"]
    print(f"#   {r['measuredPodsBound']} pods bound in {r['measuredSeconds']:.2f}s = "
          f"{r['podsPerSecond']} pods/s (cpu {r['measuredCpuSeconds']:.2f}s; "
          f"load {r['loadavg1Start']:.2f}->{r['loadavg1End']:.2f})", file=sys.stderr, flush=True)
    return r


def _report(results, args, argv) -> int:
    print_table(results)
    if args.json:
        doc = {
            "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": "python bench/run.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "engineCommit": _git_describe(),
            "engineRoot": str(ENGINE_ROOT), "engineDigest": engine_digest(),
            "results": results,
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
