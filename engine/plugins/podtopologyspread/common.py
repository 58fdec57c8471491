"""Shared helpers of PodTopologySpread.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/common.go`` (v1.28.0).

Selectors: a constraint's selector is ``None`` for upstream's ``labels.Nothing()`` (a nil
labelSelector: matches no pod) or an ``engine.labels.LabelSelector`` (no requirements is
``labels.Everything()``).  Note upstream's quirk, kept here: counting pods with an *empty*
selector yields 0 (``countPodsMatchSelector`` returns early on ``selector.Empty()``), while
the incoming pod still "matches" it for the self-match term of the skew.
"""
from __future__ import annotations

from ...labels import LabelSelector, Requirement, find_untolerated_taint

HONOR = "Honor"
IGNORE = "Ignore"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


class TopologySpreadConstraint:
    """topologySpreadConstraint: the internal, parsed form of a pod's
    v1.TopologySpreadConstraint (selector merged with matchLabelKeys, defaults applied)."""
    __slots__ = ("max_skew", "topology_key", "selector", "min_domains", "node_affinity_policy",
                 "node_taints_policy")

    def __init__(self, max_skew: int, topology_key: str, selector, min_domains: int = 1,
                 node_affinity_policy: str = HONOR, node_taints_policy: str = IGNORE):
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.node_affinity_policy = node_affinity_policy
        self.node_taints_policy = node_taints_policy

    def __visualize__(self) -> str:
        """``maxSkew=1 topologyKey=zone selector=app=web`` (+ minDomains and the node
        inclusion policies when not the defaults)."""
        sel = self.selector.__visualize__() if hasattr(self.selector, "__visualize__") else repr(self.selector)
        out = f"maxSkew={self.max_skew} topologyKey={self.topology_key} selector={sel}"
        if self.min_domains != 1:
            out += f" minDomains={self.min_domains}"
        if self.node_affinity_policy != HONOR:
            out += f" nodeAffinityPolicy={self.node_affinity_policy}"
        if self.node_taints_policy != IGNORE:
            out += f" nodeTaintsPolicy={self.node_taints_policy}"
        return out

    def selector_matches(self, labels) -> bool:
        """``c.Selector.Matches(labels)`` (Nothing matches nothing, Everything everything)."""
        sel = self.selector
        return sel is not None and sel.matches(labels)

    def match_node_inclusion_policies(self, pod, node, require) -> bool:
        """topologySpreadConstraint.matchNodeInclusionPolicies: with nodeAffinityPolicy Honor
        the node must match the pod's nodeSelector and required node affinity (``require``,
        a :class:`RequiredNodeAffinity`); with nodeTaintsPolicy Honor the pod must tolerate
        the node's NoSchedule and NoExecute taints."""
        if self.node_affinity_policy == HONOR and not require.trivial:
            if not require.match(node):
                return False
        if self.node_taints_policy == HONOR:
            if find_untolerated_taint(node.taints, pod.tolerations) is not None:
                return False
        return True

    def needs_inclusion_check(self, require) -> bool:
        """Whether :meth:`match_node_inclusion_policies` can ever be False for this pod."""
        return ((self.node_affinity_policy == HONOR and not require.trivial)
                or self.node_taints_policy == HONOR)

    def _key(self):
        return (self.max_skew, self.topology_key, self.selector, self.min_domains,
                self.node_affinity_policy, self.node_taints_policy)

    def __eq__(self, other):
        return isinstance(other, TopologySpreadConstraint) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"TopologySpreadConstraint(maxSkew={self.max_skew}, "
                f"topologyKey={self.topology_key!r}, selector={self.selector!r}, "
                f"minDomains={self.min_domains}, nodeAffinityPolicy={self.node_affinity_policy}, "
                f"nodeTaintsPolicy={self.node_taints_policy})")


class RequiredNodeAffinity:
    """nodeaffinity.GetRequiredNodeAffinity(pod): the pod's nodeSelector AND its required
    node affinity (absent parts match every node)."""
    __slots__ = ("node_selector", "affinity", "trivial")

    def __init__(self, pod):
        self.node_selector = tuple(pod.node_selector.items())
        self.affinity = pod.required_node_affinity
        # matches every node: nothing to check
        self.trivial = not self.node_selector and self.affinity is None

    def match(self, node) -> bool:
        labels = node.labels
        for k, v in self.node_selector:
            if labels.get(k) != v:
                return False
        if self.affinity is not None:
            return self.affinity.matches(node.name, labels)
        return True


def node_labels_match_spread_constraints(node_labels, constraints) -> bool:
    """nodeLabelsMatchSpreadConstraints: the node has ALL the constraints' topology keys."""
    for c in constraints:
        if c.topology_key not in node_labels:
            return False
    return True


def merge_label_set_with_selector(match_labels: dict, selector):
    """mergeLabelSetWithSelector: the matchLabelKeys labels ANDed with the selector; a
    Nothing selector (nil labelSelector) stays Nothing."""
    if selector is None:
        return None
    reqs = tuple(Requirement(k, "In", (v,)) for k, v in match_labels.items())
    return LabelSelector(reqs + tuple(selector.requirements))


def filter_topology_spread_constraints(self, constraints, pod_labels, action) -> list:
    """PodTopologySpread.filterTopologySpreadConstraints: the constraints with
    ``whenUnsatisfiable == action``, parsed; honours the MatchLabelKeys, MinDomains and
    NodeInclusionPolicy feature gates of the plugin (all on in v1.28)."""
    result = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = c.selector
        if self.enable_match_label_keys and c.match_label_keys:
            match_labels = {}
            for key in c.match_label_keys:
                if key in pod_labels:
                    match_labels[key] = pod_labels[key]
            if match_labels:
                selector = merge_label_set_with_selector(match_labels, selector)
        min_domains = 1  # If MinDomains is nil, we treat MinDomains as 1.
        if self.enable_min_domains and c.min_domains is not None:
            min_domains = c.min_domains
        nap, ntp = HONOR, IGNORE
        if self.enable_node_inclusion_policy:
            nap = c.node_affinity_policy or HONOR
            ntp = c.node_taints_policy or IGNORE
        result.append(TopologySpreadConstraint(c.max_skew, c.topology_key, selector,
                                               min_domains, nap, ntp))
    return result


def build_default_constraints(self, pod, action) -> list:
    """PodTopologySpread.buildDefaultConstraints: the default constraints for ``action``,
    all with the pod's default selector (``self.default_selector(pod)``).  Empty when that
    selector is empty: see ``PodTopologySpread.default_selector``."""
    constraints = filter_topology_spread_constraints(self, self.default_constraints,
                                                     pod.labels, action)
    if not constraints:
        return []
    selector = self.default_selector(pod)
    if selector is None or not selector.requirements:
        return []
    for c in constraints:
        c.selector = selector
    return constraints


def compile_selector(selector):
    """A fast ``labels -> bool`` predicate equivalent to ``selector.matches`` for the common
    one-requirement shapes (In / Exists); other selectors use ``selector.matches``."""
    reqs = selector.requirements
    if len(reqs) == 1:
        r = reqs[0]
        k = r.key
        if r.operator == "In":
            vals = r.values
            if len(vals) == 1:
                v = vals[0]
                return lambda labels: labels.get(k) == v
            return lambda labels: k in labels and labels[k] in vals
        if r.operator == "Exists":
            return lambda labels: k in labels
    return selector.matches


def count_pods_match_selector(pods, selector, ns: str, matches=None) -> int:
    """countPodsMatchSelector: pods of namespace ``ns``, not terminating, whose labels match
    ``selector``; 0 for an empty selector (upstream's ``selector.Empty()`` early return).
    ``matches`` may pass the selector precompiled by :func:`compile_selector`."""
    if selector is None:
        return 0  # labels.Nothing() matches no pod
    if not selector.requirements:
        return 0
    if matches is None:
        matches = selector.matches
    count = 0
    for p in pods:
        # Bypass terminating Pod (see #87621).
        if p.deletion_timestamp is None and p.namespace == ns and matches(p.labels):
            count += 1
    return count
