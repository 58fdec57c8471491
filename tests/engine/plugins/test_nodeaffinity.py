"""NodeAffinity.  TestFilter mirrors upstream nodeaffinity/node_affinity_test.go
TestNodeAffinity; TestScore mirrors TestNodeAffinityPriority."""
import pytest

from engine.errors import ConfigError
from engine.framework import ActionType, Code, CycleState, NodeScore, PreFilterResult
from engine.framework.interface import GVK
from engine.plugins import nodeaffinity
from tests.engine.builders import make_node, make_pod, node_info, snapshot_handle

UU = Code.UnschedulableAndUnresolvable
POD = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT = "pod affinity terms conflict"
SKIP = "skip"


def expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(*exprs, fields=()):
    t = {}
    if exprs:
        t["matchExpressions"] = list(exprs)
    if fields:
        t["matchFields"] = list(fields)
    return t


def name_in(*names):
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def required(*terms):
    return make_pod().node_affinity_required(*terms)


ADDED_NODE2 = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [term(fields=[name_in("node2")])]}}}

# name, pod builder, node labels, node name, want filter reason, want prefilter status
# (None / SKIP / reason), want prefilter node names, args, run prefilter
FILTER_CASES = [
    ("missing labels", make_pod().node_selector({"foo": "bar"}), {}, "node", POD, None, None, None, True),
    ("same labels", make_pod().node_selector({"foo": "bar"}), {"foo": "bar"}, "node", None, None, None, None, True),
    ("node labels are superset", make_pod().node_selector({"foo": "bar"}), {"foo": "bar", "baz": "blah"},
     "node", None, None, None, None, True),
    ("node labels are subset", make_pod().node_selector({"foo": "bar", "baz": "blah"}), {"foo": "bar"},
     "node", POD, None, None, None, True),
    ("matchExpressions In matches", required(term(expr("foo", "In", "bar", "value2"))), {"foo": "bar"},
     "node", None, None, None, None, True),
    ("matchExpressions Gt matches", required(term(expr("kernel-version", "Gt", "0204"))),
     {"kernel-version": "0206"}, "node", None, None, None, None, True),
    ("matchExpressions NotIn matches", required(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
     {"mem-type": "DDR3"}, "node", None, None, None, None, True),
    ("matchExpressions Exists matches", required(term(expr("GPU", "Exists"))),
     {"GPU": "NVIDIA-GRID-K1"}, "node", None, None, None, None, True),
    ("affinity that doesn't match node's labels", required(term(expr("foo", "In", "value1", "value2"))),
     {"foo": "bar"}, "node", POD, None, None, None, True),
    ("empty MatchExpressions matches no objects", required({"matchExpressions": []}), {"foo": "bar"},
     "node", POD, None, None, None, True),
    ("no Affinity", make_pod(), {"foo": "bar"}, "node", None, SKIP, None, None, True),
    ("Affinity but nil NodeSelector", make_pod().node_affinity_preferred(1, term(expr("a", "Exists"))),
     {"foo": "bar"}, "node", None, SKIP, None, None, True),
    ("multiple matchExpressions ANDed that match",
     required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
     {"GPU": "NVIDIA-GRID-K1"}, "node", None, None, None, None, True),
    ("multiple matchExpressions ANDed that don't match",
     required(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
     {"GPU": "NVIDIA-GRID-K1"}, "node", POD, None, None, None, True),
    ("multiple NodeSelectorTerms ORed",
     required(term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2"))),
     {"foo": "bar"}, "node", None, None, None, None, True),
    ("Affinity and nodeSelector both satisfied",
     required(term(expr("foo", "Exists"))).node_selector({"foo": "bar"}),
     {"foo": "bar"}, "node", None, None, None, None, True),
    ("Affinity matches but nodeSelector not",
     required(term(expr("foo", "Exists"))).node_selector({"foo": "bar"}),
     {"foo": "barrrrrr"}, "node", POD, None, None, None, True),
    ("matchFields In matches", required(term(fields=[name_in("node1")])), {}, "node1",
     None, None, {"node1"}, None, True),
    ("matchFields In does not match", required(term(fields=[name_in("node1")])), {}, "node2",
     POD, None, {"node1"}, None, True),
    ("two terms: matchFields does not match, but matchExpressions matches",
     required(term(fields=[name_in("node1"), name_in("node2")]), term(expr("foo", "In", "bar"))),
     {"foo": "bar"}, "node2", None, None, None, None, True),
    ("one term: matchFields does not match, but matchExpressions matches",
     required(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
     {"foo": "bar"}, "node2", POD, None, {"node1"}, None, True),
    ("one term: both matchFields and matchExpressions match",
     required(term(expr("foo", "In", "bar"), fields=[name_in("node1")])),
     {"foo": "bar"}, "node1", None, None, {"node1"}, None, True),
    ("two terms: both matchFields and matchExpressions do not match",
     required(term(fields=[name_in("node1")]), term(expr("foo", "In", "not-match-to-bar"))),
     {"foo": "bar"}, "node2", POD, None, None, None, True),
    ("two terms of node.Name affinity",
     required(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])),
     {}, "node2", None, None, {"node1", "node2"}, None, True),
    ("two conflicting match field requirements",
     required(term(fields=[name_in("node1"), name_in("node2")])),
     {"foo": "bar"}, "node2", POD, CONFLICT, None, None, True),
    ("matches added affinity and Pod's node affinity",
     required(term(expr("zone", "In", "foo"))), {"zone": "foo"}, "node2", None, None, None, ADDED_NODE2, True),
    ("matches added affinity but not Pod's node affinity",
     required(term(expr("zone", "In", "bar"))), {"zone": "foo"}, "node2", POD, None, None, ADDED_NODE2, True),
    ("doesn't match added affinity", make_pod(), {"zone": "foo"}, "node2", ENFORCED, None, None,
     {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": [term(expr("zone", "In", "bar"))]}}}, True),
    ("matches node selector correctly even if PreFilter is not called",
     make_pod().node_selector({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "node", None, None, None, None, False),
    ("matches node affinity correctly even if PreFilter is not called",
     required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
     {"GPU": "NVIDIA-GRID-K1"}, "node", None, None, None, None, False),
    # Not upstream: a nodeSelector value that must equal "" still needs the label present.
    ("empty-value nodeSelector needs the label", make_pod().node_selector({"foo": ""}), {},
     "node", POD, None, None, None, True),
    ("empty-value nodeSelector matches an empty label", make_pod().node_selector({"foo": ""}), {"foo": ""},
     "node", None, None, None, None, True),
    # Not upstream: a NotIn on metadata.name does not narrow the node set.
    ("matchFields NotIn gives no PreFilterResult",
     required(term(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["node1"]}])),
     {}, "node1", POD, None, None, None, True),
]


@pytest.mark.parametrize("name,pb,labels,node_name,want,want_pf,want_names,args,run_pf", FILTER_CASES,
                         ids=[c[0] for c in FILTER_CASES])
def test_filter(name, pb, labels, node_name, want, want_pf, want_names, args, run_pf):
    pod = pb.obj()
    ni = node_info(make_node().name(node_name).labels(labels).obj())
    pl = nodeaffinity.new(args, None)
    state = CycleState()
    if run_pf:
        res, st = pl.pre_filter(state, pod)
        if want_pf is None:
            assert st is None
        elif want_pf == SKIP:
            assert st.code == Code.Skip and st.reasons == []
        else:
            assert st.code == UU and st.reasons == [want_pf]
        if want_names is None:
            assert res is None
        else:
            assert isinstance(res, PreFilterResult) and res.node_names == want_names
    st = pl.filter(state, pod, ni)
    if want is None:
        assert st is None
    else:
        assert st.code == UU and st.reasons == [want]


def pref(weight, *exprs):
    return (weight, term(*exprs))


AFF1 = [pref(2, expr("foo", "In", "bar"))]
AFF2 = [pref(2, expr("foo", "In", "bar")), pref(4, expr("key", "In", "value")),
        pref(5, expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))]
L1 = {"foo": "bar"}
L2 = {"key": "value"}
L3 = {"az": "az1"}
L4 = {"abc": "az11", "def": "az22"}
L5 = {"foo": "bar", "key": "value", "az": "az1"}


def pod_pref(prefs):
    b = make_pod()
    for w, t in prefs:
        b.node_affinity_preferred(w, t)
    return b.obj()


SCORE_CASES = [
    ("all nodes are same priority as NodeAffinity is nil", [], [("node1", L1), ("node2", L2), ("node3", L3)],
     [0, 0, 0], None, True),
    ("no node matches preferred scheduling requirements", AFF1, [("node1", L4), ("node2", L2), ("node3", L3)],
     [0, 0, 0], None, True),
    ("only node1 matches the preferred scheduling requirements of pod", AFF1,
     [("node1", L1), ("node2", L2), ("node3", L3)], [100, 0, 0], None, True),
    ("all nodes matches the preferred scheduling requirements of pod but with different priorities", AFF2,
     [("node1", L1), ("node5", L5), ("node2", L2)], [18, 100, 36], None, True),
    ("added affinity", [], [("node1", L1), ("node2", L2)], [100, 0],
     {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 2, "preference": term(expr("foo", "In", "bar"))}]}}, True),
    ("added affinity and pod has default affinity", AFF1, [("node1", L1), ("node2", L2), ("node3", L5)],
     [40, 60, 100],
     {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 3, "preference": term(expr("key", "In", "value"))}]}}, True),
    ("calculate the priorities correctly even if PreScore is not called", AFF2,
     [("node1", L1), ("node5", L5), ("node2", L2)], [18, 100, 36], None, False),
]


@pytest.mark.parametrize("name,prefs,nodes,expected,args,run_ps", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(name, prefs, nodes, expected, args, run_ps):
    pod = pod_pref(prefs)
    node_objs = [make_node().name(n).labels(l).obj() for n, l in nodes]
    pl = nodeaffinity.new(args, snapshot_handle([], node_objs))
    state = CycleState()
    if run_ps:
        assert pl.pre_score(state, pod, node_objs) is None
    got = []
    for n in node_objs:
        s, st = pl.score(state, pod, n.name)
        assert st is None
        got.append(NodeScore(n.name, s))
    assert pl.score_extensions().normalize_score(state, pod, got) is None
    assert [g.score for g in got] == expected


def test_raw_score_is_sum_of_weights():
    pod = pod_pref(AFF2)
    n5 = make_node().name("node5").labels(L5).obj()
    pl = nodeaffinity.new({}, snapshot_handle([], [n5]))
    state = CycleState()
    pl.pre_score(state, pod, [n5])
    assert pl.score(state, pod, "node5") == (11, None)


@pytest.mark.parametrize("args,problem", [
    ({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(expr("zone", "Foo", "a"))]}}},
     "pluginConfig[NodeAffinity].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].operator"),
    ({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(fields=[name_in("a", "b")])]}}},
     "pluginConfig[NodeAffinity].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchFields[0].values: must have one element"),
    ({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": term(expr("zone", "Gt", "x"))}]}},
     "pluginConfig[NodeAffinity].args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
     ".preference.matchExpressions[0].values[0]"),
    ({"addedAffinity": 3}, "pluginConfig[NodeAffinity].args.addedAffinity: 3 is not a mapping"),
    ({"foo": 1}, "pluginConfig[NodeAffinity].args: unknown field 'foo'"),
])
def test_invalid_args(args, problem):
    with pytest.raises(ConfigError) as e:
        nodeaffinity.new(args, None)
    assert any(p.startswith(problem) for p in e.value.problems), e.value.problems


def test_events():
    evs = nodeaffinity.new(None, None).events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in evs] == [
        (GVK.Node, ActionType.Add | ActionType.Update)]


def test_invalid_label_value_in_term_matches_nothing():
    pod = required(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))).obj()
    ni = node_info(make_node().name("node").labels({"foo": "bar"}).obj())
    pl = nodeaffinity.new(None, None)
    state = CycleState()
    pl.pre_filter(state, pod)
    st = pl.filter(state, pod, ni)
    assert st is not None and st.reasons == [POD]
