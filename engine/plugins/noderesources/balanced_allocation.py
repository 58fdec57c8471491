"""NodeResourcesBalancedAllocation (upstream ``noderesources/balanced_allocation.go``,
v1.28.0): prefers nodes whose resource utilizations, with the pod placed, are even."""
from __future__ import annotations

import math

from ...framework.interface import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin, Status
from ..helper import ArgsChecker
from .fit import parse_resource_specs
from .resource_allocation import DEFAULT_RESOURCES, ResourceAllocationScorer

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class _PreScoreState:
    """balancedAllocationPreScoreState: the pod's request of each resource."""
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests):
        self.pod_requests = pod_requests

    def clone(self):
        return self


def balanced_resource_scorer(requested, allocatable) -> int:
    """balancedResourceScorer: (1 - the standard deviation of the requested/allocatable
    fractions, each capped at 1) * MaxNodeScore, truncated.  With two resources the
    deviation is |f0 - f1| / 2; resources the node lacks are left out."""
    fractions = []
    total = 0.0
    for i in range(len(requested)):
        if allocatable[i] == 0:
            continue
        f = float(requested[i]) / float(allocatable[i])
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    n = len(fractions)
    if n == 2:
        std = math.fabs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / float(n)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(n))
    return int((1 - std) * float(MAX_NODE_SCORE))


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    name = NAME

    def __init__(self, handle=None, resources=DEFAULT_RESOURCES):
        self.handle = handle
        self.scorer = ResourceAllocationScorer(NAME, balanced_resource_scorer, resources,
                                               use_requested=True)

    @property
    def resources(self):
        return self.scorer.resources

    def pre_score(self, state, pod, nodes):
        """BalancedAllocation.PreScore: the pod's plain request of each resource."""
        state.write(PRE_SCORE_STATE_KEY,
                    _PreScoreState(self.scorer.calculate_pod_resource_request_list(pod)))
        return None

    def score(self, state, pod, node_name):
        """BalancedAllocation.Score (requests computed here when PreScore did not run)."""
        try:
            node_info = self.handle.snapshot().get(node_name)
        except KeyError:
            return 0, Status.error(f'getting node "{node_name}" from Snapshot: '
                                   f'nodeinfo not found for node name "{node_name}"')
        return self.scorer.score(pod, node_info, self._pod_requests(state, pod))

    def score_nodes(self, state, pod, node_infos):
        """Score for every node in one call (same results as ``score``)."""
        return self.scorer.score_nodes(pod, node_infos, self._pod_requests(state, pod))

    def _pod_requests(self, state, pod):
        """The pod's requests from PreScore, or computed here when PreScore did not run."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            s = _PreScoreState(self.scorer.calculate_pod_resource_request_list(pod))
        return s.pod_requests

    def score_extensions(self):
        return None


def new(args, handle) -> BalancedAllocation:
    """NewBalancedAllocation with SetDefaults_NodeResourcesBalancedAllocationArgs (cpu and
    memory when no resources are given; weight 0 becomes 1) and
    ValidateNodeResourcesBalancedAllocationArgs (no duplicate names; every weight 1)."""
    ck = ArgsChecker(NAME, args, ("resources",))
    resources = parse_resource_specs(ck, ck.args, "resources", "resources") or list(DEFAULT_RESOURCES)
    seen = set()
    for i, (name, w) in enumerate(resources):
        if name in seen:
            ck.add(f"resources[{i}].name", f'Duplicate value: "{name}"')
        seen.add(name)
        if w != 1:
            ck.add(f"resources[{i}].weight", f"{w}: must be 1")
    ck.raise_if_any()
    return BalancedAllocation(handle, resources)
