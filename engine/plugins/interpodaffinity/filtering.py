"""InterPodAffinity PreFilter / Filter and the PreFilter extensions (AddPod, RemovePod).

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` (v1.28.0).

The functions taking ``self`` are methods of :class:`~.plugin.InterPodAffinity` (they are
assigned as class attributes there), as ``func (pl *InterPodAffinity) ...`` are upstream.

A topology pair is the tuple ``(topology_key, topology_value)``; a
``topologyToMatchedTermCount`` is a plain ``dict`` from pairs to counts.
"""
from __future__ import annotations

from ...framework.interface import Code, Status
from ...objects import namespace_labels

# preFilterStateKey = "PreFilter" + Name
PRE_FILTER_STATE_KEY = "PreFilter" + "InterPodAffinity"

# Reasons, exactly as upstream.
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"


class MergedAffinityTerm:
    """An incoming pod's AffinityTerm after ``mergeAffinityTermNamespacesIfNotEmpty``.

    Upstream unrolls a non-empty namespaceSelector into ``Namespaces`` (every namespace the
    lister returns for it) and sets the selector to ``labels.Nothing()``; an empty selector
    (``{}``) is kept and matches every namespace.  Namespaces are not objects in this engine:
    a namespace exists as soon as a pod lives in it, and carries only its
    ``kubernetes.io/metadata.name`` label (``objects.namespace_labels``).  Testing the
    selector against the matched pod's namespace labels is therefore the same as testing
    membership in the unrolled set; the answer is cached per namespace.
    ``matches(pod)`` is ``AffinityTerm.Matches(pod, nil)`` on the merged term.
    """
    __slots__ = ("topology_key", "selector", "namespaces", "namespace_selector", "_ns_ok")

    def __init__(self, term):
        self.topology_key = term.topology_key
        self.selector = term.selector
        self.namespaces = term.namespaces
        self.namespace_selector = term.namespace_selector
        self._ns_ok: dict = {}

    def __visualize__(self) -> str:
        """``topologyKey=zone selector=app=web namespaces=default``."""
        def sel(s):
            return "(nothing)" if s is None else (s.__visualize__() if hasattr(s, "__visualize__") else repr(s))
        out = f"topologyKey={self.topology_key} selector={sel(self.selector)}"
        if self.namespaces:
            out += f" namespaces={','.join(sorted(self.namespaces))}"
        if self.namespace_selector is not None:
            out += f" namespaceSelector={sel(self.namespace_selector)}"
        return out

    def matches(self, pod) -> bool:
        ns = pod.namespace
        ok = self._ns_ok.get(ns)
        if ok is None:
            ok = ns in self.namespaces or (
                self.namespace_selector is not None
                and self.namespace_selector.matches(namespace_labels(ns)))
            self._ns_ok[ns] = ok
        if not ok:
            return False
        sel = self.selector
        return sel is not None and sel.matches(pod.labels)

    def __repr__(self):
        return f"MergedAffinityTerm({self.topology_key!r}, ns={sorted(self.namespaces)!r})"


# ---------------------------------------------------------------------------------------------
# topologyToMatchedTermCount helpers

def _update(m: dict, node, tk: str, value: int) -> None:
    """topologyToMatchedTermCount.update: add ``value`` to the node's pair for ``tk`` (if the
    node has the label); an entry brought down to zero is deleted."""
    labels = node.labels
    if tk in labels:
        pair = (tk, labels[tk])
        n = m.get(pair, 0) + value
        if n == 0:
            m.pop(pair, None)
        else:
            m[pair] = n


def update_with_affinity_terms(m: dict, terms, pod, node, value: int) -> None:
    """topologyToMatchedTermCount.updateWithAffinityTerms: one update per term, only when
    ``pod`` matches ALL the terms."""
    if pod_matches_all_affinity_terms(terms, pod):
        for t in terms:
            _update(m, node, t.topology_key, value)


def update_with_anti_affinity_terms(m: dict, terms, pod, ns_labels, node, value: int) -> None:
    """topologyToMatchedTermCount.updateWithAntiAffinityTerms: one update per term that
    matches ``pod``.  ``terms`` are either an existing pod's AffinityTerms (matched with the
    incoming pod's namespace labels) or the incoming pod's merged terms (``ns_labels`` None)."""
    for t in terms:
        if (t.matches(pod) if ns_labels is None else t.matches(pod, ns_labels)):
            _update(m, node, t.topology_key, value)


def pod_matches_all_affinity_terms(terms, pod) -> bool:
    """podMatchesAllAffinityTerms: False for no terms."""
    if not terms:
        return False
    for t in terms:
        if not t.matches(pod):
            return False
    return True


def _append(m: dict, to_append: dict) -> None:
    """topologyToMatchedTermCount.append."""
    for pair, n in to_append.items():
        m[pair] = m.get(pair, 0) + n


# ---------------------------------------------------------------------------------------------

class PreFilterState:
    """preFilterState, computed at PreFilter and used at Filter.

    ``existing_anti_affinity_counts``: pairs -> number of existing pods' required
    anti-affinity terms matching the incoming pod.  ``affinity_counts`` /
    ``anti_affinity_counts``: pairs -> number of existing pods matching the incoming pod's
    required (anti-)affinity terms.  ``pod`` plays ``podInfo.Pod``; ``required_affinity_terms``
    / ``required_anti_affinity_terms`` are its merged terms; ``namespace_labels`` is a snapshot
    of the incoming pod's namespace labels.  ``pod_matches_own_affinity`` caches
    ``podMatchesAllAffinityTerms(RequiredAffinityTerms, pod)`` (it cannot change).
    """
    __slots__ = ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts",
                 "pod", "required_affinity_terms", "required_anti_affinity_terms",
                 "namespace_labels", "pod_matches_own_affinity")

    def __init__(self):
        self.existing_anti_affinity_counts: dict = {}
        self.affinity_counts: dict = {}
        self.anti_affinity_counts: dict = {}
        self.pod = None
        self.required_affinity_terms: tuple = ()
        self.required_anti_affinity_terms: tuple = ()
        self.namespace_labels: dict = {}
        self.pod_matches_own_affinity = False

    def __visualize__(self) -> dict:
        """The CycleState inspector's rendering: the three counts by topology pair
        (``zone=a: 2``) and the pod's required terms."""
        return {"existingAntiAffinityCounts": dict(self.existing_anti_affinity_counts),
                "affinityCounts": dict(self.affinity_counts),
                "antiAffinityCounts": dict(self.anti_affinity_counts),
                "requiredAffinityTerms": [t.__visualize__() for t in self.required_affinity_terms],
                "requiredAntiAffinityTerms": [t.__visualize__() for t in self.required_anti_affinity_terms],
                "podMatchesOwnAffinity": self.pod_matches_own_affinity}

    def clone(self) -> "PreFilterState":
        """preFilterState.Clone: the three maps are copied; the pod info is shared."""
        c = PreFilterState.__new__(PreFilterState)
        c.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        c.affinity_counts = dict(self.affinity_counts)
        c.anti_affinity_counts = dict(self.anti_affinity_counts)
        c.pod = self.pod
        c.required_affinity_terms = self.required_affinity_terms
        c.required_anti_affinity_terms = self.required_anti_affinity_terms
        c.namespace_labels = self.namespace_labels
        c.pod_matches_own_affinity = self.pod_matches_own_affinity
        return c

    def update_with_pod(self, p, node, multiplier: int) -> None:
        """preFilterState.updateWithPod: account for ``p`` (an existing pod, playing PodInfo)
        being added (+1) to or removed (-1) from ``node``."""
        update_with_anti_affinity_terms(self.existing_anti_affinity_counts,
                                        p.required_anti_affinity_terms, self.pod,
                                        self.namespace_labels, node, multiplier)
        update_with_affinity_terms(self.affinity_counts, self.required_affinity_terms, p, node,
                                   multiplier)
        # The incoming pod's terms have the namespaceSelector merged into the namespaces.
        update_with_anti_affinity_terms(self.anti_affinity_counts,
                                        self.required_anti_affinity_terms, p, None, node,
                                        multiplier)


def get_existing_anti_affinity_counts(self, pod, ns_labels, nodes) -> dict:
    """InterPodAffinity.getExistingAntiAffinityCounts: over the nodes hosting pods with
    required anti-affinity, count the existing pods' anti-affinity terms that match ``pod``."""
    result: dict = {}
    for node_info in nodes:
        node = node_info.node
        for existing in node_info.pods_with_required_anti_affinity:
            update_with_anti_affinity_terms(result, existing.required_anti_affinity_terms, pod,
                                            ns_labels, node, 1)
    return result


def get_incoming_affinity_anti_affinity_counts(self, affinity_terms, anti_affinity_terms,
                                               all_nodes):
    """InterPodAffinity.getIncomingAffinityAntiAffinityCounts: over every pod of every node,
    count the pods matching the incoming pod's merged required affinity terms (all of them)
    and anti-affinity terms (each).  Returns ``(affinity_counts, anti_affinity_counts)``."""
    affinity_counts: dict = {}
    anti_affinity_counts: dict = {}
    if not affinity_terms and not anti_affinity_terms:
        return affinity_counts, anti_affinity_counts
    for node_info in all_nodes:
        node = node_info.node
        labels = node.labels
        for existing in node_info.pods:
            if affinity_terms and pod_matches_all_affinity_terms(affinity_terms, existing):
                for t in affinity_terms:
                    tk = t.topology_key
                    if tk in labels:
                        pair = (tk, labels[tk])
                        affinity_counts[pair] = affinity_counts.get(pair, 0) + 1
            for t in anti_affinity_terms:
                if t.matches(existing):
                    tk = t.topology_key
                    if tk in labels:
                        pair = (tk, labels[tk])
                        anti_affinity_counts[pair] = anti_affinity_counts.get(pair, 0) + 1
    return affinity_counts, anti_affinity_counts


def pre_filter(self, cycle_state, pod):
    """InterPodAffinity.PreFilter.

    Returns Skip when no existing pod's anti-affinity matches the pod and the pod has no
    required affinity or anti-affinity terms (Filter then never runs)."""
    snapshot = self.handle.snapshot()
    all_nodes = snapshot.node_info_list
    nodes_with_required_anti_affinity_pods = snapshot.have_pods_with_required_anti_affinity_list()

    s = PreFilterState()
    s.pod = pod
    s.required_affinity_terms = tuple(MergedAffinityTerm(t) for t in pod.required_affinity_terms)
    s.required_anti_affinity_terms = tuple(MergedAffinityTerm(t)
                                           for t in pod.required_anti_affinity_terms)
    s.namespace_labels = namespace_labels(pod.namespace)

    s.existing_anti_affinity_counts = get_existing_anti_affinity_counts(
        self, pod, s.namespace_labels, nodes_with_required_anti_affinity_pods)
    s.affinity_counts, s.anti_affinity_counts = get_incoming_affinity_anti_affinity_counts(
        self, s.required_affinity_terms, s.required_anti_affinity_terms, all_nodes)

    if (not s.existing_anti_affinity_counts and not s.required_affinity_terms
            and not s.required_anti_affinity_terms):
        return None, Status(Code.Skip)

    s.pod_matches_own_affinity = pod_matches_all_affinity_terms(s.required_affinity_terms, pod)
    cycle_state.write(PRE_FILTER_STATE_KEY, s)
    return None, None


def pre_filter_extensions(self):
    """InterPodAffinity.PreFilterExtensions: the plugin itself."""
    return self


def add_pod(self, cycle_state, pod_to_schedule, pod_info_to_add, node_info):
    """InterPodAffinity.AddPod: update the PreFilter state as if ``pod_info_to_add`` ran on
    ``node_info``'s node."""
    s, status = get_pre_filter_state(cycle_state)
    if status is not None:
        return status
    s.update_with_pod(pod_info_to_add, node_info.node, 1)
    return None


def remove_pod(self, cycle_state, pod_to_schedule, pod_info_to_remove, node_info):
    """InterPodAffinity.RemovePod: the inverse of AddPod."""
    s, status = get_pre_filter_state(cycle_state)
    if status is not None:
        return status
    s.update_with_pod(pod_info_to_remove, node_info.node, -1)
    return None


def get_pre_filter_state(cycle_state):
    """getPreFilterState: ``(state, None)`` or ``(None, Error status)``."""
    try:
        s = cycle_state.read(PRE_FILTER_STATE_KEY)
    except KeyError:
        return None, Status(Code.Error,
                            [f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'])
    if not isinstance(s, PreFilterState):
        return None, Status(Code.Error, [f"{s!r}  convert to interpodaffinity.state error"])
    return s, None


def satisfy_existing_pods_anti_affinity(s: PreFilterState, node_info) -> bool:
    """satisfyExistingPodsAntiAffinity: no (label key, value) pair of the node is counted in
    existingAntiAffinityCounts."""
    counts = s.existing_anti_affinity_counts
    if counts:
        for pair in node_info.node.labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


def satisfy_pod_anti_affinity(s: PreFilterState, node_info) -> bool:
    """satisfyPodAntiAffinity: for each of the pod's anti-affinity terms whose key the node
    has, no matching pod in that topology."""
    counts = s.anti_affinity_counts
    if counts:
        labels = node_info.node.labels
        for term in s.required_anti_affinity_terms:
            tk = term.topology_key
            if tk in labels and counts.get((tk, labels[tk]), 0) > 0:
                return False
    return True


def satisfy_pod_affinity(s: PreFilterState, node_info) -> bool:
    """satisfyPodAffinity: the node has every term's topology key and each of its topologies
    holds a matching pod; or, when no pod anywhere matches (affinityCounts empty), the pod
    matches its own terms (the first pod of a group that wants to be together)."""
    pods_exist = True
    labels = node_info.node.labels
    counts = s.affinity_counts
    for term in s.required_affinity_terms:
        tk = term.topology_key
        if tk in labels:
            if counts.get((tk, labels[tk]), 0) <= 0:
                pods_exist = False
        else:
            # All topology labels must exist on the node.
            return False
    if not pods_exist:
        if not counts and s.pod_matches_own_affinity:
            return True
        return False
    return True


def filter(self, cycle_state, pod, node_info):
    """InterPodAffinity.Filter: affinity (UnschedulableAndUnresolvable), then the pod's
    anti-affinity (Unschedulable), then existing pods' anti-affinity (Unschedulable)."""
    try:
        s = cycle_state.read(PRE_FILTER_STATE_KEY)
    except KeyError:
        s, status = get_pre_filter_state(cycle_state)
        return status
    if not satisfy_pod_affinity(s, node_info):
        return Status(Code.UnschedulableAndUnresolvable, [ERR_REASON_AFFINITY_RULES_NOT_MATCH])
    if not satisfy_pod_anti_affinity(s, node_info):
        return Status(Code.Unschedulable, [ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH])
    if not satisfy_existing_pods_anti_affinity(s, node_info):
        return Status(Code.Unschedulable, [ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH])
    return None
