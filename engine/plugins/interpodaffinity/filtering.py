"""InterPodAffinity PreFilter / Filter and the PreFilter extensions (AddPod, RemovePod).

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`` (v1.28.0).

The functions taking ``self`` are methods of :class:`~.plugin.InterPodAffinity` (they are
assigned as class attributes there), as ``func (pl *InterPodAffinity) ...`` are upstream.

A topology pair is the tuple ``(topology_key, topology_value)``; a
``topologyToMatchedTermCount`` is a plain ``dict`` from pairs to counts.
"""
from __future__ import annotations

import numpy as np

from ...framework.interface import Code, Status
from ...nodetable import Rejections

# Whether PreFilter, Filter's screen, PreScore and Score may use the snapshot's node table
# (engine.nodetable: label columns and pods grouped by signature) instead of visiting every
# pod of every node. The results are the same; tests and benchmarks set it to False to
# compare with the per-pod path.
USE_TABLE = True

# preFilterStateKey = "PreFilter" + Name
PRE_FILTER_STATE_KEY = "PreFilter" + "InterPodAffinity"

# Reasons, exactly as upstream.
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"


class MergedAffinityTerm:
    """An incoming pod's AffinityTerm after ``mergeAffinityTermNamespacesIfNotEmpty``.

    Upstream unrolls a non-empty namespaceSelector into ``Namespaces`` (every namespace
    ``nsLister.List(selector)`` returns, at PreFilter and PreScore) and sets the selector to
    ``labels.Nothing()``; an empty selector (``{}``) is kept and matches every namespace.
    Implicit namespaces (engine.objects.NamespaceLister) cannot be listed, so membership in
    the unrolled set is tested per matched pod's namespace instead
    (``NamespaceLister.selects``: the namespace exists and its labels match), with the same
    answers; it is cached per namespace for the cycle (the term is made anew by each
    PreFilter and PreScore, after any namespace change).
    ``matches(pod)`` is ``AffinityTerm.Matches(pod, nil)`` on the merged term.
    """
    __slots__ = ("topology_key", "selector", "namespaces", "namespace_selector", "_ns_ok",
                 "_ns_lister")

    def __init__(self, term, ns_lister):
        self.topology_key = term.topology_key
        self.selector = term.selector
        self.namespaces = term.namespaces
        self.namespace_selector = term.namespace_selector
        self._ns_ok: dict = {}
        self._ns_lister = ns_lister

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
                and self._ns_lister.selects(self.namespace_selector, ns))
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

class _CountMap:
    """One of PreFilterState's three maps (``index`` in its ``_counts``). PreFilter on the node
    table leaves it None with the counts by label code (``by_code``), and the map is built
    from those on first read (pairs_from_sums): the Filter screen reads the counts by code,
    so a cycle without AddPod, RemovePod, a clone or a per-node Filter call never builds it."""
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __get__(self, s, owner=None):
        if s is None:
            return self
        m = s._counts[self.index]
        if m is None:
            table, by_code = s.by_code
            m = s._counts[self.index] = pairs_from_sums(table, by_code[self.index])
        return m

    def __set__(self, s, value: dict) -> None:
        s._counts[self.index] = value


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
    __slots__ = ("_counts", "pod", "required_affinity_terms", "required_anti_affinity_terms",
                 "namespace_labels", "pod_matches_own_affinity", "by_code")

    existing_anti_affinity_counts = _CountMap(0)
    affinity_counts = _CountMap(1)
    anti_affinity_counts = _CountMap(2)

    def __init__(self):
        self._counts = [{}, {}, {}]
        self.pod = None
        self.required_affinity_terms: tuple = ()
        self.required_anti_affinity_terms: tuple = ()
        self.namespace_labels: dict = {}
        self.pod_matches_own_affinity = False
        # the three maps as count arrays by label code, {key: array} each, for Filter's
        # screen (filter_suspects); set by counts_on_table, dropped by any update (after the
        # maps are built from it) and not cloned, so it always holds what the maps hold
        self.by_code = None

    def has_counts(self, index: int) -> bool:
        """Whether the map ``index`` (0: existing anti-affinity, 1: affinity, 2: anti-affinity)
        has an entry, without building it."""
        m = self._counts[index]
        if m is not None:
            return bool(m)
        return any(sums.any() for sums in self.by_code[1][index].values())

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
        c._counts = [dict(self.existing_anti_affinity_counts), dict(self.affinity_counts),
                     dict(self.anti_affinity_counts)]
        c.pod = self.pod
        c.required_affinity_terms = self.required_affinity_terms
        c.required_anti_affinity_terms = self.required_anti_affinity_terms
        c.namespace_labels = self.namespace_labels
        c.pod_matches_own_affinity = self.pod_matches_own_affinity
        c.by_code = None
        return c

    def update_with_pod(self, p, node, multiplier: int) -> None:
        """preFilterState.updateWithPod: account for ``p`` (an existing pod, playing PodInfo)
        being added (+1) to or removed (-1) from ``node``."""
        existing, affinity, anti = (self.existing_anti_affinity_counts, self.affinity_counts,
                                    self.anti_affinity_counts)
        self.by_code = None
        update_with_anti_affinity_terms(existing, p.required_anti_affinity_terms, self.pod,
                                        self.namespace_labels, node, multiplier)
        update_with_affinity_terms(affinity, self.required_affinity_terms, p, node, multiplier)
        # The incoming pod's terms have the namespaceSelector merged into the namespaces.
        update_with_anti_affinity_terms(anti, self.required_anti_affinity_terms, p, None, node,
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

    s = PreFilterState()
    s.pod = pod
    ns_lister = self.ns_lister
    s.required_affinity_terms = tuple(MergedAffinityTerm(t, ns_lister)
                                      for t in pod.required_affinity_terms)
    s.required_anti_affinity_terms = tuple(MergedAffinityTerm(t, ns_lister)
                                           for t in pod.required_anti_affinity_terms)
    s.namespace_labels = ns_lister.labels_snapshot(pod.namespace)   # GetNamespaceLabelsSnapshot

    groups = table_and_groups(snapshot, cycle_state)
    if groups is not None:
        counts_on_table(s, pod, *groups)
    else:
        all_nodes = snapshot.node_info_list
        nodes_with_required_anti_affinity_pods = snapshot.have_pods_with_required_anti_affinity_list()
        s.existing_anti_affinity_counts = get_existing_anti_affinity_counts(
            self, pod, s.namespace_labels, nodes_with_required_anti_affinity_pods)
        s.affinity_counts, s.anti_affinity_counts = get_incoming_affinity_anti_affinity_counts(
            self, s.required_affinity_terms, s.required_anti_affinity_terms, all_nodes)

    if (not s.has_counts(0) and not s.required_affinity_terms
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


# ---------------------------------------------------------------------------------------------
# The same counts and Filter over the node table (not upstream's code; upstream's results)

def table_and_groups(snapshot, cycle_state=None):
    """``(table, groups)``: the snapshot's node table and its pods grouped by signature
    (engine.nodetable.PodGroups), or None for the per-pod path: USE_TABLE off, no table, too
    many groups, or a cycle whose CycleState is recorded (the inspector shows the count maps
    in the order the per-pod loop fills them; the maps hold the same pairs either way).
    PodTopologySpread asks without a cycle state."""
    if not USE_TABLE or getattr(cycle_state, "recorder", None) is not None:
        return None
    table = snapshot.node_table() if hasattr(snapshot, "node_table") else None
    if table is None or table.node_infos is not snapshot.node_info_list:
        return None
    groups = table.pod_groups()
    if groups is None:
        return None
    return table, groups


def _add(acc: dict, key: str, col) -> None:
    a = acc.get(key)
    acc[key] = col.copy() if a is None else a + col


def sums_by_code(table, per_key: dict) -> dict:
    """Per-key count columns (pods counted on node i) summed over the nodes with each value of
    the key: ``{key: sums by label code}``, for the keys some node has."""
    out: dict = {}
    for key, col in per_key.items():
        codes, values, _index = table.labels(key)
        has = codes >= 0
        if has.any():
            out[key] = np.bincount(codes[has], weights=col[has], minlength=len(values)).astype(np.int64)
    return out


def pairs_from_sums(table, by_code: dict) -> dict:
    """``{(key, value): n}`` from ``sums_by_code``: the non-zero ones (upstream's maps only
    ever get +1 here), by key, then by label code."""
    out: dict = {}
    for key, sums in by_code.items():
        nz = np.flatnonzero(sums)
        pairs = table.label_pairs(key)
        out.update(zip(map(pairs.__getitem__, nz.tolist()), sums[nz].tolist()))
    return out


def counts_on_table(s: PreFilterState, pod, table, groups) -> None:
    """getExistingAntiAffinityCounts and getIncomingAffinityAntiAffinityCounts over pod
    groups: each term is matched once per group (pods with the same namespace, labels and
    terms match alike), and the group's count column is added to the term's topology key;
    the columns are then summed per label value. Same maps as the per-pod loops, built when
    first read (PreFilterState's ``_CountMap``)."""
    ns_labels = s.namespace_labels
    aff_terms = s.required_affinity_terms
    anti_terms = s.required_anti_affinity_terms
    existing: dict = {}
    aff: dict = {}
    anti: dict = {}
    for sig, rep in groups.rep.items():
        col = groups.cols[sig]
        for t in sig[3]:                                # existing pod's required anti-affinity
            if t.matches(pod, ns_labels):
                _add(existing, t.topology_key, col)
        if aff_terms and pod_matches_all_affinity_terms(aff_terms, rep):
            for t in aff_terms:
                _add(aff, t.topology_key, col)
        for t in anti_terms:
            if t.matches(rep):
                _add(anti, t.topology_key, col)
    s.by_code = (table, (sums_by_code(table, existing), sums_by_code(table, aff), sums_by_code(table, anti)))
    s._counts = [None, None, None]


def _count_column(table, counts: dict, key: str, by_code=None):
    """``counts[(key, value of node i)]`` for every node (0 without the label), and the
    mask of the nodes that have the label. ``by_code``: the same counts by label code, per
    key (PreFilterState.by_code), when current."""
    codes, values, index = table.labels(key)
    if by_code is not None:
        sums = by_code.get(key)
        lookup = np.zeros(len(values) + 1, dtype=np.int64)   # code -1 reads the trailing 0
        if sums is not None:
            lookup[:len(sums)] = sums
        return lookup[codes], codes >= 0
    lookup = np.zeros(len(values) + 1, dtype=np.int64)   # code -1 reads the trailing 0
    for (k, v), m in counts.items():
        if k == key:
            code = index.get(v)
            if code is not None:
                lookup[code] = m
    return lookup[codes], codes >= 0


# Filter's statuses, by the codes of filter_suspects' Rejections
FILTER_STATUSES = ((Code.UnschedulableAndUnresolvable, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,)),
                   (Code.Unschedulable, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,)),
                   (Code.Unschedulable, (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)))


def filter_suspects(self, state, pod, table):
    """InterPodAffinity.Filter on every node (Framework.filter_suspects): satisfyPodAffinity,
    satisfyPodAntiAffinity and satisfyExistingPodsAntiAffinity on label columns and the
    PreFilter state's counts, as an engine.nodetable.Rejections whose codes are the first
    of the three a node fails (``FILTER_STATUSES``), None when none fails. False (cannot
    screen) without that state or the switch."""
    if not USE_TABLE:
        return False
    s = state.get(PRE_FILTER_STATE_KEY) if hasattr(state, "get") else None
    if not isinstance(s, PreFilterState):
        return False
    n = len(table.node_infos)
    codes = np.zeros(n, dtype=np.int8)
    bc = s.by_code[1] if s.by_code is not None and s.by_code[0] is table else None
    ex_bc, aff_bc, anti_bc = bc if bc is not None else (None, None, None)
    # the checks in reverse order, each code overwriting the later checks' codes; the maps
    # are read only when the counts by code are not current
    if s.has_counts(0):
        if ex_bc is None:
            counts = s.existing_anti_affinity_counts
            keys = {k for (k, _v), m in counts.items() if m > 0}
        else:
            counts, keys = None, ex_bc.keys()
        for key in keys:
            c, has = _count_column(table, counts, key, ex_bc)
            codes[has & (c > 0)] = 3
    if s.has_counts(2):
        counts = s.anti_affinity_counts if anti_bc is None else None
        for term in s.required_anti_affinity_terms:
            c, has = _count_column(table, counts, term.topology_key, anti_bc)
            codes[has & (c > 0)] = 2
    if s.required_affinity_terms:
        counts = s.affinity_counts if aff_bc is None else None
        fail = np.zeros(n, dtype=bool)
        exist = np.ones(n, dtype=bool)
        for term in s.required_affinity_terms:
            c, has = _count_column(table, counts, term.topology_key, aff_bc)
            fail |= ~has
            exist &= c > 0
        if not (not s.has_counts(1) and s.pod_matches_own_affinity):
            fail |= ~exist
        codes[fail] = 1
    return Rejections(codes, FILTER_STATUSES) if codes.any() else None
