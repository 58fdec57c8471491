"""The resource-allocation scorer shared by NodeResourcesFit and
NodeResourcesBalancedAllocation (upstream ``noderesources/resource_allocation.go``,
``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go``, v1.28.0).

``resources`` is a list of ``(name, weight)`` pairs, in configuration order.
"""
from __future__ import annotations

import math

import numpy as np

from ...framework.interface import Code, MAX_NODE_SCORE, PreScorePlugin, ScorePlugin, Status
from ...util import LIMIT
from ..helper import build_broken_linear_function, go_round, is_scalar_resource_name

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))

MAX_CUSTOM_PRIORITY_SCORE = 10   # config.MaxCustomPriorityScore
MAX_UTILIZATION = 100


class ResourceAllocationScorer:
    """resourceAllocationScorer.

    ``use_requested`` False (NodeResourcesFit) scores cpu and memory with the non-zero
    requests (a container without a request counts 100m CPU / 200MiB); True
    (BalancedAllocation) uses the plain requests.
    """
    __slots__ = ("name", "scorer", "resources", "use_requested", "_kinds", "_cpu_memory", "table_kind")

    def __init__(self, name: str, scorer, resources, use_requested: bool = False):
        self.name = name
        self.scorer = scorer
        self.resources = list(resources)
        self.use_requested = use_requested
        self._kinds = [(r, _kind(r)) for r, _ in self.resources]
        # the default resources, cpu then memory: score_nodes takes a shorter path (same results)
        self._cpu_memory = [r for r, _ in self.resources] == ["cpu", "memory"]
        # "least" or "balanced" when score_table computes this scorer over the node table
        self.table_kind = getattr(scorer, "kind", None) if self._cpu_memory else None

    def calculate_pod_resource_request(self, pod, resource: str) -> int:
        """resourceAllocationScorer.calculatePodResourceRequest: PodRequests of the pod, with
        the non-zero defaults for cpu/memory unless ``use_requested``."""
        if not self.use_requested:
            if resource == "cpu":
                return pod.non0_cpu
            if resource == "memory":
                return pod.non0_mem
        return pod.requests.get(resource, 0)

    def calculate_pod_resource_request_list(self, pod) -> list:
        """resourceAllocationScorer.calculatePodResourceRequestList."""
        return [self.calculate_pod_resource_request(pod, name) for name, _ in self.resources]

    def calculate_resource_allocatable_request(self, node_info, resource: str, pod_request: int):
        """resourceAllocationScorer.calculateResourceAllocatableRequest: (allocatable, requested
        including this pod) of one resource on the node, or (0, 0) when the resource is left out
        (a scalar resource the pod does not request, or one the node does not offer)."""
        scalar = is_scalar_resource_name(resource)
        if pod_request == 0 and scalar:
            return 0, 0
        alloc = node_info.node.allocatable
        if resource == "cpu":
            used = node_info.requested.get("cpu", 0) if self.use_requested else node_info.non0_cpu
            return alloc.get("cpu", 0), used + pod_request
        if resource == "memory":
            used = node_info.requested.get("memory", 0) if self.use_requested else node_info.non0_mem
            return alloc.get("memory", 0), used + pod_request
        if resource == "ephemeral-storage":
            return alloc.get("ephemeral-storage", 0), node_info.requested.get("ephemeral-storage", 0) + pod_request
        if scalar and resource in alloc:
            return alloc[resource], node_info.requested.get(resource, 0) + pod_request
        return 0, 0

    def score_nodes(self, pod, node_infos, pod_requests):
        """``score`` for every node: (list of scores, None) or (None, the first error)."""
        if self._cpu_memory:
            return self._score_nodes_cpu_memory(node_infos, pod_requests), None
        score = self.score
        out = []
        for ni in node_infos:
            v, status = score(pod, ni, pod_requests)
            if status is not None:
                return None, status
            out.append(v)
        return out, None

    def _score_nodes_cpu_memory(self, node_infos, pod_requests):
        """``score`` of each node for the resources cpu and memory, with the loop over the
        resources unrolled: a resource the node does not offer counts as (0 requested, 0
        allocatable), as ``score`` leaves it out."""
        cpu_request, memory_request = pod_requests
        scorer = self.scorer
        kind = self.table_kind
        if kind is not None:
            return self._score_nodes_inline(kind, scorer, node_infos, cpu_request, memory_request)
        out = []
        append = out.append
        if self.use_requested:
            for ni in node_infos:
                alloc = ni.node.allocatable
                a0 = alloc.get("cpu", 0)
                a1 = alloc.get("memory", 0)
                requested = ni.requested
                append(scorer([requested.get("cpu", 0) + cpu_request if a0 else 0,
                               requested.get("memory", 0) + memory_request if a1 else 0], [a0, a1]))
        else:
            for ni in node_infos:
                alloc = ni.node.allocatable
                a0 = alloc.get("cpu", 0)
                a1 = alloc.get("memory", 0)
                append(scorer([ni.non0_cpu + cpu_request if a0 else 0,
                               ni.non0_mem + memory_request if a1 else 0], [a0, a1]))
        return out

    def _score_nodes_inline(self, kind, scorer, node_infos, cpu_request, memory_request):
        """The default strategies' arithmetic written out for cpu and memory, the same
        operations in the same order as ``least_resource_scorer`` / ``balanced_resource_scorer``
        (integers, and the same float expressions), without a call per node."""
        if self.use_requested:
            used = [(ni.requested.get("cpu", 0), ni.requested.get("memory", 0)) for ni in node_infos]
        else:
            used = [(ni.non0_cpu, ni.non0_mem) for ni in node_infos]
        allocs = [ni.node.allocatable for ni in node_infos]
        out = []
        append = out.append
        if kind == "least":
            w0, w1 = scorer.weights
            for (u0, u1), alloc in zip(used, allocs):
                a0 = alloc.get("cpu", 0)
                a1 = alloc.get("memory", 0)
                node_score = weight_sum = 0
                if a0:
                    r0 = u0 + cpu_request
                    node_score += (0 if r0 > a0 else ((a0 - r0) * MAX_NODE_SCORE) // a0) * w0
                    weight_sum += w0
                if a1:
                    r1 = u1 + memory_request
                    node_score += (0 if r1 > a1 else ((a1 - r1) * MAX_NODE_SCORE) // a1) * w1
                    weight_sum += w1
                append(node_score // weight_sum if weight_sum else 0)
            return out
        # "balanced"
        max_score = float(MAX_NODE_SCORE)
        for (u0, u1), alloc in zip(used, allocs):
            a0 = alloc.get("cpu", 0)
            a1 = alloc.get("memory", 0)
            if a0 and a1:
                f0 = float(u0 + cpu_request) / float(a0)
                f1 = float(u1 + memory_request) / float(a1)
                if f0 > 1:
                    f0 = 1.0
                if f1 > 1:
                    f1 = 1.0
                append(int((1 - math.fabs((f0 - f1) / 2)) * max_score))
            else:
                append(scorer([u0 + cpu_request if a0 else 0, u1 + memory_request if a1 else 0], [a0, a1]))
        return out

    def score_table(self, table, rows, pod_requests):
        """``_score_nodes_inline`` over the node table's rows (engine.nodetable.NodeTable) as
        array operations: the same integer and float64 operations in the same order, so the
        same scores; None when this scorer or request is not one it computes."""
        kind = self.table_kind
        cpu_request, memory_request = pod_requests
        if kind is None or cpu_request > LIMIT or memory_request > LIMIT:
            return None
        a0 = table.alloc_cpu[rows]
        a1 = table.alloc_mem[rows]
        if self.use_requested:
            r0 = table.req_cpu[rows] + cpu_request
            r1 = table.req_mem[rows] + memory_request
        else:
            r0 = table.non0_cpu[rows] + cpu_request
            r1 = table.non0_mem[rows] + memory_request
        has0 = a0 != 0
        has1 = a1 != 0
        if kind == "least":
            w0, w1 = self.scorer.weights
            s0 = np.where(r0 > a0, 0, ((a0 - r0) * MAX_NODE_SCORE) // np.where(has0, a0, 1)) * (w0 * has0)
            s1 = np.where(r1 > a1, 0, ((a1 - r1) * MAX_NODE_SCORE) // np.where(has1, a1, 1)) * (w1 * has1)
            weight_sum = w0 * has0 + w1 * has1
            out = np.where(weight_sum != 0, (s0 + s1) // np.where(weight_sum != 0, weight_sum, 1), 0)
            return out.tolist()
        # "balanced"
        both = has0 & has1
        with np.errstate(divide="ignore", invalid="ignore"):
            f0 = np.minimum(r0.astype(np.float64) / a0.astype(np.float64), 1.0)
            f1 = np.minimum(r1.astype(np.float64) / a1.astype(np.float64), 1.0)
            scores = ((1 - np.abs((f0 - f1) / 2)) * float(MAX_NODE_SCORE))
        out = np.where(both, scores, 0).astype(np.int64).tolist()
        if not both.all():
            scorer = self.scorer
            for i in np.flatnonzero(~both).tolist():
                x0, x1 = int(a0[i]), int(a1[i])
                out[i] = scorer([int(r0[i]) if x0 else 0, int(r1[i]) if x1 else 0], [x0, x1])
        return out

    def score(self, pod, node_info, pod_requests):
        """resourceAllocationScorer.score -> (score, Status | None): calculateResourceAllocatableRequest
        for each resource (inlined, with the resource kinds worked out once), then the
        strategy's scorer."""
        kinds = self._kinds
        n = len(kinds)
        if n == 0:
            return 0, Status(Code.Error, "resources not found")
        requested = [0] * n
        allocatable = [0] * n
        alloc = node_info.node.allocatable
        node_requested = node_info.requested
        use_requested = self.use_requested
        for i in range(n):
            resource, kind = kinds[i]
            pod_request = pod_requests[i]
            if kind == _CPU:
                a = alloc.get("cpu", 0)
                if a == 0:
                    continue
                used = node_requested.get("cpu", 0) if use_requested else node_info.non0_cpu
            elif kind == _MEMORY:
                a = alloc.get("memory", 0)
                if a == 0:
                    continue
                used = node_requested.get("memory", 0) if use_requested else node_info.non0_mem
            elif kind == _SCALAR:
                if pod_request == 0:
                    continue
                a = alloc.get(resource, 0)
                if a == 0:
                    continue
                used = node_requested.get(resource, 0)
            elif kind == _EPHEMERAL:
                a = alloc.get("ephemeral-storage", 0)
                if a == 0:
                    continue
                used = node_requested.get("ephemeral-storage", 0)
            else:
                continue
            allocatable[i] = a
            requested[i] = used + pod_request
        return self.scorer(requested, allocatable), None


_CPU, _MEMORY, _EPHEMERAL, _SCALAR, _OTHER = range(5)


def _kind(resource: str) -> int:
    if resource == "cpu":
        return _CPU
    if resource == "memory":
        return _MEMORY
    if resource == "ephemeral-storage":
        return _EPHEMERAL
    if is_scalar_resource_name(resource):
        return _SCALAR
    return _OTHER


# ---------------------------------------------------------------------------------------------
# Strategies


def least_requested_score(requested: int, capacity: int) -> int:
    """leastRequestedScore: the unused share of capacity, 0..MaxNodeScore."""
    if capacity == 0:
        return 0
    if requested > capacity:
        return 0
    return ((capacity - requested) * MAX_NODE_SCORE) // capacity


def least_resource_scorer(resources):
    """leastResourceScorer: the weighted mean of leastRequestedScore over the resources the
    node offers."""
    weights = [w for _, w in resources]

    def scorer(requested, allocatable):
        node_score = weight_sum = 0
        for i in range(len(requested)):
            cap = allocatable[i]
            if cap == 0:
                continue
            w = weights[i]
            node_score += least_requested_score(requested[i], cap) * w
            weight_sum += w
        if weight_sum == 0:
            return 0
        return node_score // weight_sum

    if len(weights) == 2:       # cpu and memory: ResourceAllocationScorer writes it out
        scorer.kind = "least"
        scorer.weights = tuple(weights)
    return scorer


def most_requested_score(requested: int, capacity: int) -> int:
    """mostRequestedScore: the used share of capacity (capped at capacity), 0..MaxNodeScore."""
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return (requested * MAX_NODE_SCORE) // capacity


def most_resource_scorer(resources):
    """mostResourceScorer: the weighted mean of mostRequestedScore."""
    weights = [w for _, w in resources]

    def scorer(requested, allocatable):
        node_score = weight_sum = 0
        for i in range(len(requested)):
            cap = allocatable[i]
            if cap == 0:
                continue
            w = weights[i]
            node_score += most_requested_score(requested[i], cap) * w
            weight_sum += w
        if weight_sum == 0:
            return 0
        return node_score // weight_sum

    return scorer


def build_requested_to_capacity_ratio_scorer_function(shape, resources):
    """buildRequestedToCapacityRatioScorerFunction: each resource's utilization (percent,
    integer) through the broken-linear shape; resources scoring 0 are left out of the
    weighted mean, which is rounded half away from zero."""
    raw = build_broken_linear_function(shape)
    weights = [w for _, w in resources]

    def resource_scoring_function(requested, capacity):
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def scorer(requested, allocatable):
        node_score = weight_sum = 0
        for i in range(len(requested)):
            cap = allocatable[i]
            if cap == 0:
                continue
            w = weights[i]
            s = resource_scoring_function(requested[i], cap)
            if s > 0:
                node_score += s * w
                weight_sum += w
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    return scorer


def requested_to_capacity_ratio_scorer(resources, shape):
    """requestedToCapacityRatioScorer: shape scores (0..10) are scaled to 0..MaxNodeScore."""
    scaled = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    return build_requested_to_capacity_ratio_scorer_function(scaled, resources)


def new_scorer(strategy_type: str, resources, shape=None) -> ResourceAllocationScorer:
    """nodeResourceStrategyTypeMap[strategy_type](args)."""
    if strategy_type == LEAST_ALLOCATED:
        fn = least_resource_scorer(resources)
    elif strategy_type == MOST_ALLOCATED:
        fn = most_resource_scorer(resources)
    elif strategy_type == REQUESTED_TO_CAPACITY_RATIO:
        fn = requested_to_capacity_ratio_scorer(resources, shape or ())
    else:
        raise ValueError(f"scoring strategy {strategy_type} is not supported")
    return ResourceAllocationScorer(strategy_type, fn, resources, use_requested=False)


# Score reads the node table from this many nodes on: always; tests set it out of reach to run
# the per-node path for comparison
TABLE_MIN_NODES = 1


def _table_rows(handle, node_infos):
    """(the snapshot's node table, the rows of ``node_infos`` in it as an index array), or None
    when there is no table or a NodeInfo is not the snapshot's own."""
    snap = handle.snapshot()
    table = snap.node_table() if snap is not None and hasattr(snap, "node_table") else None
    if table is None:
        return None
    if getattr(node_infos, "table", None) is table:
        return table, node_infos.rows        # the Filter loop's FeasibleNodes
    row = table.row
    try:
        rows = [row[ni.name] for ni in node_infos]
    except KeyError:
        return None
    infos = table.node_infos
    for r, ni in zip(rows, node_infos):
        if infos[r] is not ni:
            return None
    return table, np.array(rows, dtype=np.intp)


class PreScoreState:
    """preScoreState / balancedAllocationPreScoreState: the pod's request of each resource."""
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests):
        self.pod_requests = pod_requests

    def clone(self):
        return self


class ResourceAllocationScorePlugin(PreScorePlugin, ScorePlugin):
    """PreScore and Score shared by NodeResourcesFit and NodeResourcesBalancedAllocation
    (Fit.PreScore/Score and BalancedAllocation.PreScore/Score upstream): PreScore stores the
    pod's request of each scored resource; Score hands the node to ``self.scorer`` (a
    ResourceAllocationScorer), computing the requests itself when PreScore did not run.
    Subclasses set ``pre_score_state_key`` and ``self.scorer`` / ``self.handle``."""
    pre_score_state_key = ""

    def pre_score(self, state, pod, nodes):
        state.write(self.pre_score_state_key,
                    PreScoreState(self.scorer.calculate_pod_resource_request_list(pod)))
        return None

    def score(self, state, pod, node_name):
        try:
            node_info = self.handle.snapshot().get(node_name)
        except KeyError:
            return 0, Status.error(f'getting node "{node_name}" from Snapshot: '
                                   f'nodeinfo not found for node name "{node_name}"')
        return self.scorer.score(pod, node_info, self._pod_requests(state, pod))

    def score_nodes(self, state, pod, node_infos):
        """Score for every node in one call (same results as ``score``): over the snapshot's
        node table when the nodes are the snapshot's own (ResourceAllocationScorer.score_table)."""
        pod_requests = self._pod_requests(state, pod)
        if self.scorer.table_kind is not None and len(node_infos) >= TABLE_MIN_NODES and self.handle is not None:
            rows = _table_rows(self.handle, node_infos)
            if rows is not None:
                out = self.scorer.score_table(rows[0], rows[1], pod_requests)
                if out is not None:
                    return out, None
        return self.scorer.score_nodes(pod, node_infos, pod_requests)

    def _pod_requests(self, state, pod):
        s = state.get(self.pre_score_state_key)
        if s is None:
            s = PreScoreState(self.scorer.calculate_pod_resource_request_list(pod))
        return s.pod_requests

    def score_extensions(self):
        return None
