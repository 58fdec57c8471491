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
from engine.framework.interface import ScorePlugin
from engine.framework.runtime import ScoreSegment
from engine.plugins import registry
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


def _same_reads(got_log, ref_log, fresh, rng):
    """Every read of ``got_log`` (and of ``fresh``, the same events, none of its segments
    expanded yet) gives what ``ref_log`` (an EventLog of the same events one by one) gives."""
    segs = _segments(got_log)
    n = len(ref_log)
    assert len(got_log) == n
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
                   {"types": {"PreemptionDryRunStop", "PreemptionNodeResult"}},
                   {"batches": False, "types": {"HostSelected"}}):
            assert list(got_log.scan(a, b, **kw)) == list(ref_log.scan(a, b, **kw)), (a, b, kw)
            assert list(got_log.scan_back(b, a, **kw)) == list(ref_log.scan_back(b, a, **kw)), (a, b, kw)
        assert got_log[a:b] == ref_log[a:b]
    # a log forked inside a segment shares the parent's events up to there
    for at in bounds[:5]:
        fork = ForkedLog(got_log, at)
        assert len(fork) == at and list(fork.scan(max(0, at - 50), at)) == ref_log[max(0, at - 50):at]
        assert fork.span(at - 1) == (ref_log.span(at - 1)[0], min(ref_log.span(at - 1)[1], at))


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
        assert kinds == {"FilterSegment", "DryRunSegment", "ResultRows", "ScoreSegment"}, kinds
    else:
        assert kinds == {"ResultRows", "ScoreSegment"}, kinds
    _same_reads(got_log, ref_log, fresh, random.Random(seed))
    # the table's segments cost less than the events they stand for (ResultRows a little more)
    assert got_log.nbytes() < ref_log.nbytes() * (1 if seed % 2 == 0 else 1.2)


class RackScore(ScorePlugin):
    """An out-of-tree Score plugin (its scores kept as the lists it returned)."""
    name = "RackScore"

    def score(self, state, pod, node_name):
        return int(node_name[1:]) % 7 * 10, None


def scoring_scenario(seed, rack_score):
    """Pods scored by every default Score plugin (and RackScore, weight 3), some with preferred
    node affinity worth up to 280 (raw scores past a byte), on nodes of a few zones and racks,
    some tainted PreferNoSchedule."""
    rng = random.Random(seed)
    n = rng.randrange(40, 90)
    objects = []
    for i in range(n):
        spec = {"taints": [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]} if rng.random() < 0.2 else {}
        objects.append({"apiVersion": "v1", "kind": "Node", "spec": spec,
                        "metadata": {"name": f"n{i:03d}", "labels": {"zone": f"z{i % 3}", "rack": f"r{i % 5}"}},
                        "status": {"capacity": {"cpu": rng.choice(["2", "4", "8"]), "memory": "8Gi", "pods": "110"}}})
    actions = []
    for i in range(rng.randrange(80, 160)):
        spec = {"containers": [{"name": "c", "image": rng.choice(["pause", "nginx"]),
                                "resources": {"requests": {"cpu": rng.choice(["100m", "300m", "700m"])}}}]}
        if rng.random() < 0.5:
            terms = [(100, "zone", f"z{rng.randrange(3)}"), (100, "rack", f"r{rng.randrange(5)}"),
                     (80, "zone", f"z{rng.randrange(3)}")]
            spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}]}}
                for w, k, v in terms]}}
        if rng.random() < 0.3:
            spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "zone",
                                                  "whenUnsatisfiable": "ScheduleAnyway",
                                                  "labelSelector": {"matchLabels": {"app": "a"}}}]
        actions.append({"at": f"{rng.randrange(2)}s", "create": {
            "apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": f"p{i}", "namespace": "default", "labels": {"app": "a"}}}})
    actions.sort(key=lambda a: int(a["at"][:-1]))
    data = {"kind": "Scenario", "metadata": {"name": f"scoring-{seed}"}, "objects": objects, "actions": actions}
    if rack_score:
        data["scheduler"] = {"profiles": [{"plugins": {"score": {"enabled": [{"name": "RackScore", "weight": 3}]}}}]}
    return data


@pytest.mark.parametrize("seed", range(3))
def test_the_score_phase_as_one_segment_reads_as_its_batches(seed):
    """A cycle's Score and NormalizeScore PluginResults and its HostSelected are one
    ScoreSegment (node names by table row; the names themselves where an out-of-tree plugin
    scores; in-tree scores as bytes or an integer array, out-of-tree ones as lists). Read from
    an EventLog, every event, span and scan is what an EventLog of its events one by one
    gives; HostSelected's scores, detail and ties, built from it, agree with the
    Score/NormalizeScore events and with the node the engine's own totals chose."""
    registry.register(RackScore.name, lambda args, handle: RackScore())
    try:
        data = scoring_scenario(seed, rack_score=seed == 2)
        ref_log, ref_out = PlainLog(), _Hash()
        ref_state = _run(data, False, [ref_log, JsonLinesWriter(ref_out)])
        got_log, got_out, fresh, events = EventLog(), _Hash(), EventLog(), []
        got_state = _run(data, True, [got_log, JsonLinesWriter(got_out), fresh, events.append])
    finally:
        registry.unregister(RackScore.name)
    assert got_state == ref_state and got_out.h.hexdigest() == ref_out.h.hexdigest()
    segs = [s for s in _segments(got_log) if s.__class__ is ScoreSegment]
    assert len(segs) > 50 and all((s.rows is None) == (seed == 2) for s in segs)
    assert all(s.single_types == {"HostSelected"} for s in segs)
    kinds = {c.__class__.__name__ for s in segs for c in s.cols}
    assert kinds == ({"bytes", "array", "list"} if seed == 2 else {"bytes", "array"}), kinds
    _same_reads(got_log, ref_log, fresh, random.Random(seed))
    scores = {}      # (cycle, plugin, node) -> (Score's score, NormalizeScore's score, weighted)
    for e in events:
        if e["type"] == "PluginResult" and e["point"] == "Score":
            scores[e["cycle"], e["plugin"], e["node"]] = [e["score"], e["score"], None]
        elif e["type"] == "PluginResult" and e["point"] == "NormalizeScore":
            assert e["weightedScore"] == e["score"] * e["weight"]
            scores[e["cycle"], e["plugin"], e["node"]][1:] = [e["score"], e["weightedScore"]]
    hosts = [e for e in events if e["type"] == "HostSelected" and e["scores"] is not None]
    assert len(hosts) > 50
    for e in hosts:
        best = max(e["scores"].values())
        assert e["ties"] == [n for n, t in e["scores"].items() if t == best] and e["node"] == e["ties"][0]
        for node, plugins in e["detail"].items():
            assert e["scores"][node] == sum(d["weighted"] for d in plugins.values())
            for plugin, d in plugins.items():
                raw, norm, weighted = scores[e["cycle"], plugin, node]
                assert (d["score"], d["normalized"]) == (raw, norm)
                assert weighted is None or d["weighted"] == weighted
        assert got_log[e["seq"]] == e


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
