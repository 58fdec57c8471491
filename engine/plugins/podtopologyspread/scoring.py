"""PodTopologySpread PreScore / Score / NormalizeScore.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/scoring.go`` (v1.28.0).

The functions taking ``self`` are methods of :class:`~.plugin.PodTopologySpread`.

Scoring, for the soft (ScheduleAnyway) constraints:

* per constraint ``i``, ``weight_i = ln(size_i + 2)`` where ``size_i`` is the number of
  topology values among the candidate nodes (for ``kubernetes.io/hostname``: the number of
  candidate nodes not ignored);
* raw score of a node = ``round_half_away(sum_i cnt_i * weight_i + (maxSkew_i - 1))`` where
  ``cnt_i`` is the number of matching pods in the node's domain (counted over all eligible
  nodes, not only candidates; for hostname, on the node itself);
* NormalizeScore: ``100 * (max + min - score) // max`` (100 for all when max is 0);
  ignored nodes (missing a topology key) get 0.
"""
from __future__ import annotations

import math

import numpy as np

from ...framework.interface import MAX_NODE_SCORE, Code, ScorePlugin, Status
from .common import (LABEL_HOSTNAME, SCHEDULE_ANYWAY, RequiredNodeAffinity,
                     build_default_constraints, compile_selector, count_pods_match_selector,
                     filter_topology_spread_constraints, node_labels_match_spread_constraints)

# preScoreStateKey = "PreScore" + Name
PRE_SCORE_STATE_KEY = "PreScore" + "PodTopologySpread"
INVALID_SCORE = -1


class PreScoreState:
    """preScoreState: ``constraints`` (the soft ones), ``ignored_nodes`` (names of candidate
    nodes missing some topology key), ``topology_pair_to_pod_counts`` (pair -> matching pods,
    for non-hostname keys) and ``topology_normalizing_weight`` (one per constraint).
    ``snapshot`` is the cycle's snapshot, used by Score to find the node."""
    __slots__ = ("constraints", "ignored_nodes", "topology_pair_to_pod_counts",
                 "topology_normalizing_weight", "snapshot", "score_terms", "on_table",
                 "ignored_mask")

    def __init__(self):
        self.constraints: list = []
        self.ignored_nodes: set = set()
        self.topology_pair_to_pod_counts: dict = {}
        self.topology_normalizing_weight: list = []
        self.snapshot = None
        # per constraint, for Score: (key, is hostname, maxSkew, weight, selector, compiled)
        self.score_terms: list = []
        # (table, groups) when PreScore ran on the node table (score_nodes uses it too)
        self.on_table = None
        # score_nodes' nodes that are ignored (for _normalize_values, called right after it)
        self.ignored_mask = None

    def clone(self):
        """preScoreState.Clone: not copied."""
        return self

    def __visualize__(self) -> dict:
        """The CycleState inspector's rendering (the snapshot left out)."""
        return {"constraints": [c.__visualize__() for c in self.constraints],
                "IgnoredNodes": sorted(self.ignored_nodes),
                "TopologyPairToPodCounts": dict(self.topology_pair_to_pod_counts),
                "TopologyNormalizingWeight": [round(w, 4) for w in self.topology_normalizing_weight]}


def topology_normalizing_weight(size: int) -> float:
    """topologyNormalizingWeight: ``ln(size + 2)``."""
    return math.log(float(size + 2))


def score_for_count(cnt: int, max_skew: int, tp_weight: float) -> float:
    """scoreForCount: ``cnt * weight + (maxSkew - 1)``."""
    return float(cnt) * tp_weight + float(max_skew - 1)


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round is half to even)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)


def _as_node(n):
    """PreScore receives nodes; accept NodeInfos too."""
    node = getattr(n, "node", None)
    return node if node is not None else n


def init_pre_score_state(self, s: PreScoreState, pod, filtered_nodes,
                         require_all_topologies: bool) -> None:
    """PodTopologySpread.initPreScoreState: the soft constraints; the ignored candidates; a
    zero counter per (non-hostname) pair present among the candidates; the weights."""
    if pod.topology_spread_constraints:
        s.constraints = filter_topology_spread_constraints(
            self, pod.topology_spread_constraints, pod.labels, SCHEDULE_ANYWAY)
    else:
        s.constraints = build_default_constraints(self, pod, SCHEDULE_ANYWAY)
    if not s.constraints:
        return
    topo_size = [0] * len(s.constraints)
    counts = s.topology_pair_to_pod_counts
    for node in filtered_nodes:
        node = _as_node(node)
        labels = node.labels
        if require_all_topologies and not node_labels_match_spread_constraints(labels, s.constraints):
            # Nodes which don't have all required topologyKeys present are ignored
            # when scoring later.
            s.ignored_nodes.add(node.name)
            continue
        for i, c in enumerate(s.constraints):
            # per-node counts are calculated during Score.
            if c.topology_key == LABEL_HOSTNAME:
                continue
            pair = (c.topology_key, labels.get(c.topology_key, ""))
            if pair not in counts:
                counts[pair] = 0
                topo_size[i] += 1
    weights = []
    for i, c in enumerate(s.constraints):
        sz = topo_size[i]
        if c.topology_key == LABEL_HOSTNAME:
            sz = len(filtered_nodes) - len(s.ignored_nodes)
        weights.append(topology_normalizing_weight(sz))
    s.topology_normalizing_weight = weights


def pre_score(self, cycle_state, pod, filtered_nodes):
    """PodTopologySpread.PreScore: Skip when the cluster has no nodes or the pod has no soft
    constraints (its own or defaulted); otherwise count the matching pods of every eligible
    node into the candidates' topology pairs."""
    snapshot = self.handle.snapshot()
    all_nodes = snapshot.node_info_list
    if not all_nodes:
        # No need to score.
        return Status(Code.Skip)
    s = PreScoreState()
    s.snapshot = snapshot
    # Only require that nodes have all the topology labels if using non-system-default
    # spreading rules.  This allows nodes that don't have a zone label to still have
    # hostname spreading.
    require_all_topologies = bool(pod.topology_spread_constraints) or not self.system_defaulted
    from .filtering import table_and_groups
    on_table = table_and_groups(snapshot)
    rows = candidate_rows(on_table[0], filtered_nodes) if on_table is not None else None
    if rows is None:
        on_table = None
        init_pre_score_state(self, s, pod, filtered_nodes, require_all_topologies)
    else:
        init_pre_score_state_on_table(self, s, pod, filtered_nodes, rows, require_all_topologies,
                                      on_table[0])

    # return Skip if incoming pod doesn't have soft topology spread Constraints.
    if not s.constraints:
        return Status(Code.Skip)
    if on_table is not None:
        s.on_table = on_table
        pod_counts_on_table(self, s, pod, require_all_topologies, *on_table)
        cycle_state.write(PRE_SCORE_STATE_KEY, s)
        return None

    required = RequiredNodeAffinity(pod)
    enable_nip = self.enable_node_inclusion_policy
    counts = s.topology_pair_to_pod_counts
    constraints = s.constraints
    ns = pod.namespace
    prepared = [(c, c.topology_key, c.selector,
                 compile_selector(c.selector) if c.selector is not None else None,
                 enable_nip and c.needs_inclusion_check(required))
                for c in constraints]
    for node_info in all_nodes:
        node = node_info.node
        labels = node.labels
        if not enable_nip:
            # `node` should satisfy incoming pod's NodeSelector/NodeAffinity
            if not required.match(node):
                continue
        # All topologyKeys need to be present in `node`
        if require_all_topologies and not node_labels_match_spread_constraints(labels, constraints):
            continue
        for c, k, sel, m, check in prepared:
            if check and not c.match_node_inclusion_policies(pod, node, required):
                continue
            pair = (k, labels.get(k, ""))
            # If current topology pair is not associated with any candidate node,
            # continue to avoid unnecessary calculation.
            # Per-node counts are also skipped, as they are done during Score.
            tp_count = counts.get(pair)
            if tp_count is None:
                continue
            counts[pair] = tp_count + count_pods_match_selector(node_info.pods, sel, ns, m)

    s.score_terms = [(c.topology_key, c.topology_key == LABEL_HOSTNAME, c.max_skew,
                      s.topology_normalizing_weight[i], c.selector, m)
                     for i, (c, _k, _sel, m, _check) in enumerate(prepared)]
    cycle_state.write(PRE_SCORE_STATE_KEY, s)
    return None


# ---------------------------------------------------------------------------------------------
# The same PreScore, Score and NormalizeScore over the node table (not upstream's code;
# upstream's results)

def candidate_rows(table, nodes):
    """The node-table rows of the PreScore candidates (NodeInfos or Nodes), or None."""
    rows = getattr(nodes, "rows", None)
    if rows is not None and getattr(nodes, "table", None) is table:
        return np.asarray(rows, dtype=np.int64)
    row = table.row
    try:
        return np.fromiter((row[_as_node(n).name] for n in nodes), dtype=np.int64,
                           count=len(nodes))
    except (KeyError, AttributeError):
        return None


def _value_codes(table, key: str, rows):
    """The codes of ``labels.get(key, "")`` at ``rows``: a missing label reads as the value
    "" (its code if some node has "", else one past the values), and the values by code."""
    codes, values, index = table.labels(key)
    c = codes[rows]
    if (c < 0).any():
        empty = index.get("")
        if empty is None:
            values = values + [""]
            empty = len(values) - 1
        c = np.where(c < 0, empty, c)
    return c, values


def init_pre_score_state_on_table(self, s: PreScoreState, pod, filtered_nodes, rows,
                                  require_all_topologies: bool, table) -> None:
    """initPreScoreState on label columns: the ignored candidates, the zero counters of the
    candidates' (non-hostname) pairs in the order the per-node loop inserts them (first
    candidate, then constraint), the domain sizes (a pair counted for the first constraint
    of its key) and the weights."""
    if pod.topology_spread_constraints:
        s.constraints = filter_topology_spread_constraints(
            self, pod.topology_spread_constraints, pod.labels, SCHEDULE_ANYWAY)
    else:
        s.constraints = build_default_constraints(self, pod, SCHEDULE_ANYWAY)
    if not s.constraints:
        return
    keep = np.ones(len(rows), dtype=bool)
    if require_all_topologies:
        for c in s.constraints:
            keep &= table.labels(c.topology_key)[0][rows] >= 0
        if not keep.all():
            s.ignored_nodes = {_as_node(filtered_nodes[j]).name
                               for j in np.flatnonzero(~keep).tolist()}
    valid = rows[keep]
    topo_size = [0] * len(s.constraints)
    first_of_key: dict = {}
    for i, c in enumerate(s.constraints):
        if c.topology_key != LABEL_HOSTNAME:
            first_of_key.setdefault(c.topology_key, i)
    entries = []
    for k, i in first_of_key.items():
        c, values = _value_codes(table, k, valid)
        uniq, first = np.unique(c, return_index=True)
        topo_size[i] += len(uniq)
        for code, pos in zip(uniq.tolist(), first.tolist()):
            entries.append((pos, i, (k, values[code])))
    entries.sort(key=lambda e: (e[0], e[1]))
    counts = s.topology_pair_to_pod_counts
    for _pos, _i, pair in entries:
        counts[pair] = 0
    weights = []
    for i, c in enumerate(s.constraints):
        sz = topo_size[i]
        if c.topology_key == LABEL_HOSTNAME:
            sz = len(filtered_nodes) - len(s.ignored_nodes)
        weights.append(topology_normalizing_weight(sz))
    s.topology_normalizing_weight = weights


def pod_counts_on_table(self, s: PreScoreState, pod, require_all_topologies: bool, table,
                        groups) -> None:
    """PreScore's counting on the node table: for each constraint, the matching pods of
    every counted node (pod groups) summed per label value into the candidates' pairs; and,
    for Score, each constraint's matching pods per node (hostname constraints read them)."""
    from .filtering import eligible_rows, matching_pods_column
    n = len(table.node_infos)
    rows = eligible_rows(self, pod, s.constraints, table, require_all_topologies)
    counts = s.topology_pair_to_pod_counts
    ns = pod.namespace
    cols = []
    everything = np.arange(n)
    for i, c in enumerate(s.constraints):
        col = matching_pods_column(groups, c.selector, ns, n)
        cols.append(col)
        k = c.topology_key
        r = rows[i]
        if k == LABEL_HOSTNAME or not r.any():
            continue
        codes, values = _value_codes(table, k, everything)
        sums = np.bincount(codes[r], weights=col[r], minlength=len(values))
        for code in np.flatnonzero(sums).tolist():
            pair = (k, values[code])
            if pair in counts:
                counts[pair] += int(sums[code])
    s.score_terms = [(c.topology_key, c.topology_key == LABEL_HOSTNAME, c.max_skew,
                      s.topology_normalizing_weight[i], c.selector, cols[i])
                     for i, c in enumerate(s.constraints)]


def score_nodes(self, cycle_state, pod, nodes):
    """Score for every node in one call (Framework.run_score_plugins): the same float sums,
    in the same order, and the same rounding as ``score``; node by node when PreScore did
    not run on the table or a candidate's pair has no counter (``score``'s error)."""
    s = cycle_state.get(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState) or s.on_table is None:
        return _score_nodes_per_node(self, cycle_state, pod, nodes)
    table = s.on_table[0]
    if s.snapshot.node_table() is not table:
        return _score_nodes_per_node(self, cycle_state, pod, nodes)
    rows = candidate_rows(table, nodes)
    if rows is None:
        return _score_nodes_per_node(self, cycle_state, pod, nodes)
    ignored = s.ignored_nodes
    mask = (np.fromiter((ni.name in ignored for ni in nodes), dtype=bool, count=len(nodes))
            if ignored else np.zeros(len(nodes), dtype=bool))
    total = np.zeros(len(rows), dtype=np.float64)
    counts = s.topology_pair_to_pod_counts
    for tk, is_hostname, max_skew, weight, _sel, col in s.score_terms:
        codes, values, _index = table.labels(tk)
        c = codes[rows]
        has = (c >= 0) & ~mask
        if not has.any():
            continue
        if is_hostname:
            cnt = col[rows]
        else:
            lookup = np.zeros(len(values) + 1, dtype=np.int64)
            known = np.zeros(len(values) + 1, dtype=bool)
            for j, v in enumerate(values):
                n_ = counts.get((tk, v))
                if n_ is not None:
                    lookup[j] = n_
                    known[j] = True
            if not known[c[has]].all():
                return _score_nodes_per_node(self, cycle_state, pod, nodes)
            cnt = lookup[c]
        # scoreForCount, added in constraint order as Score does
        total = np.where(has, total + (cnt.astype(np.float64) * weight + float(max_skew - 1)),
                         total)
    # go_round: half away from zero
    t = np.trunc(total)
    t = np.where(np.abs(total - t) >= 0.5, t + np.sign(total), t)
    s.ignored_mask = mask
    return t.astype(np.int64).tolist(), None


def _score_nodes_per_node(self, cycle_state, pod, nodes):
    """``score`` node by node (and the ignored nodes for _normalize_values)."""
    s = cycle_state.get(PRE_SCORE_STATE_KEY)
    if isinstance(s, PreScoreState):
        ignored = s.ignored_nodes
        s.ignored_mask = [ni.name in ignored for ni in nodes]
    return ScorePlugin.score_nodes(self, cycle_state, pod, nodes)     # the framework's default


def get_pre_score_state(cycle_state):
    """getPreScoreState: ``(state, None)`` or ``(None, Error status)``."""
    try:
        s = cycle_state.read(PRE_SCORE_STATE_KEY)
    except KeyError:
        return None, Status(Code.Error,
                            [f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found'])
    if not isinstance(s, PreScoreState):
        return None, Status(Code.Error,
                            [f"{s!r}  convert to podtopologyspread.preScoreState error"])
    return s, None


def score(self, cycle_state, pod, node_name):
    """PodTopologySpread.Score: ``round(sum over the constraints whose key the node has of
    scoreForCount(cnt, maxSkew, weight))``; 0 for ignored nodes."""
    s = cycle_state.get(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        s, status = get_pre_score_state(cycle_state)
        return 0, status
    try:
        node_info = s.snapshot.get(node_name)
    except KeyError:
        return 0, Status(Code.Error, [f'getting node "{node_name}" from Snapshot: '
                                      f'nodeinfo not found for node name "{node_name}"'])
    node = node_info.node
    # Return if the node is not qualified.
    if node.name in s.ignored_nodes:
        return 0, None
    labels = node.labels
    total = 0.0
    counts = s.topology_pair_to_pod_counts
    for tk, is_hostname, max_skew, weight, sel, m in s.score_terms:
        if tk in labels:
            if is_hostname:
                if s.on_table is not None:       # m: the matching pods per node (table rows)
                    cnt = int(m[s.on_table[0].row[node_name]])
                else:
                    cnt = count_pods_match_selector(node_info.pods, sel, pod.namespace, m)
            else:
                cnt = counts.get((tk, labels[tk]))
                if cnt is None:
                    # upstream dereferences a nil pointer here; only reachable when Score
                    # is asked about a node that was not a PreScore candidate
                    return 0, Status(Code.Error, [f"no topology count for ({tk}, {labels[tk]}) "
                                                  f"of node {node_name!r}"])
            # scoreForCount
            total += float(cnt) * weight + float(max_skew - 1)
    return go_round(total), None


def normalize_score(self, cycle_state, pod, scores):
    """PodTopologySpread.NormalizeScore: fewer matching pods score higher;
    ``100 * (max + min - s) // max``; ignored nodes get 0."""
    s, status = get_pre_score_state(cycle_state)
    if status is not None:
        return status
    if s is None:
        return None
    # Calculate <minScore> and <maxScore>
    min_score = 2 ** 63 - 1
    max_score = 0
    ignored = s.ignored_nodes
    for ns in scores:
        # it's mandatory to check if <score.Name> is present in m.IgnoredNodes
        if ns.name in ignored:
            ns.score = INVALID_SCORE
            continue
        if ns.score < min_score:
            min_score = ns.score
        if ns.score > max_score:
            max_score = ns.score
    for ns in scores:
        if ns.score == INVALID_SCORE:
            ns.score = 0
            continue
        if max_score == 0:
            ns.score = MAX_NODE_SCORE
            continue
        v = ns.score
        ns.score = _go_div(MAX_NODE_SCORE * (max_score + min_score - v), max_score)
    return None


def _normalize_values(self, cycle_state, pod, values):
    """NormalizeScore over plain scores (Framework.run_score_plugins' shortcut, right after
    score_nodes, whose ignored nodes it reads): the same arithmetic as ``normalize_score``."""
    s = cycle_state.get(PRE_SCORE_STATE_KEY)
    mask = s.ignored_mask if isinstance(s, PreScoreState) else None
    if mask is None or len(mask) != len(values):
        # not reachable: run_score_plugins calls it right after score_nodes
        raise RuntimeError("PodTopologySpread: NormalizeScore without score_nodes' nodes")
    v = np.asarray(values, dtype=np.int64)
    ignored = np.asarray(mask, dtype=bool)
    invalid = ignored | (v == INVALID_SCORE)   # an ignored node is marked INVALID_SCORE first
    counted = v[~ignored]
    if not len(counted):
        return [0] * len(values)
    min_score = int(counted.min())
    max_score = max(int(counted.max()), 0)
    if max_score == 0:
        out = np.full(len(v), MAX_NODE_SCORE, dtype=np.int64)
    else:
        a = MAX_NODE_SCORE * (max_score + min_score - v)
        out = np.sign(a) * (np.abs(a) // max_score)    # Go's division, toward zero
    out[invalid] = 0
    return out.tolist()


def _go_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def score_extensions(self):
    """PodTopologySpread.ScoreExtensions: the plugin itself."""
    return self
