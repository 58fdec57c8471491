"""InterPodAffinity PreScore / Score / NormalizeScore.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/scoring.go`` (v1.28.0).

The functions taking ``self`` are methods of :class:`~.plugin.InterPodAffinity`.

Scoring: for every topology pair ``(key, value)`` a weight sum is built from the existing pods
(see :func:`process_existing_pod`); a node's raw score is the sum of the sums of the pairs
its labels hold; NormalizeScore maps ``[min, max]`` linearly onto ``[0, 100]``.
"""
from __future__ import annotations

from ...framework.interface import MAX_NODE_SCORE, Code, Status
from ...objects import namespace_labels
from .filtering import MergedAffinityTerm

# preScoreStateKey = "PreScore" + Name
PRE_SCORE_STATE_KEY = "PreScore" + "InterPodAffinity"


class PreScoreState:
    """preScoreState: ``topology_score`` is upstream's scoreMap
    (topology key -> topology value -> weight sum); ``preferred_affinity_terms`` /
    ``preferred_anti_affinity_terms`` are the incoming pod's merged weighted terms as
    ``(MergedAffinityTerm, weight)``; ``namespace_labels`` a snapshot of its namespace labels.
    ``snapshot`` is the cycle's snapshot, used by Score to find the node."""
    __slots__ = ("topology_score", "pod", "preferred_affinity_terms",
                 "preferred_anti_affinity_terms", "namespace_labels", "snapshot")

    def __init__(self):
        self.topology_score: dict = {}
        self.pod = None
        self.preferred_affinity_terms: tuple = ()
        self.preferred_anti_affinity_terms: tuple = ()
        self.namespace_labels: dict = {}
        self.snapshot = None

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
    if has_constraints:
        all_nodes = snapshot.node_info_list
    else:
        all_nodes = snapshot.have_pods_with_affinity_list()

    s = PreScoreState()
    s.pod = pod
    s.preferred_affinity_terms = tuple((MergedAffinityTerm(wt.term), wt.weight)
                                       for wt in pod.preferred_affinity_terms)
    s.preferred_anti_affinity_terms = tuple((MergedAffinityTerm(wt.term), wt.weight)
                                            for wt in pod.preferred_anti_affinity_terms)
    s.namespace_labels = namespace_labels(pod.namespace)
    s.snapshot = snapshot

    topo_score = s.topology_score
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
