"""sha256 of the JSON Lines trace and of the final state of small benchmark workloads and of
every lesson and example: `python tests/engine/golden/digests.py [ENGINE_ROOT]` prints them
(ENGINE_ROOT: a directory holding an `engine/` package, e.g. from bench/snapshot_engine.sh;
default this checkout). test_golden.py compares this checkout with the stored digests
(digests.json: the engine before trace batches and the compact store, 80582fd, with the one
fix test_golden.py lists)."""
import hashlib
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def workloads():
    sys.path.insert(0, str(ROOT / "bench"))
    import workloads as w
    yield "SchedulingBasic-60n-40i-120m", w.scheduling_basic(60, 40, 120)
    yield "PreemptionBasic-20n-80i-30m", w.preemption_basic(20, 80, 30)


def files():
    for p in sorted(list((ROOT / "fixtures").glob("*.yaml")) + list((ROOT / "docs/examples").glob("*.yaml"))):
        if p.name in ("broken.yaml", "extender.yaml") or "gpu" in p.name or p.name.startswith("20-"):
            continue   # the broken example; those that need an example plugin or an extender
        yield p.name, p


def digests(trace=True):
    """{name: [trace digest, state digest]}; with ``trace=False`` the engine runs with the
    trace off (the headless benchmarks' mode) and the trace digest is None."""
    from engine import Engine, Scenario, Trace
    from engine.trace import JsonLinesWriter
    out = {}
    items = [(n, Scenario.from_dict(d)) for n, d in workloads()]
    items += [(n, Scenario.from_path(p)) for n, p in files()]
    for name, sc in items:
        buf = io.StringIO()
        tr = Trace(enabled=trace)
        if trace:
            tr.add_sink(JsonLinesWriter(buf))
        eng = Engine(sc, tr)
        eng.run(400_000_000)
        state = json.dumps(eng.state(), sort_keys=True, separators=(",", ":"))
        out[name] = [hashlib.sha256(buf.getvalue().encode()).hexdigest()[:24] if trace else None,
                     hashlib.sha256(state.encode()).hexdigest()[:24]]
    return out


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else str(ROOT))
    print(json.dumps(digests(), indent=1, sort_keys=True))
