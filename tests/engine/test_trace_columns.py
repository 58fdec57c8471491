"""The trace recorded as columns (engine/trace.py Segment, engine/resourcefit.py FilterSegment
and DryRunSegment) gives exactly the events the per-node path emits one by one.

Seeded random clusters built to need preemption (tests/engine/test_resourcefit.py's) run with
the trace on twice: on the node table (the Filter search and preemption's dry runs recorded
as segments) and with the table out of reach (resourcefit.MIN_NODES), where every node is
evaluated by the plugins and every event emitted on its own. Compared: the final state, the
JSON Lines bytes (a sink without add_segment: the segments expanded by Trace.emit_segment),
and an EventLog's reads (index, every event in order, slices, scan and scan_back with and
without batches and types, span, type_at, a ForkedLog) against an EventLog of the per-node
run's events."""
import hashlib
import json
import random

import pytest

from engine import Engine, Scenario, Trace, resourcefit
from engine.trace import EventBatch, JsonLinesWriter, Segment
from engine.tracestore import EventLog, ForkedLog

from .test_resourcefit import scenario


UNTIL = 2_000_000     # virtual microseconds: the first preemptions of each cluster


def _run(data, on, sinks):
    old = resourcefit.MIN_NODES
    if not on:
        resourcefit.MIN_NODES = 10 ** 9
    try:
        tr = Trace()
        for s in sinks:
            tr.add_sink(s)
        eng = Engine(Scenario.from_dict(data), tr)
        eng.run(UNTIL)
        return json.dumps(eng.state(), sort_keys=True)
    finally:
        resourcefit.MIN_NODES = old


class PlainLog(EventLog):
    """An EventLog that takes no segment: Trace.emit_segment hands it the events one by one
    (single events and batches), which it stores as it always did."""
    add_segment = None


def _segments(log):
    return [b for b in log._batches if isinstance(b, Segment)]


class _Hash:
    """A JSON Lines target keeping only the digest of what is written."""
    def __init__(self):
        self.h = hashlib.sha256()

    def write(self, s):
        self.h.update(s.encode())


@pytest.mark.parametrize("seed", range(5))
def test_segments_expand_to_the_per_node_events(seed):
    data = scenario(seed)
    ref_log, ref_out = PlainLog(), _Hash()
    ref_state = _run(data, False, [ref_log, JsonLinesWriter(ref_out)])
    got_log, got_out, fresh = EventLog(), _Hash(), EventLog()
    got_state = _run(data, True, [got_log, JsonLinesWriter(got_out), fresh])
    assert got_state == ref_state
    # a sink without add_segment gets the events one by one: the same bytes
    assert got_out.h.hexdigest() == ref_out.h.hexdigest()
    assert not _segments(ref_log)
    segs = _segments(got_log)
    kinds = {type(s).__name__ for s in segs}
    if seed % 2 == 0:       # every node on the table: every kind occurs
        assert kinds == {"FilterSegment", "DryRunSegment", "ResultRows"}, kinds
    else:
        assert kinds == {"ResultRows"}, kinds
    n = len(ref_log)
    assert len(got_log) == n
    rng = random.Random(seed)
    # events by index from a log none of whose segments was expanded yet, in any order
    for i in rng.sample(range(n), min(n, 3000)):
        assert fresh[i] == ref_log[i], i
    # every event in order
    assert all(a == b for a, b in zip(got_log, ref_log))
    # spans and types as the per-node log stores them (a batch's extent; single events),
    # over whole segments and a sample of the rest
    where = set(rng.sample(range(n), min(n, 5000)))
    for seg in rng.sample(segs, min(len(segs), 6)):
        where.update(range(max(0, seg.start - 3), min(n, seg.start + seg.n + 3)))
    for i in sorted(where):
        assert got_log.span(i) == ref_log.span(i), i
        assert got_log.type_at(i) == ref_log.type_at(i), i
    # scans over ranges that start and stop inside segments
    bounds = sorted(rng.sample(range(n), 16))
    if segs:
        seg = rng.choice(segs)
        bounds += [seg.start + 1, seg.start + seg.n - 1, seg.start, seg.start + seg.n]
    for a, b in zip(bounds[::2], bounds[1::2]):
        b = min(b, a + 20000)
        for kw in ({}, {"batches": False}, {"types": {"PluginResult", "CycleEnd"}},
                   {"batches": False, "types": {"PluginResult", "CycleEnd"}},
                   {"batches": False, "types": frozenset(("ReprieveStep", "PreemptionCandidate"))},
                   {"types": {"PreemptionDryRunStop", "PreemptionNodeResult"}}):
            assert list(got_log.scan(a, b, **kw)) == list(ref_log.scan(a, b, **kw)), (a, b, kw)
            assert list(got_log.scan_back(b, a, **kw)) == list(ref_log.scan_back(b, a, **kw)), (a, b, kw)
        assert got_log[a:b] == ref_log[a:b]
    # a log forked inside a segment shares the parent's events up to there
    for at in bounds[:5]:
        fork = ForkedLog(got_log, at)
        assert len(fork) == at and list(fork.scan(max(0, at - 50), at)) == ref_log[max(0, at - 50):at]
        assert fork.span(at - 1) == (ref_log.span(at - 1)[0], min(ref_log.span(at - 1)[1], at))
    # the table's segments cost less than the events they stand for (ResultRows a little more)
    assert got_log.nbytes() < ref_log.nbytes() * (1 if seed % 2 == 0 else 1.2)


def test_a_segment_reaches_each_kind_of_sink_as_its_events():
    """Trace.emit_segment: a sink with add_segment keeps it; one with add_batch gets single
    events and batches; a plain callable gets every event as a dict."""
    class Two(Segment):
        __slots__ = ()
        single_types = frozenset(("A",))
        batch_types = frozenset(("B",))

        def __init__(self):
            self.n = 4
            self.time = None

        def records(self):
            yield {"seq": self.start, "time": self.time, "type": "A", "x": [1]}
            yield EventBatch(self.start + 1, self.time, "B", ("i",), {}, {"i": [1, 2, 3]}, 3)

    plain, batched, kept = [], [], []

    class Batched(list):
        def __call__(self, e):
            self.append(e)

        def add_batch(self, b):
            self.append(("batch", b.start, b.n))

    class Kept:
        def __call__(self, e):
            kept.append(e)

        def add_segment(self, s):
            kept.append(("segment", s.start, s.n))

    b = Batched()
    tr = Trace()
    tr.add_sink(plain.append)
    tr.add_sink(b)
    tr.add_sink(Kept())
    log = EventLog()
    tr.add_sink(log)
    tr.emit("X")
    tr.emit_segment(Two())
    tr.emit("Y")
    assert [e["seq"] for e in plain] == list(range(6))
    assert [e["type"] for e in plain] == ["X", "A", "B", "B", "B", "Y"]
    assert b[1]["type"] == "A" and b[2] == ("batch", 2, 3) and b[3]["type"] == "Y"
    assert kept[1] == ("segment", 1, 4)
    assert list(log) == plain
    assert log.span(3) == (2, 5) and log.span(1) == (1, 2) and log.type_at(4) == "B"
    assert list(log.scan(types={"X", "Y"})) == [plain[0], plain[5]]
    assert list(log.scan(batches=False)) == [plain[0], plain[1], plain[5]]
    e = log[1]
    e["x"].append(2)
    assert log[1]["x"] == [1]       # fresh copies
