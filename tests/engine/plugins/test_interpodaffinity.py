"""InterPodAffinity: table tests mirroring upstream v1.28.0
``pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go`` and ``scoring_test.go``.

Adaptations (the engine's parser and model, not the plugin's behaviour):

* pods need names and a namespace; upstream's "" namespace is "default" here;
* a term without topologyKey does not parse here, so the few upstream cases that omit it use
  a real key with the same outcome (noted per case);
* namespaces carry only their ``kubernetes.io/metadata.name`` label, so upstream's
  ``team: team1`` namespaceSelectors select the same namespaces by name;
* upstream's "invalid label value" cases are parse errors here (no such pod can exist).
"""
import itertools

import pytest

from engine.errors import ConfigError
from engine.framework import ActionType, Code, CycleState
from engine.framework.interface import GVK, NodeScore
from engine.plugins import interpodaffinity
from engine.plugins.interpodaffinity import (ERR_REASON_AFFINITY_RULES_NOT_MATCH,
                                             ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
                                             ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
from engine.plugins.interpodaffinity.filtering import (MergedAffinityTerm,
                                                       get_incoming_affinity_anti_affinity_counts,
                                                       get_pre_filter_state)
from tests.engine.builders import PodBuilder, make_node, snapshot_handle

_seq = itertools.count()

REQ, PREF = "required", "preferred"


def sel(*exprs, **match_labels):
    """A labelSelector: ``sel(("service", "In", ["a"]), ("x", "Exists"))``."""
    s = {}
    if match_labels:
        s["matchLabels"] = match_labels
    if exprs:
        s["matchExpressions"] = []
        for e in exprs:
            d = {"key": e[0], "operator": e[1]}
            if len(e) > 2:
                d["values"] = list(e[2])
            s["matchExpressions"].append(d)
    return s


def term(selector, topology_key, namespaces=None, namespace_selector=None):
    t = {"labelSelector": selector, "topologyKey": topology_key}
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def ns_names(*names):
    """A namespaceSelector selecting namespaces by name (our stand-in for ``team`` labels)."""
    return sel(("kubernetes.io/metadata.name", "In", names))


class Pod(PodBuilder):
    """PodBuilder plus upstream's PodAffinity* / PodAntiAffinity* wrappers."""

    def __init__(self, name=None):
        super().__init__()
        self.name(name or f"p{next(_seq)}")

    def labels(self, d):
        for k, v in d.items():
            self.label(k, v)
        return self

    def _add(self, which, t, kind, weight):
        a = self.spec.setdefault("affinity", {}).setdefault(which, {})
        if kind == REQ:
            a.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(t)
        else:
            a.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": t})
        return self

    def affinity(self, t, kind=REQ, weight=1):
        return self._add("podAffinity", t, kind, weight)

    def anti_affinity(self, t, kind=REQ, weight=1):
        return self._add("podAntiAffinity", t, kind, weight)

    def affinity_in(self, key, tk, vals, kind=REQ):
        return self.affinity(term(sel((key, "In", vals)), tk), kind)

    def affinity_not_in(self, key, tk, vals, kind=REQ):
        return self.affinity(term(sel((key, "NotIn", vals)), tk), kind)

    def affinity_exists(self, key, tk, kind=REQ):
        return self.affinity(term(sel((key, "Exists")), tk), kind)

    def anti_affinity_in(self, key, tk, vals, kind=REQ):
        return self.anti_affinity(term(sel((key, "In", vals)), tk), kind)

    def anti_affinity_not_in(self, key, tk, vals, kind=REQ):
        return self.anti_affinity(term(sel((key, "NotIn", vals)), tk), kind)

    def anti_affinity_exists(self, key, tk, kind=REQ):
        return self.anti_affinity(term(sel((key, "Exists")), tk), kind)


def node(name, labels):
    return make_node().name(name).labels(labels).obj()


def objs(builders):
    return [b.obj() for b in builders]


def setup(pods, nodes, args=None):
    h = snapshot_handle(objs(pods), nodes)
    return interpodaffinity.new(args or {}, h), h


UAU = Code.UnschedulableAndUnresolvable
U = Code.Unschedulable
AFF = (UAU, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = (U, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = (U, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)


def status_tuple(st):
    if st is None:
        return None
    return (st.code, st.message())


# ---------------------------------------------------------------------------------------------
# Mirrors TestRequiredAffinitySingleNode

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABELS1 = {"region": "r1", "zone": "z11"}


def existing_pod():
    return Pod().labels(POD_LABEL).node("node1")


SINGLE_NODE_CASES = [
    # (name, pod, pods, want_prefilter_code, want_filter)
    ("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
     Pod(), [], Code.Skip, None),
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
     Pod().labels(POD_LABEL2).affinity_in("service", "region", ["securityscan", "value2"]),
     [existing_pod()], None, None),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
     Pod().labels(POD_LABEL2).affinity_not_in("service", "region", ["securityscan3", "value3"]),
     [existing_pod()], None, None),
    # upstream's term has no topologyKey; "region" gives the same outcome
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     Pod().labels(POD_LABEL2).affinity(term(sel(("service", "In", ["securityscan", "value2"])), "region",
                                             namespaces=["diffnamespace"])),
     [Pod().namespace("ns").label("service", "securityscan").node("node1")], None, AFF),
    # upstream's topologyKey is ""; "region" gives the same outcome
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     Pod().labels(POD_LABEL).affinity_in("service", "region", ["antivirusscan", "value2"]),
     [existing_pod()], None, AFF),
    ("satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
     Pod().labels(POD_LABEL2)
     .affinity(term(sel(("service", "Exists"), ("wrongkey", "DoesNotExist")), "region"))
     .affinity(term(sel(("service", "In", ["securityscan"]), ("service", "NotIn", ["WrongValue"])), "region")),
     [existing_pod()], None, None),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
     Pod().labels(POD_LABEL2)
     .affinity(term(sel(("service", "Exists"), ("wrongkey", "DoesNotExist")), "region"))
     .affinity(term(sel(("service", "In", ["securityscan2"]), ("service", "NotIn", ["WrongValue"])), "region")),
     [existing_pod()], None, AFF),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     Pod().labels(POD_LABEL2).affinity_in("service", "region", ["securityscan", "value2"])
     .anti_affinity_in("service", "node", ["antivirusscan", "value2"]),
     [existing_pod()], None, None),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     Pod().labels(POD_LABEL2).affinity_in("service", "region", ["securityscan", "value2"])
     .anti_affinity_in("service", "node", ["antivirusscan", "value2"]),
     [Pod().node("node1").labels(POD_LABEL).anti_affinity_in("service", "node", ["antivirusscan", "value2"])],
     None, None),
    ("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
     Pod().labels(POD_LABEL2).affinity_in("service", "region", ["securityscan", "value2"])
     .anti_affinity_in("service", "zone", ["securityscan", "value2"]),
     [existing_pod()], None, ANTI),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     Pod().labels(POD_LABEL).affinity_in("service", "region", ["securityscan", "value2"])
     .anti_affinity_in("service", "node", ["antivirusscan", "value2"]),
     [Pod().labels(POD_LABEL).node("node1").anti_affinity_in("service", "zone", ["securityscan", "value2"])],
     None, EXISTING),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     Pod().labels(POD_LABEL).affinity_not_in("service", "region", ["securityscan", "value2"]),
     [Pod().label("service", "securityscan").node("node2")], None, AFF),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     Pod().labels(POD_LABEL),
     [Pod().node("node1").labels(POD_LABEL).anti_affinity_in("service", "zone", ["securityscan", "value2"])],
     None, EXISTING),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
     Pod().labels(POD_LABEL),
     [Pod().node("node1").labels(POD_LABEL).anti_affinity_not_in("service", "zone", ["securityscan", "value2"])],
     Code.Skip, None),
    ("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
     Pod().labels(POD_LABEL).anti_affinity_exists("service", "region").anti_affinity_exists("security", "region"),
     [Pod().node("node1").labels(POD_LABEL2).anti_affinity_exists("security", "zone")], None, ANTI),
    ("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
     Pod().labels(POD_LABEL).anti_affinity_exists("service", "zone").anti_affinity_exists("security", "zone"),
     [Pod().node("node1").labels(POD_LABEL2).anti_affinity_exists("security", "zone")], None, ANTI),
    ("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
     Pod().labels(POD_LABEL2).anti_affinity_exists("security", "zone"),
     [Pod().node("node1").labels(POD_LABEL).anti_affinity_exists("service", "zone").anti_affinity_exists("security", "zone")],
     None, EXISTING),
    ("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
     Pod().labels({"abc": "", "xyz": ""}).anti_affinity_exists("abc", "zone").anti_affinity_exists("def", "zone"),
     [Pod().node("node1").labels({"def": "", "xyz": ""}).anti_affinity_exists("abc", "zone").anti_affinity_exists("def", "zone")],
     None, ANTI),
    ("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
     Pod().labels({"def": "", "xyz": ""}).anti_affinity_exists("abc", "zone").anti_affinity_exists("def", "zone"),
     [Pod().node("node1").labels({"abc": "", "xyz": ""}).anti_affinity_exists("abc", "zone").anti_affinity_exists("def", "zone")],
     None, ANTI),
    ("affinity with NamespaceSelector",
     Pod().labels(POD_LABEL2).affinity(term(sel(("service", "In", ["securityscan", "value2"])), "region",
                                             namespace_selector=ns_names("subteam1.team1", "subteam2.team1"))),
     [Pod().namespace("subteam1.team1").labels(POD_LABEL).node("node1")], None, None),
    ("affinity with non-matching NamespaceSelector",
     Pod().labels(POD_LABEL2).affinity(term(sel(("service", "In", ["securityscan", "value2"])), "region",
                                             namespace_selector=ns_names("subteam1.team1", "subteam2.team1"))),
     [Pod().namespace("subteam1.team2").labels(POD_LABEL).node("node1")], None, AFF),
    ("anti-affinity with matching NamespaceSelector",
     Pod().namespace("subteam1.team1").labels(POD_LABEL2).anti_affinity(
         term(sel(("service", "In", ["securityscan", "value2"])), "zone",
              namespace_selector=ns_names("subteam1.team1", "subteam2.team1"))),
     [Pod().namespace("subteam2.team1").labels(POD_LABEL).node("node1")], None, ANTI),
    ("anti-affinity with matching all NamespaceSelector",
     Pod().namespace("subteam1.team1").labels(POD_LABEL2).anti_affinity(
         term(sel(("service", "In", ["securityscan", "value2"])), "zone", namespace_selector={})),
     [Pod().namespace("subteam2.team1").labels(POD_LABEL).node("node1")], None, ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     Pod().namespace("subteam1.team1").labels(POD_LABEL2).anti_affinity(
         term(sel(("service", "In", ["securityscan", "value2"])), "zone",
              namespace_selector=ns_names("subteam1.team1", "subteam2.team1"))),
     [Pod().namespace("subteam1.team2").labels(POD_LABEL).node("node1")], None, None),
]


@pytest.mark.parametrize("name,pod,pods,want_pre,want_filter", SINGLE_NODE_CASES,
                         ids=[c[0][:80] for c in SINGLE_NODE_CASES])
def test_required_affinity_single_node(name, pod, pods, want_pre, want_filter):
    n1 = node("node1", LABELS1)
    pl, h = setup(pods, [n1])
    state = CycleState()
    p = pod.obj()
    res, st = pl.pre_filter(state, p)
    assert res is None
    if want_pre is None:
        assert st is None
    else:
        assert st is not None and st.code == want_pre
        return
    got = pl.filter(state, p, h.snapshot().get("node1"))
    assert status_tuple(got) == want_filter


# ---------------------------------------------------------------------------------------------
# Mirrors TestRequiredAffinityMultipleNodes

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def abc_nodes(*label_sets):
    names = ["node-a", "node-b", "node-c"]
    return [(names[i], ls) for i, ls in enumerate(label_sets)]


def hosts(n, zones, regions=None):
    out = []
    for i in range(n):
        name = "node-" + "ab"[i]
        ls = {"region": (regions or ["r1", "r1"])[i], "zone": zones[i], "hostname": name}
        out.append((name, ls))
    return out


MULTI_NODE_CASES = [
    # (name, pod, pods, nodes [(name, labels)], want_prefilter_code, want_filters)
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
     Pod().affinity_in("foo", "region", ["bar"]),
     [Pod("p1").node("node-a").label("foo", "bar")],
     abc_nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), None, [None, None, AFF]),
    ("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
     Pod().labels({"foo": "bar", "service": "securityscan"}).affinity_in("foo", "zone", ["bar"])
     .affinity_in("service", "zone", ["securityscan"]),
     [Pod("p1").node("node-a").label("foo", "bar")],
     [("node-a", {"zone": "az1", "hostname": "h1"}), ("node-b", {"zone": "az2", "hostname": "h2"})],
     None, [None, None]),
    ("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
     Pod().labels({"foo": "bar", "service": "securityscan"}).affinity_in("foo", "zone", ["bar"])
     .affinity_in("service", "zone", ["securityscan"]),
     [Pod("p1").node("node-a").label("foo", "bar")],
     [("node-a", {"zoneLabel": "az1", "hostname": "h1"}), ("node-b", {"zoneLabel": "az2", "hostname": "h2"})],
     None, [AFF, AFF]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     Pod().anti_affinity_in("foo", "region", ["abc"]),
     [Pod().node("node-a").label("foo", "abc")],
     [("node-a", {"region": "r1", "hostname": "node-a"}), ("node-b", {"region": "r1", "hostname": "node-b"})],
     None, [ANTI, ANTI]),
    ("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
     Pod().anti_affinity_in("foo", "region", ["abc"]).anti_affinity_in("service", "zone", ["securityscan"]),
     [Pod().node("node-a").labels({"foo": "abc", "service": "securityscan"})],
     [("node-a", {"region": "r1", "zone": "z1", "hostname": "node-a"}),
      ("node-b", {"region": "r1", "zone": "z2", "hostname": "node-b"})],
     None, [ANTI, ANTI]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
     Pod().anti_affinity_in("foo", "region", ["abc"]),
     [Pod().node("node-a").label("foo", "abc")],
     abc_nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), None, [ANTI, ANTI, None]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
     Pod().namespace("ns1").label("foo", "123").anti_affinity_in("foo", "region", ["bar"]),
     [Pod().node("node-a").namespace("ns1").label("foo", "bar"),
      Pod().node("node-c").namespace("ns2").anti_affinity_in("foo", "region", ["123"])],
     abc_nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), None, [ANTI, ANTI, None]),
    ("Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
     Pod().label("foo", ""),
     [Pod().node("node-a").anti_affinity_exists("foo", "invalid-node-label")],
     hosts(2, ["z1", "z1"]), Code.Skip, [None, None]),
    ("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
     Pod().node("node-a").anti_affinity_exists("foo", "invalid-node-label"),
     [Pod().node("node-a").label("foo", "")],
     hosts(2, ["z1", "z1"]), None, [None, None]),
    ("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
     Pod().label("foo", "").label("bar", ""),
     [Pod().node("node-a").anti_affinity_exists("foo", "zone"),
      Pod().node("node-a").anti_affinity_exists("bar", "region")],
     hosts(2, ["z1", "z2"]), None, [EXISTING, EXISTING]),
    ("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
     Pod().anti_affinity_exists("foo", "zone").anti_affinity_exists("bar", "region"),
     [Pod().node("node-a").label("foo", ""), Pod().node("node-b").label("bar", "")],
     hosts(2, ["z1", "z2"]), None, [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
     Pod().label("foo", "").label("bar", ""),
     [Pod().node("node-a").anti_affinity_exists("foo", "invalid-node-label").anti_affinity_exists("bar", "zone")],
     hosts(2, ["z1", "z2"]), None, [EXISTING, None]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
     Pod().anti_affinity_exists("foo", "invalid-node-label").anti_affinity_exists("bar", "zone"),
     [Pod("poda").node("node-a").labels({"foo": "", "bar": ""})],
     hosts(2, ["z1", "z2"]), None, [ANTI, None]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
     Pod().label("foo", "").label("bar", ""),
     [Pod().node("node-a").anti_affinity_exists("foo", "region").anti_affinity_exists("bar", "zone")],
     hosts(2, ["z1", "z2"]), None, [EXISTING, EXISTING]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
     Pod().anti_affinity_exists("foo", "region").anti_affinity_exists("bar", "zone"),
     [Pod().node("node-a").labels({"foo": "", "bar": ""})],
     hosts(2, ["z1", "z2"]), None, [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
     Pod().label("foo", "").label("bar", ""),
     [Pod().node("node-a").anti_affinity_exists("foo", "zone").anti_affinity_exists("labelA", "zone"),
      Pod().node("node-b").anti_affinity_exists("bar", "zone").anti_affinity_exists("labelB", "zone")],
     [("node-a", {"region": "r1", "zone": "z1", "hostname": "node-a"}),
      ("node-b", {"region": "r1", "zone": "z2", "hostname": "node-b"}),
      ("node-c", {"region": "r1", "zone": "z3", "hostname": "node-c"})],
     None, [EXISTING, EXISTING, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
     Pod().affinity_exists("foo", "region").affinity_exists("bar", "zone"),
     [Pod("pod1").labels({"foo": "", "bar": ""}).node("node-a")],
     hosts(2, ["z1", "z1"]), None, [None, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
     Pod().affinity_exists("foo", "region").affinity_exists("bar", "zone"),
     [Pod("pod1").node("node-a").label("foo", ""), Pod("pod2").node("node-b").label("bar", "")],
     hosts(2, ["z1", "z2"]), None, [AFF, AFF]),
    # Not an upstream case: satisfyPodAffinity's "first pod of the group" exception applies
    # only while NO pod anywhere matches (affinityCounts empty), even if the pod matches itself.
    ("self-matching pod is still bound to the topology of existing matching pods",
     Pod().label("foo", "bar").affinity_in("foo", "region", ["bar"]),
     [Pod("p1").node("node-a").label("foo", "bar")],
     abc_nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), None, [None, None, AFF]),
]


@pytest.mark.parametrize("name,pod,pods,nodes,want_pre,want_filters", MULTI_NODE_CASES,
                         ids=[c[0][:80] for c in MULTI_NODE_CASES])
def test_required_affinity_multiple_nodes(name, pod, pods, nodes, want_pre, want_filters):
    ns = [node(n, ls) for n, ls in nodes]
    pl, h = setup(pods, ns)
    state = CycleState()
    p = pod.obj()
    _, st = pl.pre_filter(state, p)
    if want_pre is None:
        assert st is None
    else:
        assert st is not None and st.code == want_pre
        return
    got = [status_tuple(pl.filter(state, p, h.snapshot().get(n.name))) for n in ns]
    assert got == want_filters


def test_pre_filter_disabled():
    """Mirrors TestPreFilterDisabled: Filter without PreFilter state is an Error."""
    pl, h = setup([], [node("node1", {})])
    st = pl.filter(CycleState(), Pod().obj(), h.snapshot().get("node1"))
    assert st.code == Code.Error
    assert st.message() == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'


# ---------------------------------------------------------------------------------------------
# Mirrors TestPreFilterStateAddRemovePod

def _anti_foo_bar(b):
    return b.anti_affinity(term(sel(("foo", "In", ["bar"])), "region"))


def _anti_complex(b):
    return (b.anti_affinity(term(sel(("foo", "In", ["bar", "buzz"])), "region"))
            .anti_affinity(term(sel(("service", "NotIn", ["bar", "security", "test"])), "zone")))


def _aff_complex(b):
    return (b.affinity(term(sel(("foo", "In", ["bar", "buzz"])), "region"))
            .affinity(term(sel(("service", "NotIn", ["bar", "security", "test"])), "zone")))


ADD_REMOVE_NODES = [("node-a", {"region": "r1", "zone": "z11"}),
                    ("node-b", {"region": "r1", "zone": "z12"}),
                    ("node-c", {"region": "r2", "zone": "z21"})]
SELECTOR1 = {"foo": "bar"}

ADD_REMOVE_CASES = [
    # (name, pending, existing, added, expected_anti, expected_aff)
    ("preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
     lambda: _anti_foo_bar(Pod("pending").labels(SELECTOR1)),
     lambda: [Pod("p1").labels(SELECTOR1).node("node-a"), _anti_foo_bar(Pod("p2").node("node-c"))],
     lambda: _anti_foo_bar(Pod("addedpod").labels(SELECTOR1).node("node-b")),
     {("region", "r1"): 2}, {}),
    ("preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex)",
     lambda: _anti_complex(Pod("pending").labels(SELECTOR1)),
     lambda: [Pod("p1").labels(SELECTOR1).node("node-a"), _anti_foo_bar(Pod("p2").node("node-c"))],
     lambda: _anti_complex(Pod("addedpod").labels(SELECTOR1).node("node-a")),
     {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {}),
    ("preFilterState matching pod affinity and anti-affinity are updated correctly after adding and removing a pod",
     lambda: _aff_complex(Pod("pending").labels(SELECTOR1)),
     lambda: [Pod("p1").labels(SELECTOR1).node("node-a"),
              _aff_complex(_anti_foo_bar(Pod("p2").node("node-c")))],
     lambda: _anti_complex(Pod("addedpod").labels(SELECTOR1).node("node-a")),
     {}, {("region", "r1"): 2, ("zone", "z11"): 2}),
]


def _counts(s):
    return (dict(s.existing_anti_affinity_counts), dict(s.affinity_counts),
            dict(s.anti_affinity_counts))


@pytest.mark.parametrize("name,pending,existing,added,want_anti,want_aff", ADD_REMOVE_CASES,
                         ids=[c[0] for c in ADD_REMOVE_CASES])
def test_pre_filter_state_add_remove_pod(name, pending, existing, added, want_anti, want_aff):
    nodes = [node(n, ls) for n, ls in ADD_REMOVE_NODES]
    pending_pod = pending().obj()
    existing_pods = objs(existing())
    added_pod = added().obj()

    def get_state(pods):
        h = snapshot_handle(pods, nodes)
        pl = interpodaffinity.new({}, h)
        cs = CycleState()
        _, st = pl.pre_filter(cs, pending_pod)
        assert st is None
        s, st = get_pre_filter_state(cs)
        assert st is None
        return pl, cs, s, h

    # the state PreFilter computes with every pod, including the added one
    _, _, all_pods_state, _ = get_state(existing_pods + [added_pod])
    pl, cs, s, h = get_state(existing_pods)
    original = s.clone()

    ni = h.snapshot().get(added_pod.node_name)
    assert pl.add_pod(cs, pending_pod, added_pod, ni) is None
    new_state, _ = get_pre_filter_state(cs)
    assert dict(new_state.anti_affinity_counts) == want_anti
    assert dict(new_state.affinity_counts) == want_aff
    assert _counts(new_state) == _counts(all_pods_state)

    assert pl.remove_pod(cs, pending_pod, added_pod, ni) is None
    assert _counts(s) == _counts(original)


def test_pre_filter_state_clone():
    """Mirrors TestPreFilterStateClone: a clone is equal but independent."""
    pl, h = setup([Pod("e").node("node-a").label("foo", "")],
                  [node("node-a", {"name": "node-a"})])
    cs = CycleState()
    p = Pod().anti_affinity_exists("foo", "name").obj()
    pl.pre_filter(cs, p)
    s, _ = get_pre_filter_state(cs)
    c = s.clone()
    assert c is not s and _counts(c) == _counts(s)
    c.anti_affinity_counts[("name", "node-a")] = 99
    assert s.anti_affinity_counts[("name", "node-a")] == 1
    # CycleState.clone clones it too (preemption evaluates nodes on copies)
    cs2 = cs.clone()
    s2, _ = get_pre_filter_state(cs2)
    assert s2 is not s and _counts(s2) == _counts(s)


# ---------------------------------------------------------------------------------------------
# Mirrors TestGetTPMapMatchingIncomingAffinityAntiAffinity

def _normal(*labels):
    b = Pod().node("node-a")
    for l in labels:
        b.label(l, "")
    return b


INCOMING_CASES = [
    ("nil test", [], Pod("aaa-normal"), {}, {}),
    ("incoming pod without affinity/anti-affinity causes a no-op", [_normal("aaa")], Pod("aaa-normal"), {}, {}),
    ("no pod has label that violates incoming pod's affinity and anti-affinity", [_normal("bbb")],
     Pod("aaa-anti").affinity_exists("aaa", "hostname").anti_affinity_exists("aaa", "hostname"), {}, {}),
    ("existing pod matches incoming pod's affinity and anti-affinity - single term case", [_normal("aaa")],
     Pod("affi-antiaffi").affinity_exists("aaa", "hostname").anti_affinity_exists("aaa", "hostname"),
     {("hostname", "node-a"): 1}, {("hostname", "node-a"): 1}),
    ("existing pod matches incoming pod's affinity and anti-affinity - multiple terms case", [_normal("aaa", "bbb")],
     Pod("affi-antiaffi").affinity_exists("aaa", "hostname").affinity_exists("bbb", "hostname")
     .anti_affinity_exists("aaa", "hostname"),
     {("hostname", "node-a"): 2}, {("hostname", "node-a"): 1}),
    ("existing pod not match incoming pod's affinity but matches anti-affinity", [_normal("aaa")],
     Pod("affi-antiaffi").affinity_exists("aaa", "hostname").affinity_exists("bbb", "hostname")
     .anti_affinity_exists("aaa", "hostname").anti_affinity_exists("bbb", "hostname"),
     {}, {("hostname", "node-a"): 1}),
    ("incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1", [_normal("aaa", "bbb")],
     Pod("anaffi-antiaffiti").affinity_exists("aaa", "hostname").affinity_exists("ccc", "hostname")
     .anti_affinity_exists("aaa", "hostname").anti_affinity_exists("ccc", "hostname"),
     {}, {("hostname", "node-a"): 1}),
    ("incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2", [_normal("bbb")],
     Pod("affi-antiaffi").affinity_exists("aaa", "hostname").affinity_exists("bbb", "hostname")
     .anti_affinity_exists("aaa", "hostname").anti_affinity_exists("bbb", "hostname"),
     {}, {("hostname", "node-a"): 1}),
]


@pytest.mark.parametrize("name,existing,pod,want_aff,want_anti", INCOMING_CASES,
                         ids=[c[0] for c in INCOMING_CASES])
def test_get_incoming_affinity_anti_affinity_counts(name, existing, pod, want_aff, want_anti):
    pl, h = setup(existing, [node("node-a", {"hostname": "node-a"})])
    p = pod.obj()
    aff, anti = get_incoming_affinity_anti_affinity_counts(
        pl, tuple(MergedAffinityTerm(t, pl.ns_lister) for t in p.required_affinity_terms),
        tuple(MergedAffinityTerm(t, pl.ns_lister) for t in p.required_anti_affinity_terms),
        h.snapshot().node_info_list)
    assert aff == want_aff
    assert anti == want_anti


# ---------------------------------------------------------------------------------------------
# Mirrors TestPreferredAffinity (scoring_test.go)

S1 = {"security": "S1"}
S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
TEAM1 = ns_names("subteam1.team1", "subteam2.team1")   # upstream: team In [team1]


def stay_with_s1_in_region(b):
    return b.affinity(term(sel(("security", "In", ["S1"])), "region"), PREF, 5)


def stay_with_s2_in_region(b):
    return b.affinity(term(sel(("security", "In", ["S2"])), "region"), PREF, 6)


def affinity3(b):
    return (b.affinity(term(sel(("security", "NotIn", ["S1"]), ("security", "In", ["S2"])), "region"), PREF, 8)
            .affinity(term(sel(("security", "Exists"), ("wrongkey", "DoesNotExist")), "region"), PREF, 2))


def hard_affinity(b):
    return (b.affinity(term(sel(("security", "In", ["S1", "value2"])), "region"))
            .affinity(term(sel(("security", "Exists"), ("wrongkey", "DoesNotExist")), "region")))


def away_from_s1_in_az(b):
    return b.anti_affinity(term(sel(("security", "In", ["S1"])), "az"), PREF, 5)


def away_from_s2_in_az(b):
    return b.anti_affinity(term(sel(("security", "In", ["S2"])), "az"), PREF, 5)


def stay_with_s1_in_region_away_from_s2_in_az(b):
    return (b.affinity(term(sel(("security", "In", ["S1"])), "region"), PREF, 8)
            .anti_affinity(term(sel(("security", "In", ["S2"])), "az"), PREF, 5))


def affinity_namespace_selector(b):
    return b.affinity(term(sel(("security", "In", ["S1"])), "region", namespaces=["subteam2.team2"],
                           namespace_selector=TEAM1), PREF, 5)


def anti_affinity_namespace_selector(b):
    return b.anti_affinity(term(sel(("security", "In", ["S1"])), "region", namespaces=["subteam2.team2"],
                                namespace_selector=TEAM1), PREF, 5)


def on(node_name, labels=None, ns=None, aff=None):
    b = Pod().node(node_name)
    if labels:
        b.labels(labels)
    if ns:
        b.namespace(ns)
    return aff(b) if aff else b


def incoming(labels=None, ns=None, aff=None):
    b = Pod("incoming")
    if labels:
        b.labels(labels)
    if ns:
        b.namespace(ns)
    return aff(b) if aff else b


MAX = 100

PREFERRED_CASES = [
    # (name, pod, pods, nodes [(name, labels)], want_scores | Code.Skip, ignorePreferredTermsOfExistingPods)
    ("all nodes are same priority as Affinity is nil", incoming(S1), [],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], Code.Skip, False),
    ("Affinity: pod that matches topology key & pods in nodes will get high score comparing to others which doesn't match either pods in nodes or in topology key",
     incoming(S1, aff=stay_with_s1_in_region),
     [on("node1", S1), on("node2", S2), on("node3", S1)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [MAX, 0, 0], False),
    ("All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
     incoming(aff=stay_with_s1_in_region), [on("node1", S1)],
     [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)], [MAX, MAX, 0], False),
    ("Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
     incoming(S1, aff=stay_with_s2_in_region),
     [on("node1", S2), on("node1", S2), on("node2", S2), on("node3", S2), on("node4", S2), on("node5", S2)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", RG_CHINA), ("node4", RG_CHINA), ("node5", RG_INDIA)],
     [MAX, 0, MAX, MAX, 0], False),
    ("Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
     incoming(S1, aff=affinity3), [on("node1", S1), on("node2", S2), on("node3", S1)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [20, MAX, 0], False),
    ("Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
     incoming(S2), [on("node1", S1, aff=stay_with_s1_in_region), on("node2", S2, aff=stay_with_s2_in_region)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [0, MAX, 0], False),
    ("Affinity symmetry with namespace selector",
     incoming(S1, ns="subteam1.team1"),
     [on("node1", S1, aff=affinity_namespace_selector), on("node2", S2, aff=stay_with_s2_in_region)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [MAX, 0, 0], False),
    ("AntiAffinity symmetry with namespace selector",
     incoming(S1, ns="subteam1.team1"),
     [on("node1", S1, aff=anti_affinity_namespace_selector), on("node2", S2, aff=stay_with_s2_in_region)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [0, MAX, MAX], False),
    ("Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
     incoming(S1), [on("node1", S1, aff=hard_affinity), on("node2", S2, aff=hard_affinity)],
     [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)], [MAX, MAX, 0], False),
    ("Anti Affinity: pod that does not match existing pods in node will get high score ",
     incoming(S1, aff=away_from_s1_in_az), [on("node1", S1), on("node2", S2)],
     [("node1", AZ1), ("node2", RG_CHINA)], [0, MAX], False),
    ("Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",
     incoming(S1, aff=away_from_s1_in_az), [on("node1", S1), on("node2", S1)],
     [("node1", AZ1), ("node2", RG_CHINA)], [0, MAX], False),
    ("Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
     incoming(S1, aff=away_from_s1_in_az), [on("node1", S1), on("node1", S1), on("node2", S2)],
     [("node1", AZ1), ("node2", RG_INDIA)], [0, MAX], False),
    ("Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
     incoming(S2), [on("node1", S1, aff=away_from_s2_in_az), on("node2", S2, aff=away_from_s1_in_az)],
     [("node1", AZ1), ("node2", AZ2)], [0, MAX], False),
    ("Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
     incoming(S1, aff=stay_with_s1_in_region_away_from_s2_in_az), [on("node1", S1), on("node2", S1)],
     [("node1", RG_CHINA), ("node2", AZ1)], [MAX, 0], False),
    ("Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
     incoming(S1, aff=stay_with_s1_in_region_away_from_s2_in_az),
     [on("node1", S1), on("node1", S1), on("node2", S1), on("node3", S1), on("node3", S1), on("node4", S1),
      on("node5", S1)],
     [("node1", RG_CHINA_AZ1), ("node2", RG_INDIA), ("node3", RG_CHINA), ("node4", RG_CHINA), ("node5", RG_INDIA)],
     [MAX, 0, MAX, MAX, 0], False),
    ("Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
     incoming(S1, aff=stay_with_s1_in_region_away_from_s2_in_az),
     [on("node1", S1), on("node2", S2), on("node3", aff=stay_with_s1_in_region_away_from_s2_in_az),
      on("node4", aff=away_from_s1_in_az)],
     [("node1", RG_CHINA), ("node2", AZ1), ("node3", RG_INDIA), ("node4", AZ2)], [MAX, 0, MAX, 0], False),
    ("Avoid panic when partial nodes in a topology don't have pods with affinity",
     incoming(S1), [on("node1", S1), on("node2", aff=stay_with_s1_in_region_away_from_s2_in_az)],
     [("node1", RG_CHINA), ("node2", RG_CHINA)], [0, 0], False),
    ("Affinity with pods matching NamespaceSelector",
     incoming(S1, ns="subteam1.team1", aff=affinity_namespace_selector),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"),
      on("node1", S1, ns="subteam1.team2"), on("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [MAX, 0], False),
    ("Affinity with pods matching both NamespaceSelector and Namespaces fields",
     incoming(S1, ns="subteam1.team1", aff=affinity_namespace_selector),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"),
      on("node1", S1, ns="subteam2.team2"), on("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [MAX, 0], False),
    ("AntiAffinity with pods matching NamespaceSelector",
     incoming(S1, ns="subteam1.team1", aff=anti_affinity_namespace_selector),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"),
      on("node1", S1, ns="subteam1.team2"), on("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [0, MAX], False),
    ("AntiAffinity with pods matching both NamespaceSelector and Namespaces fields",
     incoming(S1, ns="subteam1.team1", aff=anti_affinity_namespace_selector),
     [on("node1", S1, ns="subteam1.team1"), on("node1", S1, ns="subteam1.team1"),
      on("node1", S1, ns="subteam2.team2"), on("node2", S1, ns="subteam2.team1")],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [0, MAX], False),
    ("Ignore preferred terms of existing pods",
     incoming(S2),
     [on("node1", S1, aff=stay_with_s1_in_region_away_from_s2_in_az), on("node2", S2, aff=stay_with_s2_in_region)],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], Code.Skip, True),
    ("Do not ignore preferred terms of existing pods",
     incoming(S2),
     [on("node1", S1, aff=stay_with_s1_in_region_away_from_s2_in_az), on("node2", S2, aff=stay_with_s2_in_region)],
     [("node1", RG_CHINA), ("node2", RG_INDIA)], [0, MAX], False),
    ("No nodes to score", incoming(S2), [], [], Code.Skip, False),
]


def run_scoring(pl, p, nodes, h):
    state = CycleState()
    st = pl.pre_score(state, p, nodes)
    if st is not None:
        return st
    got = []
    for n in nodes:
        sc, st = pl.score(state, p, n.name)
        assert st is None
        got.append(NodeScore(n.name, sc))
    assert pl.score_extensions().normalize_score(state, p, got) is None
    return [s.score for s in got]


@pytest.mark.parametrize("name,pod,pods,nodes,want,ignore", PREFERRED_CASES,
                         ids=[c[0][:80] for c in PREFERRED_CASES])
def test_preferred_affinity(name, pod, pods, nodes, want, ignore):
    ns = [node(n, ls) for n, ls in nodes]
    pl, h = setup(pods, ns, {"hardPodAffinityWeight": 1,
                             "ignorePreferredTermsOfExistingPods": ignore})
    got = run_scoring(pl, pod.obj(), ns, h)
    if want == Code.Skip:
        assert got.code == Code.Skip
    else:
        assert got == want


# Mirrors TestPreferredAffinityWithHardPodAffinitySymmetricWeight
def hard_pod_affinity(b):
    # upstream: Namespaces ["", "subteam2.team2"] and namespaceSelector team In [team1]
    return b.affinity(term(sel(("service", "In", ["S1"])), "region", namespaces=["default", "subteam2.team2"],
                           namespace_selector=TEAM1))


HARD_WEIGHT_CASES = [
    ("with default weight", incoming({"service": "S1"}), 1, [MAX, MAX, 0]),
    ("with zero weight", incoming({"service": "S1"}), 0, Code.Skip),
    ("with no matching namespace", incoming({"service": "S1"}, ns="subteam1.team2"), 1, Code.Skip),
    ("with matching NamespaceSelector", incoming({"service": "S1"}, ns="subteam1.team1"), 1, [MAX, MAX, 0]),
    ("with matching Namespaces", incoming({"service": "S1"}, ns="subteam2.team2"), 1, [MAX, MAX, 0]),
]


@pytest.mark.parametrize("name,pod,weight,want", HARD_WEIGHT_CASES, ids=[c[0] for c in HARD_WEIGHT_CASES])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(name, pod, weight, want):
    ns = [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)]
    pods = [on("node1", aff=hard_pod_affinity), on("node2", aff=hard_pod_affinity)]
    pl, h = setup(pods, ns, {"hardPodAffinityWeight": weight})
    got = run_scoring(pl, pod.obj(), ns, h)
    if want == Code.Skip:
        assert got.code == Code.Skip
    else:
        assert got == want


def test_raw_scores_and_normalization():
    """Raw Score is the signed weight sum of the node's topologies; NormalizeScore maps
    [min, max] onto [0, 100] truncating (upstream scoring.go)."""
    ns = [node("node1", RG_CHINA), node("node2", RG_INDIA), node("node3", AZ1)]
    # incoming prefers S1 in region (5) and avoids S2 in az (5); existing pods:
    pods = [on("node1", S1), on("node1", S1), on("node2", S1), on("node3", S2)]
    pl, h = setup(pods, ns)
    p = incoming(aff=lambda b: stay_with_s1_in_region(away_from_s2_in_az(b))).obj()
    state = CycleState()
    assert pl.pre_score(state, p, ns) is None
    raw = [pl.score(state, p, n.name)[0] for n in ns]
    assert raw == [10, 5, -5]
    scores = [NodeScore(n.name, r) for n, r in zip(ns, raw)]
    pl.normalize_score(state, p, scores)
    # 100*(10+5)/15 = 100, 100*(5+5)/15 = 66.67 -> 66, 0
    assert [s.score for s in scores] == [100, 66, 0]


# ---------------------------------------------------------------------------------------------
# Plugin surface

def test_events_to_register():
    """InterPodAffinity.EventsToRegister (v1.28.0): Pod/All and Node/Add|UpdateNodeLabel."""
    pl = interpodaffinity.new(None, None)
    evs = [(e.event.resource, int(e.event.action_type), e.queueing_hint_fn) for e in pl.events_to_register()]
    assert evs == [(GVK.Pod, int(ActionType.All), None),
                   (GVK.Node, int(ActionType.Add | ActionType.UpdateNodeLabel), None)]


def test_args_defaults_and_validation():
    pl = interpodaffinity.new(None, None)
    assert pl.name == "InterPodAffinity" == interpodaffinity.NAME
    assert pl.hard_pod_affinity_weight == 1
    assert pl.ignore_preferred_terms_of_existing_pods is False
    pl = interpodaffinity.new({"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True}, None)
    assert (pl.hard_pod_affinity_weight, pl.ignore_preferred_terms_of_existing_pods) == (0, True)
    with pytest.raises(ConfigError) as e:
        interpodaffinity.new({"hardPodAffinityWeight": 101}, None)
    assert "hardPodAffinityWeight" in str(e.value) and "not in valid range [0, 100]" in str(e.value)
    with pytest.raises(ConfigError) as e:
        interpodaffinity.new({"hardPodAffinityWeight": -1}, None)
    assert "hardPodAffinityWeight" in str(e.value)
    with pytest.raises(ConfigError) as e:
        interpodaffinity.new({"bogus": 1}, None)
    assert "bogus" in str(e.value)
    with pytest.raises(ConfigError):
        interpodaffinity.new({"ignorePreferredTermsOfExistingPods": "yes"}, None)


def test_pre_filter_extensions_and_score_extensions_are_the_plugin():
    pl = interpodaffinity.new(None, None)
    assert pl.pre_filter_extensions() is pl
    assert pl.score_extensions() is pl


def test_pre_score_skip_without_existing_affinity():
    """Only nodes with pods having affinity are visited when the incoming pod has no
    preferred terms; none contributes -> Skip (upstream ``index == -1``)."""
    ns = [node("node1", RG_CHINA)]
    pl, h = setup([on("node1", S1)], ns)
    assert pl.pre_score(CycleState(), incoming(S1).obj(), ns).code == Code.Skip
