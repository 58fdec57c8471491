"""DefaultPreemption end to end: scenarios run by the Engine, checked on the trace and state.

Mirrors upstream v1.28.0
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go``
(TestPostFilter, TestDryRunPreemption, TestSelectBestCandidate, TestPreempt) and
``pkg/scheduler/framework/preemption/preemption_test.go``, plus the scheduler-level behaviour of
``preemption.go`` (Preempt, findCandidates, DryRunPreemption, pickOneNodeForPreemption,
prepareCandidate), ``framework/runtime/framework.go`` (RunFilterPluginsWithNominatedPods) and
``schedule_one.go`` (nomination, victims' graceful deletion).

Adaptations (the engine's model, not the plugin's behaviour):

* upstream calls PostFilter / DryRunPreemption directly on a hand-made status map; here the
  preemptor goes through a real scheduling cycle, so every node must really fail its filters
  (nodes are sized so that they do) and the map is the cycle's own;
* upstream's random dry-run offset is 0 here (SPEC §4), so the "DefaultPreemptionArgs limits"
  cases visit node1, node2, ... instead of starting at node5;
* upstream's epochTime1..6 differ by nanoseconds; the engine keeps microseconds, so the
  start times here differ by seconds (same order);
* pods and nodes need DNS-1123 names (p1.1 is fine), namespaces default to "default";
* the PodDisruptionConditions gate is on (the v1.28 default): only pods terminating *by
  preemption* block a new preemption.
"""
import pytest

from engine import Engine, Scenario, Trace, US
from engine.errors import ConfigError

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
INT32_MIN = -2**31


# ---------------------------------------------------------------------------- scenario helpers

def node(name, cpu="2", memory="4Gi", pods="32", labels=None, taints=None, alloc=None):
    md = {"name": name, "labels": {"kubernetes.io/hostname": name, "hostname": name, **(labels or {})}}
    n = {"apiVersion": "v1", "kind": "Node", "metadata": md,
         "status": {"allocatable": alloc if alloc is not None else {"cpu": cpu, "memory": memory, "pods": pods}}}
    if taints:
        n["spec"] = {"taints": taints}
    return n


def vnode(name, **kw):
    """A node with upstream's veryLargeRes capacity (500m cpu, 500 bytes of memory, 32 pods)."""
    return node(name, cpu="500m", memory="500", **kw)


def pod(name, prio=None, req=None, node=None, labels=None, start=None, grace=None, nnn=None,
        policy=None, pc=None, ns=None, **spec):
    md = {"name": name}
    if ns:
        md["namespace"] = ns
    if labels is not None:
        md["labels"] = labels
    c = {"name": "c", "image": "busybox"}
    if req:
        c["resources"] = {"requests": dict(req)}
    s = {"containers": [c], **spec}
    if prio is not None:
        s["priority"] = prio
    if node:
        s["nodeName"] = node
    if grace is not None:
        s["terminationGracePeriodSeconds"] = grace
    if policy:
        s["preemptionPolicy"] = policy
    if pc:
        s["priorityClassName"] = pc
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": s}
    st = {}
    if start is not None:
        st["startTime"] = start
    if nnn:
        st["nominatedNodeName"] = nnn
    if st:
        p["status"] = st
    return p


def t(sec):
    """An RFC 3339 start time ``sec`` seconds after an epoch well before virtual time 0."""
    return f"2025-12-31T00:00:{sec:02d}Z"


def pdb(name="pdb", match=None, allowed=None, disrupted=(), min_available=None, max_unavailable=None,
        selector=None):
    spec = {"selector": selector if selector is not None else {"matchLabels": match or {"app": "foo"}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    m = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}
    status = {}
    if allowed is not None:
        status["disruptionsAllowed"] = allowed
    if disrupted:
        status["disruptedPods"] = {n: "2026-01-01T00:00:00Z" for n in disrupted}
    if status:
        m["status"] = status
    return m


def priority_class(name, value, policy=None):
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    if policy:
        pc["preemptionPolicy"] = policy
    return pc


def scenario(*objects, actions=(), plugin_args=None):
    d = {"kind": "Scenario", "metadata": {"name": "preemption-test"}, "objects": list(objects),
         "actions": list(actions)}
    if plugin_args is not None:
        d["scheduler"] = {"profiles": [{"schedulerName": "default-scheduler",
                                        "pluginConfig": [{"name": "DefaultPreemption", "args": plugin_args}]}]}
    return Scenario.from_dict(d)


def run(sc, until):
    tr = Trace()
    events = []
    tr.add_sink(events.append)
    eng = Engine(sc, tr)
    eng.run(until=int(until * US))
    return eng, events


def of(events, type_, **match):
    return [e for e in events if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


def one(events, type_, **match):
    got = of(events, type_, **match)
    assert len(got) == 1, f"expected one {type_} {match}, got {got}"
    return got[0]


def candidates(events, preemptor="default/p", cycle=None):
    """node -> (victim names in the order listed, pdbViolations), in trace order."""
    m = {"preemptor": preemptor}
    if cycle is not None:
        m["cycle"] = cycle
    return {e["node"]: ([v.split("/", 1)[1] for v in e["victims"]], e["pdbViolations"])
            for e in of(events, "PreemptionCandidate", **m)}


def reprieve_steps(events, node_name, preemptor="default/p", cycle=None):
    m = {"preemptor": preemptor, "node": node_name}
    if cycle is not None:
        m["cycle"] = cycle
    return [(e["victim"].split("/", 1)[1], e["reprieved"]) for e in of(events, "ReprieveStep", **m)]


def pick(events, preemptor="default/p", cycle=None):
    m = {"preemptor": preemptor}
    if cycle is not None:
        m["cycle"] = cycle
    return one(events, "PreemptionPick", **m)


def post_filter(events, pod_key="default/p", cycle=None):
    m = {"pod": pod_key, "point": "PostFilter"}
    if cycle is not None:
        m["cycle"] = cycle
    return one(events, "PluginResult", **m)


def examined_nodes(events, preemptor="default/p", cycle=None):
    """The nodes the dry run looked at, in order (candidates and non-candidates, UU-skipped excluded)."""
    out = []
    for e in events:
        if e.get("preemptor") != preemptor or (cycle is not None and e.get("cycle") != cycle):
            continue
        if e["type"] == "PreemptionCandidate" or (e["type"] == "PreemptionNodeResult" and
                                                  not e["reason"].startswith("skipped")):
            out.append(e["node"])
    return out


def pod_state(eng, name):
    return eng.state()["pods"][f"default/{name}"]


# ============================================================================ pickOneNodeForPreemption
# TestSelectBestCandidate, run end to end: the preemptor (veryLargeRes) fits no node, every node
# holds lower-priority pods; the PreemptionPick event says which criterion decided.

SELECT_BEST_CANDIDATE = [
    pytest.param(
        ["node1", "node2"], HIGH, LARGE,
        [("p1", "node1", MID, LARGE, t(0)), ("p2", "node2", MID, LARGE, t(0))],
        "node1", "firstInNodeOrder",
        id="a pod that fits on both nodes when lower priority pods are preempted"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, MEDIUM, t(0)), ("p1.2", "node1", MID, LARGE, t(0)),
         ("p2.1", "node2", MID, MEDIUM, t(0)), ("p2.2", "node2", LOW, MEDIUM, t(0)),
         ("p3.1", "node3", LOW, MEDIUM, t(0)), ("p3.2", "node3", LOW, MEDIUM, t(0))],
        "node3", "minHighestPriorityVictim",
        id="node with min highest priority pod is picked"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, MEDIUM, t(0)), ("p1.2", "node1", MID, LARGE, t(0)),
         ("p2.1", "node2", MID, LARGE, t(0)), ("p2.2", "node2", LOW, MEDIUM, t(0)),
         ("p3.1", "node3", MID, MEDIUM, t(0)), ("p3.2", "node3", MID, MEDIUM, t(0))],
        "node2", "minSumPriorities",
        id="when highest priorities are the same, minimum sum of priorities is picked"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, SMALL, t(0)), ("p1.2", "node1", NEG, SMALL, t(0)),
         ("p1.3", "node1", MID, SMALL, t(0)), ("p1.4", "node1", NEG, SMALL, t(0)),
         ("p2.1", "node2", MID, LARGE, t(0)), ("p2.2", "node2", NEG, MEDIUM, t(0)),
         ("p3.1", "node3", MID, MEDIUM, t(0)), ("p3.2", "node3", NEG, SMALL, t(0)),
         ("p3.3", "node3", LOW, SMALL, t(0))],
        # the adjusted sums (4, 2 and 3 times 2^31) already differ, so the sum decides
        "node2", "minSumPriorities",
        id="when highest priority and sum are the same, minimum number of pods is picked"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, SMALL, t(0)), ("p1.2", "node1", NEG, SMALL, t(0)),
         ("p1.3", "node1", NEG, SMALL, t(0)),
         ("p2.1", "node2", MID, LARGE, t(0)), ("p2.2", "node2", NEG, MEDIUM, t(0)),
         ("p3.1", "node3", MID, MEDIUM, t(0)), ("p3.2", "node3", NEG, SMALL, t(0)),
         ("p3.3", "node3", LOW, SMALL, t(0))],
        "node2", "minSumPriorities",
        id="sum of adjusted priorities is considered"),
    pytest.param(
        ["node1", "node2", "node3", "node4"], VERY_HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, SMALL, t(0)), ("p1.2", "node1", LOW, SMALL, t(0)),
         ("p1.3", "node1", LOW, SMALL, t(0)),
         ("p2.1", "node2", HIGH, LARGE, t(0)),
         ("p3.1", "node3", MID, MEDIUM, t(0)), ("p3.2", "node3", LOW, SMALL, t(0)),
         ("p3.3", "node3", LOW, SMALL, t(0)), ("p3.4", "node3", LOW, MEDIUM, t(0)),
         ("p4.1", "node4", MID, MEDIUM, t(0)), ("p4.2", "node4", MID, SMALL, t(0)),
         ("p4.3", "node4", MID, SMALL, t(0)), ("p4.4", "node4", NEG, SMALL, t(0))],
        "node1", "minSumPriorities",
        id="non-overlapping lowest high priority, sum priorities, and number of pods"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, MEDIUM, t(2)), ("p1.2", "node1", MID, MEDIUM, t(2)),
         ("p2.1", "node2", MID, MEDIUM, t(3)), ("p2.2", "node2", MID, MEDIUM, t(3)),
         ("p3.1", "node3", MID, MEDIUM, t(1)), ("p3.2", "node3", MID, MEDIUM, t(1))],
        "node2", "latestStartTime",
        id="same priority, same number of victims, different start time for each node's pod"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", MID, MEDIUM, t(4)), ("p1.2", "node1", MID, MEDIUM, t(2)),
         ("p2.1", "node2", MID, MEDIUM, t(5)), ("p2.2", "node2", MID, MEDIUM, t(1)),
         ("p3.1", "node3", MID, MEDIUM, t(3)), ("p3.2", "node3", MID, MEDIUM, t(6))],
        "node3", "latestStartTime",
        id="same priority, same number of victims, different start time for all pods"),
    pytest.param(
        ["node1", "node2", "node3"], HIGH, VERY_LARGE,
        [("p1.1", "node1", LOW, MEDIUM, t(4)), ("p1.2", "node1", MID, MEDIUM, t(2)),
         ("p2.1", "node2", MID, MEDIUM, t(6)), ("p2.2", "node2", LOW, MEDIUM, t(1)),
         ("p3.1", "node3", LOW, MEDIUM, t(3)), ("p3.2", "node3", MID, MEDIUM, t(5))],
        "node2", "latestStartTime",
        id="different priority, same number of victims, different start time for all pods"),
]


@pytest.mark.parametrize("nodes,prio,req,pods,want_node,want_criterion", SELECT_BEST_CANDIDATE)
def test_select_best_candidate(nodes, prio, req, pods, want_node, want_criterion):
    """Upstream TestSelectBestCandidate (default_preemption_test.go) through a real cycle:
    pickOneNodeForPreemption's criteria in order -- fewest PDB violations, lowest victims[0]
    priority, smallest sum of (priority + 2^31), fewest victims, latest earliest start time of
    the highest-priority victims, then the first candidate (SPEC §4: node order)."""
    objs = [vnode(n) for n in nodes]
    objs += [pod(n, prio=p, req=r, node=nd, start=s) for n, nd, p, r, s in pods]
    objs.append(pod("p", prio=prio, req=req))
    eng, ev = run(scenario(*objs), 1)
    pk = pick(ev)
    assert pk["node"] == want_node
    assert pk["criterion"] == want_criterion
    assert one(ev, "Nomination", pod="default/p")["node"] == want_node
    assert pod_state(eng, "p")["nominatedNodeName"] == want_node


def test_pick_fewest_pdb_violations_first():
    """pickOneNodeForPreemption criterion 1 (minNumPDBViolatingScoreFunc): a node whose victims
    violate no PodDisruptionBudget wins over one that violates, even though its victim has a
    higher priority (criterion 2 would prefer the other node)."""
    sc = scenario(
        node("n1"), node("n2"),
        pdb(match={"app": "db"}, min_available=1),
        pod("db", prio=1, req={"cpu": "2"}, node="n1", labels={"app": "db"}),
        pod("batch", prio=3, req={"cpu": "2"}, node="n2"),
        pod("p", prio=10, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"n1": (["db"], 1), "n2": (["batch"], 0)}
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("n2", "minNumPDBViolatingVictims")
    # non-violating candidates are listed first (DryRunPreemption returns nonViolating + violating)
    assert [c["node"] for c in pk["candidates"]] == ["n2", "n1"]
    values = {c["node"]: c["values"] for c in pk["candidates"]}
    assert values["n1"]["minNumPDBViolatingVictims"] == -1
    assert values["n2"]["minNumPDBViolatingVictims"] == 0


def test_pick_uses_victims_first_entry_in_reprieve_order():
    """pickOneNodeForPreemption criterion 2 reads ``victims[0]`` (minHighestPriorityScoreFunc),
    and v1.28's SelectVictimsOnNode returns victims in reprieve order -- PDB-violating ones
    first -- with no final re-sort (added only by #128307, after v1.28).  On n2 the first victim
    is the PDB-violating priority-1 pod although a priority-10 victim follows it, so n2 (score
    -1) beats n1 (its only victim has priority 5) at equal PDB violations."""
    sc = scenario(
        node("n1"), node("n2"),
        pdb(match={"app": "db"}, allowed=0),
        pod("c", prio=5, req={"cpu": "2"}, node="n1", labels={"app": "db"}),
        pod("a", prio=1, req={"cpu": "1"}, node="n2", labels={"app": "db"}),
        pod("b", prio=10, req={"cpu": "1"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"n1": (["c"], 1), "n2": (["a", "b"], 1)}
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("n2", "minHighestPriorityVictim")
    values = {c["node"]: c["values"] for c in pk["candidates"]}
    assert values["n2"]["minHighestPriorityVictim"] == -1
    assert values["n1"]["minHighestPriorityVictim"] == -5


def test_pick_sum_offsets_negative_priorities():
    """pickOneNodeForPreemption criterion 3 (minSumPrioritiesScoreFunc) adds MaxInt32+1 to every
    victim's priority: with a raw sum n1's two negative victims (-200) would beat n2's single
    one (-100); with the offset n2's smaller sum wins."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("a1", prio=-100, req={"cpu": "1"}, node="n1"),
        pod("a2", prio=-100, req={"cpu": "1"}, node="n1"),
        pod("b1", prio=-100, req={"cpu": "2"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"n1": (["a1", "a2"], 0), "n2": (["b1"], 0)}
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("n2", "minSumPriorities")
    values = {c["node"]: c["values"] for c in pk["candidates"]}
    assert values["n1"]["minSumPriorities"] == -2 * (2**31 - 100)
    assert values["n2"]["minSumPriorities"] == -(2**31 - 100)


def test_pick_fewest_victims_when_adjusted_sums_tie():
    """pickOneNodeForPreemption criterion 4 (minNumPodsScoreFunc): only decisive when a victim has
    priority -2^31 (its adjusted term is 0), so n1's two victims and n2's one have equal
    adjusted sums and equal highest priority; the node with fewer victims wins."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("a1", prio=0, req={"cpu": "1"}, node="n1"),
        pod("a2", prio=INT32_MIN, req={"cpu": "1"}, node="n1"),
        pod("b1", prio=0, req={"cpu": "2"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"n1": (["a1", "a2"], 0), "n2": (["b1"], 0)}
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("n2", "minNumPods")


def test_pick_latest_start_time_only_counts_highest_priority_victims():
    """pickOneNodeForPreemption criterion 5 (latestStartTimeScoreFunc via
    util.GetEarliestPodStartTime): the earliest start among each node's *highest-priority*
    victims; the node where that is latest wins.  n1's low-priority victim is the youngest pod
    of all, but only the priority-5 victims count: n1 -> t(1), n2 -> t(3)."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("a-hi", prio=5, req={"cpu": "1"}, node="n1", start=t(1)),
        pod("a-lo", prio=1, req={"cpu": "1"}, node="n1", start=t(50)),
        pod("b-hi", prio=5, req={"cpu": "1"}, node="n2", start=t(3)),
        pod("b-lo", prio=1, req={"cpu": "1"}, node="n2", start=t(0)),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("n2", "latestStartTime")
    values = {c["node"]: c["values"] for c in pk["candidates"]}
    assert values["n2"]["latestStartTime"] > values["n1"]["latestStartTime"]


def test_pick_full_tie_takes_first_in_node_tree_order():
    """pickOneNodeForPreemption step 6: still tied -> the first remaining node (upstream: a Go map,
    effectively random; SPEC §4: the first in node order, which is upstream's node-tree order --
    one node per zone in turn).  Created b (zone1) before c (zone2), but the tree visits a, c, b;
    a has no lower-priority pod, so c comes first among the tied candidates."""
    z1, z2 = {"topology.kubernetes.io/zone": "zone1"}, {"topology.kubernetes.io/zone": "zone2"}
    sc = scenario(
        node("a", labels=z1), node("b", labels=z1), node("c", labels=z2),
        pod("on-a", prio=1000, req={"cpu": "2"}, node="a"),
        pod("on-b", prio=1, req={"cpu": "2"}, node="b"),
        pod("on-c", prio=1, req={"cpu": "2"}, node="c"),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    assert list(candidates(ev)) == ["c", "b"]
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("c", "firstInNodeOrder")


# ============================================================================ SelectVictimsOnNode: reprieve

def test_reprieve_most_important_first_without_pdbs():
    """SelectVictimsOnNode: remove all lower-priority pods, then reprieve them most important first
    (util.MoreImportantPod: higher priority, then earlier start time).  Upstream
    TestDryRunPreemption "mixed priority pods are preempted, pick later StartTime one when
    priorities are equal": p1.3 (mid) is tried first and stays a victim, then p1.2 (low, older)
    is reprieved, then p1.1 (low, younger) stays a victim.  The high-priority p1.4 and node2's p2
    are never potential victims."""
    sc = scenario(
        vnode("node1"), vnode("node2"),
        pod("p1.1", prio=LOW, req=SMALL, node="node1", start=t(5)),
        pod("p1.2", prio=LOW, req=SMALL, node="node1", start=t(4)),
        pod("p1.3", prio=MID, req=MEDIUM, node="node1", start=t(3)),
        pod("p1.4", prio=HIGH, req=SMALL, node="node1", start=t(2)),
        pod("p2", prio=HIGH, req=LARGE, node="node2", start=t(1)),
        pod("p", prio=HIGH, req=LARGE))
    eng, ev = run(sc, 0.5)
    assert reprieve_steps(ev, "node1") == [("p1.3", False), ("p1.2", True), ("p1.1", False)]
    assert candidates(ev) == {"node1": (["p1.3", "p1.1"], 0)}
    start = one(ev, "ReprieveStart", preemptor="default/p", node="node1")
    assert sorted(start["removed"]) == ["default/p1.1", "default/p1.2", "default/p1.3"]
    nr = one(ev, "PreemptionNodeResult", preemptor="default/p", node="node2")
    assert nr["code"] == "UnschedulableAndUnresolvable"
    assert "No preemption victims found for incoming pod" in nr["reason"]


DRY_RUN_CASES = [
    pytest.param(
        [vnode("node1"), vnode("node2")],
        [pod("p1", prio=MID, req=LARGE, node="node1"), pod("p2", prio=MID, req=LARGE, node="node2")],
        pod("p", prio=HIGH, req=LARGE), None,
        {"node1": (["p1"], 0), "node2": (["p2"], 0)},
        id="a pod that fits on both nodes when lower priority pods are preempted"),
    pytest.param(
        [vnode("node1"), vnode("node2")],
        [pod("p1.1", prio=LOW, req=SMALL, node="node1"), pod("p1.2", prio=MID, req=LARGE, node="node1"),
         pod("p2", prio=MID, req=LARGE, node="node2")],
        pod("p", prio=HIGH, req=LARGE), None,
        {"node1": (["p1.2"], 0), "node2": (["p2"], 0)},
        id="medium priority pod is preempted, but lower priority one stays as it is small"),
    pytest.param(
        [vnode("node1"), vnode("node2")],
        [pod("p1.1", prio=MID, req=SMALL, node="node1"), pod("p1.2", prio=LOW, req=SMALL, node="node1"),
         pod("p1.3", prio=MID, req=MEDIUM, node="node1"), pod("p1.4", prio=HIGH, req=SMALL, node="node1"),
         pod("p2", prio=HIGH, req=LARGE, node="node2")],
        pod("p", prio=HIGH, req=LARGE), None,
        # reprieve order p1.1 (kept), p1.3, p1.2: upstream lists them sorted by name
        {"node1": (["p1.3", "p1.2"], 0)},
        id="mixed priority pods are preempted"),
    pytest.param(
        [vnode("node1"), node("node2", cpu="150m", memory="500")],
        [pod("p1.1", prio=LOW, req=SMALL, node="node1", labels={"foo": ""},
             affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                 {"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                  "topologyKey": "hostname"}]}}),
         pod("p1.2", prio=MID, req=SMALL, node="node1"), pod("p1.3", prio=HIGH, req=SMALL, node="node1"),
         pod("p2", prio=HIGH, req=SMALL, node="node2")],
        pod("p", prio=HIGH, req=SMALL, labels={"foo": ""}), None,
        # node2 is shrunk so that p does not simply fit there (upstream calls the dry run directly)
        {"node1": (["p1.1"], 0)},
        id="pod with anti-affinity is preempted"),
    pytest.param(
        [node("node-a", labels={"zone": "zone1"}), node("node-b", labels={"zone": "zone1"}),
         node("node-x", labels={"zone": "zone2"})],
        [pod("pod-a1", prio=MID, node="node-a", labels={"foo": ""}),
         pod("pod-a2", prio=LOW, node="node-a", labels={"foo": ""}),
         pod("pod-b1", prio=LOW, node="node-b", labels={"foo": ""}),
         pod("pod-x1", prio=HIGH, node="node-x", labels={"foo": ""}),
         pod("pod-x2", prio=HIGH, node="node-x", labels={"foo": ""})],
        pod("p", prio=HIGH, labels={"foo": ""}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}},
            {"maxSkew": 1, "topologyKey": "hostname", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]),
        None,
        {"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)},
        id="preemption to resolve pod topology spread filter failure"),
    pytest.param(
        [vnode("node1")],
        [pod("p1.1", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"}),
         pod("p1.2", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"})],
        pod("p", prio=HIGH, req=VERY_LARGE), pdb(allowed=1),
        # the budget goes to p1.1 (first in order); p1.2 violates and is tried (and listed) first
        {"node1": (["p1.2", "p1.1"], 1)},
        id="preemption with violation of same pdb"),
    pytest.param(
        [vnode("node1")],
        [pod("p1.1", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"}),
         pod("p1.2", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"})],
        pod("p", prio=HIGH, req=VERY_LARGE), pdb(allowed=1, disrupted=["p2"]),
        {"node1": (["p1.2", "p1.1"], 1)},
        id="preemption with violation of the pdb with pod whose eviction was processed, "
           "the victim doesn't belong to DisruptedPods"),
    pytest.param(
        [vnode("node1")],
        [pod("p1.1", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"}),
         pod("p1.2", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"})],
        pod("p", prio=HIGH, req=VERY_LARGE), pdb(allowed=1, disrupted=["p1.2"]),
        {"node1": (["p1.1", "p1.2"], 0)},
        id="preemption with violation of the pdb with pod whose eviction was processed, "
           "the victim belongs to DisruptedPods"),
    pytest.param(
        [vnode("node1")],
        [pod("p1.1", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"}),
         pod("p1.2", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"}),
         pod("p1.3", prio=MID, req=MEDIUM, node="node1", labels={"app": "foo"})],
        pod("p", prio=HIGH, req=VERY_LARGE), pdb(allowed=1, disrupted=["p1.3"]),
        {"node1": (["p1.2", "p1.1", "p1.3"], 1)},
        id="preemption with violation of the pdb with pod whose eviction was processed, "
           "the victim which belongs to DisruptedPods is treated as 'nonViolating'"),
]


@pytest.mark.parametrize("nodes,pods,preemptor,the_pdb,want", DRY_RUN_CASES)
def test_dry_run_preemption(nodes, pods, preemptor, the_pdb, want):
    """Upstream TestDryRunPreemption (default_preemption_test.go): the candidates SelectVictimsOnNode
    finds per node, with their victims in v1.28's reprieve order (PDB-violating first, each
    group most important first) and NumPDBViolations."""
    objs = list(nodes) + ([the_pdb] if the_pdb else []) + list(pods) + [preemptor]
    eng, ev = run(scenario(*objs), 0.5)
    assert candidates(ev) == want


def test_dry_run_no_lower_priority_pods_anywhere():
    """Upstream TestDryRunPreemption "a pod that would fit on the nodes, but other pods running are
    higher priority, no preemption would happen": every node answers UU "No preemption victims
    found for incoming pod"; no candidate, no victim, no nomination."""
    sc = scenario(vnode("node1"), vnode("node2"),
                  pod("p1", prio=MID, req=LARGE, node="node1"), pod("p2", prio=MID, req=LARGE, node="node2"),
                  pod("p", prio=LOW, req=LARGE))
    eng, ev = run(sc, 1)
    assert candidates(ev) == {}
    assert of(ev, "ReprieveStart") == []
    pf = post_filter(ev)
    assert pf["code"] == "Unschedulable"
    assert pf["reasons"] == ["preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."]
    assert of(ev, "PodDeleted") == [] and of(ev, "Nomination") == []


def test_reprieve_ties_follow_node_pod_order():
    """util.MoreImportantPod ties (equal priority and start time): upstream's sort.Slice is
    unstable; SPEC §4 orders ties by the node's pod order as the cache keeps it -- a pod removed
    from a node leaves its slot to the node's last pod (NodeInfo.RemovePod swaps with the last),
    and a bound pod that is updated (its deletion started) is removed and added again.  Deleting
    x (first slot, grace 0) moves c into its slot, so the node order is c, a, b: c and a are
    reprieved and b is the victim, where creation order alone makes c the victim."""
    objs = [node("n1", cpu="4")] + [pod(n, prio=1, req={"cpu": "1"}, node="n1") for n in "abc"]
    _, ev = run(scenario(*objs, pod("p", prio=100, req={"cpu": "2"})), 0.5)
    assert reprieve_steps(ev, "n1") == [("a", True), ("b", True), ("c", False)]
    assert candidates(ev) == {"n1": (["c"], 0)}

    objs.insert(1, pod("x", prio=1, req={"cpu": "1"}, node="n1", grace=0))
    sc = scenario(*objs, actions=[{"at": 1, "delete": {"kind": "Pod", "namespace": "default", "name": "x"}},
                                  {"at": 2, "create": pod("p", prio=100, req={"cpu": "2"})}])
    eng, ev = run(sc, 2.5)
    assert "default/x" in eng.state()["deletedPods"]
    assert reprieve_steps(ev, "n1") == [("c", True), ("a", True), ("b", False)]
    assert candidates(ev) == {"n1": (["b"], 0)}


def test_reprieve_ties_follow_cache_order_after_bind_confirmations():
    """The node's pod order after asynchronous binds (bindDuration 1 s): a, b, c are assumed in
    that order; each bind confirmation (AssignedPodAdd of an assumed pod = cache.updatePod =
    remove + add) swaps the last pod into the removed slot and appends the pod: [c,b,a] ->
    [c,a,b] -> [b,a,c].  All start at t=1, so the reprieve order is b, a, c: b is kept and a, c
    are the victims (creation order would keep a)."""
    d = {"kind": "Scenario", "metadata": {"name": "bind-order"}, "simulation": {"bindDuration": "1s"},
         "objects": [node("n1", cpu="3")] + [pod(n, prio=1, req={"cpu": "1"}) for n in "abc"],
         "actions": [{"at": 2, "create": pod("p", prio=100, req={"cpu": "2"})}]}
    eng, ev = run(Scenario.from_dict(d), 2.5)
    assert [(e["pod"], e["time"]) for e in of(ev, "Bound")] == [
        ("default/a", 1.0), ("default/b", 1.0), ("default/c", 1.0)]
    assert reprieve_steps(ev, "n1") == [("b", True), ("a", False), ("c", False)]
    assert candidates(ev) == {"n1": (["a", "c"], 0)}


def test_reprieve_pdb_violating_victims_first():
    """SelectVictimsOnNode with PDBs: filterPodsWithPDBViolation splits the sorted pods; the
    violating group is reprieved first.  Without the PDB the priority-5 pod would be tried (and
    kept) first and the priority-1 pod evicted; with the PDB (disruptionsAllowed 0) the
    priority-1 pod violates, is tried first and kept, and the priority-5 pod is the victim --
    so the candidate has no PDB violation."""
    objs = [node("n1"), pod("v1", prio=1, req={"cpu": "1"}, node="n1", labels={"app": "db"}),
            pod("v5", prio=5, req={"cpu": "1"}, node="n1"), pod("p", prio=100, req={"cpu": "1"})]
    _, ev = run(scenario(*objs), 0.5)
    assert reprieve_steps(ev, "n1") == [("v5", True), ("v1", False)]
    assert candidates(ev) == {"n1": (["v1"], 0)}

    _, ev = run(scenario(pdb(match={"app": "db"}, allowed=0), *objs), 0.5)
    assert reprieve_steps(ev, "n1") == [("v1", True), ("v5", False)]
    assert [e["pdbViolating"] for e in of(ev, "ReprieveStep")] == [True, False]
    assert candidates(ev) == {"n1": (["v5"], 0)}


def test_num_pdb_violations_counts_only_violating_victims():
    """SelectVictimsOnNode's numViolatingVictim counts violating pods that stay victims, not all
    violating pods: v2 and v1 both violate (disruptionsAllowed 0); v2 (more important) is
    reprieved, v1 stays a victim; the unlabeled n3 never matches a PDB."""
    sc = scenario(
        node("n1", cpu="3"), pdb(match={"app": "db"}, allowed=0),
        pod("v2", prio=2, req={"cpu": "1"}, node="n1", labels={"app": "db"}),
        pod("v1", prio=1, req={"cpu": "1"}, node="n1", labels={"app": "db"}),
        pod("n3", prio=3, req={"cpu": "1"}, node="n1"),
        pod("p", prio=100, req={"cpu": "2"}))
    _, ev = run(sc, 0.5)
    assert reprieve_steps(ev, "n1") == [("v2", True), ("v1", False), ("n3", False)]
    assert candidates(ev) == {"n1": (["v1", "n3"], 1)}


def test_pdb_budget_consumed_in_importance_order():
    """filterPodsWithPDBViolation consumes disruptionsAllowed in the sorted order: with a budget of
    1 and two matching pods, the more important one (priority 2) is non-violating and the other
    violating; the violating one is reprieved (tried) first and listed first."""
    sc = scenario(
        node("n1"), pdb(match={"app": "db"}, allowed=1),
        pod("lo", prio=1, req={"cpu": "1"}, node="n1", labels={"app": "db"}),
        pod("hi", prio=2, req={"cpu": "1"}, node="n1", labels={"app": "db"}),
        pod("p", prio=100, req={"cpu": "2"}))
    _, ev = run(sc, 0.5)
    steps = of(ev, "ReprieveStep", node="n1")
    assert [(s["victim"], s["pdbViolating"], s["reprieved"]) for s in steps] == [
        ("default/lo", True, False), ("default/hi", False, False)]
    assert candidates(ev) == {"n1": (["lo", "hi"], 1)}


def test_pods_without_labels_never_match_a_pdb():
    """filterPodsWithPDBViolation: "A pod with no labels will not match any PDB" -- even a selector
    that matches every label set without ``app`` (DoesNotExist).  The labelled pod violates
    (disruptionsAllowed 0), the unlabelled one does not."""
    sc = scenario(
        node("n1"),
        pdb(selector={"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, allowed=0),
        pod("bare", prio=1, req={"cpu": "1"}, node="n1"),
        pod("tagged", prio=1, req={"cpu": "1"}, node="n1", labels={"tier": "x"}),
        pod("p", prio=100, req={"cpu": "2"}))
    _, ev = run(sc, 0.5)
    flags = {s["victim"]: s["pdbViolating"] for s in of(ev, "ReprieveStep", node="n1")}
    assert flags == {"default/tagged": True, "default/bare": False}
    assert candidates(ev) == {"n1": (["tagged", "bare"], 1)}


def test_pdb_in_other_namespace_or_empty_selector_matches_nothing():
    """filterPodsWithPDBViolation skips PDBs of another namespace and PDBs whose selector is empty
    ("A PDB with a nil or empty selector matches nothing")."""
    sc = scenario(
        node("n1"),
        {**pdb(name="other-ns", match={"app": "db"}, allowed=0),
         "metadata": {"name": "other-ns", "namespace": "kube-system"}},
        pdb(name="empty", selector={}, allowed=0),
        pod("db", prio=1, req={"cpu": "2"}, node="n1", labels={"app": "db"}),
        pod("p", prio=100, req={"cpu": "2"}))
    _, ev = run(sc, 0.5)
    assert candidates(ev) == {"n1": (["db"], 0)}


@pytest.mark.parametrize("spec,extra_pods,want_violations", [
    # given status.disruptionsAllowed is used as is
    pytest.param({"allowed": 0, "min_available": 1}, [], 2, id="given-0"),
    # recomputed: expected 2, healthy 2, desired 1 -> 1 allowed
    pytest.param({"min_available": 1}, [], 1, id="minAvailable-1"),
    # recomputed: a pending matching pod counts as expected, not healthy: 3 - 1 = 2 desired, 2 healthy -> 0
    pytest.param({"max_unavailable": 1}, ["pending"], 2, id="maxUnavailable-1-with-pending"),
    # recomputed: 50% of 2 expected rounds up to 1 desired -> 1 allowed
    pytest.param({"min_available": "50%"}, [], 1, id="minAvailable-50pct"),
    # recomputed: 34% of 3 expected (incl. pending) rounds up to 2 desired; healthy 2 -> 0
    pytest.param({"min_available": "34%"}, ["pending"], 2, id="minAvailable-34pct-rounds-up"),
    # recomputed: maxUnavailable 100% -> desired 0 -> 2 allowed
    pytest.param({"max_unavailable": "100%"}, [], 0, id="maxUnavailable-100pct"),
])
def test_disruptions_allowed_given_or_recomputed(spec, extra_pods, want_violations):
    """PDB status.disruptionsAllowed as SPEC §1 says: used when given, else recomputed as the
    disruption controller would (expected = matching pods incl. pending/terminating, healthy =
    bound and not terminating, desired from minAvailable or expected - maxUnavailable,
    percentages of expected rounded up) -- observed through the victims' PDB violations."""
    objs = [node("n1"), pdb(match={"app": "db"}, **spec),
            pod("d1", prio=1, req={"cpu": "1"}, node="n1", labels={"app": "db"}),
            pod("d2", prio=1, req={"cpu": "1"}, node="n1", labels={"app": "db"})]
    for name in extra_pods:   # a matching pod that cannot be scheduled (asks for too much)
        objs.append(pod(name, prio=0, req={"cpu": "64"}, labels={"app": "db"}, policy="Never"))
    objs.append(pod("p", prio=100, req={"cpu": "2"}))
    _, ev = run(scenario(*objs), 0.5)
    assert candidates(ev)["n1"][1] == want_violations


# ============================================================================ eligibility

def test_preemption_policy_never_on_pod():
    """PodEligibleToPreemptOthers: preemptionPolicy Never -> "not eligible due to
    preemptionPolicy=Never."; PostFilter returns (nil, Unschedulable), nothing is evicted and
    no nomination is made (upstream TestPreempt "no preempting in pod")."""
    sc = scenario(vnode("node1"), vnode("node2"), vnode("node3"),
                  pod("p1.1", prio=LOW, req=SMALL, node="node1"), pod("p1.2", prio=LOW, req=SMALL, node="node1"),
                  pod("p2.1", prio=HIGH, req=LARGE, node="node2"), pod("p3.1", prio=MID, req=MEDIUM, node="node3"),
                  pod("p", prio=HIGH, req=VERY_LARGE, policy="Never"))
    eng, ev = run(sc, 1)
    inel = one(ev, "PreemptionIneligible", preemptor="default/p")
    assert inel["reason"] == "not eligible due to preemptionPolicy=Never."
    pf = post_filter(ev)
    assert (pf["code"], pf["reasons"]) == ("Unschedulable", ["preemption: not eligible due to preemptionPolicy=Never."])
    assert of(ev, "ReprieveStart") == [] and of(ev, "PodDeleted") == [] and of(ev, "Nomination") == []
    assert pod_state(eng, "p")["nominatedNodeName"] is None


def test_preemption_policy_lower_priority_is_default():
    """Upstream TestPreempt "PreemptionPolicy is nil" / "basic preemption logic": with no policy the
    pod preempts; node1's two low-priority pods are cheaper than node3's mid-priority one
    (minHighestPriorityVictim); node2 holds only a high-priority pod."""
    sc = scenario(vnode("node1"), vnode("node2"), vnode("node3"),
                  pod("p1.1", prio=LOW, req=SMALL, node="node1"), pod("p1.2", prio=LOW, req=SMALL, node="node1"),
                  pod("p2.1", prio=HIGH, req=LARGE, node="node2"), pod("p3.1", prio=MID, req=MEDIUM, node="node3"),
                  pod("p", prio=HIGH, req=VERY_LARGE))
    eng, ev = run(sc, 1)
    pk = pick(ev)
    assert (pk["node"], pk["criterion"]) == ("node1", "minHighestPriorityVictim")
    assert sorted(e["pod"] for e in of(ev, "PodDeleted")) == ["default/p1.1", "default/p1.2"]


def test_preemption_policy_never_via_priority_class():
    """A pod's preemptionPolicy comes from its PriorityClass (priority admission) unless the pod
    sets it (SPEC §4); PriorityClass preemptionPolicy Never makes the pod ineligible."""
    sc = scenario(priority_class("no-preempt", 100, policy="Never"), node("n1"),
                  pod("v", prio=1, req={"cpu": "2"}, node="n1"),
                  pod("p", pc="no-preempt", req={"cpu": "2"}))
    eng, ev = run(sc, 1)
    assert one(ev, "PreemptionIneligible")["reason"] == "not eligible due to preemptionPolicy=Never."
    assert of(ev, "PodDeleted") == []
    assert pod_state(eng, "p")["priority"] == 100


def test_priority_class_policy_overridden_by_pod():
    """The pod's own preemptionPolicy wins over its PriorityClass's."""
    sc = scenario(priority_class("no-preempt", 100, policy="Never"), node("n1"),
                  pod("v", prio=1, req={"cpu": "2"}, node="n1"),
                  pod("p", pc="no-preempt", policy="PreemptLowerPriority", req={"cpu": "2"}))
    eng, ev = run(sc, 1)
    assert of(ev, "PreemptionIneligible") == []
    assert one(ev, "PodDeleted")["pod"] == "default/v"


def test_no_second_preemption_while_victims_terminate():
    """PodEligibleToPreemptOthers: a pod whose nominated node still holds a lower-priority pod
    terminating by preemption (deletionTimestamp + DisruptionTarget, reason
    PreemptionByScheduler) is not eligible ("not eligible due to a terminating pod on the
    nominated node."); Preempt returns (nil, Unschedulable), so the pod keeps its nomination
    and nothing more is evicted even though w on n2 could be.  It binds to n1 once v is gone
    (upstream TestPreempt's second Preempt call "doesn't preempt any more pods")."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1", grace=10),
        pod("w", prio=5, req={"cpu": "1900m"}, node="n2"),
        pod("x", prio=1000, req={"cpu": "100m"}, node="n2", grace=0),
        pod("p", prio=100, req={"cpu": "2"}),
        actions=[{"at": 2, "delete": {"kind": "Pod", "namespace": "default", "name": "x"}}])
    eng, ev = run(sc, 2.5)
    assert pick(ev, cycle=1)["node"] == "n1"          # v (priority 1) is cheaper than w (5)
    assert one(ev, "PodDeleted", pod="default/v")["reason"] == "Preempted"
    assert pod_state(eng, "v")["phase"] == "Terminating"
    # cycle 2 at t=2 (moved by x's AssignedPodDelete): still no room, and not eligible
    assert one(ev, "CycleStart", pod="default/p", cycle=2)["time"] == 2.0
    held = [e for e in of(ev, "PluginResult", pod="default/p", cycle=2, point="Filter", node="n1")
            if e["code"] != "Success"]
    assert {(e["plugin"], tuple(e["reasons"])) for e in held} == {("NodeResourcesFit", ("Insufficient cpu",))}
    inel = one(ev, "PreemptionIneligible", preemptor="default/p", cycle=2)
    assert inel["reason"] == "not eligible due to a terminating pod on the nominated node."
    assert of(ev, "ReprieveStart", cycle=2) == []
    assert one(ev, "CycleEnd", pod="default/p", cycle=2)["nominatedNode"] is None
    assert [e["node"] for e in of(ev, "Nomination", pod="default/p")] == ["n1"]
    st = pod_state(eng, "p")
    assert st["nominatedNodeName"] == "n1" and st["phase"] == "Pending"
    assert eng.state()["nominatedPods"].get("n1") == ["default/p"]
    # v is removed at t=10; p binds there; w was never touched
    eng.run(until=int(11 * US))
    assert "default/v" in eng.state()["deletedPods"]
    assert pod_state(eng, "p")["phase"] == "Running" and pod_state(eng, "p")["nodeName"] == "n1"
    assert pod_state(eng, "w")["phase"] == "Running"


def test_plain_deletion_on_nominated_node_does_not_block():
    """podTerminatingByPreemption with PodDisruptionConditions on (v1.28 default): a pod deleted
    by someone else (no DisruptionTarget condition) does not block a new preemption (upstream
    TestPodEligibleToPreemptOthers "non-victim Pods terminating, feature PodDisruptionConditions
    is enabled")."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1", grace=30),
        pod("w", prio=0, req={"cpu": "2"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}, nnn="n1"),
        actions=[{"at": 0, "delete": {"kind": "Pod", "namespace": "default", "name": "v"}}])
    eng, ev = run(sc, 0.5)
    assert one(ev, "PodDeleted", pod="default/v")["reason"] == "Deleted"
    assert of(ev, "PreemptionIneligible") == []
    assert pick(ev)["node"] == "n2"
    assert one(ev, "PodDeleted", pod="default/w")["reason"] == "Preempted"
    assert pod_state(eng, "p")["nominatedNodeName"] == "n2"


def test_already_terminating_victim_becomes_terminating_by_preemption():
    """prepareCandidate marks every victim DisruptionTarget=True (reason PreemptionByScheduler)
    before deleting it, even one whose deletion someone else already started; from then on it is
    "terminating by preemption", so PodEligibleToPreemptOthers keeps the preemptor waiting on
    its nominated node instead of evicting w elsewhere.  v (deleted at t=0, grace 30) is the
    only candidate in cycle 1; x's removal at t=2 retries p, when w on n2 could be evicted."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1", grace=30),
        pod("x", prio=1000, req={"cpu": "1"}, node="n2", grace=0),
        pod("w", prio=0, req={"cpu": "1"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}),
        actions=[{"at": 0, "delete": {"kind": "Pod", "namespace": "default", "name": "v"}},
                 {"at": 2, "delete": {"kind": "Pod", "namespace": "default", "name": "x"}}])
    eng, ev = run(sc, 3)
    assert pick(ev, cycle=1)["node"] == "n1"
    assert one(ev, "CycleStart", pod="default/p", cycle=2)["time"] == 2.0
    # upstream: cycle 2 is not eligible; p keeps n1 and w keeps running
    assert one(ev, "PreemptionIneligible", preemptor="default/p", cycle=2)["reason"] == \
        "not eligible due to a terminating pod on the nominated node."
    assert of(ev, "PodDeleted", pod="default/w") == []
    assert pod_state(eng, "p")["nominatedNodeName"] == "n1"


def test_terminating_victim_of_another_deleter_is_still_a_victim():
    """SelectVictimsOnNode (v1.28) does not skip terminating pods: a lower-priority pod whose
    deletion someone else started is still a potential victim, and the node holding it a
    candidate; the preemptor is nominated there."""
    sc = scenario(
        node("n1"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1", grace=30),
        pod("p", prio=100, req={"cpu": "2"}),
        actions=[{"at": 0, "delete": {"kind": "Pod", "namespace": "default", "name": "v"}}])
    eng, ev = run(sc, 1)
    assert candidates(ev) == {"n1": (["v"], 0)}
    assert pod_state(eng, "p")["nominatedNodeName"] == "n1"
    assert pod_state(eng, "v")["phase"] == "Terminating"


def test_unresolvable_nominated_node_makes_pod_eligible_again():
    """PodEligibleToPreemptOthers: if the nominated node's filter status is
    UnschedulableAndUnresolvable the pod may preempt again despite victims terminating there
    (upstream TestPodEligibleToPreemptOthers "Pod with nominated node").  n1 gets a NoSchedule
    taint while v terminates; the retry preempts w on n2 and moves the nomination there."""
    taint = [{"key": "gone", "value": "yes", "effect": "NoSchedule"}]
    sc = scenario(
        node("n1"), node("n2"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1", grace=10),
        pod("w", prio=5, req={"cpu": "1900m"}, node="n2"),
        pod("x", prio=1000, req={"cpu": "100m"}, node="n2", grace=0),
        pod("p", prio=100, req={"cpu": "2"}),
        actions=[{"at": 2, "update": node("n1", taints=taint)},
                 {"at": 2, "delete": {"kind": "Pod", "namespace": "default", "name": "x"}}])
    eng, ev = run(sc, 2.5)
    assert pick(ev, cycle=1)["node"] == "n1"
    f = [e for e in of(ev, "PluginResult", pod="default/p", cycle=2, point="Filter", node="n1")
         if e["code"] != "Success"]
    # the nominated node is tried first, then with every node (evaluateNominatedNode, then findNodesThatPassFilters)
    assert {(e["plugin"], e["code"]) for e in f} == {("TaintToleration", "UnschedulableAndUnresolvable")}
    assert of(ev, "PreemptionIneligible", cycle=2) == []
    skipped = one(ev, "PreemptionNodeResult", preemptor="default/p", cycle=2, node="n1")
    assert skipped["code"] == "UnschedulableAndUnresolvable"
    second = pick(ev, cycle=2)
    assert second["node"] == "n2"
    assert [c["node"] for c in second["candidates"]] == ["n2"]
    assert [e["node"] for e in of(ev, "Nomination", pod="default/p")] == ["n1", "n2"]
    assert one(ev, "PodDeleted", pod="default/w")["preemptor"] == "default/p"
    assert pod_state(eng, "p")["nominatedNodeName"] == "n2"


# ============================================================================ nodes and statuses

def test_post_filter_pod_with_higher_priority_can_be_made_schedulable():
    """Upstream TestPostFilter "pod with higher priority can be made schedulable": one pod slot,
    taken by a lower-priority pod -> nominated node1, PostFilter Success."""
    sc = scenario(node("node1", alloc={"pods": "1"}), pod("p1", node="node1"), pod("p", prio=HIGH))
    eng, ev = run(sc, 0.5)
    pf = post_filter(ev)
    assert (pf["code"], pf["reasons"]) == ("Success", [])
    assert one(ev, "CycleEnd", pod="default/p")["nominatedNode"] == "node1"


def test_post_filter_tied_priority_no_victims():
    """Upstream TestPostFilter "pod with tied priority is still unschedulable": SelectVictimsOnNode
    finds no lower-priority pod -> UU "No preemption victims found for incoming pod"; the
    result is NominatedNode("") (clearing any nomination) with the FitError message."""
    sc = scenario(node("node1", alloc={"pods": "1"}), pod("p1", node="node1"), pod("p", nnn="node1"))
    eng, ev = run(sc, 0.5)
    pf = post_filter(ev)
    assert pf["code"] == "Unschedulable"
    assert pf["reasons"] == ["preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."]
    assert one(ev, "Nomination", pod="default/p")["node"] is None
    assert pod_state(eng, "p")["nominatedNodeName"] is None


def test_post_filter_respects_unresolvable_statuses():
    """Upstream TestPostFilter "preemption should respect filteredNodesStatuses":
    nodesWherePreemptionMightHelp skips UU nodes ("Preemption is not helpful for scheduling");
    with none left findCandidates clears the pod's nominatedNodeName and no dry run happens."""
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    sc = scenario(node("node1", alloc={"pods": "1"}, taints=taint), pod("p1", node="node1"),
                  pod("p", prio=HIGH, nnn="node1"))
    eng, ev = run(sc, 0.5)
    pf = post_filter(ev)
    assert pf["reasons"] == ["preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."]
    assert of(ev, "ReprieveStart") == [] and of(ev, "PreemptionCandidate") == []
    assert one(ev, "PreemptionNodeResult", node="node1")["code"] == "UnschedulableAndUnresolvable"
    assert one(ev, "Nomination", pod="default/p")["node"] is None
    assert pod_state(eng, "p")["nominatedNodeName"] is None


def test_post_filter_pod_can_be_made_schedulable_on_one_node():
    """Upstream TestPostFilter "pod can be made schedulable on one node"."""
    sc = scenario(node("node1", alloc={"pods": "1"}), node("node2", alloc={"pods": "1"}),
                  pod("p1", prio=HIGH, node="node1"), pod("p2", prio=LOW, node="node2"),
                  pod("p", prio=MID))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"node2": (["p2"], 0)}
    assert post_filter(ev)["code"] == "Success"
    assert pod_state(eng, "p")["nominatedNodeName"] == "node2"


NODE_RES = {"cpu": "200m", "memory": "400", "pods": "32"}


@pytest.mark.parametrize("nodes,pods,message", [
    pytest.param(
        [node("node1", alloc=NODE_RES), node("node2", alloc=NODE_RES)],
        [pod("p1", node="node1"), pod("p2", node="node2")],
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        id="no candidate nodes found, no enough resource after removing low priority pods"),
    pytest.param(
        [node("node1", alloc={"pods": "1"}), node("node2", alloc=NODE_RES), node("node3", alloc={"pods": "1"})],
        [pod("p1", prio=HIGH, node="node1"), pod("p2", node="node2"), pod("p3", prio=HIGH, node="node3")],
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource"),
    pytest.param(
        [node("node1", alloc=NODE_RES), node("node2", alloc=NODE_RES),
         node("node3", alloc=NODE_RES, taints=[{"key": "k", "effect": "NoSchedule"}]),
         node("node4", alloc=NODE_RES, taints=[{"key": "k", "effect": "NoSchedule"}])],
        [pod("p1", node="node1"), pod("p2", node="node2")],
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes "
           "don't have enough CPU resource"),
])
def test_post_filter_no_candidates(nodes, pods, message):
    """Upstream TestPostFilter: a node where even removing every lower-priority pod leaves the pod
    unfit is no candidate (its dry-run status joins the FitError); UU nodes count as "Preemption
    is not helpful for scheduling"; the result clears the nomination (NominatedNode(""))."""
    sc = scenario(*nodes, *pods, pod("p", prio=HIGH, req=LARGE))
    eng, ev = run(sc, 0.5)
    pf = post_filter(ev)
    assert (pf["code"], pf["reasons"]) == ("Unschedulable", [message])
    assert of(ev, "PreemptionCandidate") == [] and of(ev, "PodDeleted") == []
    assert one(ev, "CycleEnd", pod="default/p")["nominatedNode"] is None


def test_not_fitting_even_after_removing_all_is_not_a_candidate():
    """SelectVictimsOnNode: "If the new pod does not fit after removing all the lower priority
    pods ... this node is not suitable for preemption": no ReprieveStep on n1 (its dry run
    fails at once with the filter's status), n2 is the only candidate."""
    sc = scenario(
        node("n1", cpu="2"), node("n2", cpu="3"),
        pod("hi", prio=1000, req={"cpu": "1"}, node="n1"), pod("lo1", prio=1, req={"cpu": "1"}, node="n1"),
        pod("lo2", prio=5, req={"cpu": "3"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    fits = one(ev, "ReprieveFits", preemptor="default/p", node="n1")
    assert (fits["fits"], fits["plugin"], fits["reasons"]) == (False, "NodeResourcesFit", ["Insufficient cpu"])
    assert reprieve_steps(ev, "n1") == []
    assert candidates(ev) == {"n2": (["lo2"], 0)}
    nr = one(ev, "PreemptionNodeResult", node="n1")
    assert (nr["candidate"], nr["code"]) == (False, "Unschedulable")


def test_nodes_absent_from_status_map_are_tried():
    """findCandidates: nodes absent from the filter status map (here: left out by NodeAffinity's
    PreFilterResult, so never filtered) count as "not UU" and are dry-run; their Filter then
    rejects them (NodeAffinity UU), which shows in the FitError over the dry-run statuses."""
    sc = scenario(
        node("n1"), node("n2"),
        pod("a", prio=1000, req={"cpu": "2"}, node="n1"),
        pod("b", prio=1, req={"cpu": "2"}, node="n2"),
        pod("p", prio=100, req={"cpu": "2"}, affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}))
    eng, ev = run(sc, 0.5)
    assert {e["node"] for e in of(ev, "PluginResult", pod="default/p", point="Filter", dryRun=False)} == {"n1"}
    assert one(ev, "ReprieveStart", preemptor="default/p")["node"] == "n2"
    fits = one(ev, "ReprieveFits", node="n2")
    assert (fits["fits"], fits["plugin"]) == (False, "NodeAffinity")
    assert post_filter(ev)["reasons"] == [
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 node(s) didn't match Pod's node affinity/selector."]
    assert of(ev, "PodDeleted") == []


def test_nodes_where_preemption_might_help_skips_uu_nodes():
    """nodesWherePreemptionMightHelp (upstream TestNodesWherePreemptionMightHelp "UnschedulableAndUnresolvable
    status should be skipped but Unschedulable should be tried"): node affinity / taint / node
    unschedulable failures are UU and skipped; resource failures are tried."""
    sc = scenario(
        node("n1"), node("n2", taints=[{"key": "k", "effect": "NoSchedule"}]),
        {**node("n3"), "spec": {"unschedulable": True}}, node("n4", labels={"disk": "hdd"}),
        *[pod(f"v{i}", prio=1, req={"cpu": "2"}, node=f"n{i}") for i in range(1, 5)],
        pod("p", prio=100, req={"cpu": "2"}, affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["hdd"]}]}]}}}))
    eng, ev = run(sc, 0.5)
    skipped = [e["node"] for e in of(ev, "PreemptionNodeResult", preemptor="default/p")
               if e["reason"].startswith("skipped")]
    assert skipped == ["n2", "n3", "n4"]
    assert [e["node"] for e in of(ev, "ReprieveStart")] == ["n1"]
    assert candidates(ev) == {"n1": (["v1"], 0)}


# ============================================================================ candidate limits

def _five_nodes(pods):
    return [vnode(f"node{i}") for i in range(1, 6)] + pods


def test_dry_run_limited_by_num_candidates():
    """Upstream TestDryRunPreemption "all nodes are possible candidates, but DefaultPreemptionArgs
    limits to 2" (minCandidateNodesPercentage 40, minCandidateNodesAbsolute 1 via pluginConfig;
    offset 0 here): calculateNumCandidates(5) = 2, and DryRunPreemption stops once a
    non-violating candidate exists and 2 candidates were found -- node3..node5 are not examined."""
    pods = [pod(f"p{i}", prio=MID, req=LARGE, node=f"node{i}") for i in range(1, 6)]
    sc = scenario(*_five_nodes(pods), pod("p", prio=HIGH, req=LARGE),
                  plugin_args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1})
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"node1": (["p1"], 0), "node2": (["p2"], 0)}
    assert examined_nodes(ev) == ["node1", "node2"]
    stop = one(ev, "PreemptionDryRunStop", preemptor="default/p")
    assert (stop["examined"], stop["potentialNodes"], stop["numCandidates"]) == (2, 5, 2)
    dry_nodes = {e["node"] for e in of(ev, "PluginResult", pod="default/p", point="Filter", dryRun=True)}
    assert dry_nodes == {"node1", "node2"}


def test_dry_run_with_default_limits_examines_every_node():
    """With the defaults (10 %, 100) numCandidates for 5 nodes is 5: every node is examined."""
    pods = [pod(f"p{i}", prio=MID, req=LARGE, node=f"node{i}") for i in range(1, 6)]
    eng, ev = run(scenario(*_five_nodes(pods), pod("p", prio=HIGH, req=LARGE)), 0.5)
    assert examined_nodes(ev) == [f"node{i}" for i in range(1, 6)]
    assert of(ev, "PreemptionDryRunStop") == []


def test_dry_run_skips_non_candidates_until_enough():
    """Upstream TestDryRunPreemption "some nodes are not possible candidates, DefaultPreemptionArgs
    limits to 2" (offset 0): node2 holds only a higher-priority pod, so the dry run goes on to
    node3 and stops there."""
    prios = {1: MID, 2: VERY_HIGH, 3: MID, 4: MID, 5: VERY_HIGH}
    pods = [pod(f"p{i}", prio=prios[i], req=LARGE, node=f"node{i}") for i in range(1, 6)]
    sc = scenario(*_five_nodes(pods), pod("p", prio=HIGH, req=LARGE),
                  plugin_args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1})
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"node1": (["p1"], 0), "node3": (["p3"], 0)}
    assert examined_nodes(ev) == ["node1", "node2", "node3"]


def test_dry_run_looks_past_num_candidates_until_non_violating():
    """Upstream TestDryRunPreemption "preemption looks past numCandidates until a non-PDB violating
    node is found" (40 %, absolute 2; offset 0): node1 and node2 violate the PDB, so reaching
    numCandidates does not stop the dry run until node3 (non-violating) is found.  The pick
    prefers node3 (fewest PDB violations); candidates are listed non-violating first."""
    labels = {1: {"app": "foo"}, 2: {"app": "foo"}, 3: None, 4: None, 5: {"app": "foo"}}
    pods = [pod(f"p{i}", prio=MID, req=LARGE, node=f"node{i}", labels=labels[i]) for i in range(1, 6)]
    sc = scenario(*_five_nodes(pods), pdb(allowed=0), pod("p", prio=HIGH, req=LARGE),
                  plugin_args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2})
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"node1": (["p1"], 1), "node2": (["p2"], 1), "node3": (["p3"], 0)}
    assert examined_nodes(ev) == ["node1", "node2", "node3"]
    pk = pick(ev)
    assert [c["node"] for c in pk["candidates"]] == ["node3", "node1", "node2"]
    assert (pk["node"], pk["criterion"]) == ("node3", "minNumPDBViolatingVictims")


def test_dry_run_candidate_lists_are_capped():
    """DryRunPreemption's candidateList holds at most numCandidates entries each; extra violating
    candidates are dropped silently (newCandidateList / add), while the dry run goes on looking
    for a non-violating one.  numCandidates 1: node1 is kept, node2/node3 dropped, node4 ends it."""
    labels = {1: {"app": "foo"}, 2: {"app": "foo"}, 3: {"app": "foo"}, 4: None, 5: None}
    pods = [pod(f"p{i}", prio=MID, req=LARGE, node=f"node{i}", labels=labels[i]) for i in range(1, 6)]
    sc = scenario(*_five_nodes(pods), pdb(allowed=0), pod("p", prio=HIGH, req=LARGE),
                  plugin_args={"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 1})
    eng, ev = run(sc, 0.5)
    assert examined_nodes(ev) == ["node1", "node2", "node3", "node4"]
    pk = pick(ev)
    assert [c["node"] for c in pk["candidates"]] == ["node4", "node1"]
    assert pk["node"] == "node4"


def test_num_candidates_counts_only_potential_nodes():
    """findCandidates calls GetOffsetAndNumCandidates(len(potentialNodes)): the UU nodes skipped by
    nodesWherePreemptionMightHelp do not count.  3 potential nodes at 40 % -> 1 candidate (5
    nodes would give 2), so the dry run stops after node3."""
    taint = [{"key": "k", "effect": "NoSchedule"}]
    nodes = [vnode("node1", taints=taint), vnode("node2", taints=taint)] + [vnode(f"node{i}") for i in (3, 4, 5)]
    pods = [pod(f"p{i}", prio=MID, req=LARGE, node=f"node{i}") for i in range(1, 6)]
    sc = scenario(*nodes, *pods, pod("p", prio=HIGH, req=LARGE),
                  plugin_args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1})
    eng, ev = run(sc, 0.5)
    assert examined_nodes(ev) == ["node3"]
    stop = one(ev, "PreemptionDryRunStop", preemptor="default/p")
    assert (stop["potentialNodes"], stop["numCandidates"]) == (3, 1)


def test_pdb_budget_is_per_node():
    """SelectVictimsOnNode runs filterPodsWithPDBViolation afresh on every node, from the PDB's
    disruptionsAllowed: with a budget of 1, each node's single matching victim is non-violating."""
    sc = scenario(vnode("node1"), vnode("node2"), pdb(allowed=1),
                  pod("p1", prio=MID, req=LARGE, node="node1", labels={"app": "foo"}),
                  pod("p2", prio=MID, req=LARGE, node="node2", labels={"app": "foo"}),
                  pod("p", prio=HIGH, req=LARGE))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"node1": (["p1"], 0), "node2": (["p2"], 0)}


@pytest.mark.parametrize("args,num_nodes,want", [
    ({}, 10, 10), ({}, 100, 100), ({}, 1000, 100), ({}, 5000, 500),
    ({"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 5, 2),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, 1000, 3),
    ({"minCandidateNodesPercentage": 50}, 1000, 500),            # absolute defaults to 100
    ({"minCandidateNodesAbsolute": 7}, 10, 7),                    # percentage defaults to 10
    ({"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0}, 5000, 5000),
    ({"minCandidateNodesAbsolute": 1000}, 10, 10),                # never more than numNodes
])
def test_calculate_num_candidates_from_plugin_config(args, num_nodes, want):
    """calculateNumCandidates with DefaultPreemptionArgs configured through the scenario's
    scheduler.profiles[0].pluginConfig (v1 defaults 10 % and 100 for fields left out)."""
    eng = Engine(scenario(node("n1"), plugin_args=args))
    plugin = eng.frameworks["default-scheduler"].post_filter_plugins[0]
    assert plugin.name == "DefaultPreemption"
    assert plugin.calculate_num_candidates(num_nodes) == want
    assert plugin.get_offset_and_num_candidates(num_nodes) == (0, want)


@pytest.mark.parametrize("args", [
    {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
    {"minCandidateNodesPercentage": 101},
    {"minCandidateNodesPercentage": -1},
    {"minCandidateNodesAbsolute": -1},
])
def test_invalid_default_preemption_args(args):
    """ValidateDefaultPreemptionArgs (apis/config/validation/validation_pluginargs.go): percentage
    in [0, 100], absolute >= 0, not both zero."""
    with pytest.raises(ConfigError):
        Engine(scenario(node("n1"), plugin_args=args))


# ============================================================================ nominated pods: two passes

def _reserved(low_prio, reserver_prio=100):
    """``r`` is nominated to n1 (status.nominatedNodeName) but cannot schedule (nodeSelector) and
    does not preempt (Never), so it keeps its reservation of 3 of n1's 4 CPUs."""
    return scenario(
        node("n1", cpu="4"),
        pod("r", prio=reserver_prio, req={"cpu": "3"}, nnn="n1", policy="Never", nodeSelector={"disk": "ssd"}),
        pod("l", prio=low_prio, req={"cpu": "2"}))


def test_lower_priority_pod_cannot_take_space_reserved_by_nominated_pod():
    """RunFilterPluginsWithNominatedPods pass 1: the nominated pods of priority >= the pod's are
    added to a clone of the node; a lower-priority pod that would fit the empty node is
    rejected (Insufficient cpu) and pass 2 does not run."""
    eng, ev = run(_reserved(50), 0.5)
    f = of(ev, "PluginResult", pod="default/l", point="Filter", node="n1", dryRun=False)
    assert [(e["plugin"], e["code"]) for e in f][-1] == ("NodeResourcesFit", "Unschedulable")
    assert len([e for e in f if e["plugin"] == "NodeResourcesFit"]) == 1      # no second pass
    assert pod_state(eng, "l")["phase"] == "Pending"
    assert pod_state(eng, "r")["nominatedNodeName"] == "n1"


def test_equal_priority_pod_also_yields_to_nominated_pod():
    """Pass 1 takes nominated pods with priority >= the pod's: an equal-priority pod yields too."""
    eng, ev = run(_reserved(100), 0.5)
    assert pod_state(eng, "l")["phase"] == "Pending"


def test_higher_priority_pod_ignores_lower_nominated_pods():
    """Nominated pods of lower priority are ignored (they may be displaced): a higher-priority pod
    runs the filters once, on the real node, and binds."""
    eng, ev = run(_reserved(150), 0.5)
    assert pod_state(eng, "l")["phase"] == "Running"
    f = of(ev, "PluginResult", pod="default/l", point="Filter", node="n1")
    assert len([e for e in f if e["plugin"] == "NodeResourcesFit"]) == 1
    assert all(e["code"] == "Success" for e in f)


@pytest.mark.parametrize("other_prio,winner", [(50, "p"), (100, "p"), (150, "other")])
def test_space_freed_by_preemption_is_reserved_for_the_preemptor(other_prio, winner):
    """End to end: p preempts v (grace 0, so n1 is free at once) and waits in backoffQ until t=1.
    A pod arriving at t=0.5 sees p as occupying n1 iff its priority is <= p's (pass 1 of
    RunFilterPluginsWithNominatedPods takes nominated pods of priority >= its own), so a lower
    or equal one cannot take the space; a higher one ignores the nomination and takes it."""
    sc = scenario(
        node("n1"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1", grace=0),
        pod("p", prio=100, req={"cpu": "2"}),
        actions=[{"at": 0.5, "create": pod("other", prio=other_prio, req={"cpu": "2"})}])
    eng, ev = run(sc, 0.6)
    assert one(ev, "PodRemoved", pod="default/v")["time"] == 0.0
    assert pod_state(eng, "p")["queue"] == "backoffQ"
    other = pod_state(eng, "other")
    assert other["phase"] == ("Running" if winner == "other" else "Pending")
    eng.run(until=int(2 * US))
    assert pod_state(eng, winner)["phase"] == "Running"
    assert pod_state(eng, winner)["nodeName"] == "n1"
    loser = "other" if winner == "p" else "p"
    assert pod_state(eng, loser)["phase"] == "Pending"


def test_second_pass_without_nominated_pods_inter_pod_affinity():
    """RunFilterPluginsWithNominatedPods pass 2 (the comment's server/database example): a pod with
    required affinity to a nominated-but-not-running database passes pass 1 (the database is
    added to the node) but must also pass without it, and does not: InterPodAffinity rejects
    it in pass 2."""
    sc = scenario(
        node("n1"),
        pod("db", prio=100, labels={"app": "db"}, nnn="n1", policy="Never", nodeSelector={"disk": "ssd"}),
        pod("server", prio=50, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}))
    eng, ev = run(sc, 0.5)
    f = of(ev, "PluginResult", pod="default/server", point="Filter", node="n1", dryRun=False)
    ipa = [e for e in f if e["plugin"] == "InterPodAffinity"]
    assert [e["code"] for e in ipa] == ["Success", "UnschedulableAndUnresolvable"]
    assert ipa[1]["reasons"] == ["node(s) didn't match pod affinity rules"]
    assert pod_state(eng, "server")["phase"] == "Pending"


def test_reprieve_counts_higher_priority_nominated_pods():
    """The reprieve check is RunFilterPluginsWithNominatedPods too: a higher-priority pod nominated
    to the node (1 CPU reserved) is added in pass 1, so one more victim is needed than the
    running pods alone would require."""
    sc = scenario(
        node("n1", cpu="3"),
        pod("h", prio=200, req={"cpu": "1"}, nnn="n1", policy="Never", nodeSelector={"disk": "ssd"}),
        pod("v1", prio=1, req={"cpu": "1"}, node="n1"), pod("v2", prio=2, req={"cpu": "1"}, node="n1"),
        pod("v3", prio=3, req={"cpu": "1"}, node="n1"),
        pod("p", prio=100, req={"cpu": "1"}))
    eng, ev = run(sc, 0.5)
    assert reprieve_steps(ev, "n1") == [("v3", True), ("v2", False), ("v1", False)]
    assert candidates(ev) == {"n1": (["v2", "v1"], 0)}


# ============================================================================ prepareCandidate

def test_prepare_candidate_clears_lower_priority_nominations():
    """prepareCandidate / getLowerPriorityNominatedPods: the nominatedNodeName of every pod
    nominated to the chosen node with a priority lower than the preemptor's is cleared (a status
    patch, applied at the cycle's end); higher-priority nominations stay.  The patch is an
    unassigned-pod update that changes only status, so the pod stays in unschedulablePods."""
    sc = scenario(
        node("n1", cpu="3"),
        pod("lowmate", prio=50, nnn="n1", policy="Never", nodeSelector={"disk": "ssd"}),
        pod("himate", prio=500, nnn="n1", policy="Never", nodeSelector={"disk": "ssd"}),
        pod("v", prio=1, req={"cpu": "3"}, node="n1"),
        pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 0.5)
    assert pick(ev)["node"] == "n1"
    noms = [(e["pod"], e["node"]) for e in of(ev, "Nomination")]
    assert ("default/lowmate", None) in noms
    assert all(p != "default/himate" for p, _ in noms)
    # the clearing happens at p's cycle end, after p's own nomination
    assert noms.index(("default/p", "n1")) < noms.index(("default/lowmate", None))
    st = eng.state()
    assert st["pods"]["default/lowmate"]["nominatedNodeName"] is None
    assert st["pods"]["default/lowmate"]["queue"] == "unschedulablePods"
    assert st["pods"]["default/himate"]["nominatedNodeName"] == "n1"
    assert sorted(st["nominatedPods"]["n1"]) == ["default/himate", "default/p"]


# ============================================================================ victims' termination

def test_victims_terminate_for_grace_period_then_preemptor_binds():
    """prepareCandidate deletes the victims (after the DisruptionTarget condition); the deletion is
    graceful: the victim stays Terminating, holding its resources, for its
    terminationGracePeriodSeconds (default 30), then is removed (AssignedPodDelete).  The
    preemptor is only nominated in its cycle (schedulingCycle returns Unschedulable with
    NominatingInfo), and binds on a later attempt, after the victim is gone."""
    sc = scenario(node("n1"), pod("v", prio=1, req={"cpu": "2"}, node="n1"), pod("p", prio=100, req={"cpu": "2"}))
    eng, ev = run(sc, 1)
    end = one(ev, "CycleEnd", pod="default/p", cycle=1)
    assert (end["result"], end["nominatedNode"]) == ("Unschedulable", "n1")
    deleted = one(ev, "PodDeleted", pod="default/v")
    assert (deleted["reason"], deleted["preemptor"], deleted["gracePeriodSeconds"]) == ("Preempted", "default/p", 30)
    assert deleted["seq"] > end["seq"]          # the cycle's writes take effect at its end
    assert of(ev, "Bound", pod="default/p") == []
    v = pod_state(eng, "v")
    assert (v["phase"], v["nodeName"]) == ("Terminating", "n1")
    eng.run(until=int(29.9 * US))
    assert pod_state(eng, "v")["phase"] == "Terminating"
    assert pod_state(eng, "p")["phase"] == "Pending"
    assert pod_state(eng, "p")["nominatedNodeName"] == "n1"
    eng.run(until=int(30 * US))
    removed = one(ev, "PodRemoved", pod="default/v")
    assert removed["time"] == 30.0 and removed["reason"] == "Preempted"
    bound = one(ev, "Bound", pod="default/p")
    assert bound["node"] == "n1" and bound["time"] == 30.0 and bound["seq"] > removed["seq"]
    st = eng.state()
    assert st["deletedPods"]["default/v"] == {"deletedAt": 30.0, "reason": "Preempted", "preemptor": "default/p"}
    assert st["pods"]["default/p"]["phase"] == "Running"
    assert st["pods"]["default/p"]["attempts"] == 2


def test_dry_run_filter_results_are_marked_and_kept_apart():
    """Dry-run Filter calls run on cloned node/state and are traced with dryRun true; the cycle's
    own Filter results (dryRun false) all come before PostFilter and the cycle's diagnosis
    (unschedulablePlugins) holds only them -- the dry run's InterPodAffinity rejection on n1 does
    not leak into it, but does make the PostFilter FitError message."""
    sc = scenario(
        node("n1"),
        pod("guard", prio=1000, labels={"team": "a"}, node="n1"),
        pod("v", prio=1, req={"cpu": "2"}, node="n1"),
        pod("p", prio=100, req={"cpu": "2"}, affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"team": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}}))
    eng, ev = run(sc, 0.5)
    cycle = [e for e in ev if e.get("cycle") == 1 and e.get("pod", e.get("preemptor")) == "default/p"]
    filters = [e for e in cycle if e["type"] == "PluginResult" and e["point"] == "Filter"]
    own = [e for e in filters if not e["dryRun"]]
    dry = [e for e in filters if e["dryRun"]]
    assert own and dry
    first_preemption = min(e["seq"] for e in cycle if e["type"].startswith(("Reprieve", "Preemption")))
    assert all(e["seq"] < first_preemption for e in own)
    assert all(e["seq"] > first_preemption for e in dry)
    assert [(e["plugin"], e["code"]) for e in own][-1] == ("NodeResourcesFit", "Unschedulable")
    assert ("InterPodAffinity", "Unschedulable") in [(e["plugin"], e["code"]) for e in dry]
    assert pod_state(eng, "p")["unschedulablePlugins"] == ["NodeResourcesFit"]
    assert one(ev, "CycleEnd", pod="default/p")["unschedulablePlugins"] == ["NodeResourcesFit"]
    assert post_filter(ev)["reasons"] == [
        "preemption: 0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."]


def test_preempt_topology_spread():
    """Upstream TestPreempt "preemption for topology spread constraints": node-a's pods are
    high priority, so only node-b's low-priority pod can go; p is nominated to node-b."""
    sc = scenario(
        node("node-a", labels={"zone": "zone1"}), node("node-b", labels={"zone": "zone1"}),
        node("node-x", labels={"zone": "zone2"}),
        pod("p-a1", prio=HIGH, node="node-a", labels={"foo": ""}),
        pod("p-a2", prio=HIGH, node="node-a", labels={"foo": ""}),
        pod("p-b1", prio=LOW, node="node-b", labels={"foo": ""}),
        pod("p-x1", prio=HIGH, node="node-x", labels={"foo": ""}),
        pod("p-x2", prio=HIGH, node="node-x", labels={"foo": ""}),
        pod("p", prio=HIGH, labels={"foo": ""}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}
            for k in ("zone", "hostname")]))
    eng, ev = run(sc, 0.5)
    assert candidates(ev) == {"node-b": (["p-b1"], 0)}
    assert pod_state(eng, "p")["nominatedNodeName"] == "node-b"
    assert [e["pod"] for e in of(ev, "PodDeleted")] == ["default/p-b1"]
