"""PodTopologySpread PreFilter / Filter and the PreFilter extensions (AddPod, RemovePod).

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go`` (v1.28.0).

The functions taking ``self`` are methods of :class:`~.plugin.PodTopologySpread`.  A topology
pair is the tuple ``(topology_key, topology_value)``.

Determinism: upstream builds the critical paths by ranging over a Go map (random order), so
on ties which domains are recorded can differ between runs (only ``paths[0].match_num``, the
minimum, is guaranteed).  Here pairs are visited in insertion order, i.e. node-tree order
then constraint order, which is one of upstream's possible orders.
"""
from __future__ import annotations

from itertools import repeat
from operator import itemgetter

import numpy as np

from ...framework.interface import Code, Status
from ...nodetable import Rejections
from .common import (DO_NOT_SCHEDULE, LABEL_HOSTNAME, RequiredNodeAffinity,
                     build_default_constraints, compile_selector, count_pods_match_selector,
                     filter_topology_spread_constraints, node_labels_match_spread_constraints)

# preFilterStateKey = "PreFilter" + Name
PRE_FILTER_STATE_KEY = "PreFilter" + "PodTopologySpread"

# Reasons, exactly as upstream.
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

MAX_INT32 = 2 ** 31 - 1


class CriticalPaths:
    """criticalPaths: two (topology value, match num) slots.  ``paths[0]`` always holds the
    minimum match number; ``paths[1]`` is >= it but not necessarily the second minimum.
    Stored as a 4-element list ``[value0, num0, value1, num1]``."""
    __slots__ = ("p",)

    def __init__(self, p=None):
        # newCriticalPaths: both slots {"" , MaxInt32}
        self.p = p if p is not None else ["", MAX_INT32, "", MAX_INT32]

    def copy(self) -> "CriticalPaths":
        return CriticalPaths(list(self.p))

    @property
    def min_match_num(self) -> int:
        return self.p[1]

    def as_pairs(self) -> list:
        """``[(value0, num0), (value1, num1)]``, for tests and display."""
        p = self.p
        return [(p[0], p[1]), (p[2], p[3])]

    def update(self, tp_val: str, num: int) -> None:
        """criticalPaths.update."""
        p = self.p
        # first verify if `tpVal` exists or not
        i = -1
        if tp_val == p[0]:
            i = 0
        elif tp_val == p[2]:
            i = 1
        if i >= 0:
            # `tpVal` exists
            p[2 * i + 1] = num
            if p[1] > p[3]:
                # swap paths[0] and paths[1]
                p[0], p[1], p[2], p[3] = p[2], p[3], p[0], p[1]
        else:
            # `tpVal` doesn't exist
            if num < p[1]:
                # update paths[1] with paths[0]; update paths[0]
                p[2], p[3] = p[0], p[1]
                p[0], p[1] = tp_val, num
            elif num < p[3]:
                # update paths[1]
                p[2], p[3] = tp_val, num

    def __repr__(self):
        return f"CriticalPaths({self.as_pairs()!r})"

    def __visualize__(self) -> str:
        """``a=2 (min), b=3``; an unset slot shows as ``-``."""
        out = []
        for i, (v, n) in enumerate(self.as_pairs()):
            text = "-" if n == MAX_INT32 and v == "" else f"{v}={n}"
            out.append(text + (" (min)" if i == 0 and text != "-" else ""))
        return ", ".join(out)


class PreFilterState:
    """preFilterState: ``constraints`` (the hard ones), ``tp_key_to_critical_paths``,
    ``tp_key_to_domains_num`` (None when MinDomains is disabled) and ``tp_pair_to_match_num``.
    An empty state (no constraints) is legit and tolerates every pod."""
    __slots__ = ("constraints", "tp_key_to_critical_paths", "tp_key_to_domains_num",
                 "tp_pair_to_match_num")

    def __init__(self, constraints=None, tp_key_to_critical_paths=None,
                 tp_key_to_domains_num=None, tp_pair_to_match_num=None):
        self.constraints = constraints or []
        self.tp_key_to_critical_paths = tp_key_to_critical_paths if tp_key_to_critical_paths is not None else {}
        self.tp_key_to_domains_num = tp_key_to_domains_num
        self.tp_pair_to_match_num = tp_pair_to_match_num if tp_pair_to_match_num is not None else {}

    def min_match_num(self, tp_key: str, min_domains: int, enable_min_domains: bool):
        """preFilterState.minMatchNum: the global minimum for the skew, 0 when fewer than
        minDomains domains are eligible.  Returns ``(num, error message or None)``."""
        paths = self.tp_key_to_critical_paths.get(tp_key)
        if paths is None:
            return 0, "failed to retrieve path by topology key"
        min_match_num = paths.p[1]
        if not enable_min_domains:
            return min_match_num, None
        domains_num = self.tp_key_to_domains_num.get(tp_key) if self.tp_key_to_domains_num is not None else None
        if domains_num is None:
            return 0, "failed to retrieve the number of domains by topology key"
        if domains_num < min_domains:
            # fewer eligible domains than minDomains: the global minimum is treated as 0
            min_match_num = 0
        return min_match_num, None

    def __visualize__(self) -> dict:
        """The CycleState inspector's rendering: the constraints, and per topology key the
        critical paths (``zone: a=2 (min), b=3``), the domain count and TpPairToMatchNum."""
        out = {"constraints": [c.__visualize__() for c in self.constraints],
               "criticalPaths": [f"{k}: {p.__visualize__()}" for k, p in self.tp_key_to_critical_paths.items()]}
        if self.tp_key_to_domains_num is not None:
            out["domains"] = [f"{k}: {n}" for k, n in self.tp_key_to_domains_num.items()]
        out["TpPairToMatchNum"] = dict(self.tp_pair_to_match_num)
        return out

    def clone(self) -> "PreFilterState":
        """preFilterState.Clone: constraints and domain numbers are shared (AddPod/RemovePod
        never change them); critical paths and match numbers are copied."""
        return PreFilterState(
            self.constraints,
            {k: v.copy() for k, v in self.tp_key_to_critical_paths.items()},
            self.tp_key_to_domains_num,
            dict(self.tp_pair_to_match_num),
        )


def pre_filter(self, cycle_state, pod):
    """PodTopologySpread.PreFilter: Skip when the pod has no hard (DoNotSchedule)
    constraints, its own or defaulted."""
    s = cal_pre_filter_state(self, pod)
    if not s.constraints:
        return None, Status(Code.Skip)
    cycle_state.write(PRE_FILTER_STATE_KEY, s)
    return None, None


def pre_filter_extensions(self):
    """PodTopologySpread.PreFilterExtensions: the plugin itself."""
    return self


def add_pod(self, cycle_state, pod_to_schedule, pod_info_to_add, node_info):
    """PodTopologySpread.AddPod."""
    s, status = get_pre_filter_state(cycle_state)
    if status is not None:
        return status
    update_with_pod(self, s, pod_info_to_add, pod_to_schedule, node_info.node, 1)
    return None


def remove_pod(self, cycle_state, pod_to_schedule, pod_info_to_remove, node_info):
    """PodTopologySpread.RemovePod."""
    s, status = get_pre_filter_state(cycle_state)
    if status is not None:
        return status
    update_with_pod(self, s, pod_info_to_remove, pod_to_schedule, node_info.node, -1)
    return None


def update_with_pod(self, s: PreFilterState, updated_pod, preemptor_pod, node, delta: int) -> None:
    """PodTopologySpread.updateWithPod: adjust the match number of the node's pair for each
    constraint whose selector matches ``updated_pod`` (same namespace as the preemptor, node
    holding every topology key, node passing the inclusion policies) and refresh the critical
    paths.  Terminating pods are not filtered out here (as upstream)."""
    if s is None or updated_pod.namespace != preemptor_pod.namespace or node is None:
        return
    if not node_labels_match_spread_constraints(node.labels, s.constraints):
        return
    required = RequiredNodeAffinity(preemptor_pod)
    if not self.enable_node_inclusion_policy:
        # spreading is applied to nodes that pass those filters.
        if not required.match(node):
            return
    pod_labels = updated_pod.labels
    for c in s.constraints:
        if not c.selector_matches(pod_labels):
            continue
        if self.enable_node_inclusion_policy and not c.match_node_inclusion_policies(
                preemptor_pod, node, required):
            continue
        k = c.topology_key
        pair = (k, node.labels[k])
        n = s.tp_pair_to_match_num.get(pair, 0) + delta
        s.tp_pair_to_match_num[pair] = n
        s.tp_key_to_critical_paths[k].update(pair[1], n)


def get_pre_filter_state(cycle_state):
    """getPreFilterState: ``(state, None)`` or ``(None, Error status)``."""
    try:
        s = cycle_state.read(PRE_FILTER_STATE_KEY)
    except KeyError:
        return None, Status(Code.Error,
                            [f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'])
    if not isinstance(s, PreFilterState):
        return None, Status(Code.Error,
                            [f"{s!r} convert to podtopologyspread.preFilterState error"])
    return s, None


def cal_pre_filter_state(self, pod) -> PreFilterState:
    """PodTopologySpread.calPreFilterState: count, per topology pair, the existing pods
    matching each hard constraint over the eligible nodes (nodes holding every topology key
    and passing the constraint's inclusion policies); then the domain numbers and the
    critical paths.  Returns an empty state when there are no hard constraints."""
    if pod.topology_spread_constraints:
        constraints = filter_topology_spread_constraints(
            self, pod.topology_spread_constraints, pod.labels, DO_NOT_SCHEDULE)
    else:
        constraints = build_default_constraints(self, pod, DO_NOT_SCHEDULE)
    if not constraints:
        return PreFilterState()

    snapshot = self.handle.snapshot()
    all_nodes = snapshot.node_info_list
    tp_pair_to_match_num: dict = {}
    s = PreFilterState(constraints, {}, None, tp_pair_to_match_num)
    on_table = table_and_groups(snapshot)
    if on_table is not None:
        match_num_on_table(self, pod, constraints, tp_pair_to_match_num, *on_table)
        all_nodes = ()

    required = RequiredNodeAffinity(pod)
    ns = pod.namespace
    enable_nip = self.enable_node_inclusion_policy
    keys = [c.topology_key for c in constraints]
    # per constraint: (constraint, key, selector, compiled selector, inclusion check needed)
    prepared = [(c, c.topology_key, c.selector,
                 compile_selector(c.selector) if c.selector is not None else None,
                 enable_nip and c.needs_inclusion_check(required))
                for c in constraints]
    for node_info in all_nodes:
        node = node_info.node
        labels = node.labels
        if not enable_nip:
            if not required.match(node):
                continue
        # Ensure current node's labels contains all topologyKeys in 'Constraints'.
        ok = True
        for k in keys:
            if k not in labels:
                ok = False
                break
        if not ok:
            continue
        pods = node_info.pods
        if len(prepared) == 1:
            c, k, sel, m, check = prepared[0]
            if check and not c.match_node_inclusion_policies(pod, node, required):
                continue
            pair = (k, labels[k])
            tp_pair_to_match_num[pair] = (tp_pair_to_match_num.get(pair, 0)
                                          + count_pods_match_selector(pods, sel, ns, m))
            continue
        # tpCounts per node: a later constraint on the same pair overwrites an earlier one
        tp_counts: dict = {}
        for c, k, sel, m, check in prepared:
            if check and not c.match_node_inclusion_policies(pod, node, required):
                continue
            tp_counts[(k, labels[k])] = count_pods_match_selector(pods, sel, ns, m)
        for pair, count in tp_counts.items():
            tp_pair_to_match_num[pair] = tp_pair_to_match_num.get(pair, 0) + count

    if self.enable_min_domains:
        if len(set(keys)) == 1:         # every pair has the one key
            domains = {keys[0]: len(tp_pair_to_match_num)} if tp_pair_to_match_num else {}
        else:
            domains = {}
            for k, _ in tp_pair_to_match_num:
                domains[k] = domains.get(k, 0) + 1
        s.tp_key_to_domains_num = domains

    # calculate min match for each topology pair
    for k in keys:
        s.tp_key_to_critical_paths[k] = CriticalPaths()
    if len(s.tp_key_to_critical_paths) == 1 and len(tp_pair_to_match_num) > 2:   # one key
        critical_paths_of_one_key(s.tp_key_to_critical_paths[keys[0]], tp_pair_to_match_num)
    else:
        for (k, v), num in tp_pair_to_match_num.items():
            s.tp_key_to_critical_paths[k].update(v, num)
    return s


def critical_paths_of_one_key(paths: CriticalPaths, tp_pair_to_match_num: dict) -> None:
    """``paths.update`` for every pair in order, where every pair has the same key (so each
    value comes once): the updates keep the smallest count in ``paths[0]`` and the smallest
    of the others in ``paths[1]``, the earlier pair on ties (a count never reaches MaxInt32);
    found with two argmins instead of one update per pair (5,000 a cycle at a hostname key)."""
    nums = np.fromiter(tp_pair_to_match_num.values(), dtype=np.int64, count=len(tp_pair_to_match_num))
    i0 = int(nums.argmin())            # the first of the smallest
    n0 = int(nums[i0])
    nums[i0] = MAX_INT32
    i1 = int(nums.argmin())
    pairs = list(tp_pair_to_match_num)
    paths.p = [pairs[i0][1], n0, pairs[i1][1], int(nums[i1])]


def filter(self, cycle_state, pod, node_info):
    """PodTopologySpread.Filter: for each hard constraint the node must hold the topology
    key (else UnschedulableAndUnresolvable, "missing required label") and
    ``matchNum + selfMatch - globalMin <= maxSkew`` (else Unschedulable)."""
    try:
        s = cycle_state.read(PRE_FILTER_STATE_KEY)
    except KeyError:
        s, status = get_pre_filter_state(cycle_state)
        return status
    # However, "empty" preFilterState is legit which tolerates every toSchedule Pod.
    if not s.constraints:
        return None
    labels = node_info.node.labels
    pod_labels = pod.labels
    enable_min_domains = self.enable_min_domains
    match_nums = s.tp_pair_to_match_num
    for c in s.constraints:
        tp_key = c.topology_key
        if tp_key not in labels:
            return Status(Code.UnschedulableAndUnresolvable, [ERR_REASON_NODE_LABEL_NOT_MATCH])
        # 'existing matching num' + 'if self-match (1 or 0)' - 'global minimum' <= 'maxSkew'
        min_match_num, err = s.min_match_num(tp_key, c.min_domains, enable_min_domains)
        if err is not None:
            # upstream logs "Internal error occurred while retrieving value precalculated
            # in PreFilter" and ignores the constraint
            continue
        self_match_num = 1 if c.selector_matches(pod_labels) else 0
        match_num = match_nums.get((tp_key, labels[tp_key]), 0)
        skew = match_num + self_match_num - min_match_num
        if skew > c.max_skew:
            return Status(Code.Unschedulable, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
    return None


def size_heuristic(nodes: int, constraints) -> int:
    """sizeHeuristic (a map-capacity hint upstream; kept for reference)."""
    for c in constraints:
        if c.topology_key == LABEL_HOSTNAME:
            return nodes
    return 0


# ---------------------------------------------------------------------------------------------
# The same counts and Filter over the node table (not upstream's code; upstream's results)

def table_and_groups(snapshot):
    """``(table, groups)``: the snapshot's node table and its pods grouped by signature, or None
    for the per-node path: InterPodAffinity's ``table_and_groups`` (its USE_TABLE switch too)."""
    from ..interpodaffinity import filtering as ipa
    return ipa.table_and_groups(snapshot)


def matching_pods_column(groups, selector, ns: str, n: int):
    """countPodsMatchSelector for every node: pods of namespace ``ns``, not terminating,
    matching ``selector`` (0 for a Nothing or empty selector), from the pod groups."""
    col = np.zeros(n, dtype=np.int64)
    if selector is None or not selector.requirements:
        return col
    for sig, rep in groups.rep.items():
        # sig[-1]: not terminating (engine.nodetable.pod_signature)
        if sig[-1] and rep.namespace == ns and selector.matches(rep.labels):
            col += groups.cols[sig]
    return col


def eligible_rows(self, pod, constraints, table, require_all_keys: bool = True):
    """Per constraint, the nodes whose pods calPreFilterState counts: the node matches the
    pod's required node affinity (without the inclusion-policy feature), has every
    constraint's topology key, and passes the constraint's inclusion policies."""
    infos = table.node_infos
    n = len(infos)
    required = RequiredNodeAffinity(pod)
    ok = np.ones(n, dtype=bool)
    if require_all_keys:
        for c in constraints:
            ok &= table.labels(c.topology_key)[0] >= 0
    if not self.enable_node_inclusion_policy and not required.trivial:
        ok &= np.fromiter((required.match(ni.node) for ni in infos), dtype=bool, count=n)
    out = []
    for c in constraints:
        rows = ok
        if self.enable_node_inclusion_policy and c.needs_inclusion_check(required):
            rows = ok.copy()
            for i in np.flatnonzero(ok).tolist():
                if not c.match_node_inclusion_policies(pod, infos[i].node, required):
                    rows[i] = False
        out.append(rows)
    return out


def match_num_on_table(self, pod, constraints, tp_pair_to_match_num: dict, table, groups) -> None:
    """calPreFilterState's TpPairToMatchNum over the node table: per topology key, on each
    counted node the count of the last constraint of that key (upstream's per-node tpCounts
    map keeps the last write), summed per label value; the pairs in the order the per-node
    loop inserts them (the first counted node of each pair, then the first constraint of its
    key there), which the critical paths depend on on ties."""
    n = len(table.node_infos)
    ns = pod.namespace
    rows = eligible_rows(self, pod, constraints, table)
    by_key: dict = {}       # key -> [count column, counted mask, first constraint index]
    for i, c in enumerate(constraints):
        k = c.topology_key
        e = by_key.get(k)
        if e is None:
            e = by_key[k] = [np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool),
                             np.full(n, len(constraints), dtype=np.int64)]
        r = rows[i]
        if not r.any():
            continue
        col = matching_pods_column(groups, c.selector, ns, n)
        e[0][r] = col[r]
        e[2][r & ~e[1]] = i
        e[1] |= r
    # per pair: its first counted row, that row's first constraint of the key, the pair, the sum
    first_rows, first_cs, pairs, nums = [], [], [], []
    for k, (col, counted, first_c) in by_key.items():
        if not counted.any():
            continue
        codes, values, _index = table.labels(k)
        where = np.flatnonzero(counted)
        cs = codes[where]
        sums = np.bincount(cs, weights=col[where], minlength=len(values))
        uniq, first = np.unique(cs, return_index=True)
        rows_k = where[first]
        first_rows.append(rows_k)
        first_cs.append(first_c[rows_k])
        codes_k = uniq.tolist()
        pairs.extend(zip(repeat(k), itemgetter(*codes_k)(values) if len(codes_k) > 1 else (values[codes_k[0]],)))
        nums.append(sums[uniq].astype(np.int64))      # sums of counts: exact in float64
    if not pairs:
        return
    # in the order the per-node loop inserts them: by first row, then constraint (unique)
    order = np.lexsort((np.concatenate(first_cs), np.concatenate(first_rows))).tolist()
    tp_pair_to_match_num.update(zip(itemgetter(*order)(pairs) if len(order) > 1 else (pairs[order[0]],),
                                    np.concatenate(nums)[order].tolist()))


# Filter's statuses, by the codes of filter_suspects' Rejections
FILTER_STATUSES = ((Code.UnschedulableAndUnresolvable, (ERR_REASON_NODE_LABEL_NOT_MATCH,)),
                   (Code.Unschedulable, (ERR_REASON_CONSTRAINTS_NOT_MATCH,)))


def filter_suspects(self, state, pod, table):
    """PodTopologySpread.Filter on every node (Framework.filter_suspects): for each
    constraint in order, a missing topology key or ``matchNum + selfMatch - minMatchNum >
    maxSkew``, on label columns and the PreFilter state, as an engine.nodetable.Rejections
    whose codes are the first failure of each node (``FILTER_STATUSES``), None when none fails.
    False (cannot screen) without that state."""
    from ..interpodaffinity import filtering as ipa
    if not ipa.USE_TABLE:
        return False
    s = state.get(PRE_FILTER_STATE_KEY) if hasattr(state, "get") else None
    if not isinstance(s, PreFilterState):
        return False
    if not s.constraints:
        return None
    out = np.zeros(len(table.node_infos), dtype=np.int8)
    match_nums = s.tp_pair_to_match_num
    for c in s.constraints:
        tp_key = c.topology_key
        codes, values, index = table.labels(tp_key)
        undecided = out == 0    # the nodes no earlier constraint rejects
        out[undecided & (codes < 0)] = 1
        min_match_num, err = s.min_match_num(tp_key, c.min_domains, self.enable_min_domains)
        if err is not None:
            continue
        self_match_num = 1 if c.selector_matches(pod.labels) else 0
        lookup = np.zeros(len(values) + 1, dtype=np.int64)   # code -1 reads the trailing 0
        for (k, v), m in match_nums.items():
            if k == tp_key:
                code = index.get(v)
                if code is not None:
                    lookup[code] = m
        out[undecided & (codes >= 0) & (lookup[codes] + self_match_num - min_match_num > c.max_skew)] = 2
    return Rejections(out, FILTER_STATUSES) if out.any() else None
