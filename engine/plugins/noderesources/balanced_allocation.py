"""NodeResourcesBalancedAllocation (upstream ``noderesources/balanced_allocation.go``,
v1.28.0): prefers nodes whose resource utilizations, with the pod placed, are even."""
from __future__ import annotations

import math

from ...framework.interface import MAX_NODE_SCORE
from ..helper import ArgsChecker
from .fit import parse_resource_specs
from .resource_allocation import DEFAULT_RESOURCES, ResourceAllocationScorePlugin, ResourceAllocationScorer

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def balanced_resource_scorer(requested, allocatable) -> int:
    """balancedResourceScorer: (1 - the standard deviation of the requested/allocatable
    fractions, each capped at 1) * MaxNodeScore, truncated.  With two resources the
    deviation is |f0 - f1| / 2; resources the node lacks are left out."""
    if len(requested) == 2 and allocatable[0] and allocatable[1]:
        # the default two resources, both offered: the same arithmetic without the list
        f0 = float(requested[0]) / float(allocatable[0])
        f1 = float(requested[1]) / float(allocatable[1])
        if f0 > 1:
            f0 = 1.0
        if f1 > 1:
            f1 = 1.0
        return int((1 - math.fabs((f0 - f1) / 2)) * float(MAX_NODE_SCORE))
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


balanced_resource_scorer.kind = "balanced"   # ResourceAllocationScorer writes it out for cpu and memory


class BalancedAllocation(ResourceAllocationScorePlugin):
    name = NAME
    pre_score_state_key = PRE_SCORE_STATE_KEY

    def __init__(self, handle=None, resources=DEFAULT_RESOURCES):
        self.handle = handle
        self.scorer = ResourceAllocationScorer(NAME, balanced_resource_scorer, resources,
                                               use_requested=True)

    @property
    def resources(self):
        return self.scorer.resources


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
