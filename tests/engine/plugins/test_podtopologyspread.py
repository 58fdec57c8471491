"""PodTopologySpread: table tests mirroring upstream v1.28.0
``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go`` and ``scoring_test.go``.

As upstream's tests, each case sets the three feature gates explicitly (MinDomains,
NodeInclusionPolicy, MatchLabelKeys; all False unless the case enables them), although all
three are on by default in v1.28 (``new`` without ``features``).

Adaptations (the engine's model, not the plugin's behaviour): pods need names (generated);
Services/ReplicaSets are not modelled, so the upstream cases that need them are mirrored by
overriding ``default_selector`` (the one hook upstream's ``helper.DefaultSelector`` maps to);
the artificial "minDomains with ScheduleAnyway" pod does not parse here, so it is built by
replacing the parsed constraint.
"""
import itertools
import math

import pytest

from engine.errors import ConfigError
from engine.framework import ActionType, Code, CycleState
from engine.framework.interface import GVK, NodeScore
from engine.labels import LabelSelector, Requirement
from engine.objects import TopologySpreadConstraint as V1TSC
from engine.plugins import podtopologyspread
from engine.plugins.podtopologyspread import (ERR_REASON_CONSTRAINTS_NOT_MATCH,
                                              ERR_REASON_NODE_LABEL_NOT_MATCH, CriticalPaths,
                                              PodTopologySpread)
from engine.plugins.podtopologyspread.filtering import (MAX_INT32, critical_paths_of_one_key,
                                                      get_pre_filter_state)
from engine.plugins.podtopologyspread.scoring import (get_pre_score_state, go_round,
                                                      topology_normalizing_weight)
from tests.engine.builders import PodBuilder, make_node, snapshot_handle

_seq = itertools.count()

DNS, SA = "DoNotSchedule", "ScheduleAnyway"
HOSTNAME = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHED_TAINT = "node.kubernetes.io/unschedulable"


def match_labels(**kv):
    return {"matchLabels": kv}


class Pod(PodBuilder):
    """PodBuilder plus upstream's SpreadConstraint / NodeAffinityIn / ... wrappers."""

    def __init__(self, name=None):
        super().__init__()
        self.name(name or f"p{next(_seq)}")
        self._terminating = False

    def spread(self, max_skew, tk, when, selector, min_domains=None, nap=None, ntp=None, mlk=None):
        c = {"maxSkew": max_skew, "topologyKey": tk, "whenUnsatisfiable": when}
        if selector is not None:
            c["labelSelector"] = selector
        if min_domains is not None:
            c["minDomains"] = min_domains
        if nap is not None:
            c["nodeAffinityPolicy"] = nap
        if ntp is not None:
            c["nodeTaintsPolicy"] = ntp
        if mlk is not None:
            c["matchLabelKeys"] = list(mlk)
        self.spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def node_affinity_in(self, key, vals):
        return self.node_affinity_required({"matchExpressions": [{"key": key, "operator": "In", "values": vals}]})

    def node_affinity_not_in(self, key, vals):
        return self.node_affinity_required({"matchExpressions": [{"key": key, "operator": "NotIn", "values": vals}]})

    def terminating(self):
        self._terminating = True
        return self

    def obj(self):
        p = super().obj()
        if self._terminating:
            p.deletion_timestamp = 0
        return p


def N(name, taints=False, **labels):
    """st.MakeNode().Name(name).Label(...); keyword ``node``/``zone``/... labels, ``hostname``
    for kubernetes.io/hostname, ``tzone`` for topology.kubernetes.io/zone."""
    b = make_node().name(name)
    for k, v in labels.items():
        k = {"hostname": HOSTNAME, "tzone": ZONE_LABEL}.get(k, k)
        b.label(k, v)
    if taints:
        b.taint(UNSCHED_TAINT, "", "NoSchedule")
    return b.obj()


def E(name, node, ns=None, terminating=False, **labels):
    """An existing pod on ``node`` with the given labels (all values ``""`` unless given)."""
    b = Pod(name).node(node)
    if ns:
        b.namespace(ns)
    for k, v in labels.items():
        b.label(k, v)
    if terminating:
        b.terminating()
    return b


def four_nodes():
    return [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
            N("node-x", zone="zone2", node="node-x"), N("node-y", zone="zone2", node="node-y")]


def plugin(pods, nodes, args=None, min_domains=False, nip=False, mlk=False, cls=None):
    h = snapshot_handle([p.obj() for p in pods], nodes)
    feats = {"MinDomainsInPodTopologySpread": min_domains,
             "NodeInclusionPolicyInPodTopologySpread": nip,
             "MatchLabelKeysInPodTopologySpread": mlk}
    pl = podtopologyspread.new(args if args is not None else {"defaultingType": "List"}, h, feats)
    if cls is not None:
        pl.__class__ = cls
    return pl, h


def norm_selector(s):
    if s is None:
        return None
    return frozenset(s.requirements)


def norm_constraint(c):
    return (c.max_skew, c.topology_key, norm_selector(c.selector), c.min_domains,
            c.node_affinity_policy, c.node_taints_policy)


def want_constraint(max_skew, tk, selector_reqs, min_domains=1, nap="Honor", ntp="Ignore"):
    return (max_skew, tk, None if selector_reqs is None else frozenset(selector_reqs),
            min_domains, nap, ntp)


EXISTS_FOO = (Requirement("foo", "Exists"),)
EXISTS_BAR = (Requirement("bar", "Exists"),)


def norm_paths(paths):
    """criticalPaths.sort() of the upstream tests: on equal match numbers order the values."""
    (v0, n0), (v1, n1) = paths
    if n0 == n1 and v0 > v1:
        v0, v1 = v1, v0
    return [(v0, n0), (v1, n1)]


def norm_state(s):
    return {
        "constraints": [norm_constraint(c) for c in s.constraints],
        "paths": {k: norm_paths(v.as_pairs()) for k, v in s.tp_key_to_critical_paths.items()},
        "match": dict(s.tp_pair_to_match_num),
        "domains": s.tp_key_to_domains_num,
    }


def want_state(constraints, paths, match, domains=None):
    return {"constraints": constraints,
            "paths": {k: norm_paths(v) for k, v in paths.items()},
            "match": match, "domains": domains}


FRESH = [("", MAX_INT32), ("", MAX_INT32)]   # newCriticalPaths()

# ---------------------------------------------------------------------------------------------
# Mirrors TestPreFilterState



def _policy_nodes():
    return [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),
            N("node-c", node="node-c", bar="")]


def _policy_pods(first_b="p-b"):
    return [E("p-a", "node-a", bar=""), E(first_b, "node-b", bar=""), E("p-c", "node-b", bar=""),
            E("p-d", "node-c")]


def _taint_nodes():
    return [N("node-a", node="node-a"), N("node-b", node="node-b"),
            N("node-c", taints=True, node="node-c", bar="")]


STD_PODS = [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
            E("p-y1", "node-y", foo=""), E("p-y2", "node-y", foo="")]
STD7_PODS = STD_PODS + [E("p-y3", "node-y", foo=""), E("p-y4", "node-y", foo="")]

PRE_FILTER_STATE_CASES = [
    # (name, pod, nodes, pods, flags, want_state | Code.Skip)
    ("clean cluster with one spreadConstraint",
     Pod("p").label("foo", "").spread(5, "zone", DNS, match_labels(foo="bar")), four_nodes(), [], {},
     want_state([want_constraint(5, "zone", (Requirement("foo", "In", ("bar",)),))],
                {"zone": [("zone1", 0), ("zone2", 0)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 0})),
    ("normal case with one spreadConstraint",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), four_nodes(), STD_PODS, {},
     want_state([want_constraint(1, "zone", EXISTS_FOO)], {"zone": [("zone2", 2), ("zone1", 3)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 2})),
    ("normal case with null label selector",
     Pod("p").label("foo", "").spread(1, "zone", DNS, None), four_nodes(), STD_PODS, {},
     want_state([want_constraint(1, "zone", None)], {"zone": [("zone2", 0), ("zone1", 0)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 0})),
    ("normal case with one spreadConstraint, on a 3-zone cluster",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO),
     four_nodes() + [N("node-o", zone="zone3", node="node-o"), N("node-p", zone="zone3", node="node-p")],
     STD_PODS, {},
     want_state([want_constraint(1, "zone", EXISTS_FOO)], {"zone": [("zone3", 0), ("zone2", 2)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 2, ("zone", "zone3"): 0})),
    ("namespace mismatch doesn't count",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), four_nodes(),
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", ns="ns1", foo=""), E("p-b1", "node-b", foo=""),
      E("p-y1", "node-y", ns="ns2", foo=""), E("p-y2", "node-y", foo="")], {},
     want_state([want_constraint(1, "zone", EXISTS_FOO)], {"zone": [("zone2", 1), ("zone1", 2)]},
                {("zone", "zone1"): 2, ("zone", "zone2"): 1})),
    ("normal case with two spreadConstraints",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO), four_nodes(),
     STD7_PODS, {},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_FOO)],
                {"zone": [("zone1", 3), ("zone2", 4)], "node": [("node-x", 0), ("node-b", 1)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 4, ("node", "node-a"): 2, ("node", "node-b"): 1,
                 ("node", "node-x"): 0, ("node", "node-y"): 4})),
    ("soft spreadConstraints should be bypassed",
     Pod("p").label("foo", "").spread(1, "zone", SA, FOO).spread(1, "zone", DNS, FOO)
     .spread(1, "node", SA, FOO).spread(1, "node", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-y", zone="zone2", node="node-y")], STD7_PODS, {},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_FOO)],
                {"zone": [("zone1", 3), ("zone2", 4)], "node": [("node-b", 1), ("node-a", 2)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 4, ("node", "node-a"): 2, ("node", "node-b"): 1,
                 ("node", "node-y"): 4})),
    ("different labelSelectors - simple version",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-y", zone="zone2", node="node-y")],
     [E("p-a", "node-a", foo=""), E("p-b", "node-b", bar="")], {},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_BAR)],
                {"zone": [("zone2", 0), ("zone1", 1)], "node": [("node-a", 0), ("node-y", 0)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 0, ("node", "node-a"): 0, ("node", "node-b"): 1,
                 ("node", "node-y"): 0})),
    ("different labelSelectors - complex pods",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-y", zone="zone2", node="node-y")],
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo="", bar=""), E("p-b1", "node-b", foo=""),
      E("p-y1", "node-y", foo=""), E("p-y2", "node-y", foo="", bar=""), E("p-y3", "node-y", foo=""),
      E("p-y4", "node-y", foo="", bar="")], {},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_BAR)],
                {"zone": [("zone1", 3), ("zone2", 4)], "node": [("node-b", 0), ("node-a", 1)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 4, ("node", "node-a"): 1, ("node", "node-b"): 0,
                 ("node", "node-y"): 2})),
    ("two spreadConstraints, and with podAffinity",
     Pod("p").label("foo", "").node_affinity_not_in("node", ["node-x"])
     .spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO), four_nodes(), STD7_PODS, {},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_FOO)],
                {"zone": [("zone1", 3), ("zone2", 4)], "node": [("node-b", 1), ("node-a", 2)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 4, ("node", "node-a"): 2, ("node", "node-b"): 1,
                 ("node", "node-y"): 4})),
    ("TpKeyToDomainsNum is calculated when MinDomains is enabled",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO), four_nodes(),
     STD7_PODS, {"min_domains": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_FOO)],
                {"zone": [("zone1", 3), ("zone2", 4)], "node": [("node-x", 0), ("node-b", 1)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 4, ("node", "node-a"): 2, ("node", "node-b"): 1,
                 ("node", "node-x"): 0, ("node", "node-y"): 4},
                {"zone": 2, "node": 4})),
    ("feature gate disabled with NodeAffinityPolicy",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", DNS, BAR),
     _policy_nodes(), _policy_pods(), {"nip": False},
     want_state([want_constraint(1, "node", EXISTS_BAR)], {"node": [("node-a", 1), ("node-b", 2)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2})),
    ("NodeAffinityPolicy honored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", DNS, BAR),
     _policy_nodes(), _policy_pods(), {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR)], {"node": [("node-a", 1), ("node-b", 2)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2})),
    ("NodeAffinityPolicy ignored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", DNS, BAR, nap="Ignore"),
     _policy_nodes(), _policy_pods(), {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR, nap="Ignore")],
                {"node": [("node-c", 0), ("node-a", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0})),
    ("NodeAffinityPolicy honored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "node", DNS, BAR),
     _policy_nodes(), _policy_pods(), {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR)], {"node": [("node-a", 1), ("node-b", 2)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2})),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "node", DNS, BAR, nap="Ignore"),
     _policy_nodes(), _policy_pods(), {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR, nap="Ignore")],
                {"node": [("node-c", 0), ("node-a", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0})),
    ("feature gate disabled with NodeTaintsPolicy",
     Pod("p").label("foo", "").spread(1, "node", DNS, BAR), _taint_nodes(), _policy_pods(), {"nip": False},
     want_state([want_constraint(1, "node", EXISTS_BAR)], {"node": [("node-c", 0), ("node-a", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0})),
    ("NodeTaintsPolicy ignored",
     Pod("p").label("foo", "").spread(1, "node", DNS, BAR), _taint_nodes(), _policy_pods(), {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR)], {"node": [("node-c", 0), ("node-a", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0})),
    ("NodeTaintsPolicy honored",
     Pod("p").label("foo", "").spread(1, "node", DNS, BAR, ntp="Honor"), _taint_nodes(), _policy_pods(),
     {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR, ntp="Honor")], {"node": [("node-a", 1), ("node-b", 2)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2})),
    ("NodeTaintsPolicy honored with tolerated taints",
     Pod("p").label("foo", "").toleration(UNSCHED_TAINT, operator="Exists").spread(1, "node", DNS, BAR, ntp="Honor"),
     _taint_nodes(), _policy_pods(), {"nip": True},
     want_state([want_constraint(1, "node", EXISTS_BAR, ntp="Honor")], {"node": [("node-c", 0), ("node-a", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 2, ("node", "node-c"): 0})),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO)
     .spread(1, "node", DNS, FOO, nap="Ignore"),
     [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", zone="zone1", node="node-b"),
      N("node-x", zone="zone2", node="node-x", foo="")],
     [E("p-b1", "node-b", foo=""), E("p-b2", "node-b", foo=""), E("p-x1", "node-x", foo="")], {"nip": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_FOO, nap="Ignore")],
                {"zone": [("zone1", 0), ("zone2", 1)], "node": [("node-a", 0), ("node-x", 1)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 1, ("node", "node-a"): 0, ("node", "node-b"): 2,
                 ("node", "node-x"): 1})),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO, ntp="Honor").spread(1, "node", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", taints=True, zone="zone1", node="node-b"),
      N("node-x", zone="zone2", node="node-x", foo="")],
     [E("p-b1", "node-b", foo=""), E("p-b2", "node-b", foo=""), E("p-x1", "node-x", foo="")], {"nip": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO, ntp="Honor"), want_constraint(1, "node", EXISTS_FOO)],
                {"zone": [("zone1", 0), ("zone2", 1)], "node": [("node-a", 0), ("node-x", 1)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 1, ("node", "node-a"): 0, ("node", "node-b"): 2,
                 ("node", "node-x"): 1})),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", taints=True, zone="zone1", node="node-b", foo=""),
      N("node-x", zone="zone2", node="node-x", foo=""), N("node-y", zone="zone2", node="node-y")],
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-x1", "node-x", foo=""),
      E("p-y1", "node-y", foo="")], {"nip": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO), want_constraint(1, "node", EXISTS_FOO)],
                {"zone": [("zone1", 0), ("zone2", 1)], "node": [("node-b", 0), ("node-x", 1)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 1, ("node", "node-b"): 0, ("node", "node-x"): 1})),
    ("two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO, nap="Ignore")
     .spread(1, "node", DNS, FOO, ntp="Honor"),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", taints=True, zone="zone1", node="node-b", foo=""),
      N("node-x", zone="zone2", node="node-x", foo=""), N("node-y", zone="zone2", node="node-y", foo="")],
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-x1", "node-x", foo=""),
      E("p-x2", "node-x", foo=""), E("p-y1", "node-y", foo="")], {"nip": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO, nap="Ignore"),
                 want_constraint(1, "node", EXISTS_FOO, ntp="Honor")],
                {"zone": [("zone1", 2), ("zone2", 3)], "node": [("node-y", 1), ("node-x", 2)]},
                {("zone", "zone1"): 2, ("zone", "zone2"): 3, ("node", "node-x"): 2, ("node", "node-y"): 1})),
    ("matchLabelKeys ignored when feature gate disabled",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO, mlk=["bar"]), four_nodes(),
     STD_PODS, {"mlk": False},
     want_state([want_constraint(1, "zone", EXISTS_FOO)], {"zone": [("zone2", 2), ("zone1", 3)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 2})),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     Pod("p").label("foo", "").label("bar", "a").spread(1, "zone", DNS, FOO, mlk=["bar"]), four_nodes(),
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo="", bar="a"), E("p-b1", "node-b", foo=""),
      E("p-y1", "node-y", foo="", bar="a"), E("p-y2", "node-y", bar="")], {"mlk": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO + (Requirement("bar", "In", ("a",)),))],
                {"zone": [("zone2", 1), ("zone1", 1)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 1})),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     Pod("p").label("foo", "a").spread(1, "zone", DNS, {}, mlk=["foo"]), four_nodes(),
     [E("p-a1", "node-a", foo="a"), E("p-a2", "node-a", foo="a"), E("p-b1", "node-b", foo="a"),
      E("p-y1", "node-y", foo="a"), E("p-y2", "node-y", foo="a")], {"mlk": True},
     want_state([want_constraint(1, "zone", (Requirement("foo", "In", ("a",)),))],
                {"zone": [("zone2", 2), ("zone1", 3)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 2})),
    ("key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
     Pod("p").label("foo", "").spread(1, "zone", DNS, None, mlk=["bar"]), four_nodes(),
     [E("p-a1", "node-a", foo="a"), E("p-a2", "node-a", foo="a"), E("p-b1", "node-b", foo="a"),
      E("p-y1", "node-y", foo="a"), E("p-y2", "node-y", foo="a")], {"mlk": True},
     want_state([want_constraint(1, "zone", None)], {"zone": [("zone2", 0), ("zone1", 0)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 0})),
    ("no pod is matched when LabelSelector is nil when feature gate disabled",
     Pod("p").label("foo", "").spread(1, "zone", DNS, None, mlk=["bar"]), four_nodes(),
     [E("p-a1", "node-a", foo="a"), E("p-a2", "node-a", foo="a"), E("p-b1", "node-b", foo="a"),
      E("p-y1", "node-y", foo="a"), E("p-y2", "node-y", foo="a")], {},
     want_state([want_constraint(1, "zone", None)], {"zone": [("zone2", 0), ("zone1", 0)]},
                {("zone", "zone1"): 0, ("zone", "zone2"): 0})),
    ("key in matchLabelKeys is ignored when it isn't exist in pod.labels",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO, mlk=["bar"]), four_nodes(),
     [E("p-a1", "node-a", foo="a"), E("p-a2", "node-a", foo="a"), E("p-b1", "node-b", foo="a"),
      E("p-y1", "node-y", foo="a"), E("p-y2", "node-y", foo="a")], {"mlk": True},
     want_state([want_constraint(1, "zone", EXISTS_FOO)], {"zone": [("zone2", 2), ("zone1", 3)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 2})),
    ("skip if not specified",
     Pod("p").label("foo", ""), [N("node-a", zone="zone1", node="node-a")], [], {}, Code.Skip),
]


@pytest.mark.parametrize("name,pod,nodes,pods,flags,want", PRE_FILTER_STATE_CASES,
                         ids=[c[0] for c in PRE_FILTER_STATE_CASES])
def test_pre_filter_state(name, pod, nodes, pods, flags, want):
    pl, h = plugin(pods, nodes, **flags)
    cs = CycleState()
    res, st = pl.pre_filter(cs, pod.obj())
    assert res is None
    if want == Code.Skip:
        assert st is not None and st.code == Code.Skip
        return
    assert st is None
    s, st = get_pre_filter_state(cs)
    assert st is None
    assert norm_state(s) == want


class WithDefaultSelector(PodTopologySpread):
    """Stands in for a Service selecting ``foo=bar`` (upstream's objs: v1.Service)."""

    def default_selector(self, pod):
        return LabelSelector((Requirement("foo", "In", ("bar",)),)) if pod.labels.get("foo") == "bar" else LabelSelector()


DEFAULT_LIST_ARGS = {"defaultingType": "List", "defaultConstraints": [
    {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
    {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
    {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS}]}


def test_pre_filter_state_default_constraints_and_a_service():
    """Mirrors TestPreFilterState "default constraints and a service" (selector from the
    Service) and "... that doesn't match" (Skip)."""
    pl, _ = plugin([], [], args=DEFAULT_LIST_ARGS, cls=WithDefaultSelector)
    cs = CycleState()
    _, st = pl.pre_filter(cs, Pod("p").label("foo", "bar").label("baz", "kar").obj())
    assert st is None
    s, _ = get_pre_filter_state(cs)
    foo_bar = (Requirement("foo", "In", ("bar",)),)
    assert norm_state(s) == want_state(
        [want_constraint(3, "node", foo_bar), want_constraint(5, "rack", foo_bar)],
        {"node": FRESH, "rack": FRESH}, {})
    _, st = pl.pre_filter(CycleState(), Pod("p").label("foo", "baz").obj())
    assert st.code == Code.Skip
    # "default soft constraints and a service": only soft defaults -> Skip
    pl2, _ = plugin([], [], args={"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA}]}, cls=WithDefaultSelector)
    assert pl2.pre_filter(CycleState(), Pod("p").label("foo", "bar").obj())[1].code == Code.Skip


def test_pre_filter_state_default_constraints_but_pod_has_constraints():
    """Mirrors "default constraints and a service, but pod has constraints"."""
    pl, _ = plugin([], [], args={"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": DNS}]}, cls=WithDefaultSelector)
    cs = CycleState()
    p = (Pod("p").label("foo", "bar").label("baz", "tar").spread(1, "zone", DNS, match_labels(baz="tar"))
         .spread(2, "planet", SA, match_labels(fot="rok"))).obj()
    assert pl.pre_filter(cs, p)[1] is None
    s, _ = get_pre_filter_state(cs)
    assert norm_state(s) == want_state([want_constraint(1, "zone", (Requirement("baz", "In", ("tar",)),))],
                                       {"zone": FRESH}, {})


def test_default_constraints_apply_to_nothing_without_owners():
    """The engine models no Services/ReplicaSets/...: helper.DefaultSelector is empty, so
    buildDefaultConstraints returns nil, with System and with List defaulting."""
    nodes = [N("node-a", hostname="node-a", tzone="z1")]
    for args in (None, {}, {"defaultingType": "System"}, DEFAULT_LIST_ARGS):
        pl = podtopologyspread.new(args, snapshot_handle([], nodes))
        p = Pod("p").label("foo", "bar").obj()
        assert pl.pre_filter(CycleState(), p)[1].code == Code.Skip
        assert pl.pre_score(CycleState(), p, nodes).code == Code.Skip


# ---------------------------------------------------------------------------------------------
# Mirrors TestPreFilterStateAddPod

def _z(tk, sel=EXISTS_FOO):
    return want_constraint(1, tk, sel)


ADD_POD_CASES = [
    # (name, preemptor, added, existing, node_idx, nodes, nip, want)
    ("node a and b both impact current min match",
     Pod("p").label("foo", "").spread(1, "node", DNS, FOO), E("p-a1", "node-a", foo=""), [], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b")], False,
     want_state([_z("node")], {"node": [("node-b", 0), ("node-a", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 0})),
    ("only node a impacts current min match",
     Pod("p").label("foo", "").spread(1, "node", DNS, FOO), E("p-a1", "node-a", foo=""),
     [E("p-b1", "node-b", foo="")], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b")], False,
     want_state([_z("node")], {"node": [("node-a", 1), ("node-b", 1)]},
                {("node", "node-a"): 1, ("node", "node-b"): 1})),
    ("add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
     Pod("p").label("foo", "").spread(1, "node", DNS, FOO), E("p-a1", "node-a", ns="ns1", foo=""),
     [E("p-b1", "node-b", foo="")], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b")], False,
     want_state([_z("node")], {"node": [("node-a", 0), ("node-b", 1)]},
                {("node", "node-a"): 0, ("node", "node-b"): 1})),
    ("add pod on non-critical node won't trigger re-calculation",
     Pod("p").label("foo", "").spread(1, "node", DNS, FOO), E("p-b2", "node-b", foo=""),
     [E("p-b1", "node-b", foo="")], 1,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b")], False,
     want_state([_z("node")], {"node": [("node-a", 0), ("node-b", 2)]},
                {("node", "node-a"): 0, ("node", "node-b"): 2})),
    ("node a and x both impact topologyKeyToMinPodsMap on zone and node",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO),
     E("p-a1", "node-a", foo=""), [], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-x", zone="zone2", node="node-x")], False,
     want_state([_z("zone"), _z("node")],
                {"zone": [("zone2", 0), ("zone1", 1)], "node": [("node-x", 0), ("node-a", 1)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 0, ("node", "node-a"): 1, ("node", "node-x"): 0})),
    ("only node a impacts topologyKeyToMinPodsMap on zone and node",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO),
     E("p-a1", "node-a", foo=""), [E("p-x1", "node-x", foo="")], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-x", zone="zone2", node="node-x")], False,
     want_state([_z("zone"), _z("node")],
                {"zone": [("zone1", 1), ("zone2", 1)], "node": [("node-a", 1), ("node-x", 1)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 1, ("node", "node-a"): 1, ("node", "node-x"): 1})),
    ("node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO),
     E("p-a1", "node-a", foo=""),
     [E("p-b1", "node-b", foo=""), E("p-b2", "node-b", foo=""), E("p-x1", "node-x", foo="")], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-x", zone="zone2", node="node-x")], False,
     want_state([_z("zone"), _z("node")],
                {"zone": [("zone2", 1), ("zone1", 3)], "node": [("node-a", 1), ("node-x", 1)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 1, ("node", "node-a"): 1, ("node", "node-b"): 2,
                 ("node", "node-x"): 1})),
    ("Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     E("p-a1", "node-a", foo=""),
     [E("p-b1", "node-b", foo="", bar=""), E("p-x1", "node-x", foo="", bar=""), E("p-x2", "node-x", bar="")], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-x", zone="zone2", node="node-x")], False,
     want_state([_z("zone"), _z("node", EXISTS_BAR)],
                {"zone": [("zone2", 1), ("zone1", 2)], "node": [("node-a", 0), ("node-b", 1)]},
                {("zone", "zone1"): 2, ("zone", "zone2"): 1, ("node", "node-a"): 0, ("node", "node-b"): 1,
                 ("node", "node-x"): 2})),
    ("Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone and node",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     E("p-a1", "node-a", foo="", bar=""),
     [E("p-b1", "node-b", bar=""), E("p-x1", "node-x", foo="", bar=""), E("p-x2", "node-x", bar="")], 0,
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-x", zone="zone2", node="node-x")], False,
     want_state([_z("zone"), _z("node", EXISTS_BAR)],
                {"zone": [("zone1", 1), ("zone2", 1)], "node": [("node-a", 1), ("node-b", 1)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 1, ("node", "node-a"): 1, ("node", "node-b"): 1,
                 ("node", "node-x"): 2})),
] + [
    (f"add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy {'enabled' if nip else 'disabled'}",
     Pod("p").label("foo", "").node_affinity_not_in("foo", ["bar"]).spread(1, "zone", DNS, FOO),
     E("p-a1", "node-a", foo="", zone="zone1"),
     [E("p-a2", "node-a", foo="", zone="zone1"), E("p-b1", "node-b", foo="", zone="zone2")], 0,
     [N("node-a", zone="zone1", node="node-a", foo="bar"), N("node-b", zone="zone2", node="node-b", foo="")], nip,
     want_state([_z("zone")], {"zone": [("zone2", 1), ("", MAX_INT32)]}, {("zone", "zone2"): 1}))
    for nip in (False, True)
] + [
    (f"add a pod when scheduling node affinity matched pod with NodeInclusionPolicy {'enabled' if nip else 'disabled'}",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO),
     E("p-b1", "node-b", foo="", zone="zone2"),
     [E("p-a1", "node-a", foo="", zone="zone1"), E("p-b2", "node-b", foo="", zone="zone2")], 1,
     [N("node-a", zone="zone1", node="node-a", foo="bar"), N("node-b", zone="zone2", node="node-b", foo="")], nip,
     want_state([_z("zone")], {"zone": [("zone1", 1), ("zone2", 2)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 2}))
    for nip in (False, True)
] + [
    ("add a label selector not matched pod when with NodeInclusionPolicy enabled",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), E("p-b1", "node-b", zone="zone2"),
     [E("p-a1", "node-a", foo="", zone="zone1"), E("p-b2", "node-b", foo="", zone="zone2")], 1,
     [N("node-a", zone="zone1", node="node-a", foo="bar"), N("node-b", zone="zone2", node="node-b", foo="")], True,
     want_state([_z("zone")], {"zone": [("zone1", 1), ("zone2", 1)]},
                {("zone", "zone1"): 1, ("zone", "zone2"): 1})),
    ("add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), E("p-b1", "node-b", foo="", zone="zone2"),
     [E("p-a1", "node-a", foo="", zone="zone1"), E("p-b2", "node-b", foo="", zone="zone2")], 1,
     [N("node-a", taints=True, zone="zone1", node="node-a"), N("node-b", zone="zone2", node="node-b")], False,
     want_state([_z("zone")], {"zone": [("zone1", 1), ("zone2", 2)]},
                {("zone", "zone2"): 2, ("zone", "zone1"): 1})),
    ("add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
     Pod("p").label("foo", "").toleration(UNSCHED_TAINT, operator="Exists").spread(1, "zone", DNS, FOO),
     E("p-b1", "node-b", foo="", zone="zone2"),
     [E("p-a1", "node-a", foo="", zone="zone1"), E("p-b2", "node-b", foo="", zone="zone2")], 1,
     [N("node-a", taints=True, zone="zone1", node="node-a"), N("node-b", zone="zone2", node="node-b")], True,
     want_state([_z("zone")], {"zone": [("zone1", 1), ("zone2", 2)]},
                {("zone", "zone2"): 2, ("zone", "zone1"): 1})),
]


@pytest.mark.parametrize("name,preemptor,added,existing,node_idx,nodes,nip,want", ADD_POD_CASES,
                         ids=[c[0] for c in ADD_POD_CASES])
def test_pre_filter_state_add_pod(name, preemptor, added, existing, node_idx, nodes, nip, want):
    pl, h = plugin(existing, nodes, nip=nip)
    cs = CycleState()
    p = preemptor.obj()
    assert pl.pre_filter(cs, p)[1] is None
    ni = h.snapshot().get(nodes[node_idx].name)
    assert pl.pre_filter_extensions().add_pod(cs, p, added.obj(), ni) is None
    s, _ = get_pre_filter_state(cs)
    assert norm_state(s) == want


# ---------------------------------------------------------------------------------------------
# Mirrors TestPreFilterStateRemovePod

def _three_zone_nodes(with_y):
    ns = [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
          N("node-x", zone="zone2", node="node-x")]
    if with_y:
        ns.append(N("node-y", zone="zone2", node="node-y"))
    return ns


REMOVE_POD_CASES = [
    # (name, preemptor, nodes, existing, deleted_idx, deleted_pod, node_idx, nip, want)
    ("one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), _three_zone_nodes(False),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-x1", "node-x", foo="")], 0, None, 0, False,
     want_state([_z("zone")], {"zone": [("zone1", 1), ("zone2", 1)]}, {("zone", "zone1"): 1, ("zone", "zone2"): 1})),
    ("one spreadConstraint on node, topologyKeyToMinPodsMap changed",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), _three_zone_nodes(True),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-x1", "node-x", foo=""),
      E("p-y1", "node-y", foo="")], 0, None, 0, False,
     want_state([_z("zone")], {"zone": [("zone1", 1), ("zone2", 2)]}, {("zone", "zone1"): 1, ("zone", "zone2"): 2})),
    ("delete an irrelevant pod won't help",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), _three_zone_nodes(True),
     [E("p-a0", "node-a", bar=""), E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo=""),
      E("p-x1", "node-x", foo=""), E("p-y1", "node-y", foo="")], 0, None, 0, False,
     want_state([_z("zone")], {"zone": [("zone1", 2), ("zone2", 2)]}, {("zone", "zone1"): 2, ("zone", "zone2"): 2})),
    ("delete a non-existing pod won't help",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), _three_zone_nodes(True),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-x1", "node-x", foo=""),
      E("p-y1", "node-y", foo="")], -1, E("p-a0", "node-a", bar=""), 0, False,
     want_state([_z("zone")], {"zone": [("zone1", 2), ("zone2", 2)]}, {("zone", "zone1"): 2, ("zone", "zone2"): 2})),
    ("two spreadConstraints",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO), _three_zone_nodes(False),
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
      E("p-x1", "node-x", foo=""), E("p-x2", "node-x", foo="")], 3, None, 2, False,
     want_state([_z("zone"), _z("node")],
                {"zone": [("zone2", 1), ("zone1", 3)], "node": [("node-b", 1), ("node-x", 1)]},
                {("zone", "zone1"): 3, ("zone", "zone2"): 1, ("node", "node-a"): 2, ("node", "node-b"): 1,
                 ("node", "node-x"): 1})),
] + [
    (f"remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy {'enabled' if nip else 'disabled'}",
     Pod("p").label("foo", "").node_affinity_not_in("foo", ["bar"]).spread(1, "zone", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a", foo="bar"), N("node-b", zone="zone2", node="node-b", foo="")],
     [E("p-a2", "node-a", foo="", zone="zone1"), E("p-b1", "node-b", foo="", zone="zone2")],
     -1, E("p-a1", "node-a", foo="", zone="zone1"), 0, nip,
     want_state([_z("zone")], {"zone": [("zone2", 1), ("", MAX_INT32)]}, {("zone", "zone2"): 1}))
    for nip in (False, True)
] + [
    (f"remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy {'enabled' if nip else 'disabled'}",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a", foo="bar"), N("node-b", zone="zone2", node="node-b", foo="")],
     [E("p-a1", "node-a", foo="", zone="zone1"), E("p-b2", "node-b", foo="", zone="zone2")],
     -1, E("p-b1", "node-b", foo="", zone="zone2"), 1, nip,
     want_state([_z("zone")], {"zone": [("zone2", 0), ("zone1", 1)]}, {("zone", "zone2"): 0, ("zone", "zone1"): 1}))
    for nip in (False, True)
]


@pytest.mark.parametrize("name,preemptor,nodes,existing,deleted_idx,deleted,node_idx,nip,want", REMOVE_POD_CASES,
                         ids=[c[0] for c in REMOVE_POD_CASES])
def test_pre_filter_state_remove_pod(name, preemptor, nodes, existing, deleted_idx, deleted, node_idx, nip, want):
    existing_objs = [b.obj() for b in existing]
    h = snapshot_handle(existing_objs, nodes)
    pl = podtopologyspread.new({"defaultingType": "List"}, h, {
        "MinDomainsInPodTopologySpread": False, "NodeInclusionPolicyInPodTopologySpread": nip,
        "MatchLabelKeysInPodTopologySpread": False})
    cs = CycleState()
    p = preemptor.obj()
    assert pl.pre_filter(cs, p)[1] is None
    victim = existing_objs[deleted_idx] if 0 <= deleted_idx < len(existing_objs) else deleted.obj()
    ni = h.snapshot().get(nodes[node_idx].name)
    assert pl.remove_pod(cs, p, victim, ni) is None
    s, _ = get_pre_filter_state(cs)
    assert norm_state(s) == want


def test_pre_filter_state_clone_is_independent():
    """preFilterState.Clone: AddPod on a clone (preemption's per-node copy) leaves the
    original alone; constraints and domain numbers are shared."""
    pl, h = plugin([E("p-a1", "node-a", foo="")],
                   [N("node-a", node="node-a"), N("node-b", node="node-b")], min_domains=True)
    cs = CycleState()
    p = Pod("p").label("foo", "").spread(1, "node", DNS, FOO).obj()
    pl.pre_filter(cs, p)
    s, _ = get_pre_filter_state(cs)
    before = norm_state(s)
    cs2 = cs.clone()
    pl.add_pod(cs2, p, E("new", "node-b", foo="").obj(), h.snapshot().get("node-b"))
    s2, _ = get_pre_filter_state(cs2)
    assert norm_state(s) == before
    assert s2.tp_pair_to_match_num[("node", "node-b")] == 1
    assert s2.constraints is s.constraints and s2.tp_key_to_domains_num is s.tp_key_to_domains_num


def test_critical_paths_update():
    """criticalPaths.update keeps paths[0] at the minimum; paths[1] is only >= it."""
    cp = CriticalPaths()
    for v, n in [("a", 3), ("b", 1), ("c", 2)]:
        cp.update(v, n)
    assert cp.as_pairs() == [("b", 1), ("c", 2)]
    cp.update("b", 5)     # existing value: set and swap
    assert cp.as_pairs() == [("c", 2), ("b", 5)]
    cp.update("a", 3)     # not present: between the two
    assert cp.as_pairs() == [("c", 2), ("a", 3)]


# ---------------------------------------------------------------------------------------------
# Mirrors TestSingleConstraint

S_, U_, UAU_ = Code.Success, Code.Unschedulable, Code.UnschedulableAndUnresolvable

SPREAD_2103 = [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
               E("p-y1", "node-y", foo=""), E("p-y2", "node-y", foo=""), E("p-y3", "node-y", foo="")]


def _nodes_abc():
    return [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", node="node-c")]


def _pods_22_1():
    return [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
            E("p-b2", "node-b", foo=""), E("p-c1", "node-c", foo="")]


def _nodes_foo_y(taint_y=False):
    return [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),
            N("node-x", node="node-x", foo=""), N("node-y", taints=taint_y, node="node-y")]


_PODS_1101 = [E("p-b1", "node-a", foo=""), E("p-b2", "node-b", foo=""), E("p-y1", "node-y", foo="")]

SINGLE_CASES = [
    # (name, pod, nodes, pods, flags, want {node: code})
    ("no existing pods", Pod("p").label("foo", "").spread(1, "zone", DNS, FOO), four_nodes(), [], {},
     dict(a=S_, b=S_, x=S_, y=S_)),
    ("no existing pods, incoming pod doesn't match itself", Pod("p").label("foo", "").spread(1, "zone", DNS, BAR),
     four_nodes(), [], {}, dict(a=S_, b=S_, x=S_, y=S_)),
    ("existing pods in a different namespace do not count", Pod("p").label("foo", "").spread(1, "zone", DNS, FOO),
     four_nodes(), [E("p-a1", "node-a", ns="ns1", foo=""), E("p-b1", "node-a", ns="ns2", foo=""),
                    E("p-x1", "node-x", foo=""), E("p-y1", "node-y", foo="")], {},
     dict(a=S_, b=S_, x=U_, y=U_)),
    ("existing pods do not match null selector", Pod("p").label("foo", "").spread(1, "zone", DNS, None),
     four_nodes(), [E("p-x1", "node-x", foo=""), E("p-y1", "node-y", foo="")], {}, dict(a=S_, b=S_, x=S_, y=S_)),
    ("pods spread across zones as 3/3, all nodes fit", Pod("p").label("foo", "").spread(1, "zone", DNS, FOO),
     four_nodes(), SPREAD_2103, {}, dict(a=S_, b=S_, x=S_, y=S_)),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zon="zone1", node="node-b"),
      N("node-x", zone="zone2", node="node-x"), N("node-y", zone="zone2", node="node-y")],
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-x1", "node-x", foo=""),
      E("p-y1", "node-y", foo="")], {}, dict(a=S_, b=UAU_, x=U_, y=U_)),
    ("pod cannot be scheduled as all nodes don't have label 'rack'",
     Pod("p").label("foo", "").spread(1, "rack", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a"), N("node-x", zone="zone2", node="node-x")], [], {},
     dict(a=UAU_, x=UAU_)),
    ("pods spread across nodes as 2/1/0/3, only node-x fits", Pod("p").label("foo", "").spread(1, "node", DNS, FOO),
     four_nodes(), SPREAD_2103, {}, dict(a=U_, b=U_, x=S_, y=U_)),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
     Pod("p").label("foo", "").spread(2, "node", DNS, FOO), four_nodes(), SPREAD_2103, {},
     dict(a=U_, b=S_, x=S_, y=U_)),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
     Pod("p").label("bar", "").spread(1, "node", DNS, FOO), four_nodes(), SPREAD_2103, {},
     dict(a=U_, b=S_, x=S_, y=U_)),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     Pod("p").label("foo", "").node_affinity_in("node", ["node-a", "node-y"]).spread(1, "node", DNS, FOO),
     four_nodes(), SPREAD_2103, {}, dict(a=S_, b=S_, x=S_, y=U_)),
    ("terminating Pods should be excluded", Pod("p").label("foo", "").spread(1, "node", DNS, FOO),
     [N("node-a", node="node-a"), N("node-b", node="node-b")],
     [E("p-a", "node-a", terminating=True, foo=""), E("p-b", "node-b", foo="")], {}, dict(a=S_, b=U_)),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     Pod("p").label("foo", "").node_affinity_not_in("node", ["node-b"]).spread(1, "zone", DNS, FOO),
     four_nodes(), [E("p-b1", "node-b", foo=""), E("p-b2", "node-b", foo=""), E("p-y1", "node-y", foo="")], {},
     dict(a=S_, b=S_, x=U_, y=U_)),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
     Pod("p").label("foo", "").spread(2, "node", DNS, FOO, min_domains=4), _nodes_abc(), _pods_22_1(),
     {"min_domains": True}, dict(a=U_, b=U_, c=S_)),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
     Pod("p").label("foo", "").spread(2, "node", DNS, FOO, min_domains=2), _nodes_abc(), _pods_22_1(),
     {"min_domains": True}, dict(a=S_, b=S_, c=S_)),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
     Pod("p").label("foo", "").spread(2, "zone", DNS, FOO, min_domains=3), four_nodes(),
     [E("p-b1", "node-a", foo=""), E("p-b2", "node-b", foo=""), E("p-y1", "node-y", foo="")],
     {"min_domains": True}, dict(a=U_, b=U_, x=S_, y=S_)),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     Pod("p").label("foo", "").spread(2, "zone", DNS, FOO, min_domains=1), four_nodes(),
     [E("p-b1", "node-a", foo=""), E("p-b2", "node-b", foo=""), E("p-y1", "node-y", foo="")],
     {"min_domains": True}, dict(a=S_, b=S_, x=S_, y=S_)),
    ("NodeAffinityPolicy honored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", DNS, FOO), _nodes_foo_y(), _PODS_1101,
     {"nip": True}, dict(a=U_, b=U_, x=S_, y=S_)),
    ("NodeAffinityPolicy ignored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", DNS, FOO, nap="Ignore"),
     _nodes_foo_y(), _PODS_1101, {"nip": True}, dict(a=U_, b=U_, x=S_, y=U_)),
    ("NodeAffinityPolicy honored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "node", DNS, FOO), _nodes_foo_y(),
     _PODS_1101, {"nip": True}, dict(a=U_, b=U_, x=S_, y=S_)),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "node", DNS, FOO, nap="Ignore"),
     _nodes_foo_y(), _PODS_1101, {"nip": True}, dict(a=U_, b=U_, x=S_, y=U_)),
    ("NodeTaintsPolicy honored", Pod("p").label("foo", "").spread(1, "node", DNS, FOO, ntp="Honor"),
     _nodes_foo_y(True), _PODS_1101, {"nip": True}, dict(a=U_, b=U_, x=S_, y=S_)),
    ("NodeTaintsPolicy ignored", Pod("p").label("foo", "").spread(1, "node", DNS, FOO),
     _nodes_foo_y(True), _PODS_1101, {"nip": True}, dict(a=U_, b=U_, x=S_, y=U_)),
]


def _check_codes(pl, h, pod, nodes, want):
    state = CycleState()
    p = pod.obj()
    assert pl.pre_filter(state, p)[1] is None
    got = {}
    for n in nodes:
        st = pl.filter(state, p, h.snapshot().get(n.name))
        got[n.name[len("node-"):]] = S_ if st is None else st.code
        if st is not None:
            want_reason = ERR_REASON_NODE_LABEL_NOT_MATCH if st.code == UAU_ else ERR_REASON_CONSTRAINTS_NOT_MATCH
            assert st.reasons == [want_reason]
    assert got == want


@pytest.mark.parametrize("name,pod,nodes,pods,flags,want", SINGLE_CASES, ids=[c[0] for c in SINGLE_CASES])
def test_single_constraint(name, pod, nodes, pods, flags, want):
    pl, h = plugin(pods, nodes, **flags)
    _check_codes(pl, h, pod, nodes, want)


# Mirrors TestMultipleConstraints
def _inc_nodes(a_foo=True, b_foo=True, y_foo=False, b_taint=False, y_taint=False):
    def labels(foo, **kw):
        if foo:
            kw["foo"] = ""
        return kw
    return [N("node-a", **labels(a_foo, zone="zone1", node="node-a")),
            N("node-b", taints=b_taint, **labels(b_foo, zone="zone1", node="node-b")),
            N("node-x", **labels(True, zone="zone2", node="node-x")),
            N("node-y", taints=y_taint, **labels(y_foo, zone="zone2", node="node-y"))]


_INC_PODS = [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-y1", "node-y", foo="")]

MULTI_CASES = [
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO), four_nodes(), SPREAD_2103,
     {}, dict(a=U_, b=U_, x=S_, y=U_)),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO), four_nodes(),
     SPREAD_2103 + [E("p-y4", "node-y", foo="")], {}, dict(a=U_, b=U_, x=U_, y=U_)),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     four_nodes(), [E("p-a1", "node-a", foo=""), E("p-y1", "node-y", bar="")], {}, dict(a=U_, b=U_, x=S_, y=U_)),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     four_nodes(), [E("p-a1", "node-a", foo=""), E("p-x1", "node-x", bar=""), E("p-y1", "node-y", bar="")], {},
     dict(a=U_, b=U_, x=U_, y=U_)),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR),
     four_nodes(), [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo="", bar=""), E("p-y1", "node-y", foo=""),
                    E("p-y2", "node-y", foo="", bar=""), E("p-y3", "node-y", foo="")], {},
     dict(a=U_, b=S_, x=U_, y=U_)),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     Pod("p").label("bar", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR), four_nodes(),
     [E("p-a1", "node-a", foo=""), E("p-x1", "node-x", bar=""), E("p-y1", "node-y", bar="")], {},
     dict(a=S_, b=S_, x=U_, y=U_)),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO),
     [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
      N("node-x", zone="zone2"), N("node-y", zone="zone2", node="node-y")],
     [E("p-a1", "node-a", foo=""), E("p-y3", "node-y", foo="")], {}, dict(a=U_, b=S_, x=UAU_, y=U_)),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO)
     .spread(1, "node", DNS, FOO, nap="Ignore"), _inc_nodes(), _INC_PODS, {"nip": True},
     dict(a=U_, b=U_, x=S_, y=U_)),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     Pod("p").label("foo", "").spread(1, "zone", DNS, FOO, ntp="Honor").spread(1, "node", DNS, FOO),
     _inc_nodes(y_taint=True), _INC_PODS, {"nip": True}, dict(a=U_, b=U_, x=S_, y=U_)),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO),
     _inc_nodes(b_foo=False, y_foo=True, y_taint=True), _INC_PODS, {"nip": True}, dict(a=U_, b=S_, x=S_, y=U_)),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO, ntp="Honor")
     .spread(1, "node", DNS, FOO, nap="Ignore"),
     _inc_nodes(b_foo=False, y_foo=True, y_taint=True), _INC_PODS, {"nip": True}, dict(a=U_, b=U_, x=S_, y=U_)),
]


@pytest.mark.parametrize("name,pod,nodes,pods,flags,want", MULTI_CASES, ids=[c[0] for c in MULTI_CASES])
def test_multiple_constraints(name, pod, nodes, pods, flags, want):
    pl, h = plugin(pods, nodes, **flags)
    _check_codes(pl, h, pod, nodes, want)


def test_pre_filter_disabled():
    """Mirrors TestPreFilterDisabled."""
    pl, h = plugin([], [N("node-a")])
    st = pl.filter(CycleState(), Pod().obj(), h.snapshot().get("node-a"))
    assert st.code == Code.Error
    assert st.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


def test_gates_default_on_in_new():
    """v1.28: MinDomains, NodeInclusionPolicy and MatchLabelKeys are beta and on."""
    pl = podtopologyspread.new(None, None)
    assert (pl.enable_min_domains, pl.enable_node_inclusion_policy, pl.enable_match_label_keys) == (True, True, True)
    nodes = _nodes_abc()
    h = snapshot_handle([b.obj() for b in _pods_22_1()], nodes)
    pl = podtopologyspread.new(None, h)
    _check_codes(pl, h, Pod("p").label("foo", "").spread(2, "node", DNS, FOO, min_domains=4), nodes,
                 dict(a=U_, b=U_, c=S_))


# ---------------------------------------------------------------------------------------------
# Mirrors TestPreScoreSkip and TestPreScoreStateEmptyNodes

def test_pre_score_skip():
    nodes = [N("node-a", hostname="node-a"), N("node-b", hostname="node-b")]
    pl, _ = plugin([], nodes)
    assert pl.pre_score(CycleState(), Pod("p").obj(), nodes).code == Code.Skip
    # default constraints and a replicaset that doesn't match -> empty default selector
    pl, _ = plugin([], [N("node-a", planet="mars")], args={"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}]})
    assert pl.pre_score(CycleState(), Pod("p").label("foo", "bar").obj(), [N("node-a", planet="mars")]).code == Code.Skip
    # no nodes at all
    pl, _ = plugin([], [])
    assert pl.pre_score(CycleState(), Pod("p").spread(1, "zone", SA, FOO).obj(), []).code == Code.Skip


def norm_score_state(s):
    return {"constraints": [norm_constraint(c) for c in s.constraints],
            "ignored": set(s.ignored_nodes),
            "counts": dict(s.topology_pair_to_pod_counts),
            "weights": list(s.topology_normalizing_weight)}


W = topology_normalizing_weight
_SC_NODES = [N("node-a", zone="zone1", foo="", hostname="node-a"), N("node-b", zone="zone1", foo="", hostname="node-b"),
             N("node-x", zone="zone2", hostname="node-x")]
_SC_TAINT_NODES = [N("node-a", zone="zone1", foo="", hostname="node-a"),
                   N("node-b", zone="zone1", foo="", hostname="node-b"),
                   N("node-x", taints=True, zone="zone2", hostname="node-x")]
_ZONES12 = {("zone", "zone1"): 0, ("zone", "zone2"): 0}

PRE_SCORE_STATE_CASES = [
    ("normal case",
     Pod("p").label("foo", "").spread(1, "zone", SA, FOO).spread(1, HOSTNAME, SA, FOO),
     [N("node-a", zone="zone1", hostname="node-a"), N("node-b", zone="zone1", hostname="node-b"),
      N("node-x", zone="zone2", hostname="node-x")], False,
     {"constraints": [_z("zone"), _z(HOSTNAME)], "ignored": set(), "counts": _ZONES12, "weights": [W(2), W(3)]}),
    ("null selector", Pod("p").label("foo", "").spread(1, "zone", SA, None),
     [N("node-a", zone="zone1", hostname="node-a"), N("node-b", zone="zone1", hostname="node-b"),
      N("node-x", zone="zone2", hostname="node-x")], False,
     {"constraints": [want_constraint(1, "zone", None)], "ignored": set(), "counts": _ZONES12, "weights": [W(2)]}),
    ("node-x doesn't have label zone",
     Pod("p").label("foo", "").spread(1, "zone", SA, FOO).spread(1, HOSTNAME, SA, BAR),
     [N("node-a", zone="zone1", hostname="node-a"), N("node-b", zone="zone1", hostname="node-b"),
      N("node-x", hostname="node-x")], False,
     {"constraints": [_z("zone"), _z(HOSTNAME, EXISTS_BAR)], "ignored": {"node-x"},
      "counts": {("zone", "zone1"): 0}, "weights": [W(1), W(2)]}),
    ("NodeAffinityPolicy honored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", SA, BAR), _SC_NODES, True,
     {"constraints": [_z("zone", EXISTS_BAR)], "ignored": set(), "counts": _ZONES12, "weights": [W(2)]}),
    ("NodeAffinityPolicy ignored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "zone", SA, BAR, nap="Ignore"), _SC_NODES, True,
     {"constraints": [want_constraint(1, "zone", EXISTS_BAR, nap="Ignore")], "ignored": set(), "counts": _ZONES12,
      "weights": [W(2)]}),
    ("NodeAffinityPolicy honored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "zone", SA, BAR), _SC_NODES, True,
     {"constraints": [_z("zone", EXISTS_BAR)], "ignored": set(), "counts": _ZONES12, "weights": [W(2)]}),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "zone", SA, BAR, nap="Ignore"), _SC_NODES, True,
     {"constraints": [want_constraint(1, "zone", EXISTS_BAR, nap="Ignore")], "ignored": set(), "counts": _ZONES12,
      "weights": [W(2)]}),
    ("NodeTaintsPolicy honored", Pod("p").label("foo", "").spread(1, "zone", SA, BAR, ntp="Honor"), _SC_TAINT_NODES,
     True, {"constraints": [want_constraint(1, "zone", EXISTS_BAR, ntp="Honor")], "ignored": set(),
            "counts": _ZONES12, "weights": [W(2)]}),
    ("NodeTaintsPolicy ignored", Pod("p").label("foo", "").spread(1, "zone", SA, BAR), _SC_TAINT_NODES, True,
     {"constraints": [_z("zone", EXISTS_BAR)], "ignored": set(), "counts": _ZONES12, "weights": [W(2)]}),
]


@pytest.mark.parametrize("name,pod,nodes,nip,want", PRE_SCORE_STATE_CASES, ids=[c[0] for c in PRE_SCORE_STATE_CASES])
def test_pre_score_state_empty_nodes(name, pod, nodes, nip, want):
    pl, _ = plugin([], nodes, nip=nip)
    cs = CycleState()
    assert pl.pre_score(cs, pod.obj(), nodes) is None
    s, _ = get_pre_score_state(cs)
    assert norm_score_state(s) == want


class WithReplicaSet(PodTopologySpread):
    """Stands in for ReplicaSet rs1 with selector ``foo Exists`` owning the pod."""

    def default_selector(self, pod):
        return LabelSelector(EXISTS_FOO)


def test_pre_score_state_system_default_constraints_and_a_replicaset():
    """Mirrors "system default constraints and a replicaset": with system defaulting nodes
    without a zone are not ignored; they form the zone ""."""
    nodes = [N("node-a", hostname="node-a", tzone="mars"), N("node-b", hostname="node-b", tzone="mars"),
             N("node-c", hostname="node-c"), N("node-d", hostname="node-d")]
    pl, _ = plugin([], nodes, args={"defaultingType": "System"}, cls=WithReplicaSet)
    cs = CycleState()
    assert pl.pre_score(cs, Pod("p").label("foo", "tar").label("baz", "sup").obj(), nodes) is None
    s, _ = get_pre_score_state(cs)
    assert norm_score_state(s) == {
        "constraints": [want_constraint(3, HOSTNAME, EXISTS_FOO), want_constraint(5, ZONE_LABEL, EXISTS_FOO)],
        "ignored": set(), "counts": {(ZONE_LABEL, "mars"): 0, (ZONE_LABEL, ""): 0}, "weights": [W(4), W(2)]}


def test_pre_score_state_default_constraints_and_a_replicaset():
    """Mirrors "default constraints and a replicaset" and "..., but pod has constraints"."""
    nodes = [N("node-a", rack="rack1", hostname="node-a", planet="mars")]
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA},
        {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}]}
    pl, _ = plugin([], nodes, args=args, cls=WithReplicaSet)
    cs = CycleState()
    assert pl.pre_score(cs, Pod("p").label("foo", "tar").obj(), nodes) is None
    s, _ = get_pre_score_state(cs)
    assert norm_score_state(s) == {
        "constraints": [want_constraint(1, HOSTNAME, EXISTS_FOO), want_constraint(2, "planet", EXISTS_FOO)],
        "ignored": set(), "counts": {("planet", "mars"): 0}, "weights": [W(1), W(1)]}
    nodes = [N("node-a", planet="mars", galaxy="andromeda")]
    pl, _ = plugin([], nodes, args={"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "galaxy", "whenUnsatisfiable": SA}]}, cls=WithReplicaSet)
    cs = CycleState()
    p = (Pod("p").label("foo", "bar").label("baz", "sup").spread(1, "zone", DNS, BAR)
         .spread(2, "planet", SA, match_labels(baz="sup"))).obj()
    assert pl.pre_score(cs, p, nodes) is None
    s, _ = get_pre_score_state(cs)
    assert norm_score_state(s) == {
        "constraints": [want_constraint(2, "planet", (Requirement("baz", "In", ("sup",)),))],
        "ignored": set(), "counts": {("planet", "mars"): 0}, "weights": [W(1)]}


# ---------------------------------------------------------------------------------------------
# Mirrors TestPodTopologySpreadScore (run with SystemDefaulting args, as upstream)

def _h(*names):
    return [N(n, hostname=n) for n in names]


def _zh(*specs):
    return [N(n, zone=z, hostname=n) for n, z in specs]


_P4321 = [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-a3", "node-a", foo=""),
          E("p-a4", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-b2", "node-b", foo=""),
          E("p-b3", "node-b", foo=""), E("p-c1", "node-c", foo=""), E("p-c2", "node-c", foo=""),
          E("p-d1", "node-d", foo="")]
_P2103 = [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
          E("p-d1", "node-d", foo=""), E("p-d2", "node-d", foo=""), E("p-d3", "node-d", foo="")]
_P4213 = [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-a3", "node-a", foo=""),
          E("p-a4", "node-a", foo=""), E("p-b1", "node-b", foo=""), E("p-b2", "node-b", foo=""),
          E("p-x1", "node-x", foo=""), E("p-y1", "node-y", foo=""), E("p-y2", "node-y", foo=""),
          E("p-y3", "node-y", foo="")]
_ABXY = [("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")]
_DIFF_SEL_PODS = [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo="", bar=""), E("p-y1", "node-y", foo=""),
                  E("p-y2", "node-y", bar="")]
_NODE_ABC_FOO = [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""), N("node-c", node="node-c")]
_PODS_211 = [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
             E("p-c1", "node-c", foo="")]
_MLK_NODES = [("node-a", "zone1"), ("node-b", "zone1"), ("node-c", "zone2"), ("node-d", "zone2")]

SCORE_CASES = [
    # (name, pod, existing, nodes, failed_nodes, flags, want)
    ("one constraint on node, no existing pods", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO), [],
     _h("node-a", "node-b"), [], {}, [100, 100]),
    ("one constraint on node, only one node is candidate", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO),
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo="")],
     _h("node-a"), _h("node-b"), {}, [100]),
    ("one constraint on node, all nodes have the same number of matching pods",
     Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo="")], _h("node-a", "node-b"), [], {}, [100, 100]),
    ("one constraint on node, all 4 nodes are candidates", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO),
     _P2103, _h("node-a", "node-b", "node-c", "node-d"), [], {}, [20, 60, 100, 0]),
    ("one constraint on node, null selector", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, None),
     _P2103, _h("node-a", "node-b", "node-c", "node-d"), [], {}, [100, 100, 100, 100]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=2",
     Pod("p").label("foo", "").spread(2, HOSTNAME, SA, FOO), _P2103, _h("node-a", "node-b", "node-c", "node-d"), [],
     {}, [33, 66, 100, 16]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=3",
     Pod("p").label("foo", "").spread(3, HOSTNAME, SA, FOO), _P4321, _h("node-a", "node-b", "node-c", "node-d"), [],
     {}, [44, 66, 77, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO),
     _P4213, _h("node-a", "node-b", "node-x"), _h("node-y"), {}, [33, 83, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
     Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO), _P4213,
     [N("node-a", hostname="node-a"), N("node-b", n="node-b"), N("node-x", hostname="node-x")], _h("node-y"), {},
     [16, 0, 100]),
    ("one constraint on zone, 3 out of 4 nodes are candidates", Pod("p").label("foo", "").spread(1, "zone", SA, FOO),
     _P4213, _zh(*_ABXY[:3]), _zh(_ABXY[3]), {}, [75, 75, 100]),
    ("two Constraints on zone and node, 2 out of 4 nodes are candidates",
     Pod("p").label("foo", "").spread(1, "zone", SA, FOO).spread(1, HOSTNAME, SA, FOO),
     [E("p-a1", "node-a", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
      E("p-x1", "node-x", foo=""), E("p-x2", "node-x", foo=""), E("p-y1", "node-y", foo=""),
      E("p-y2", "node-y", foo=""), E("p-y3", "node-y", foo=""), E("p-y4", "node-y", foo="")],
     _zh(_ABXY[0], _ABXY[2]), _zh(_ABXY[1], _ABXY[3]), {}, [100, 63]),
    ("two Constraints on zone and node, with different labelSelectors",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", SA, FOO).spread(1, HOSTNAME, SA, BAR),
     _DIFF_SEL_PODS, _zh(*_ABXY), [], {}, [60, 20, 100, 60]),
    ("two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", SA, FOO).spread(1, HOSTNAME, SA, BAR),
     [E("p-b1", "node-b", bar=""), E("p-x1", "node-x", foo=""), E("p-y1", "node-y", foo="", bar="")],
     _zh(*_ABXY), [], {}, [100, 60, 40, 0]),
    ("two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", SA, FOO).spread(1, HOSTNAME, SA, BAR),
     _DIFF_SEL_PODS, _zh(*_ABXY[:3]), _zh(_ABXY[3]), {}, [50, 25, 100]),
    ("existing pods in a different namespace do not count", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO),
     [E("p-a1", "node-a", ns="ns1", foo=""), E("p-a2", "node-a", foo=""), E("p-b1", "node-b", foo=""),
      E("p-b2", "node-b", foo="")], _h("node-a", "node-b"), [], {}, [100, 33]),
    ("terminating Pods should be excluded", Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO),
     [E("p-a", "node-a", terminating=True, foo=""), E("p-b", "node-b", foo="")], _h("node-a", "node-b"), [], {},
     [100, 0]),
    ("NodeAffinityPolicy honoed with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", SA, FOO), _PODS_211, _NODE_ABC_FOO, [],
     {"nip": True}, [0, 33, 100]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     Pod("p").label("foo", "").node_selector({"foo": ""}).spread(1, "node", SA, FOO, nap="Ignore"), _PODS_211,
     _NODE_ABC_FOO, [], {"nip": True}, [66, 100, 100]),
    ("NodeAffinityPolicy honoed with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "node", SA, FOO), _PODS_211, _NODE_ABC_FOO, [],
     {"nip": True}, [0, 33, 100]),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     Pod("p").label("foo", "").node_affinity_in("foo", [""]).spread(1, "node", SA, FOO, nap="Ignore"), _PODS_211,
     _NODE_ABC_FOO, [], {"nip": True}, [66, 100, 100]),
    ("NodeTaintsPolicy honored", Pod("p").label("foo", "").spread(1, "node", SA, FOO, ntp="Honor"), _PODS_211,
     [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", taints=True, node="node-c")], [],
     {"nip": True}, [0, 33, 100]),
    ("NodeTaintsPolicy ignored", Pod("p").label("foo", "").spread(1, "node", SA, FOO), _PODS_211,
     [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", taints=True, node="node-c")], [],
     {"nip": True}, [66, 100, 100]),
    ("matchLabelKeys ignored when feature gate disabled",
     Pod("p").label("foo", "").label("bar", "").label("baz", "").spread(1, "zone", SA, FOO, mlk=["baz"])
     .spread(1, HOSTNAME, SA, BAR, mlk=["baz"]),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo="", bar=""), E("p-y1", "node-c", foo=""),
      E("p-y2", "node-c", bar="")], _zh(*_MLK_NODES), [], {"mlk": False}, [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     Pod("p").label("foo", "").label("bar", "").spread(1, "zone", SA, {}, mlk=["foo"])
     .spread(1, HOSTNAME, SA, {}, mlk=["bar"]),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo="", bar=""), E("p-y1", "node-c", foo=""),
      E("p-y2", "node-c", bar="")], _zh(*_MLK_NODES), [], {"mlk": True}, [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     Pod("p").label("foo", "").label("bar", "").label("baz", "").spread(1, "zone", SA, FOO)
     .spread(1, HOSTNAME, SA, BAR, mlk=["baz"]),
     [E("p-a1", "node-a", foo=""), E("p-b1", "node-b", foo="", bar="", baz=""), E("p-c1", "node-c", foo=""),
      E("p-c2", "node-c", bar=""), E("p-d3", "node-c", bar="", baz="")], _zh(*_MLK_NODES), [], {"mlk": True},
     [60, 20, 60, 100]),
]


def run_score(pl, pod, nodes):
    state = CycleState()
    st = pl.pre_score(state, pod, nodes)
    assert st is None
    got = []
    for n in nodes:
        sc, st = pl.score(state, pod, n.name)
        assert st is None
        got.append(NodeScore(n.name, sc))
    assert pl.score_extensions().normalize_score(state, pod, got) is None
    return [s.score for s in got]


@pytest.mark.parametrize("name,pod,existing,nodes,failed,flags,want", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_pod_topology_spread_score(name, pod, existing, nodes, failed, flags, want):
    pl, _ = plugin(existing, nodes + failed, args={"defaultingType": "System"}, **flags)
    assert run_score(pl, pod.obj(), nodes) == want


class WithService(PodTopologySpread):
    """Stands in for the Service with selector ``foo: ""``."""

    def default_selector(self, pod):
        return LabelSelector((Requirement("foo", "In", ("",)),))


def test_score_system_defaulting_nodes_dont_have_zone_pods_match_service():
    """Mirrors "system defaulting, nodes don't have zone, pods match service": same scores as
    one hostname constraint with maxSkew 3 (the zone constraint contributes equally)."""
    nodes = _h("node-a", "node-b", "node-c", "node-d")
    pl, _ = plugin(_P4321, nodes, args={"defaultingType": "System"}, cls=WithService)
    assert run_score(pl, Pod("p").label("foo", "").obj(), nodes) == [44, 66, 77, 100]


def test_score_min_domains_has_no_effect_when_schedule_anyway():
    """Mirrors "minDomains has no effect when ScheduleAnyway" (artificial: the API rejects it,
    so the constraint is set on the parsed pod)."""
    nodes = _nodes_abc()
    pl, _ = plugin(_pods_22_1(), nodes)
    p = Pod("p").label("foo", "").obj()
    p.topology_spread_constraints = (V1TSC(2, "node", SA, LabelSelector(EXISTS_FOO), min_domains=10),)
    assert run_score(pl, p, nodes) == [75, 75, 100]


def test_raw_scores():
    """Score = round_half_away(sum cnt*ln(size+2) + maxSkew-1); 2/1/0/3 on 4 hostnames."""
    nodes = _h("node-a", "node-b", "node-c", "node-d")
    pl, _ = plugin(_P2103, nodes)
    p = Pod("p").label("foo", "").spread(1, HOSTNAME, SA, FOO).obj()
    state = CycleState()
    pl.pre_score(state, p, nodes)
    w = math.log(6)
    assert [pl.score(state, p, n.name)[0] for n in nodes] == [go_round(c * w) for c in (2, 1, 0, 3)] == [4, 2, 0, 5]
    assert go_round(2.5) == 3 and go_round(0.5) == 1 and go_round(1.49) == 1


# ---------------------------------------------------------------------------------------------
# Plugin surface

def test_events_to_register():
    """PodTopologySpread.EventsToRegister (v1.28.0): Pod/All and Node/Add|Delete|UpdateNodeLabel."""
    pl = podtopologyspread.new(None, None)
    evs = [(e.event.resource, int(e.event.action_type), e.queueing_hint_fn) for e in pl.events_to_register()]
    assert evs == [(GVK.Pod, int(ActionType.All), None),
                   (GVK.Node, int(ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel), None)]


def test_args():
    pl = podtopologyspread.new(None, None)
    assert pl.name == "PodTopologySpread" == podtopologyspread.NAME
    assert pl.system_defaulted is True
    assert [(c.max_skew, c.topology_key, c.when_unsatisfiable) for c in pl.default_constraints] == [
        (3, HOSTNAME, SA), (5, ZONE_LABEL, SA)]
    pl = podtopologyspread.new(DEFAULT_LIST_ARGS, None)
    assert pl.system_defaulted is False and len(pl.default_constraints) == 3
    pl = podtopologyspread.new({"defaultingType": "List"}, None)
    assert pl.default_constraints == ()
    bad = [
        ({"defaultingType": "Foo"}, "defaultingType: Unsupported value"),
        ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": DNS}]},
         'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
        ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "k", "whenUnsatisfiable": DNS}]},
         "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"),
        ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": DNS}]},
         "defaultConstraints[0].topologyKey: Required value: can not be empty"),
        ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "k"}]},
         "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": DNS, "labelSelector": {}}]},
         "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector"),
        ({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": DNS},
            {"maxSkew": 2, "topologyKey": "k", "whenUnsatisfiable": DNS}]},
         'defaultConstraints[1]: Duplicate value: "{k, DoNotSchedule}"'),
        ({"bogus": 1}, "bogus"),
    ]
    for args, msg in bad:
        with pytest.raises(ConfigError) as e:
            podtopologyspread.new(args, None)
        assert msg in str(e.value), (args, str(e.value))
        assert "pluginConfig[PodTopologySpread].args" in str(e.value)


def test_extensions_are_the_plugin():
    pl = podtopologyspread.new(None, None)
    assert pl.pre_filter_extensions() is pl
    assert pl.score_extensions() is pl


def test_empty_selector_counts_no_pod_but_matches_the_incoming_pod():
    """Upstream quirk kept (not an upstream test case): countPodsMatchSelector returns 0 for
    an empty selector (``selector.Empty()``), while Filter's self-match uses
    ``Selector.Matches`` (true for an empty selector)."""
    nodes = four_nodes()
    pl, h = plugin(STD_PODS, nodes)
    cs = CycleState()
    p = Pod("p").label("foo", "").spread(1, "zone", DNS, {}).obj()
    assert pl.pre_filter(cs, p)[1] is None
    s, _ = get_pre_filter_state(cs)
    assert s.tp_pair_to_match_num == {("zone", "zone1"): 0, ("zone", "zone2"): 0}
    assert s.constraints[0].selector_matches(p.labels)
    assert all(pl.filter(cs, p, h.snapshot().get(n.name)) is None for n in nodes)


@pytest.mark.parametrize("seed", range(40))
def test_the_critical_paths_of_one_key_are_the_updates_in_order(seed):
    """critical_paths_of_one_key (two argmins) gives what criticalPaths.update gives pair by
    pair, in the map's order: random counts with many ties, an empty topology value among them."""
    import random
    rng = random.Random(seed)
    for _ in range(50):
        values = rng.sample([f"v{i}" for i in range(40)] + [""], rng.randrange(3, 30))
        pairs = {("k", v): rng.randrange(0, 4) for v in values}
        want = CriticalPaths()
        for (_k, v), num in pairs.items():
            want.update(v, num)
        got = CriticalPaths()
        critical_paths_of_one_key(got, pairs)
        assert got.p == want.p, pairs
