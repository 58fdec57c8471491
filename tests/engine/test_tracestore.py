"""The compact event store (engine/tracestore.py) and trace batches (engine/trace.py): an
EventLog hands out exactly the events a list sink holds, for every lesson and example and for
a generated cluster large enough to fill batches, and batches keep the order of emission."""
import json
from pathlib import Path

import pytest

from engine import Engine, Scenario, Trace
from engine.framework.interface import FilterPlugin
from engine.plugins import registry
from engine.trace import EventBatch, JsonLinesWriter
from engine.tracestore import EventLog

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in list((ROOT / "fixtures").glob("*.yaml")) + list((ROOT / "docs/examples").glob("*.yaml"))
               if p.name not in ("broken.yaml", "extender.yaml"))   # extender.yaml needs its extender
QUIET = ("Filter", "Score", "NormalizeScore")


def _run(scenario, until=400_000_000, plugins=None):
    events, log = [], EventLog()
    tr = Trace()
    tr.add_sink(events.append)
    tr.add_sink(log)
    Engine(scenario, tr).run(until)
    return events, log


def _same(a, b):
    """Equal and of the same types all the way down (1 != 1.0 != True, list != tuple)."""
    return repr(a) == repr(b) and a == b


def _check(events, log):
    assert len(log) == len(events)
    assert all(_same(a, b) for a, b in zip(log, events))
    for i in range(0, len(events), 3):
        assert _same(log[i], events[i])
        assert log.type_at(i) == events[i]["type"]
    assert _same(log[-1], events[-1])
    mid = len(events) // 2
    assert _same(log[mid:mid + 40], events[mid:mid + 40])
    assert _same(log[5:1:-1], events[5:1:-1])
    not_batched = [e for e in events
                   if not (e["type"] == "PluginResult" and e["point"] in QUIET and "error" not in e)]
    assert _same(list(log.scan(batches=False)), not_batched)
    assert _same(list(log.scan(mid, mid + 17)), events[mid:mid + 17])
    # only some types: the others are not expanded (and not given)
    for ts in ({"QueueTransition"}, {"HostSelected", "PluginResult", "CycleEnd"}):
        assert _same(list(log.scan(types=ts)), [e for e in events if e["type"] in ts])
        assert _same(list(log.scan_back(types=ts)), [e for e in reversed(events) if e["type"] in ts])
        window = [e for e in not_batched if mid <= e["seq"] < mid + 300 and e["type"] in ts]
        assert _same(list(log.scan(mid, mid + 300, batches=False, types=ts)), window)
        assert _same(list(log.scan_back(mid + 300, mid, batches=False, types=ts)), window[::-1])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_lesson_and_example_reads_back_exactly(path, lesson_plugins):
    if "gpu" in path.name:
        pytest.skip("needs the gpu example plugin (tests/engine/test_examples.py runs it)")
    events, log = _run(Scenario.from_path(path))
    _check(events, log)


def _cluster(nodes=60, pods=40):
    objs = []
    for i in range(nodes):
        spec = {"unschedulable": True} if i % 17 == 5 else {}
        if i % 7 == 3:
            spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}",
                     "labels": {"zone": f"z{i % 3}"}}, "spec": spec,
                     "status": {"allocatable": {"cpu": str(1 + i % 4), "memory": "8Gi", "pods": "10"}}})
    for j in range(pods):
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{j:03d}", "namespace": "default"},
                     "spec": {"priority": (j % 3) * 100,
                              "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{300 + 100 * (j % 9)}m"}}}]}})
    return Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "generated"}, "objects": objs})


def test_a_generated_cluster_reads_back_exactly_and_is_small():
    events, log = _run(_cluster(30, 150))
    assert sum(1 for e in events if e["type"] == "PluginResult" and e["point"] == "Filter") > 1000
    assert any(e["type"] == "PreemptionCandidate" or e.get("dryRun") for e in events)   # dry runs too
    _check(events, log)
    assert log.nbytes() < 0.25 * sum(len(json.dumps(e)) for e in events)


def test_json_lines_are_the_same_with_batches():
    """A sink without add_batch gets each event as a dict: the CLI's file is unchanged."""
    import io
    out = io.StringIO()
    events, log = [], EventLog()
    tr = Trace()
    tr.add_sink(JsonLinesWriter(out))
    tr.add_sink(log)
    Engine(_cluster(30, 20), tr).run()
    lines = out.getvalue().splitlines()
    assert lines == [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in log]


def test_values_keep_their_types():
    log = EventLog()
    tr = Trace()
    tr.add_sink(log)
    odd = [None, True, False, 0, 1, -0.0, 0.0, 1.0, float("inf"), 2 ** 40, 2 ** 70, "", "é",
           [], [1, (2, 3)], {"a": {"b": [True]}}, {1: "int key"}, (1, 2), "x" * 2000,
           {str(i): i for i in range(300)}]
    for v in odd:
        tr.emit("Probe", value=v)
    tr.emit_batch("Rows", ("a", "b", "c"), {"b": [1]}, {"a": [1, 2 ** 40, 3], "c": [True, 1, 1.0]}, 3)
    tr.emit_batch("Rows", ("a",), {}, {"a": [2 ** 70, -1, 0]}, 3)
    got = list(log)
    for v, e in zip(odd, got):
        assert _same(e["value"], v), v
    assert _same(got[len(odd):], [
        {"seq": len(odd), "time": 0.0, "type": "Rows", "a": 1, "b": [1], "c": True},
        {"seq": len(odd) + 1, "time": 0.0, "type": "Rows", "a": 2 ** 40, "b": [1], "c": 1},
        {"seq": len(odd) + 2, "time": 0.0, "type": "Rows", "a": 3, "b": [1], "c": 1.0},
        {"seq": len(odd) + 3, "time": 0.0, "type": "Rows", "a": 2 ** 70},
        {"seq": len(odd) + 4, "time": 0.0, "type": "Rows", "a": -1},
        {"seq": len(odd) + 5, "time": 0.0, "type": "Rows", "a": 0}])
    # what a reader changes in an event it got is not changed in the store
    e = log[len(odd)]
    e["b"].append(2)
    assert log[len(odd)]["b"] == [1] and log[len(odd) + 1]["b"] == [1]


def test_events_must_arrive_in_order():
    log = EventLog()
    with pytest.raises(ValueError, match="seq 3 arrives at position 0"):
        log.append({"seq": 3, "time": 0.0, "type": "X"})
    with pytest.raises(IndexError):
        log[0]


def test_pending_rows_are_handed_over_before_the_next_event():
    """Rows buffered with Trace.pend reach the sinks before any later event, with the time of
    their first row, and the seqs stay consecutive."""
    t = [0]
    tr = Trace(clock=lambda: t[0])
    events = []
    tr.add_sink(events.append)
    rows = []

    def flush():
        tr.emit_batch("R", ("i",), {}, {"i": list(rows)}, len(rows), time=0.0)
        rows.clear()
    tr.pend(flush)
    rows.extend([1, 2])
    t[0] = 5_000_000
    tr.emit("Other")
    tr.pend(flush)
    rows.append(3)
    tr.flush()
    tr.flush()      # nothing pending: nothing emitted
    assert [(e["seq"], e["type"], e.get("i"), e["time"]) for e in events] == [
        (0, "R", 1, 0.0), (1, "R", 2, 0.0), (2, "Other", None, 5.0), (3, "R", 3, 0.0)]


class _Flaky(FilterPlugin):
    name = "Flaky"

    def filter(self, state, pod, node_info):
        if node_info.name == "n002":
            raise RuntimeError("boom")
        return None


def test_a_filter_plugin_error_keeps_its_place_among_the_batched_results():
    """A guarded plugin failing on one node: its PluginResult (with ``error``) is emitted
    alone, between the batched results of the nodes before and after it."""
    registry.register(_Flaky.name, lambda args, handle: _Flaky())
    try:
        objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}"},
                 "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}}} for i in range(5)]
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c"}]}})
        d = {"kind": "Scenario", "metadata": {"name": "t"},
             "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Flaky"}]}}}]},
             "objects": objs}
        events, log = _run(Scenario.from_dict(d), until=0)
    finally:
        registry.unregister(_Flaky.name)
    _check(events, log)
    filt = [(e["node"], e["plugin"], "error" in e) for e in events
            if e["type"] == "PluginResult" and e["point"] == "Filter"]
    assert ("n002", "Flaky", True) in filt
    assert ("n001", "Flaky", False) in filt
    order = [n for n, _, _ in filt]
    assert order == sorted(order)               # nodes in evaluation order, the error in place
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_scan_back_and_span():
    events, log = _run(_cluster(12, 30))
    n = len(events)
    assert _same(list(log.scan_back()), events[::-1])
    assert _same(list(log.scan_back(n - 5, 7)), events[7:n - 5][::-1])
    not_batched = [e for e in events
                   if not (e["type"] == "PluginResult" and e["point"] in QUIET and "error" not in e)]
    assert _same(list(log.scan_back(batches=False)), not_batched[::-1])
    spans = {log.span(i) for i in range(n)}
    covered = sorted(spans)
    assert covered[0][0] == 0 and covered[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))    # records tile the log
    for first, end in spans:
        if end - first > 1:
            keys = {(events[i]["type"], events[i]["pod"], events[i]["cycle"], events[i]["point"],
                     events[i]["dryRun"], events[i]["time"]) for i in range(first, end)}
            assert len(keys) == 1


def test_host_selected_scores_are_kept_as_the_score_columns_and_read_back_built():
    """HostSelected's scores, detail and ties reach the compact store unbuilt
    (Trace.emit_deferred, ScoreTable: reading the cycle's Score segment); plain sinks get the
    built values, the same ones as before."""
    import marshal
    from engine.trace import ScoreTable
    seen = []

    class Deferring:
        deferred_values = True

        def __call__(self, e):
            if e["type"] == "HostSelected":
                seen.append(e)
    tr = Trace()
    events, log = [], EventLog()
    tr.add_sink(events.append)
    tr.add_sink(log)
    tr.add_sink(Deferring())
    Engine(_cluster(300, 12), tr).run()
    hosts = [e for e in events if e["type"] == "HostSelected" and e["scores"] is not None]
    assert len(hosts) == len(seen) > 5
    for plain, deferred in zip(hosts, seen):
        assert type(plain["detail"]) is dict and isinstance(deferred["detail"], ScoreTable)
        assert type(plain["ties"]) is list and isinstance(deferred["ties"], ScoreTable)
        assert _same(deferred["scores"].value(), plain["scores"])
        assert _same(deferred["detail"].value(), plain["detail"])
        assert _same(deferred["ties"].value(), plain["ties"])
        best = max(plain["scores"].values())
        assert plain["ties"] == [n for n, t in plain["scores"].items() if t == best] and plain["ties"][0] == plain["node"]
        # totals are the sums of the weighted scores, node by node
        assert all(plain["scores"][n] == sum(p["weighted"] for p in d.values()) for n, d in plain["detail"].items())
        assert _same(log[plain["seq"]], plain)
    # kept once: a HostSelected costs the store a few hundred bytes, not its 300-node dicts
    # (marshalled, they are tens of kilobytes)
    one, cost = EventLog(), []

    class Measuring:
        deferred_values = True

        def __call__(self, e):
            before = one.nbytes()
            one(e)
            if e["type"] == "HostSelected":   # less its reason and a list of tied nodes
                ties = e["ties"]
                listed = 0 if isinstance(ties, ScoreTable) else 2 * len(marshal.dumps(ties))
                cost.append(one.nbytes() - before - listed - 2 * len(e["reason"]))

        def add_batch(self, b):
            one.add_batch(b)
    t2 = Trace()
    t2.add_sink(Measuring())
    Engine(_cluster(300, 12), t2).run()
    assert len(cost) == len(hosts) + sum(1 for e in events if e["type"] == "HostSelected" and e["scores"] is None)
    assert max(cost) < 1500 and min(len(json.dumps(e["scores"])) + len(json.dumps(e["detail"])) for e in hosts) > 30_000


def test_small_batches_alike_share_their_fields_and_columns():
    """Tens of thousands of batches of a few rows (a preemption dry run filters one node at a
    time) cost about a record each when they are alike, and read back exactly, types kept."""
    log, events = EventLog(), []
    tr = Trace()
    tr.add_sink(log)
    tr.add_sink(events.append)
    plugins = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit"]
    tr.emit("Start")
    before = log.nbytes()
    for i in range(2000):
        node = f"n{i % 50}"
        k = 1 + i % 4
        const = {"pod": "default/p", "cycle": 1 + i // 1000, "point": "Filter", "score": None, "dryRun": True}
        cols = {"plugin": plugins[:k], "node": [node] * k,
                "code": ["Success"] * (k - 1) + ["Unschedulable"],
                "reasons": [[] for _ in range(k - 1)] + [["Insufficient cpu"]],
                "n": [True] * (k - 1) + [i % 7]}
        tr.emit_batch("PluginResult", ("pod", "cycle", "point", "plugin", "node", "code", "reasons", "score", "dryRun", "n"),
                      const, cols, k)
        tr.emit("Between", i=i % 10)    # flushes: every batch is stored on its own
    per_batch = (log.nbytes() - before) / 2000
    # a record, the event between, and new columns and column sets as nodes and outcomes vary
    # (kept on its own, a batch of 1-4 rows would count about 1.5 KB: its fields, its columns)
    assert per_batch < 500
    assert len(log) == len(events)
    assert all(_same(a, b) for a, b in zip(log, events))
    assert _same(list(log.scan(batches=False)), [e for e in events if e["type"] != "PluginResult"])
    e = log[3]                      # batch 1's first row: no reasons
    assert e["reasons"] == [] and e["node"] == "n1"
    e["reasons"].append("x")        # a reader's change never reaches the shared store
    assert log[3]["reasons"] == [] and log[6]["reasons"] == []


def test_lists_of_known_strings_are_kept_as_value_numbers_and_read_back_exactly():
    """A list of 16 or more strings (e.g. HostSelected's ties) is kept as their value numbers
    (those not seen before numbered then), 2 bytes each while they fit, else 4; any other list
    as before."""
    from engine.tracestore import EventLog
    names = [f"node-{i:05d}" for i in range(70_000)]
    events = []

    def ev(**fields):
        events.append({"seq": len(events), "type": "X", "time": 0.0, **fields})
    for name in names:                      # every name seen once, so numbered
        ev(node=name)
    ev(ties=names[:16])                     # small numbers: 2 bytes each
    ev(ties=names[-20:])                    # numbers past 65,535: 4 bytes each
    ev(ties=names[:15])                     # too short: as before
    ev(ties=names[:10] + ["never-seen"] + names[10:20])   # numbered, then kept as numbers
    ev(ties=names[:10] + [7] + names[10:20])
    ev(ties=[7] + names[:20])
    ev(ties=[])
    log = EventLog()
    for e in events:
        log.append(e)
    tail = len(names)
    assert [log[i] for i in range(tail, len(events))] == events[tail:]
    assert list(log.scan(tail, len(events))) == events[tail:]
    # each read gives a list of its own
    a, b = log[tail]["ties"], log[tail]["ties"]
    assert a == b and a is not b
    # the list with a name not seen before: kept as value numbers, the name numbered
    assert "never-seen" in log._str_ids and sum(1 for k in log._boxed if k == 4) == 3
