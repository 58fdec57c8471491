"""DefaultPreemption's pure parts, as tables mirroring upstream v1.28.0:

* ``framework/plugins/defaultpreemption/default_preemption_test.go``:
  TestPodEligibleToPreemptOthers, calculateNumCandidates (used by TestDryRunPreemption's args
  cases) and filterPodsWithPDBViolation (exercised by TestDryRunPreemption's PDB cases);
* ``framework/preemption/preemption_test.go``: TestNodesWherePreemptionMightHelp and
  pickOneNodeForPreemption (TestSelectBestCandidate's criteria, one at a time);
* ``scheduler/util/utils_test.go``: TestGetEarliestPodStartTime, TestMoreImportantPod.

Adaptations: the PodDisruptionConditions gate is on (the v1.28 default), so "terminating" in
upstream's gate-off cases is written as "terminating by preemption" (DisruptionTarget); pod
start times are virtual microseconds.
"""
import copy

import pytest

from engine.errors import ConfigError
from engine.framework.interface import Code, Status
from engine.objects import Problems, pdb_from_manifest
from engine.plugins.defaultpreemption import DefaultPreemption, filter_pods_with_pdb_violation
from engine.preemption import (Candidate, Evaluator, criterion_values, get_earliest_pod_start_time,
                               more_important_pod, pick_one_node_for_preemption, sort_more_important)
from engine.trace import Trace
from tests.engine.builders import make_node, make_pod, snapshot_handle

LOW, MID, HIGH = 0, 100, 1000
NOW = 10_000_000


def P(name, prio=0, start=None, labels=None, ns="default", node=None, policy=None, nnn=None,
      terminating=False, by_preemption=False):
    b = make_pod().name(name).namespace(ns).priority(prio)
    for k, v in (labels or {}).items():
        b.label(k, v)
    if node:
        b.node(node)
    if policy:
        b.spec["preemptionPolicy"] = policy
    p = b.obj()
    p.start_time = start
    if nnn:
        p.nominated_node_name = nnn
    if terminating:
        p.deletion_timestamp = 0
        p.disruption_target = by_preemption
    return p


def PDB(match=None, allowed=0, disrupted=(), ns="default", selector=None, name="pdb"):
    m = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": name, "namespace": ns},
         "spec": {"selector": selector if selector is not None else {"matchLabels": match or {"app": "foo"}}},
         "status": {"disruptionsAllowed": allowed,
                    "disruptedPods": {n: "2026-01-01T00:00:00Z" for n in disrupted}}}
    probs = Problems()
    pdb = pdb_from_manifest(copy.deepcopy(m), "test", probs)
    assert pdb is not None, probs.items
    return pdb


def names(pods):
    return [p.name for p in pods]


# ============================================================================ PodEligibleToPreemptOthers

@pytest.mark.parametrize("pod,pods,nodes,status,expected", [
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", LOW, node="node1", terminating=True, by_preemption=True)],
                 ["node1"], Status(Code.UnschedulableAndUnresolvable, ["node(s) had untolerated taint"]), True,
                 id="Pod with nominated node"),
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", LOW, node="node1", terminating=True, by_preemption=True)],
                 ["node1"], None, False,
                 id="Pod with nominated node, but without nominated node status"),
    pytest.param(P("p", HIGH), [], [], None, True, id="Pod without nominated node"),
    pytest.param(P("p", HIGH, policy="Never"), [], [], None, False,
                 id="Pod with 'PreemptNever' preemption policy"),
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", LOW, node="node1", terminating=True, by_preemption=True)],
                 ["node1"], None, False,
                 id="victim Pods terminating, feature PodDisruptionConditions is enabled"),
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", LOW, node="node1", terminating=True)],
                 ["node1"], None, True,
                 id="non-victim Pods terminating, feature PodDisruptionConditions is enabled"),
    # beyond upstream's table
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", HIGH, node="node1", terminating=True, by_preemption=True)],
                 ["node1"], None, True, id="terminating pod of equal priority does not block"),
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", LOW, node="node1")],
                 ["node1"], None, True, id="lower-priority pod that is not terminating does not block"),
    pytest.param(P("p", HIGH, nnn="gone"), [], ["node1"], None, True, id="nominated node no longer exists"),
    pytest.param(P("p", HIGH, nnn="node1"), [P("p1", LOW, node="node1", terminating=True, by_preemption=True)],
                 ["node1"], Status(Code.Unschedulable, ["Insufficient cpu"]), False,
                 id="Unschedulable (not UU) nominated node status still blocks"),
])
def test_pod_eligible_to_preempt_others(pod, pods, nodes, status, expected):
    """Upstream TestPodEligibleToPreemptOthers: preemptionPolicy Never; a nominated node whose
    status is UnschedulableAndUnresolvable makes the pod eligible; otherwise a lower-priority
    pod terminating by preemption on the nominated node makes it ineligible."""
    h = snapshot_handle(pods, [make_node().name(n).obj() for n in nodes])
    pl = DefaultPreemption({}, h)
    got, msg = pl.pod_eligible_to_preempt_others(pod, status)
    assert got is expected
    if not got:
        assert msg in ("not eligible due to preemptionPolicy=Never.",
                       "not eligible due to a terminating pod on the nominated node.")


# ============================================================================ calculateNumCandidates

@pytest.mark.parametrize("args,num_nodes,want", [
    ({}, 1, 1), ({}, 10, 10), ({}, 100, 100), ({}, 101, 100), ({}, 1000, 100), ({}, 1009, 100),
    ({}, 1010, 101), ({}, 5000, 500),
    ({"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 5, 2),
    ({"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2}, 5, 2),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}, 5000, 1),
    ({"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0}, 5000, 5000),
    ({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 0}, 5, 0),
])
def test_calculate_num_candidates(args, num_nodes, want):
    """calculateNumCandidates: numNodes * percentage / 100 (integer division), raised to
    minCandidateNodesAbsolute, capped at numNodes.  Defaults (v1): 10 % and 100."""
    pl = DefaultPreemption(args, None)
    assert pl.calculate_num_candidates(num_nodes) == want


def test_offset_is_zero():
    """GetOffsetAndNumCandidates: upstream rand.Int31n(numNodes); the simulator's offset is 0
    (SPEC §4)."""
    pl = DefaultPreemption({}, None)
    assert pl.get_offset_and_num_candidates(7) == (0, 7)


@pytest.mark.parametrize("args", [
    {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
    {"minCandidateNodesPercentage": 101},
    {"minCandidateNodesPercentage": -1},
    {"minCandidateNodesAbsolute": -5},
    {"minCandidateNodesPercentage": "10"},
    {"minCandidateNodesAbsolute": 1.5},
])
def test_invalid_args(args):
    """ValidateDefaultPreemptionArgs: percentage in [0, 100], absolute >= 0, not both zero; the
    fields are int32."""
    with pytest.raises(ConfigError):
        DefaultPreemption(args, None)


def test_unknown_args_field_rejected():
    """A misspelt DefaultPreemptionArgs field (``minCandidateNodesPercent``) is a strict decoding
    error upstream (pkg/scheduler/apis/config/scheme/scheme.go ``serializer.EnableStrict``;
    staging/src/k8s.io/kube-scheduler/config/v1/types.go ``PluginConfig.decodeNestedObjects``;
    scheme_test.go TestCodecsDecodePluginConfig "... encoding is strict" cases)."""
    with pytest.raises(ConfigError):
        DefaultPreemption({"minCandidateNodesPercent": 40}, None)


# ============================================================================ filterPodsWithPDBViolation

def test_pdb_budget_consumed_in_order():
    """filterPodsWithPDBViolation: each matching PDB's disruptionsAllowed is consumed in the order
    given; the pod that takes it below zero is violating; the split preserves the order."""
    pods = [P("a", labels={"app": "foo"}), P("b", labels={"app": "foo"}), P("c", labels={"app": "foo"})]
    v, nv = filter_pods_with_pdb_violation(pods, [PDB(allowed=1)])
    assert (names(v), names(nv)) == (["b", "c"], ["a"])


def test_pdb_disrupted_pods_neither_count_nor_violate():
    """Upstream TestDryRunPreemption "... the victim which belongs to DisruptedPods is treated as
    'nonViolating'": a pod listed in status.disruptedPods does not decrement the budget."""
    pods = [P("p1.1", labels={"app": "foo"}), P("p1.2", labels={"app": "foo"}), P("p1.3", labels={"app": "foo"})]
    v, nv = filter_pods_with_pdb_violation(pods, [PDB(allowed=1, disrupted=["p1.3"])])
    assert (names(v), names(nv)) == (["p1.2"], ["p1.1", "p1.3"])
    v, nv = filter_pods_with_pdb_violation(pods[:2], [PDB(allowed=1, disrupted=["p1.2"])])
    assert (names(v), names(nv)) == ([], ["p1.1", "p1.2"])
    v, nv = filter_pods_with_pdb_violation(pods[:2], [PDB(allowed=1, disrupted=["p2"])])
    assert (names(v), names(nv)) == (["p1.2"], ["p1.1"])


def test_pdb_pods_without_labels_never_match():
    """"A pod with no labels will not match any PDB" -- not even a DoesNotExist selector."""
    sel = {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}
    pods = [P("bare"), P("tagged", labels={"x": "y"})]
    v, nv = filter_pods_with_pdb_violation(pods, [PDB(selector=sel, allowed=0)])
    assert (names(v), names(nv)) == (["tagged"], ["bare"])


def test_pdb_namespace_and_empty_selector():
    """PDBs of another namespace are skipped; an empty selector matches nothing."""
    pods = [P("a", labels={"app": "foo"})]
    assert filter_pods_with_pdb_violation(pods, [PDB(allowed=0, ns="other")]) == ([], pods)
    assert filter_pods_with_pdb_violation(pods, [PDB(allowed=0, selector={})]) == ([], pods)


def test_pdb_any_violated_budget_makes_pod_violating():
    """A pod matched by several PDBs decrements each; one going negative is enough."""
    pods = [P("a", labels={"app": "foo", "tier": "db"})]
    pdbs = [PDB(name="x", allowed=1), PDB(name="y", match={"tier": "db"}, allowed=0)]
    v, nv = filter_pods_with_pdb_violation(pods, pdbs)
    assert names(v) == ["a"]


def test_pdb_budgets_not_shared_between_calls():
    """The budget copy is per call (per node in the dry run): the PDB object is not modified."""
    pdb = PDB(allowed=1)
    pods = [P("a", labels={"app": "foo"})]
    assert filter_pods_with_pdb_violation(pods, [pdb]) == ([], pods)
    assert filter_pods_with_pdb_violation(pods, [pdb]) == ([], pods)
    assert pdb.disruptions_allowed == 1


# ============================================================================ MoreImportantPod / start times

def test_more_important_pod():
    """Upstream TestMoreImportantPod (util/utils_test.go)."""
    pod1 = P("pod1", 1, start=NOW)
    pod2 = P("pod2", 2, start=NOW + 1_000_000)
    pod3 = P("pod3", 2, start=NOW)
    assert more_important_pod(pod1, pod2, NOW) is False      # Pod with higher priority
    assert more_important_pod(pod2, pod3, NOW) is False      # Pod with older created time
    assert more_important_pod(pod3, pod1, NOW) is True       # Pods with same start time


def test_more_important_pod_nil_start_time_is_now():
    """util.GetPodStartTime: a pod without status.startTime started "now"."""
    assert more_important_pod(P("old", 1, start=NOW - 1), P("unstarted", 1), NOW) is True
    assert more_important_pod(P("unstarted", 1), P("new", 1, start=NOW + 1), NOW) is True


def test_sort_more_important_is_stable():
    """SPEC §4: ties (equal priority and start time) keep the node's pod order."""
    pods = [P("c", 1, start=0), P("a", 5, start=3), P("b", 1, start=0), P("d", 5, start=1)]
    assert names(sort_more_important(pods, NOW)) == ["d", "a", "c", "b"]


@pytest.mark.parametrize("pods,want", [
    ([], None),
    ([P("pod1", 1, start=NOW - 1_000_000), P("pod2", 1)], NOW - 1_000_000),
    ([P("pod1", 1, start=NOW + 1_000_000), P("pod2", 2, start=NOW + 1_000_000), P("pod3", 2, start=NOW)], NOW),
    ([P("pod1", 2, start=NOW), P("pod2", 2, start=NOW + 1_000_000), P("pod3", 2, start=NOW + 2_000_000)], NOW),
], ids=["Pods length is 0", "generate new startTime", "Pod with earliest start time last in the list",
        "Pod with earliest start time first in the list"])
def test_get_earliest_pod_start_time(pods, want):
    """Upstream TestGetEarliestPodStartTime (util/utils_test.go): the earliest start among the
    highest-priority pods; a pod without start time counts as now."""
    assert get_earliest_pod_start_time(pods, NOW + 5_000_000) == want


# ============================================================================ pickOneNodeForPreemption

def C(name, *victims, pdb=0):
    return Candidate(name, list(victims), pdb)


def test_pick_empty_and_single():
    assert pick_one_node_for_preemption([], NOW) == (None, None, {})
    node, crit, _ = pick_one_node_for_preemption([C("n1", P("a", 1, start=0))], NOW)
    assert (node, crit) == ("n1", "onlyCandidate")


@pytest.mark.parametrize("cands,want,criterion", [
    pytest.param([C("n1", P("a", 1, start=0), pdb=1), C("n2", P("b", 50, start=0))],
                 "n2", "minNumPDBViolatingVictims", id="fewest PDB violations"),
    pytest.param([C("n1", P("a", 5, start=0)), C("n2", P("b", 3, start=0), P("c", 3, start=0))],
                 "n2", "minHighestPriorityVictim", id="lowest highest-priority victim"),
    pytest.param([C("n1", P("a", 5, start=0), P("b", 9, start=0)), C("n2", P("c", 7, start=0))],
                 "n1", "minHighestPriorityVictim", id="victims[0] is read, not the maximum"),
    pytest.param([C("n1", P("a", 5, start=0), P("b", 4, start=0)), C("n2", P("c", 5, start=0), P("d", 3, start=0))],
                 "n2", "minSumPriorities", id="smallest sum"),
    pytest.param([C("n1", P("a", -5, start=0), P("b", -5, start=0)), C("n2", P("c", -5, start=0))],
                 "n2", "minSumPriorities", id="negative priorities offset by 2^31"),
    pytest.param([C("n1", P("a", 0, start=0), P("b", -2**31, start=0)), C("n2", P("c", 0, start=0))],
                 "n2", "minNumPods", id="fewest victims (sum tie needs priority -2^31)"),
    pytest.param([C("n1", P("a", 5, start=1), P("b", 1, start=9)), C("n2", P("c", 5, start=2), P("d", 1, start=0))],
                 "n2", "latestStartTime", id="latest earliest start among highest-priority victims"),
    pytest.param([C("n1", P("a", 5, start=2)), C("n2", P("b", 5, start=2)), C("n3", P("c", 5, start=2))],
                 "n1", "firstInNodeOrder", id="full tie: first"),
    pytest.param([C("n3", P("a", 5, start=2)), C("n1", P("b", 5, start=2))],
                 "n3", "firstInNodeOrder", id="full tie: first in the list given"),
    pytest.param([C("n1", P("a", 5, start=0), pdb=2), C("n2", P("b", 5, start=0), pdb=1),
                  C("n3", P("c", 9, start=0), pdb=1), C("n4", P("d", 5, start=0), P("e", 5, start=0), pdb=1)],
                 "n2", "minSumPriorities", id="criteria narrow the set in turn"),
])
def test_pick_one_node_for_preemption(cands, want, criterion):
    """pickOneNodeForPreemption (preemption.go): the score functions in order, each keeping only
    the nodes with the best score, stopping when one remains; then the first remaining."""
    node, crit, values = pick_one_node_for_preemption(cands, NOW)
    assert (node, crit) == (want, criterion)
    assert set(values) == {c.name for c in cands}


def test_criterion_values():
    """The per-criterion scores (higher wins), as upstream's score functions compute them."""
    c = C("n", P("a", 7, start=5), P("b", -3, start=1), P("c", 7, start=3), pdb=2)
    v = criterion_values(c, NOW)
    assert v == {"minNumPDBViolatingVictims": -2, "minHighestPriorityVictim": -7,
                 "minSumPriorities": -(7 + 2**31 - 3 + 2**31 + 7 + 2**31), "minNumPods": -3,
                 "latestStartTime": 3}


# ============================================================================ nodesWherePreemptionMightHelp

class _Handle:
    trace = Trace(enabled=False)
    cycle = 0


UU, U = Code.UnschedulableAndUnresolvable, Code.Unschedulable


@pytest.mark.parametrize("statuses,expected", [
    pytest.param({"node1": UU, "node2": UU, "node3": UU, "node4": UU}, set(), id="No node should be attempted"),
    pytest.param({"node1": U, "node2": UU, "node3": UU}, {"node1", "node4"},
                 id="ErrReasonAntiAffinityRulesNotMatch should be tried"),
    pytest.param({"node1": UU, "node2": U}, {"node2", "node3", "node4"},
                 id="ErrReasonAffinityRulesNotMatch should not be tried"),
    pytest.param({"node1": UU, "node2": U}, {"node2", "node3", "node4"}, id="Mix of failed predicates works fine"),
    pytest.param({"node1": UU}, {"node2", "node3", "node4"}, id="Node condition errors should be considered unresolvable"),
    pytest.param({"node1": UU, "node2": UU, "node3": UU}, {"node4"}, id="ErrVolume... errors should not be tried"),
    pytest.param({"node1": U, "node2": UU, "node3": U}, {"node1", "node3", "node4"},
                 id="ErrReasonConstraintsNotMatch should be tried"),
    pytest.param({"node2": UU, "node3": U, "node4": UU}, {"node1", "node3"},
                 id="UnschedulableAndUnresolvable status should be skipped but Unschedulable should be tried"),
    pytest.param({"node2": UU, "node3": U, "node4": UU}, {"node1", "node3"},
                 id="ErrReasonNodeLabelNotMatch should not be tried"),
])
def test_nodes_where_preemption_might_help(statuses, expected):
    """Upstream TestNodesWherePreemptionMightHelp (preemption_test.go): only the status code
    matters -- UU nodes are skipped (with "Preemption is not helpful for scheduling"), nodes
    absent from the map are tried."""
    h = snapshot_handle([], [make_node().name(f"node{i}").obj() for i in range(1, 5)])
    ev = Evaluator("DefaultPreemption", _Handle(), None, None)
    m = {n: Status(c, ["reason"]) for n, c in statuses.items()}
    potential, unsched = ev.nodes_where_preemption_might_help(h.snapshot().node_info_list, m, P("p", HIGH))
    assert {ni.name for ni in potential} == expected
    assert set(unsched) == {n for n, c in statuses.items() if c == UU}
    assert all(s.code == UU and s.reasons == ["Preemption is not helpful for scheduling"] for s in unsched.values())
    # order is the snapshot's
    assert [ni.name for ni in potential] == sorted(expected)
