"""InterPodAffinity PreScore / Score / NormalizeScore.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go`` (v1.28.0).

The functions taking ``self`` are methods of :class:`~.plugin.InterPodAffinity`.

Scoring: for every topology pair ``(key, value)`` a weight sum is built from the existing pods
(see :func:`process_existing_pod`); a node's raw score is the sum of the sums of the pairs
its labels hold; NormalizeScore maps ``[min, max]`` linearly onto ``[0, 100]``.
"""
from __future__ import annotations

from operator import itemgetter

from ...framework.interface import MAX_NODE_SCORE, Code, ScorePlugin, Status
import numpy as np

from .filtering import MergedAffinityTerm, table_and_groups

# preScoreStateKey = "PreScore" + Name
PRE_SCORE_STATE_KEY = "PreScore" + "InterPodAffinity"


class PreScoreState:
    """preScoreState: ``topology_score`` is upstream's scoreMap
    (topology key -> topology value -> weight sum); ``preferred_affinity_terms`` /
    ``preferred_anti_affinity_terms`` are the incoming pod's merged weighted terms as
    ``(MergedAffinityTerm, weight)``; ``namespace_labels`` a snapshot of its namespace labels.
    ``snapshot`` is the cycle's snapshot, used by Score to find the node."""
    __slots__ = ("topology_score", "pod", "preferred_affinity_terms",
                 "preferred_anti_affinity_terms", "namespace_labels", "snapshot", "score_columns")

    def __init__(self):
        self.topology_score: dict = {}
        self.pod = None
        self.preferred_affinity_terms: tuple = ()
        self.preferred_anti_affinity_terms: tuple = ()
        self.namespace_labels: dict = {}
        self.snapshot = None
        # not upstream's: (node table, {key: weight sum by the key's label code}) when
        # PreScore ran on the table (score_map_on_table), what score_nodes reads
        self.score_columns = None

    def clone(self):
        """preScoreState.Clone: not copied (it never changes after PreScore)."""
        return self

    def __visualize__(self) -> dict:
        """The CycleState inspector's rendering: the score map (``zone: a=3, b=-1``) and the
        pod's weighted preferred terms (the snapshot left out)."""
        def terms(ts):
            return [f"weight={w} {t.__visualize__()}" for t, w in ts]
        return {"topologyScore": [f"{k}: " + ", ".join(f"{v}={n}" for v, n in m.items())
                                  for k, m in self.topology_score.items()],
                "preferredAffinityTerms": terms(self.preferred_affinity_terms),
                "preferredAntiAffinityTerms": terms(self.preferred_anti_affinity_terms)}


def _process_term(m: dict, topology_key: str, matched: bool, weight: int, node_labels,
                  multiplier: int) -> None:
    """scoreMap.processTerm once the term-matches-pod test is done."""
    if matched and topology_key in node_labels:
        scores = m.get(topology_key)
        if scores is None:
            scores = m[topology_key] = {}
        v = node_labels[topology_key]
        scores[v] = scores.get(v, 0) + weight * multiplier


def process_existing_pod(self, s: PreScoreState, existing, existing_node_info, incoming,
                         topo_score: dict) -> None:
    """InterPodAffinity.processExistingPod: add to ``topo_score``, at the topologies of the
    existing pod's node,

    * + weight of each incoming preferred affinity term the existing pod matches,
    * - weight of each incoming preferred anti-affinity term it matches,
    * + hardPodAffinityWeight for each of the existing pod's required affinity terms the
      incoming pod matches (when the weight is > 0),
    * + weight of each of its preferred affinity terms the incoming pod matches,
    * - weight of each of its preferred anti-affinity terms the incoming pod matches.
    """
    node_labels = existing_node_info.node.labels
    if not node_labels:
        return
    for term, weight in s.preferred_affinity_terms:
        _process_term(topo_score, term.topology_key, term.matches(existing), weight,
                      node_labels, 1)
    for term, weight in s.preferred_anti_affinity_terms:
        _process_term(topo_score, term.topology_key, term.matches(existing), weight,
                      node_labels, -1)
    ns_labels = s.namespace_labels
    hard = self.hard_pod_affinity_weight
    if hard > 0:
        for t in existing.required_affinity_terms:
            _process_term(topo_score, t.topology_key, t.matches(incoming, ns_labels), hard,
                          node_labels, 1)
    for wt in existing.preferred_affinity_terms:
        t = wt.term
        _process_term(topo_score, t.topology_key, t.matches(incoming, ns_labels), wt.weight,
                      node_labels, 1)
    for wt in existing.preferred_anti_affinity_terms:
        t = wt.term
        _process_term(topo_score, t.topology_key, t.matches(incoming, ns_labels), wt.weight,
                      node_labels, -1)


def pre_score(self, cycle_state, pod, nodes):
    """InterPodAffinity.PreScore.

    Skip when there are no nodes; when ignorePreferredTermsOfExistingPods is set and the pod
    has no preferred (anti-)affinity; and when no existing pod contributed to any topology.
    Unless the pod has preferred terms, only pods with affinity on nodes hosting such pods
    are visited (``HavePodsWithAffinityList``)."""
    if not nodes:
        return Status(Code.Skip)
    has_constraints = bool(pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms)
    if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
        return Status(Code.Skip)

    snapshot = self.handle.snapshot()

    s = PreScoreState()
    s.pod = pod
    ns_lister = self.ns_lister
    s.preferred_affinity_terms = tuple((MergedAffinityTerm(wt.term, ns_lister), wt.weight)
                                       for wt in pod.preferred_affinity_terms)
    s.preferred_anti_affinity_terms = tuple((MergedAffinityTerm(wt.term, ns_lister), wt.weight)
                                            for wt in pod.preferred_anti_affinity_terms)
    s.namespace_labels = ns_lister.labels_snapshot(pod.namespace)   # GetNamespaceLabelsSnapshot
    s.snapshot = snapshot

    topo_score = s.topology_score
    groups = table_and_groups(snapshot, cycle_state)
    if groups is not None:
        score_map_on_table(self, s, pod, topo_score, *groups)
        all_nodes = ()
    elif has_constraints:
        all_nodes = snapshot.node_info_list
    else:
        all_nodes = snapshot.have_pods_with_affinity_list()
    for node_info in all_nodes:
        pods_to_process = node_info.pods if has_constraints else node_info.pods_with_affinity
        for existing in pods_to_process:
            process_existing_pod(self, s, existing, node_info, pod, topo_score)

    # Upstream merges per-node maps and skips when none was non-empty; a per-node map is
    # non-empty exactly when it created a topology entry, as the merged one does.
    if not topo_score:
        return Status(Code.Skip)
    cycle_state.write(PRE_SCORE_STATE_KEY, s)
    return None


def score_map_on_table(self, s: PreScoreState, incoming, topo_score: dict, table, groups) -> None:
    """processExistingPod for every existing pod at once, over pod groups: each group's
    contribution per topology key (the weights of its matching terms, as processExistingPod
    adds them) is found once, with whether any term of that key matched (which creates the
    map's entry even when the weights cancel out); the group's count column times the weight is
    then summed per label value. Pods without affinity terms contribute only through the
    incoming pod's preferred terms, so visiting every group is the same as visiting
    HavePodsWithAffinityList when the pod has none. Same entries and sums as the per-pod loop
    (the map's order is the per-pod loop's only when the CycleState is recorded, which takes
    that loop)."""
    ns_labels = s.namespace_labels
    hard = self.hard_pod_affinity_weight
    weight_cols: dict = {}      # key -> weight added on node i
    created_cols: dict = {}     # key -> pods on node i with a matching term of that key
    for sig, existing in groups.rep.items():
        delta: dict = {}
        for term, weight in s.preferred_affinity_terms:
            if term.matches(existing):
                delta[term.topology_key] = delta.get(term.topology_key, 0) + weight
        for term, weight in s.preferred_anti_affinity_terms:
            if term.matches(existing):
                delta[term.topology_key] = delta.get(term.topology_key, 0) - weight
        if hard > 0:
            for t in existing.required_affinity_terms:
                if t.matches(incoming, ns_labels):
                    delta[t.topology_key] = delta.get(t.topology_key, 0) + hard
        for wt in existing.preferred_affinity_terms:
            t = wt.term
            if t.matches(incoming, ns_labels):
                delta[t.topology_key] = delta.get(t.topology_key, 0) + wt.weight
        for wt in existing.preferred_anti_affinity_terms:
            t = wt.term
            if t.matches(incoming, ns_labels):
                delta[t.topology_key] = delta.get(t.topology_key, 0) - wt.weight
        if not delta:
            continue
        col = groups.cols[sig]
        for key, w in delta.items():
            c = created_cols.get(key)
            created_cols[key] = col.copy() if c is None else c + col
            if w:
                c = weight_cols.get(key)
                weight_cols[key] = col * w if c is None else c + col * w
    columns = {}
    for key, created in created_cols.items():
        codes, values, _index = table.labels(key)
        has = codes >= 0
        if not has.any():
            continue
        nv = len(values)
        made = np.bincount(codes[has], weights=created[has], minlength=nv)
        wcol = weight_cols.get(key)
        # the sums are of integers (exact in float64); 0 where no term matched
        sums = (np.bincount(codes[has], weights=wcol[has], minlength=nv).astype(np.int64) if wcol is not None
                else np.zeros(nv, dtype=np.int64))
        entries = np.flatnonzero(made).tolist()
        if entries:
            names = itemgetter(*entries)(values) if len(entries) > 1 else (values[entries[0]],)
            topo_score[key] = dict(zip(names, sums[entries].tolist()))
            columns[key] = sums
    s.score_columns = (table, columns)


def get_pre_score_state(cycle_state):
    """getPreScoreState: ``(state, None)`` or ``(None, Error status)``."""
    try:
        s = cycle_state.read(PRE_SCORE_STATE_KEY)
    except KeyError:
        return None, Status(Code.Error,
                            [f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found'])
    if not isinstance(s, PreScoreState):
        return None, Status(Code.Error,
                            [f"{s!r}  convert to interpodaffinity.preScoreState error"])
    return s, None


def score(self, cycle_state, pod, node_name):
    """InterPodAffinity.Score: the sum, over topology keys the node has, of the weight sum
    of the node's value (positive for affinity, negative for anti-affinity)."""
    s, status = get_pre_score_state(cycle_state)
    if status is not None:
        return 0, status
    try:
        node_info = s.snapshot.get(node_name)
    except KeyError:
        return 0, Status(Code.Error, [f'failed to get node "{node_name}" from Snapshot: '
                                      f'nodeinfo not found for node name "{node_name}"'])
    labels = node_info.node.labels
    total = 0
    for tp_key, tp_values in s.topology_score.items():
        if tp_key in labels:
            total += tp_values.get(labels[tp_key], 0)
    return total, None


def score_nodes(self, cycle_state, pod, nodes):
    """Score for every node in one call (Framework.run_score_plugins), on the node table's
    label columns: the same sums as ``score``."""
    table = None
    if USE_TABLE():
        s, status = get_pre_score_state(cycle_state)
        if status is not None:
            return None, status
        snap = s.snapshot
        table = snap.node_table() if hasattr(snap, "node_table") else None
        if table is not None and table.node_infos is not snap.node_info_list:
            table = None
    if table is None:
        return score_nodes_per_node(self, cycle_state, pod, nodes)
    rows = getattr(nodes, "rows", None)
    if rows is None or getattr(nodes, "table", None) is not table:
        row = table.row
        try:
            rows = np.array([row[ni.name] for ni in nodes], dtype=np.int64)
        except KeyError:
            return score_nodes_per_node(self, cycle_state, pod, nodes)
    total = np.zeros(len(rows), dtype=np.int64)
    columns = s.score_columns[1] if s.score_columns is not None and s.score_columns[0] is table else None
    for tp_key, tp_values in s.topology_score.items():
        codes, values, index = table.labels(tp_key)
        if columns is not None:
            lookup = np.append(columns[tp_key], 0)                # code -1 reads the trailing 0
        else:
            lookup = np.zeros(len(values) + 1, dtype=np.int64)
            for v, w in tp_values.items():
                code = index.get(v)
                if code is not None:
                    lookup[code] = w
        total += lookup[codes[rows]]
    return total.tolist(), None


def score_nodes_per_node(self, cycle_state, pod, nodes):
    """``score`` node by node (the framework's default ``score_nodes``)."""
    return ScorePlugin.score_nodes(self, cycle_state, pod, nodes)


def USE_TABLE() -> bool:
    from . import filtering
    return filtering.USE_TABLE


def _normalize_values(self, cycle_state, pod, values):
    """NormalizeScore over plain scores (Framework.run_score_plugins' shortcut): the same
    arithmetic as ``normalize_score``."""
    s, status = get_pre_score_state(cycle_state)
    if status is not None or not s.topology_score or not values:
        return values
    min_count = min(values)
    max_min_diff = max(values) - min_count
    if max_min_diff <= 0:
        return [0] * len(values)
    m = float(MAX_NODE_SCORE)
    d = float(max_min_diff)
    return [int(m * (float(v - min_count) / d)) for v in values]


def normalize_score(self, cycle_state, pod, scores):
    """InterPodAffinity.NormalizeScore: ``int(100 * (score - min) / (max - min))`` (0 for
    every node when max == min); nothing to do when no topology scored."""
    s, status = get_pre_score_state(cycle_state)
    if status is not None:
        return status
    if not s.topology_score:
        return None
    min_count = None
    max_count = None
    for ns in scores:
        v = ns.score
        if max_count is None or v > max_count:
            max_count = v
        if min_count is None or v < min_count:
            min_count = v
    if min_count is None:
        return None
    max_min_diff = max_count - min_count
    for ns in scores:
        f_score = 0.0
        if max_min_diff > 0:
            f_score = float(MAX_NODE_SCORE) * (float(ns.score - min_count) / float(max_min_diff))
        ns.score = int(f_score)
    return None


def score_extensions(self):
    """InterPodAffinity.ScoreExtensions: the plugin itself."""
    return self
