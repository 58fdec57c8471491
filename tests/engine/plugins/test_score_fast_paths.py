"""The shorter scoring paths for the default resources (cpu, memory) give exactly the results
of the general ones (issue 12: an optimisation keeps every result byte-identical).

``ResourceAllocationScorer.score_nodes`` takes ``_score_nodes_cpu_memory`` when the scored
resources are cpu then memory; ``balanced_resource_scorer`` skips its list when both
resources are offered.  Checked on seeded random nodes, including nodes that offer no cpu or
no memory, and against the per-node ``score`` (the general path) and the deviation formula.
"""
import math
import random

import pytest

from engine.framework.interface import MAX_NODE_SCORE
from engine.plugins.noderesources import balanced_allocation
from engine.plugins.noderesources.resource_allocation import (DEFAULT_RESOURCES, ResourceAllocationScorer,
                                                                least_resource_scorer, most_resource_scorer)
from tests.engine.builders import make_node, make_pod
from engine.framework.types import NodeInfo


def random_nodes(rng, n=300):
    out = []
    for i in range(n):
        cpu = rng.choice(["0", "1", "2", "4", "8"])
        mem = rng.choice(["0", "1Gi", "4Gi", "16Gi"])
        ni = NodeInfo(make_node(f"n{i}").capacity(cpu=cpu, memory=mem).obj())
        for j in range(rng.randint(0, 4)):
            b = make_pod().name(f"p{i}-{j}").node(f"n{i}")
            r = rng.random()
            if r < 0.6:
                b.req(cpu=rng.choice(["100m", "500m", "1", "3"]), memory=rng.choice(["0", "100Mi", "2Gi"]))
            elif r < 0.9:
                b.container()        # no requests: the non-zero defaults (100m, 200Mi) count for Fit
            # else: no container at all
            ni.add_pod(b.obj())
        out.append(ni)
    return out


@pytest.mark.parametrize("scorer_fn", [least_resource_scorer, most_resource_scorer,
                                       lambda r: balanced_allocation.balanced_resource_scorer])
@pytest.mark.parametrize("use_requested", [False, True])
@pytest.mark.parametrize("resources", [DEFAULT_RESOURCES, [("cpu", 3), ("memory", 1)]], ids=["1-1", "3-1"])
def test_cpu_memory_path_equals_the_general_path(scorer_fn, use_requested, resources):
    """Also the strategies written out in ResourceAllocationScorer._score_nodes_inline
    (LeastAllocated with its weights, BalancedAllocation)."""
    rng = random.Random(12)
    scorer = ResourceAllocationScorer("s", scorer_fn(resources), resources, use_requested)
    assert scorer._cpu_memory
    nodes = random_nodes(rng)
    for k in range(20):
        pod = (make_pod().name(f"x{k}").req(cpu=rng.choice(["0", "250m", "2"]), memory=rng.choice(["0", "512Mi", "3Gi"]))
               if k % 3 else make_pod().name(f"x{k}").container()).obj()
        requests = scorer.calculate_pod_resource_request_list(pod)
        fast, err = scorer.score_nodes(pod, nodes, requests)
        assert err is None
        assert fast == [scorer.score(pod, ni, requests)[0] for ni in nodes]


def _balanced_reference(requested, allocatable):
    """balancedResourceScorer as written before the shortcut (the general path)."""
    fractions = [min(1.0, float(r) / float(a)) for r, a in zip(requested, allocatable) if a != 0]
    if len(fractions) == 2:
        std = math.fabs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * float(MAX_NODE_SCORE))


def test_balanced_shortcut_equals_the_formula():
    rng = random.Random(7)
    for _ in range(20000):
        a = [rng.choice([0, 1, 1000, 4000, 2**34]), rng.choice([0, 1, 3, 2**30, 2**36])]
        r = [rng.randint(0, 2 * max(1, a[0])), rng.randint(0, 2 * max(1, a[1]))]
        assert balanced_allocation.balanced_resource_scorer(r, a) == _balanced_reference(r, a)
