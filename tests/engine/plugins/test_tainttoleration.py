"""TaintToleration.  Mirrors upstream tainttoleration/taint_toleration_test.go
TestTaintTolerationScore and TestTaintTolerationFilter (node names lower-cased)."""
import pytest

from engine.framework import ActionType, Code, CycleState, NodeScore
from engine.framework.interface import GVK
from engine.plugins import tainttoleration
from tests.engine.builders import make_node, make_pod, node_info, snapshot_handle

PNS = "PreferNoSchedule"


def node(name, *taints):
    b = make_node().name(name)
    for k, v, e in taints:
        b.taint(k, v, e)
    return b.obj()


def pod(*tols):
    b = make_pod().name("pod1")
    for t in tols:
        b.toleration(**t)
    return b.obj()


SCORE_CASES = [
    ("node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
     pod(dict(key="foo", operator="Equal", value="bar", effect=PNS)),
     [node("node-a", ("foo", "bar", PNS)), node("node-b", ("foo", "blah", PNS))],
     [100, 0]),
    ("the nodes that all of their taints are tolerated by the pod, get the same score",
     pod(dict(key="cpu-type", operator="Equal", value="arm64", effect=PNS),
         dict(key="disk-type", operator="Equal", value="ssd", effect=PNS)),
     [node("node-a"), node("node-b", ("cpu-type", "arm64", PNS)),
      node("node-c", ("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS))],
     [100, 100, 100]),
    ("the more intolerable taints a node has, the lower score it gets.",
     pod(dict(key="foo", operator="Equal", value="bar", effect=PNS)),
     [node("node-a"), node("node-b", ("cpu-type", "arm64", PNS)),
      node("node-c", ("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS))],
     [100, 50, 0]),
    ("only taints and tolerations that have effect PreferNoSchedule are checked",
     pod(dict(key="cpu-type", operator="Equal", value="arm64", effect="NoSchedule"),
         dict(key="disk-type", operator="Equal", value="ssd", effect="NoSchedule")),
     [node("node-a"), node("node-b", ("cpu-type", "arm64", "NoSchedule")),
      node("node-c", ("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS))],
     [100, 100, 0]),
    ("Default behaviour No taints and tolerations, lands on node with no taints",
     pod(),
     [node("node-a"), node("node-b", ("cpu-type", "arm64", PNS))],
     [100, 0]),
    # Not upstream: a toleration without effect covers PreferNoSchedule taints too.
    ("empty-effect toleration counts for scoring",
     pod(dict(key="cpu-type", operator="Exists")),
     [node("node-a"), node("node-b", ("cpu-type", "arm64", PNS)), node("node-c", ("x", "y", PNS))],
     [100, 100, 0]),
    # Not upstream: 3 nodes with 0/1/3 bad taints -> 100 - 100*c/3 (Go integer division).
    ("reverse normalization truncates",
     pod(),
     [node("node-a"), node("node-b", ("a", "", PNS)),
      node("node-c", ("a", "", PNS), ("b", "", PNS), ("c", "", PNS))],
     [100, 67, 0]),
]


@pytest.mark.parametrize("name,p,nodes,expected", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(name, p, nodes, expected):
    pl = tainttoleration.new(None, snapshot_handle([], nodes))
    state = CycleState()
    assert pl.pre_score(state, p, nodes) is None
    got = []
    for n in nodes:
        s, st = pl.score(state, p, n.name)
        assert st is None
        got.append(NodeScore(n.name, s))
    assert pl.score_extensions().normalize_score(state, p, got) is None
    assert [g.score for g in got] == expected


def test_score_without_prescore_is_error():
    n = node("node-a")
    pl = tainttoleration.new(None, snapshot_handle([], [n]))
    _, st = pl.score(CycleState(), pod(), "node-a")
    assert st.code == Code.Error


def test_pre_score_without_nodes_writes_nothing():
    pl = tainttoleration.new(None, snapshot_handle())
    state = CycleState()
    assert pl.pre_score(state, pod(), []) is None
    assert state.get(tainttoleration.PRE_SCORE_STATE_KEY) is None


FILTER_CASES = [
    ("A pod having no tolerations can't be scheduled onto a node with nonempty taints",
     pod(), node("node-a", ("dedicated", "user1", "NoSchedule")),
     "node(s) had untolerated taint {dedicated: user1}"),
    ("A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     pod(dict(key="dedicated", value="user1", effect="NoSchedule")),
     node("node-a", ("dedicated", "user1", "NoSchedule")), None),
    ("A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     pod(dict(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")),
     node("node-a", ("dedicated", "user1", "NoSchedule")),
     "node(s) had untolerated taint {dedicated: user1}"),
    ("A pod can be scheduled onto the node, with a toleration uses operator Exists",
     pod(dict(key="foo", operator="Exists", effect="NoSchedule")),
     node("node-a", ("foo", "bar", "NoSchedule")), None),
    ("A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
     pod(dict(key="dedicated", operator="Equal", value="user2", effect="NoSchedule"),
         dict(key="foo", operator="Exists", effect="NoSchedule")),
     node("node-a", ("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")), None),
    ("toleration keys and values match but (non-empty) effect doesn't",
     pod(dict(key="foo", operator="Equal", value="bar", effect=PNS)),
     node("node-a", ("foo", "bar", "NoSchedule")),
     "node(s) had untolerated taint {foo: bar}"),
    ("toleration effect empty, taint NoSchedule",
     pod(dict(key="foo", operator="Equal", value="bar")),
     node("node-a", ("foo", "bar", "NoSchedule")), None),
    ("toleration doesn't match but taint is PreferNoSchedule",
     pod(dict(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")),
     node("node-a", ("dedicated", "user1", PNS)), None),
    ("The pod has no toleration, but the effect of taint on node is PreferNoSchedule",
     pod(), node("node-a", ("dedicated", "user1", PNS)), None),
    # Not upstream: NoExecute taints filter too; the first untolerated taint is reported;
    # an empty value prints as "{key: }".
    ("NoExecute taint", pod(), node("node-a", ("k", "v", "NoExecute")),
     "node(s) had untolerated taint {k: v}"),
    ("first untolerated taint reported",
     pod(dict(key="a", operator="Exists")),
     node("node-a", ("a", "1", "NoSchedule"), ("b", "", "NoSchedule"), ("c", "3", "NoSchedule")),
     "node(s) had untolerated taint {b: }"),
]


@pytest.mark.parametrize("name,p,n,reason", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(name, p, n, reason):
    pl = tainttoleration.new(None, None)
    st = pl.filter(CycleState(), p, node_info(n))
    if reason is None:
        assert st is None
    else:
        assert st.code == Code.UnschedulableAndUnresolvable
        assert st.reasons == [reason]


def test_events():
    evs = tainttoleration.new(None, None).events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in evs] == [
        (GVK.Node, ActionType.Add | ActionType.Update)]
