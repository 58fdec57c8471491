"""Scheduler extenders over HTTP (engine/extender.py, docs/extenders.md), against a held-out
extender (tests/engine/extender_heldout.py: upstream's FakeExtender behind the v1 wire types)
on 127.0.0.1. The expected results are upstream v1.28.0's tests, row by row (the source of each
row is named: extender_test.go TestSchedulerWithExtenders / TestIsInterested /
TestConvertToMetaVictims, schedule_one_test.go TestFindNodesThatPassExtenders /
Test_prioritizeNodes / TestSchedulerBinding, default_preemption_test.go TestPreempt)."""
from __future__ import annotations

import io
import json
import time

import pytest

from engine import Engine, Scenario, ScenarioError, Trace
from engine.config import ExtenderConfig
from engine.extender import (ExtenderReplayError, ExtenderRequest, HTTPTransport, RecordingTransport,
                             ReplayTransport, build_extenders, decode_filter_result, dump_record,
                             find_nodes_that_pass_extenders, load_record)
from engine.framework.interface import Code, Status
from engine.objects import Problems, pod_from_manifest
from engine.trace import JsonLinesWriter

from .extender_heldout import (ERROR, SUCCESS, UNSCHEDULABLE, UU, FakeExtender, Server, error_predicate,
                               error_prioritizer, false_predicate, only, prefer, true_predicate)

CLOCK = time.perf_counter


def node(name, cpu="4", labels=None, extra=None):
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    alloc.update(extra or {})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": alloc}}


def pod(name, cpu="1", priority=None, node_name=None, resources=None, init=None):
    spec = {"containers": [{"name": "c", "image": "x",
                            "resources": resources or {"requests": {"cpu": cpu}}}]}
    if init:
        spec["initContainers"] = [{"name": "i", "image": "x", "resources": init}]
    if priority is not None:
        spec["priority"] = priority
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def scenario(extenders, objects, name="ext"):
    return {"kind": "Scenario", "metadata": {"name": name}, "scheduler": {"extenders": extenders},
            "objects": objects}


def ext_cfg(url, **kw):
    d = {"urlPrefix": url, "filterVerb": "filter", "httpTimeout": "2s"}
    d.update(kw)
    return d


def run(data, transport, until=None):
    """(engine, events, trace bytes)."""
    sc = Scenario.from_dict(data)
    events = []
    buf = io.StringIO()
    tr = Trace()
    tr.add_sink(events.append)
    tr.add_sink(JsonLinesWriter(buf))
    eng = Engine(sc, tr, transport)
    eng.run(until)
    return eng, events, buf.getvalue()


def live():
    return HTTPTransport(clock=CLOCK)


def cycle_end(events, pod_key="default/p", n=0):
    return [e for e in events if e["type"] == "CycleEnd" and e["pod"] == pod_key][n]


def allow(monkeypatch, *servers):
    monkeypatch.setenv("SCHEDULER_EXTENDERS", ",".join(s.url for s in servers))


# ----------------------------------------------------------------------------------------------
# extender_test.go TestSchedulerWithExtenders: nodes node1, node2; a pod; the extenders' filter
# and prioritize; expected: error, or the host (and how many nodes stayed feasible)

SCHEDULER_WITH_EXTENDERS = [
    # (upstream case, [(predicates, prioritizers, extender weight, ignorable, interested)], nodes,
    #  expected: "Error" / "Unschedulable" / host)
    ("test 1", [([true_predicate], [], 1, False, True), ([error_predicate], [], 1, False, True)],
     ["node1", "node2"], "Error"),
    ("test 2", [([true_predicate], [], 1, False, True), ([false_predicate], [], 1, False, True)],
     ["node1", "node2"], "Unschedulable"),
    ("test 3", [([true_predicate], [], 1, False, True), ([only("node1")], [], 1, False, True)],
     ["node1", "node2"], "node1"),
    ("test 4", [([only("node2")], [], 1, False, True), ([only("node1")], [], 1, False, True)],
     ["node1", "node2"], "Unschedulable"),
    ("test 5", [([true_predicate], [(error_prioritizer, 10)], 1, False, True)], ["node1"], "node1"),
    ("test 6", [([true_predicate], [(prefer("node1"), 10)], 1, False, True),
                ([true_predicate], [(prefer("node2"), 10)], 5, False, True)], ["node1", "node2"], "node2"),
    ("test 8", [([error_predicate], [(error_prioritizer, 10)], 1, False, False)], ["node1", "node2"], "node1"),
    ("test 9", [([error_predicate], [], 1, True, True), ([only("node1")], [], 1, False, True)],
     ["node1", "node2"], "node1"),
]


@pytest.mark.parametrize("case,exts,nodes,want", SCHEDULER_WITH_EXTENDERS, ids=[c[0] for c in SCHEDULER_WITH_EXTENDERS])
def test_scheduler_with_extenders(case, exts, nodes, want, monkeypatch):
    servers = [Server(FakeExtender(predicates=p, prioritizers=pr)) for p, pr, _w, _i, _int in exts]
    for s in servers:
        s.__enter__()
    try:
        allow(monkeypatch, *servers)
        cfgs = []
        for s, (_p, pr, w, ign, interested) in zip(servers, exts):
            c = ext_cfg(s.url, prioritizeVerb="prioritize", weight=w, ignorable=ign)
            if not interested:          # UnInterested: the pod requests none of its resources
                c["managedResources"] = [{"name": "example.com/foo"}]
            cfgs.append(c)
        eng, events, _ = run(scenario(cfgs, [node(n) for n in nodes] + [pod("p")]), live())
        end = cycle_end(events)
        if want in ("Error", "Unschedulable"):
            assert end["result"] == want, end
        else:
            assert end["result"] == "Scheduled" and end["node"] == want, end
        if case == "test 8":
            assert servers[0].verbs() == []         # never sent a pod it is not interested in
        if case == "test 5":
            assert "prioritize" not in servers[0].verbs()      # one feasible node: no scoring
        if case == "test 9":
            calls = [e for e in events if e["type"] == "ExtenderCall"]
            # upstream puts ignorable extenders last (scheduler.go buildExtenders)
            assert [c["extender"] for c in calls[:2]] == [servers[1].url, servers[0].url]
            assert calls[1]["ignored"] is True and calls[1]["error"] == "some error"
    finally:
        for s in servers:
            s.stop()


def test_scheduler_with_extenders_test6_scores(monkeypatch):
    """TestSchedulerWithExtenders test 6 in numbers: extender scores × weight × 10 added to the
    plugins' totals (FakeExtender combines score × prioritizer weight 10)."""
    with Server(FakeExtender([true_predicate], [(prefer("node1"), 10)])) as s1, \
            Server(FakeExtender([true_predicate], [(prefer("node2"), 10)])) as s2:
        allow(monkeypatch, s1, s2)
        cfgs = [ext_cfg(s1.url, prioritizeVerb="prioritize", weight=1),
                ext_cfg(s2.url, prioritizeVerb="prioritize", weight=5)]
        _eng, events, _ = run(scenario(cfgs, [node("node1"), node("node2"), pod("p")]), live())
        hs = next(e for e in events if e["type"] == "HostSelected")
        d = hs["detail"]
        assert d["node1"][s1.url] == {"score": 100, "normalized": 100, "weighted": 1000}
        assert d["node2"][s1.url] == {"score": 10, "normalized": 10, "weighted": 100}
        assert d["node1"][s2.url]["weighted"] == 500 and d["node2"][s2.url]["weighted"] == 5000
        plugins = {n: sum(v["weighted"] for k, v in d[n].items() if not k.startswith("http")) for n in d}
        assert hs["scores"] == {"node1": plugins["node1"] + 1500, "node2": plugins["node2"] + 5100}
        assert hs["node"] == "node2"


def test_prioritize_nodes_records_extender_scores(monkeypatch):
    """schedule_one_test.go Test_prioritizeNodes "the score from extender should also be recorded
    in PluginToNodeScores with plugin scores": FakeExtender1 (Node1Prioritizer, weight 3) →
    node1 300, node2 30; FakeExtender2 (Node2Prioritizer, weight 2) → node1 20, node2 200."""
    with Server(FakeExtender([true_predicate], [(prefer("node1"), 3)])) as s1, \
            Server(FakeExtender([true_predicate], [(prefer("node2"), 2)])) as s2:
        allow(monkeypatch, s1, s2)
        cfgs = [{"urlPrefix": s1.url, "prioritizeVerb": "prioritize", "weight": 1},
                {"urlPrefix": s2.url, "prioritizeVerb": "prioritize", "weight": 1}]
        _eng, events, _ = run(scenario(cfgs, [node("node1"), node("node2"), pod("p")]), live())
        got = {(e["plugin"], e["node"]): e["weightedScore"] for e in events
               if e["type"] == "PluginResult" and e.get("extender") and e["point"] == "NormalizeScore"}
        assert got == {(s1.url, "node1"): 300, (s1.url, "node2"): 30,
                       (s2.url, "node1"): 20, (s2.url, "node2"): 200}
        assert s1.verbs() == ["prioritize"]         # no filterVerb: no filter call


# ----------------------------------------------------------------------------------------------
# schedule_one_test.go TestFindNodesThatPassExtenders: statuses after the extenders

class _Loop:
    def __init__(self, exts_call):
        self.trace = Trace(enabled=False)
        self.extender_calls = 0
        self.extenders = []

    def call(self, req):
        t = self.transport
        seq = self.extender_calls
        self.extender_calls += 1
        return t.call(seq, req)


class _Fwk:
    cycle = 1

    def __init__(self, names):
        from engine.framework.types import NodeInfo
        from engine.objects import node_from_manifest
        self.infos = [NodeInfo(node_from_manifest(node(n), "n", Problems())) for n in names]

    def snapshot(self):
        infos = {ni.name: ni for ni in self.infos}

        class S:
            def get(self, n):
                return infos[n]
        return S()


def _pod():
    return pod_from_manifest(pod("p"), "p", Problems())


def _abc(pod_, n):
    return {"a": (SUCCESS, ""), "b": (UNSCHEDULABLE, f'node "{n}" is not allowed')}.get(n, (UU, f'node "{n}" is not allowed'))


FIND_NODES_THAT_PASS_EXTENDERS = [
    # (upstream case, predicates per extender, nodes, statuses before, expects error, nodes after,
    #  statuses after {node: (code, reasons)})
    ("error", [[error_predicate]], ["a"], {}, True, None, None),
    ("success", [[true_predicate]], ["a"], {}, False, ["a"], {}),
    ("unschedulable", [[lambda p, n: (SUCCESS, "") if n == "a" else (UNSCHEDULABLE, f'node "{n}" is not allowed')]],
     ["a", "b"], {}, False, ["a"], {"b": (Code.Unschedulable, ['FakeExtender: node "b" failed'])}),
    ("unschedulable and unresolvable", [[_abc]], ["a", "b", "c"], {}, False, ["a"],
     {"b": (Code.Unschedulable, ['FakeExtender: node "b" failed']),
      "c": (Code.UnschedulableAndUnresolvable, ['FakeExtender: node "c" failed and unresolvable'])}),
    ("extender may overwrite the statuses", [[_abc]], ["a", "b", "c"],
     {"c": Status(Code.Unschedulable, ['FakeFilterPlugin: node "c" failed'])}, False, ["a"],
     {"b": (Code.Unschedulable, ['FakeExtender: node "b" failed']),
      "c": (Code.UnschedulableAndUnresolvable, ['FakeFilterPlugin: node "c" failed',
                                                'FakeExtender: node "c" failed and unresolvable'])}),
    ("multiple extenders", [[_abc], [only("a")]], ["a", "b", "c"], {}, False, ["a"],
     {"b": (Code.Unschedulable, ['FakeExtender: node "b" failed']),
      "c": (Code.UnschedulableAndUnresolvable, ['FakeExtender: node "c" failed and unresolvable'])}),
]


@pytest.mark.parametrize("case,preds,nodes,before,expects_err,after,statuses", FIND_NODES_THAT_PASS_EXTENDERS,
                         ids=[c[0] for c in FIND_NODES_THAT_PASS_EXTENDERS])
@pytest.mark.parametrize("cache_capable", [False, True])
def test_find_nodes_that_pass_extenders(case, preds, nodes, before, expects_err, after, statuses, cache_capable):
    servers = [Server(FakeExtender(predicates=p)).__enter__() for p in preds]
    try:
        loop = _Loop(None)
        loop.transport = HTTPTransport(clock=CLOCK, allowed=[s.url for s in servers])
        cfgs = [ExtenderConfig(url_prefix=s.url, filter_verb="filter", node_cache_capable=cache_capable,
                               http_timeout=2_000_000) for s in servers]
        loop.extenders = build_extenders(cfgs, loop.call)
        fwk = _Fwk(nodes)
        st = dict(before)
        got, err = find_nodes_that_pass_extenders(loop, fwk, _pod(), list(fwk.infos), st)
        if expects_err:
            assert err is not None and err.code == Code.Error and err.reasons == ["some error"]
            return
        assert err is None
        assert [ni.name for ni in got] == after
        assert {n: (s.code, s.reasons) for n, s in st.items()} == statuses
        sent = servers[0].ext.calls[0][1]
        assert list(sent) == ["Pod", "Nodes", "NodeNames"]
        if cache_capable:
            assert sent["Nodes"] is None and sent["NodeNames"] == nodes
        else:
            assert sent["NodeNames"] is None and [n["metadata"]["name"] for n in sent["Nodes"]["items"]] == nodes
    finally:
        for s in servers:
            s.stop()


# ----------------------------------------------------------------------------------------------
# extender_test.go TestIsInterested (managed "memory": the test builds the HTTPExtender directly,
# bypassing the validation that wants an extended resource name)

IS_INTERESTED = [
    ("Empty managed resources", (), pod("p", resources={}), True),
    ("Managed memory, empty resources", ("memory",), pod("p", resources={}), False),
    ("Managed memory, container memory with Requests", ("memory",), pod("p", resources={"requests": {"memory": "0"}}), True),
    ("Managed memory, container memory with Limits", ("memory",), pod("p", resources={"limits": {"memory": "0"}}), True),
    ("Managed memory, init container memory", ("memory",), pod("p", resources={}, init={"requests": {"memory": "0"}}), True),
]


@pytest.mark.parametrize("label,managed,manifest,want", IS_INTERESTED, ids=[c[0] for c in IS_INTERESTED])
def test_is_interested(label, managed, manifest, want):
    ext = build_extenders([ExtenderConfig("http://x", managed_resources=tuple((m, False) for m in managed))], None)[0]
    assert ext.is_interested(pod_from_manifest(manifest, "p", Problems())) is want


def test_not_interested_extender_is_never_called(monkeypatch):
    """A pod that requests none of the managed resources is not sent (filter, prioritize,
    bind); one that requests one in its limits is."""
    with Server(FakeExtender([error_predicate])) as s:
        allow(monkeypatch, s)
        cfg = [ext_cfg(s.url, bindVerb="bind", managedResources=[{"name": "example.com/gpu"}])]
        objs = [node("n1", extra={"example.com/gpu": "1"}), node("n2"), pod("p"),
                pod("g", resources={"limits": {"example.com/gpu": "1"}})]
        _eng, events, _ = run(scenario(cfg, objs), live())
        assert cycle_end(events)["result"] == "Scheduled"
        assert cycle_end(events, "default/g")["result"] == "Error"
        assert s.verbs() == ["filter"]
        assert s.ext.calls[0][1]["Pod"]["metadata"]["name"] == "g"


# ----------------------------------------------------------------------------------------------
# errors, timeouts, the allowlist

def test_filter_error_ends_the_cycle_in_error_unless_ignorable(monkeypatch):
    with Server(FakeExtender(replies={"filter": (500, "boom")})) as s:
        allow(monkeypatch, s)
        objs = [node("n1"), node("n2"), pod("p")]
        _e, events, _ = run(scenario([ext_cfg(s.url)], objs), live())
        end = cycle_end(events)
        assert end["result"] == "Error"
        assert end["message"] == f"failed filter with extender at URL {s.url}/filter, code 500"
        cells = [e for e in events if e["type"] == "PluginResult" and e.get("extender")]
        assert {(c["node"], c["code"]) for c in cells} == {("n1", "Error"), ("n2", "Error")}
        _e, events, _ = run(scenario([ext_cfg(s.url, ignorable=True)], objs), live())
        assert cycle_end(events)["result"] == "Scheduled"
        cells = [e for e in events if e["type"] == "PluginResult" and e.get("extender")]
        assert {c["code"] for c in cells} == {"Skip"}


@pytest.mark.parametrize("ignorable", [False, True])
def test_timeout_costs_at_most_http_timeout(ignorable, monkeypatch):
    with Server(FakeExtender([true_predicate], delay=1.0)) as s:
        allow(monkeypatch, s)
        objs = [node("n1"), node("n2"), pod("p")]
        t0 = time.perf_counter()
        _e, events, _ = run(scenario([ext_cfg(s.url, httpTimeout="200ms", ignorable=ignorable)], objs), live(),
                            until=0)
        took = time.perf_counter() - t0
        call = next(e for e in events if e["type"] == "ExtenderCall")
        assert call["timedOut"] is True and "Client.Timeout exceeded" in call["error"]
        assert 0.15 <= call["latency"] < 0.6 and took < 0.9
        assert cycle_end(events)["result"] == ("Scheduled" if ignorable else "Error")


def test_prioritize_error_is_skipped_even_when_not_ignorable(monkeypatch):
    """prioritizeNodes: a Prioritize error gives no score from that extender; the cycle goes on."""
    with Server(FakeExtender([true_predicate], [(error_prioritizer, 1)])) as s:
        allow(monkeypatch, s)
        _e, events, _ = run(scenario([ext_cfg(s.url, prioritizeVerb="prioritize", weight=1)],
                                     [node("n1"), node("n2"), pod("p")]), live())
        assert cycle_end(events)["result"] == "Scheduled"
        call = [e for e in events if e["type"] == "ExtenderCall" and e["verb"] == "prioritize"][0]
        assert call["ignored"] is True and "code 500" in call["error"]


def test_url_not_allowed_is_refused(monkeypatch):
    monkeypatch.setenv("SCHEDULER_EXTENDERS", "http://127.0.0.1:9/allowed/")
    with pytest.raises(ScenarioError) as ei:
        Scenario.from_dict(scenario([ext_cfg("http://127.0.0.1:9/other")], [node("n1")]))
    msg = str(ei.value.describe() if hasattr(ei.value, "describe") else ei.value)
    assert "scheduler.extenders[0].urlPrefix" in msg and "SCHEDULER_EXTENDERS" in msg
    # a trailing slash is normalised
    Scenario.from_dict(scenario([ext_cfg("http://127.0.0.1:9/allowed")], [node("n1")]))
    monkeypatch.delenv("SCHEDULER_EXTENDERS")
    with pytest.raises(ScenarioError):
        Scenario.from_dict(scenario([ext_cfg("http://127.0.0.1:9/allowed")], [node("n1")]))
    # the transport refuses too (defence in depth): no call goes out
    reply = HTTPTransport(clock=CLOCK, allowed=[]).call(0, ExtenderRequest("http://127.0.0.1:9/x", "filter",
                                                                           "http://127.0.0.1:9/x/filter", b"{}", 1))
    assert reply.status is None and "SCHEDULER_EXTENDERS" in reply.error


VALIDATION = [
    ({"prioritizeVerb": "p"}, "scheduler.extenders[0].weight: 0 is invalid: must have a positive weight"),
    ({"prioritizeVerb": "p", "weight": -1}, "scheduler.extenders[0].weight: -1 is invalid"),
    ({"enableHTTPS": True}, "scheduler.extenders[0].enableHTTPS: is not supported"),
    ({"tlsConfig": {"insecure": True}}, "scheduler.extenders[0].tlsConfig: is not supported"),
    ({"httpTimeout": "2m"}, "scheduler.extenders[0].httpTimeout:"),
    ({"managedResources": [{"name": "cpu"}]}, "scheduler.extenders[0].managedResources[0].name: \"cpu\" is an invalid extended resource name"),
    ({"managedResources": [{"name": "a.com/x"}, {"name": "a.com/x"}]}, "duplicate extender managed resource name"),
    ({"colour": 1}, "scheduler.extenders[0].colour: is not an extender field"),
]


@pytest.mark.parametrize("extra,msg", VALIDATION)
def test_validation(extra, msg, monkeypatch):
    monkeypatch.setenv("SCHEDULER_EXTENDERS", "http://127.0.0.1:9/e")
    with pytest.raises(ScenarioError) as ei:
        Scenario.from_dict(scenario([dict({"urlPrefix": "http://127.0.0.1:9/e"}, **extra)], [node("n1")]))
    assert msg in str(ei.value.problems if hasattr(ei.value, "problems") else ei.value) or msg in ei.value.describe()


def test_only_one_binder(monkeypatch):
    monkeypatch.setenv("SCHEDULER_EXTENDERS", "http://127.0.0.1:9/a,http://127.0.0.1:9/b")
    with pytest.raises(ScenarioError) as ei:
        Scenario.from_dict(scenario([{"urlPrefix": "http://127.0.0.1:9/a", "bindVerb": "bind"},
                                     {"urlPrefix": "http://127.0.0.1:9/b", "bindVerb": "bind"}], [node("n1")]))
    assert "scheduler.extenders: found 2 extenders implementing bind: only one extender can implement bind" in ei.value.describe()


def test_ignored_by_scheduler_becomes_fit_ignored_resources(monkeypatch):
    """scheduler.go buildExtenders: an ignoredByScheduler resource is not checked by
    NodeResourcesFit (the node has none of it, the pod still fits)."""
    with Server(FakeExtender([true_predicate])) as s:
        allow(monkeypatch, s)
        cfg = [ext_cfg(s.url, managedResources=[{"name": "example.com/foo", "ignoredByScheduler": True}])]
        objs = [node("n1"), pod("p", resources={"requests": {"cpu": "1", "example.com/foo": "3"}})]
        _e, events, _ = run(scenario(cfg, objs), live())
        assert cycle_end(events)["result"] == "Scheduled"
        assert s.verbs() == ["filter"]


# ----------------------------------------------------------------------------------------------
# schedule_one_test.go TestSchedulerBinding

BINDING = [
    # (upstream case, [(is binder, interested)], who binds: index of the extender or None)
    ("the extender is not a binder", [(False, True)], None),
    ("one of the extenders is a binder and interested in pod", [(False, True), (True, True)], 1),
    ("one of the extenders is a binder, but not interested in pod", [(False, False), (True, False)], None),
]


@pytest.mark.parametrize("case,exts,binder", BINDING, ids=[c[0] for c in BINDING])
def test_scheduler_binding(case, exts, binder, monkeypatch):
    servers = [Server(FakeExtender()).__enter__() for _ in exts]
    try:
        allow(monkeypatch, *servers)
        cfgs = []
        for i, (s, (is_binder, interested)) in enumerate(zip(servers, exts)):
            c = {"urlPrefix": s.url}
            if is_binder:
                c["bindVerb"] = "bind"
            if not interested:      # each extender its own resource (a name is managed once)
                c["managedResources"] = [{"name": f"example.com/other{i}"}]
            cfgs.append(c)
        eng, events, _ = run(scenario(cfgs, [node("n1"), pod("p")]), live())
        binds = [e for e in events if e["type"] == "PluginResult" and e["point"] == "Bind"]
        assert eng.state()["pods"]["default/p"]["nodeName"] == "n1"
        for i, s in enumerate(servers):
            assert s.verbs() == (["bind"] if i == binder else [])
        if binder is None:
            assert [b["plugin"] for b in binds] == ["DefaultBinder"]
        else:
            assert [b["plugin"] for b in binds] == [servers[binder].url]
            args = servers[binder].ext.calls[0][1]
            assert list(args) == ["PodName", "PodNamespace", "PodUID", "Node"]
            assert args == {"PodName": "p", "PodNamespace": "default", "PodUID": eng.pods["default/p"].uid,
                            "Node": "n1"}
    finally:
        for s in servers:
            s.stop()


def test_bind_error_fails_the_binding(monkeypatch):
    with Server(FakeExtender(bind_error="no room")) as s:
        allow(monkeypatch, s)
        eng, events, _ = run(scenario([{"urlPrefix": s.url, "bindVerb": "bind"}], [node("n1"), pod("p")]), live(),
                             until=0)
        failed = [e for e in events if e["type"] == "BindFailed"]
        assert failed and failed[0]["reasons"] == ["no room"]
        assert eng.state()["pods"]["default/p"]["nodeName"] is None


# ----------------------------------------------------------------------------------------------
# preemption: callExtenders narrows the candidates; nodeCacheCapable sends MetaVictims

def _preemption_objects():
    return [node("n1", cpu="1"), node("n2", cpu="1"),
            pod("v1", priority=0, node_name="n1"), pod("v2", priority=0, node_name="n2"),
            pod("p", priority=100)]


@pytest.mark.parametrize("cache_capable", [False, True])
def test_preemption_extender_narrows_candidates(cache_capable, monkeypatch):
    """Without an extender the pick is n1 (every criterion ties: the first in node order); the
    extender keeps only n2, so the preemptor is nominated to n2 and v2 is the victim."""
    _e, events, _ = run({"kind": "Scenario", "metadata": {"name": "x"}, "objects": _preemption_objects()}, None,
                        until=0)
    assert cycle_end(events)["nominatedNode"] == "n1"
    with Server(FakeExtender(preempt_keep={"n2"})) as s:
        allow(monkeypatch, s)
        cfg = [{"urlPrefix": s.url, "preemptVerb": "preempt", "nodeCacheCapable": cache_capable}]
        eng, events, _ = run(scenario(cfg, _preemption_objects()), live(), until=0)
        assert cycle_end(events)["nominatedNode"] == "n2"
        assert [e["pod"] for e in events if e["type"] == "PodDeleted"] == ["default/v2"]
        verb, args, _raw = s.ext.calls[0]
        assert verb == "preempt" and list(args) == ["Pod", "NodeNameToVictims", "NodeNameToMetaVictims"]
        uids = {k: eng.pods[k].uid for k in ("default/v1", "default/v2")} if "default/v1" in eng.pods else None
        if cache_capable:
            # extender_test.go TestConvertToMetaVictims: victims' UIDs and NumPDBViolations
            assert args["NodeNameToVictims"] is None
            assert args["NodeNameToMetaVictims"] == {"n1": {"Pods": [{"UID": uids["default/v1"]}], "NumPDBViolations": 0},
                                                     "n2": {"Pods": [{"UID": uids["default/v2"]}], "NumPDBViolations": 0}}
        else:
            assert args["NodeNameToMetaVictims"] is None
            assert sorted(args["NodeNameToVictims"]) == ["n1", "n2"]
            assert [p["metadata"]["name"] for p in args["NodeNameToVictims"]["n2"]["Pods"]] == ["v2"]
        call = next(e for e in events if e["type"] == "ExtenderCall")
        assert call["verb"] == "preempt" and list(call["results"]) == ["n2"]


def test_preemption_extender_claims_unknown_pod(monkeypatch):
    """convertPodUIDToPod: a victim UID not on the node is an error (PostFilter fails; the pod
    is not nominated)."""
    reply = json.dumps({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "nope"}], "NumPDBViolations": 0}}})
    with Server(FakeExtender(replies={"preempt": (200, reply)})) as s:
        allow(monkeypatch, s)
        _e, events, _ = run(scenario([{"urlPrefix": s.url, "preemptVerb": "preempt"}], _preemption_objects()),
                            live(), until=0)
        end = cycle_end(events)
        assert end["result"] == "Unschedulable" and end["nominatedNode"] is None
        call = next(e for e in events if e["type"] == "ExtenderCall")
        assert "claims to preempt pod (UID: nope) on node: n1" in call["error"]


# ----------------------------------------------------------------------------------------------
# the wire format and Go's decoder

def test_go_decoder_rules():
    # field names match case-insensitively; null leaves the zero value
    r = decode_filter_result('{"nodenames": ["a"], "failedNodes": null, "error": ""}')
    assert r["NodeNames"] == ["a"] and r["FailedNodes"] == {}
    assert decode_filter_result("null")["Nodes"] is None
    from engine.extender import ExtenderCallError, decode_host_priority_list
    assert decode_host_priority_list('[{"host": "a", "score": 3}]') == [("a", 3)]
    for bad in ('[{"Host": "a", "Score": 1.5}]', '{"Host": "a"}', "", '[{"Host": 1}]'):
        with pytest.raises(ExtenderCallError):
            decode_host_priority_list(bad)


def test_request_json_is_what_go_writes(monkeypatch):
    with Server(FakeExtender([true_predicate])) as s:
        allow(monkeypatch, s)
        run(scenario([ext_cfg(s.url)], [node("n1", labels={"a": "<&>"}), node("n2"), pod("p")]), live())
        raw = s.ext.calls[0][2].decode()
        assert raw.startswith('{"Pod":{') and ',"NodeNames":null}' in raw
        assert '"Nodes":{"metadata":{},"items":[{' in raw
        assert "\\u003c\\u0026\\u003e" in raw and " " not in raw.replace('"x"', "")
        sent_pod = s.ext.calls[0][1]["Pod"]
        assert "apiVersion" not in sent_pod and sent_pod["metadata"]["namespace"] == "default"
        assert sent_pod["metadata"]["uid"] and sent_pod["spec"]["priority"] == 0


# ----------------------------------------------------------------------------------------------
# record and replay

def _record_run(monkeypatch):
    ext = FakeExtender([lambda p, n: {"c": (UU, "no"), "d": (UNSCHEDULABLE, "no")}.get(n, (SUCCESS, ""))],
                       [(prefer("b"), 1)])
    s = Server(ext).__enter__()
    allow(monkeypatch, s)
    cfg = [ext_cfg(s.url, prioritizeVerb="prioritize", weight=2, bindVerb="bind")]
    data = scenario(cfg, [node("a"), node("b"), node("c"), node("d"), pod("p"), pod("q")])
    rec = RecordingTransport(live())
    _e, _ev, trace = run(data, rec)
    return s, data, rec, trace


def test_replay_without_calling_out(monkeypatch):
    s, data, rec, trace = _record_run(monkeypatch)
    s.stop()                                    # nothing answers any more
    records = load_record(dump_record(rec.records))
    assert [r["verb"] for r in records] == ["filter", "prioritize", "bind", "filter", "prioritize", "bind"]
    _e, _ev, trace2 = run(data, ReplayTransport(records))
    assert trace2 == trace
    # a recording transport given the record answers from it too (no call out)
    rec2 = RecordingTransport(live(), records)
    _e, _ev, trace3 = run(data, rec2)
    assert trace3 == trace and rec2.records == records
    # a longer run asks for a call the record does not hold
    with pytest.raises(ExtenderReplayError, match="is not in it"):
        run(scenario(data["scheduler"]["extenders"], data["objects"] + [pod("r")]), ReplayTransport(records))
    # a different run does not match the record
    data["objects"][0]["metadata"]["labels"] = {"changed": "yes"}
    with pytest.raises(ExtenderReplayError, match="does not match the record"):
        run(data, ReplayTransport(records))


def test_stepper_and_checkpoint_replay(monkeypatch):
    """Time travel: a stepper resumed from a checkpoint continues the record where the
    checkpoint's engine stood (its extender_calls), never calling out."""
    from engine.checkpoint import take
    from engine.stepper import Stepper
    s, data, rec, trace = _record_run(monkeypatch)
    s.stop()
    sc = Scenario.from_dict(data)
    st = Stepper(sc, extender_transport=ReplayTransport(rec.records))
    st.engine.step()                 # load
    while st.engine.extender_calls < 3:
        st.engine.step()
    cp = take(st.engine, 0)
    calls_at = st.engine.extender_calls
    st.engine.run()
    assert st.engine.extender_calls == 6
    from engine.checkpoint import restore
    eng2 = restore(cp, sc, Trace(enabled=False), ReplayTransport(rec.records))
    assert eng2.extender_calls == calls_at
    eng2.run()
    assert eng2.extender_calls == 6 and eng2.state() == st.engine.state()


def test_cli_record_and_replay(tmp_path, monkeypatch):
    from engine.cli import main
    with Server(FakeExtender([only("n1")], [(prefer("n1"), 1)])) as s:
        allow(monkeypatch, s)
        path = tmp_path / "s.json"
        path.write_text(json.dumps(scenario([ext_cfg(s.url, prioritizeVerb="prioritize", weight=1, bindVerb="bind")],
                                            [node("n1"), node("n2"), pod("p")])))
        assert main(["run", str(path), "--trace", str(tmp_path / "t1"), "--extender-record", str(tmp_path / "r.json")]) == 0
    assert main(["run", str(path), "--trace", str(tmp_path / "t2"), "--extender-replay", str(tmp_path / "r.json")]) == 0
    assert (tmp_path / "t1").read_bytes() == (tmp_path / "t2").read_bytes()
    (tmp_path / "bad.json").write_text("{}")
    assert main(["run", str(path), "--extender-replay", str(tmp_path / "bad.json")]) == 2


def test_timeline_time_travel_replays_from_the_record(monkeypatch):
    """A web session's timeline: one RecordingTransport for every engine it builds. Once the
    head has run, travelling back (from a checkpoint or from the start) answers every call from
    the record: the extender is stopped and nothing fails."""
    from engine.checkpoint import Checkpointer
    from engine.timeline import Timeline
    s, data, _rec, _trace = _record_run(monkeypatch)
    sc = Scenario.from_dict(data)
    rec = RecordingTransport(HTTPTransport(clock=CLOCK))
    tl = Timeline(sc, [], 0, 0, 0, checkpointer=Checkpointer(min_events=10, overhead=0),
                  action_of=lambda i, inj: None, extender_transport=rec)
    tl.run_until(100)
    s.stop()
    head = [dict(e) for e in tl.events]
    calls = list(rec.records)
    assert [c["verb"] for c in calls] == ["filter", "prioritize", "bind", "filter", "prioritize", "bind"]
    for target in (len(head) // 2, 5, len(head) - 3):
        tl.move_to(target)
        shown = tl.shown
        assert [dict(shown.events[i]) for i in range(target)] == head[:target]
    tl.move_to(len(head) // 3)
    tl.move_to(len(head))
    assert rec.records == calls and all(c["error"] is None for c in rec.records)


@pytest.mark.parametrize("case,weight,exts,want", [
    # extender_test.go TestSchedulerWithExtenders "test 7": Node2Prioritizer (a Score plugin,
    # weight 20) outweighs FakeExtender1's Node1PrioritizerExtender: node2
    ("test 7", 20, [([true_predicate], [(prefer("node1"), 10)], True)], "node2"),
    # "test 8": an extender that is not interested (errors on every call) is never called;
    # Node2Prioritizer (weight 1) decides: node2
    ("test 8", 1, [([error_predicate], [(error_prioritizer, 10)], False)], "node2"),
])
def test_scheduler_with_extenders_and_a_score_plugin(case, weight, exts, want, monkeypatch):
    from engine.framework.interface import ScorePlugin
    from engine.plugins import registry

    class Node2Prioritizer(ScorePlugin):
        """fake_extender.go node2PrioritizerPlugin: 100 on node2, 10 elsewhere."""
        name = "Node2Prioritizer"

        def score(self, state, pod_, node_name):
            return (100 if node_name == "node2" else 10), None

    registry.register("Node2Prioritizer", lambda args, h: Node2Prioritizer())
    servers = [Server(FakeExtender(predicates=p, prioritizers=pr)).__enter__() for p, pr, _i in exts]
    try:
        allow(monkeypatch, *servers)
        cfgs = []
        for s, (_p, _pr, interested) in zip(servers, exts):
            c = ext_cfg(s.url, prioritizeVerb="prioritize", weight=1)
            if not interested:
                c["managedResources"] = [{"name": "example.com/foo"}]
            cfgs.append(c)
        data = scenario(cfgs, [node("node1"), node("node2"), pod("p")])
        data["scheduler"]["profiles"] = [{"plugins": {"score": {"disabled": [{"name": "*"}],
                                                                "enabled": [{"name": "Node2Prioritizer", "weight": weight}]}}}]
        _e, events, _ = run(data, live())
        end = cycle_end(events)
        assert end["result"] == "Scheduled" and end["node"] == want, end
        hs = next(e for e in events if e["type"] == "HostSelected")
        if case == "test 7":
            assert hs["scores"] == {"node1": 10 * 20 + 100 * 10, "node2": 100 * 20 + 10 * 10}
        else:
            assert servers[0].verbs() == [] and hs["scores"] == {"node1": 10, "node2": 100}
    finally:
        registry.unregister("Node2Prioritizer")
        for s in servers:
            s.stop()


def test_go_json_of_what_yaml_reads():
    """Manifests may hold what YAML reads and JSON has no type for (an unquoted timestamp, a
    date, !!binary, .nan): written as metav1.Time / Go's []byte would, never a crash."""
    import datetime as dt
    from engine.extender import go_json
    v = {"t": dt.datetime(2024, 1, 1, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))), "d": dt.date(2024, 1, 1),
         "b": b"hello", "n": float("nan"), "i": [float("inf")], "s": "a<b>&c"}
    assert go_json(v) == (b'{"t":"2024-01-01T00:00:00Z","d":"2024-01-01","b":"aGVsbG8=","n":".nan","i":[".inf"],'
                          b'"s":"a\\u003cb\\u003e\\u0026c"}')


def test_nominated_node_goes_through_the_extenders_first(monkeypatch):
    """evaluateNominatedNode (schedule_one.go) runs findNodesThatPassExtenders on the nominated
    node alone: the extender rejects it, so every node is evaluated and the extender sees them."""
    with Server(FakeExtender([only("n2")])) as s:
        allow(monkeypatch, s)
        p = pod("p")
        p["status"] = {"nominatedNodeName": "n1"}
        _e, events, _ = run(scenario([ext_cfg(s.url, nodeCacheCapable=True)], [node("n1"), node("n2"), p]), live())
        assert [a["NodeNames"] for v, a, _b in s.ext.calls] == [["n1"], ["n1", "n2"]]
        ev = next(e for e in events if e["type"] == "NominatedNodeEvaluated")
        assert ev["fits"] is False
        assert cycle_end(events)["node"] == "n2"


def test_the_example_extender_and_its_scenario(monkeypatch):
    """docs/examples/extender_server.py on loopback with docs/examples/extender.yaml (the URL's
    port replaced): web goes to fast (the extender's score 9 × 2 × 10 tips it), trainer to gpu
    (the only node left after the extender's filter), both bound by the extender."""
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("extender_server", root / "docs/examples/extender_server.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    srv, ext = mod.serve(0)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/scheduler"
        monkeypatch.setenv("SCHEDULER_EXTENDERS", url)
        text = (root / "docs/examples/extender.yaml").read_text().replace("http://127.0.0.1:8888/scheduler", url)
        sc = Scenario.from_text(text)
        events = []
        tr = Trace()
        tr.add_sink(events.append)
        eng = Engine(sc, tr, live())
        eng.run()
        pods = eng.state()["pods"]
        assert pods["default/web"]["nodeName"] == "fast" and pods["default/trainer"]["nodeName"] == "gpu"
        assert [(b["PodName"], b["Node"]) for b in ext.bindings] == [("web", "fast"), ("trainer", "gpu")]
        uu = [e for e in events if e["type"] == "PluginResult" and e.get("extender") and e["node"] == "reserved"]
        assert {e["code"] for e in uu} == {"UnschedulableAndUnresolvable"}
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("cache_capable", [False, True])
def test_the_example_extender_preempts(cache_capable, monkeypatch):
    """The example extender keeps preemption candidates but nodes labelled
    extender.example.com/pool=no-preemption (it knows the labels of the nodes it was sent
    before: a first pod's filter call): n2 is, so the preemptor is nominated to n1 (two victims)
    where DefaultPreemption alone picks n2 (one victim)."""
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("extender_server", root / "docs/examples/extender_server.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    srv, _ext = mod.serve(0)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/scheduler"
        monkeypatch.setenv("SCHEDULER_EXTENDERS", url)
        objs = [node("n1", cpu="2"), node("n2", cpu="2", labels={"extender.example.com/pool": "no-preemption"}),
                pod("v1", priority=0, node_name="n1"), pod("v2", priority=0, node_name="n2"),
                pod("small", cpu="500m", priority=0)]
        data = {"kind": "Scenario", "metadata": {"name": "x"}, "objects": objs,
                "actions": [{"at": 1, "create": pod("p", cpu="2", priority=100)}]}
        _e, events, _ = run(data, None, until=2_000_000)
        assert cycle_end(events, "default/small")["node"] == "n1"
        assert cycle_end(events)["nominatedNode"] == "n2"          # without the extender
        data["scheduler"] = {"extenders": [{"urlPrefix": url, "filterVerb": "filter", "preemptVerb": "preempt",
                                            "nodeCacheCapable": cache_capable}]}
        _e, events, _ = run(data, live(), until=2_000_000)
        call = next(e for e in events if e["type"] == "ExtenderCall" and e["verb"] == "preempt")
        if cache_capable:
            # sent only node names, the example knows no labels: it keeps every candidate
            assert call["error"] is None and sorted(call["results"]) == ["n1", "n2"]
            assert cycle_end(events)["nominatedNode"] == "n2"
            return
        assert list(call["results"]) == ["n1"]
        assert cycle_end(events)["nominatedNode"] == "n1"
        assert sorted(e["pod"] for e in events if e["type"] == "PodDeleted") == ["default/small", "default/v1"]
    finally:
        srv.shutdown()
        srv.server_close()


# default_preemption_test.go TestPreempt, its extender cases. Upstream calls Preempt directly
# with an empty NodeToStatusMap; here the pod first fails Filter everywhere, so the nodes its
# cases leave empty (where it would simply fit) are left out: they are never candidates (no
# victims) and change nothing. Nodes: cpu 500m, memory 500 (veryLargeRes); the preemptor asks
# for all of it at priority 1000; FakeExtender.ProcessPreemption keeps a candidate where its
# predicates pass.
_SMALL = {"requests": {"cpu": "100m", "memory": "100"}}
_LARGE = {"requests": {"cpu": "300m", "memory": "300"}}
TEST_PREEMPT = [
    ("Scheduler extenders allow only node1, otherwise node3 would have been chosen",
     ["node1", "node3"], [("p1.1", "node1", 100, _SMALL), ("p1.2", "node1", 0, _SMALL), ("p2.1", "node3", 100, _LARGE)],
     [([true_predicate], False, True), ([only("node1")], False, True)], "node1", ["p1.1", "p1.2"]),
    ("Scheduler extenders do not allow any preemption",
     ["node1", "node2"], [("p1.1", "node1", 100, _SMALL), ("p1.2", "node1", 0, _SMALL), ("p2.1", "node2", 100, _LARGE)],
     [([false_predicate], False, True)], None, []),
    ("One scheduler extender allows only node1, the other returns error but ignorable. Only node1 would be chosen",
     ["node1", "node2"], [("p1.1", "node1", 100, _SMALL), ("p1.2", "node1", 0, _SMALL), ("p2.1", "node2", 100, _LARGE)],
     [([error_predicate], True, True), ([only("node1")], False, True)], "node1", ["p1.1", "p1.2"]),
    ("One scheduler extender allows only node1, but it is not interested in given pod, otherwise node1 would have been chosen",
     ["node1", "node2"], [("p1.1", "node1", 100, _SMALL), ("p1.2", "node1", 0, _SMALL), ("p2.1", "node2", 100, _LARGE)],
     [([only("node1")], False, False), ([true_predicate], False, True)], "node2", ["p2.1"]),
]


@pytest.mark.parametrize("case,nodes,victims,exts,want,deleted", TEST_PREEMPT, ids=[c[0][:60] for c in TEST_PREEMPT])
def test_preempt_with_extenders(case, nodes, victims, exts, want, deleted, monkeypatch):
    servers = [Server(FakeExtender(predicates=p)).__enter__() for p, _i, _int in exts]
    try:
        allow(monkeypatch, *servers)
        cfgs = []
        for i, (s, (_p, ignorable, interested)) in enumerate(zip(servers, exts)):
            c = {"urlPrefix": s.url, "preemptVerb": "preempt", "ignorable": ignorable}
            if not interested:
                c["managedResources"] = [{"name": f"example.com/other{i}"}]
            cfgs.append(c)
        objs = [node(n, cpu="500m", extra={"memory": "500"}) for n in nodes]
        objs += [pod(name, priority=prio, node_name=n, resources=res) for name, n, prio, res in victims]
        objs.append(pod("p", priority=1000, resources={"requests": {"cpu": "500m", "memory": "500"}}))
        _e, events, _ = run(scenario(cfgs, objs), live(), until=0)
        end = cycle_end(events)
        assert end["result"] == "Unschedulable" and end["nominatedNode"] == want, end
        assert sorted(e["pod"] for e in events if e["type"] == "PodDeleted") == [f"default/{d}" for d in deleted]
        if want is None:
            assert end["message"].endswith("preemption: no candidate node for preemption.")
    finally:
        for s in servers:
            s.stop()


def test_compare_ignores_latency(monkeypatch):
    """Two live runs of one scenario differ only in their calls' latencies: compare says they
    are identical."""
    from engine.compare import compare_scenarios
    with Server(FakeExtender([only("n1")], [(prefer("n1"), 1)], delay=0.01)) as s:
        allow(monkeypatch, s)
        sc = Scenario.from_dict(scenario([ext_cfg(s.url, prioritizeVerb="prioritize", weight=1)],
                                         [node("n1"), node("n2"), node("n3"), pod("p")]))
        result, ra, rb = compare_scenarios(sc, sc, extender_transports=(live(), live()))
        lat = [[e["latency"] for e in r.events if e["type"] == "ExtenderCall"] for r in (ra, rb)]
        assert len(lat[0]) == len(lat[1]) == 1      # measured: almost never equal
        assert result["identical"] is True
