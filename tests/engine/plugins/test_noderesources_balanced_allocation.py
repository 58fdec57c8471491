"""NodeResourcesBalancedAllocation.  Mirrors upstream
noderesources/balanced_allocation_test.go TestNodeResourcesBalancedAllocation."""
import pytest

from engine.errors import ConfigError
from engine.framework import CycleState
from engine.plugins.noderesources import balanced_allocation
from tests.engine.builders import make_node, make_pod, snapshot_handle

MI = 1024 * 1024
GPU = "nvidia.com/gpu"
CPU_MEM = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_MEM_GPU = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}]
CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]

_n = [0]


def spec_pod(containers, node=None):
    _n[0] += 1
    b = make_pod().name(f"p{_n[0]}")
    if node:
        b.node(node)
    for r in containers:
        b.req(r)
    return b.obj()


def cpu_and_memory():
    return spec_pod(CPU_MEM, "node2")


def cpu_and_memory_and_gpu():
    return spec_pod(CPU_MEM_GPU, "node1")


def cpu_only():
    return spec_pod(CPU_ONLY, "node1")


def cpu_only2():
    return spec_pod(CPU_ONLY, "node2")


def mk_node(name, milli_cpu, memory, ext=None):
    """noderesources test_util.go makeNode."""
    r = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    r.update({k: str(v) for k, v in (ext or {}).items()})
    return make_node().name(name).allocatable(r).obj()


DEFAULT = None
GPU_SET = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]}

CASES = [
    ("nothing scheduled, nothing requested", make_pod().obj(), [],
     [mk_node("node1", 4000, 10000), mk_node("node2", 4000, 10000)], [100, 100], DEFAULT, True),
    ("nothing scheduled, resources requested, differently sized nodes", cpu_and_memory(), [],
     [mk_node("node1", 4000, 10000), mk_node("node2", 6000, 10000)], [87, 100], DEFAULT, True),
    ("no resources requested, pods without container scheduled", make_pod().obj(),
     [spec_pod([], "node1"), spec_pod([], "node1"), spec_pod([], "node2"), spec_pod([], "node2")],
     [mk_node("node1", 4000, 10000), mk_node("node2", 4000, 10000)], [100, 100], DEFAULT, True),
    ("no resources requested, pods with container scheduled", make_pod().obj(),
     [make_pod().name("c1").node("node1").container().obj(), make_pod().name("c2").node("node1").container().obj()],
     [mk_node("node1", 250, 1000 * MI), mk_node("node2", 250, 1000 * MI)], [100, 100], DEFAULT, True),
    ("no resources requested, pods scheduled with resources", make_pod().obj(),
     [cpu_only(), cpu_only(), cpu_only2(), cpu_and_memory()],
     [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 20000)], [70, 82], DEFAULT, True),
    ("resources requested, pods scheduled with resources", cpu_and_memory(), [cpu_only(), cpu_and_memory()],
     [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 20000)], [82, 95], DEFAULT, True),
    ("resources requested, pods scheduled with resources, differently sized nodes", cpu_and_memory(),
     [cpu_only(), cpu_and_memory()],
     [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 50000)], [82, 80], DEFAULT, True),
    ("requested resources at node capacity", cpu_only(), [cpu_only(), cpu_and_memory()],
     [mk_node("node1", 6000, 10000), mk_node("node2", 6000, 10000)], [50, 75], DEFAULT, True),
    ("zero node resources, pods scheduled with resources", make_pod().obj(), [cpu_only(), cpu_and_memory()],
     [mk_node("node1", 0, 0), mk_node("node2", 0, 0)], [100, 100], DEFAULT, True),
    ("include scalar resource on a node for balanced resource allocation",
     make_pod().req({"memory": "0", GPU: "1"}).obj(), [cpu_and_memory(), cpu_and_memory_and_gpu()],
     [mk_node("node1", 3500, 40000, {GPU: 8}), mk_node("node2", 3500, 40000, {GPU: 8})], [70, 65], GPU_SET, True),
    ("node without the scalar resource results to a higher score", make_pod().obj(), [cpu_only(), cpu_only2()],
     [mk_node("node1", 3500, 40000, {GPU: 8}), mk_node("node2", 3500, 40000)], [100, 100],
     {"resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]}, True),
    ("resources requested, pods scheduled with resources if PreScore not called", cpu_and_memory(),
     [cpu_only(), cpu_and_memory()],
     [mk_node("node1", 10000, 20000), mk_node("node2", 10000, 20000)], [82, 95], DEFAULT, False),
]


@pytest.mark.parametrize("name,pod,pods,nodes,expected,args,run_pre_score", CASES, ids=[c[0] for c in CASES])
def test_balanced_allocation(name, pod, pods, nodes, expected, args, run_pre_score):
    pl = balanced_allocation.new(args, snapshot_handle(pods, nodes))
    state = CycleState()
    got = []
    for n in nodes:
        if run_pre_score:
            assert pl.pre_score(state, pod, nodes) is None
        s, st = pl.score(state, pod, n.name)
        assert st is None
        got.append(s)
    assert got == expected


def test_three_resources_use_population_std_dev():
    # Not an upstream row: fractions 0.5, 0.25, 0 -> mean 0.25, std sqrt(0.125/3) = 0.2041 -> 79.
    n = mk_node("node1", 4000, 4000, {GPU: 4})
    pod = make_pod().req({"cpu": "2", "memory": "1000", GPU: "0"}).obj()
    pl = balanced_allocation.new({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}]},
                                 snapshot_handle([], [n]))
    # ephemeral-storage: the node offers none -> left out; cpu 0.5 vs memory 0.25 -> 1 - 0.125.
    assert pl.score(CycleState(), pod, "node1") == (87, None)
    n2 = make_node().name("node1").allocatable({"cpu": "4", "memory": "4000", "ephemeral-storage": "1000"}).obj()
    pl = balanced_allocation.new({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}]},
                                 snapshot_handle([], [n2]))
    assert pl.score(CycleState(), pod, "node1") == (79, None)


def test_defaults():
    assert balanced_allocation.new(None, None).resources == [("cpu", 1), ("memory", 1)]
    assert balanced_allocation.new({"resources": [{"name": "cpu", "weight": 0}]}, None).resources == [("cpu", 1)]


P = "pluginConfig[NodeResourcesBalancedAllocation].args."


@pytest.mark.parametrize("args,problem", [
    ({"resources": [{"name": "cpu", "weight": 2}]}, P + "resources[0].weight: 2: must be 1"),
    ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, P + 'resources[1].name: Duplicate value: "cpu"'),
    ({"foo": []}, P[:-1] + ": unknown field 'foo'"),
])
def test_invalid_args(args, problem):
    with pytest.raises(ConfigError) as e:
        balanced_allocation.new(args, None)
    assert any(p.startswith(problem) for p in e.value.problems), e.value.problems
