"""NodeResourcesFit.  Filter tables mirror upstream noderesources/fit_test.go
(TestEnoughRequests, TestPreFilterDisabled, TestNotEnoughRequests, TestStorageRequests,
TestRestartableInitContainers, TestFitScore, TestEventsToRegister); scoring tables mirror
least_allocated_test.go, most_allocated_test.go and requested_to_capacity_ratio_test.go."""
import pytest

from engine.errors import ConfigError
from engine.framework import ActionType, Code, CycleState
from engine.framework.interface import GVK
from engine.plugins.noderesources import fit
from engine.plugins.noderesources.resource_allocation import new_scorer
from tests.engine.builders import make_node, make_pod, node_info, snapshot_handle

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
IR = fit.InsufficientResource


def _container_req(u: dict) -> dict:
    r = {"cpu": f"{u.get('cpu', 0)}m", "memory": str(u.get("memory", 0)), "pods": "0",
         "ephemeral-storage": str(u.get("storage", 0))}
    for k, v in u.get("scalar", {}).items():
        r[k] = str(v)
    return r


def res_pod(*usages, init=(), overhead=None):
    """newResourcePod / newResourceInitPod / newResourceOverheadPod."""
    b = make_pod()
    for u in usages:
        b.container(image="pause", requests=_container_req(u))
    for u in init:
        b.init_req(_container_req(u))
    if overhead:
        b.overhead(overhead)
    return b.obj()


def u(cpu=0, memory=0, storage=0, **scalar):
    d = {"cpu": cpu, "memory": memory, "storage": storage}
    if scalar:
        d["scalar"] = {k.replace("__", "/").replace("_", "-"): v for k, v in scalar.items()}
    return d


def alloc_node(cpu, memory, pods, ext_a, storage, huge_a):
    """makeAllocatableResources."""
    return make_node().name("node").allocatable({
        "cpu": f"{cpu}m", "memory": memory, "pods": pods, EXT_A: ext_a,
        "ephemeral-storage": storage, HUGE_A: huge_a}).obj()


def sc(name, q):
    return {"scalar": {name: q}}


def usc(cpu=0, memory=0, **kw):
    d = {"cpu": cpu, "memory": memory}
    d.update(kw)
    return d


def ins(name, requested, used, capacity):
    return IR(name, f"Insufficient {name}", requested, used, capacity)


# name, pod, existing pod, args, want insufficient resources
ENOUGH = [
    ("no resources requested always fits", make_pod().obj(), res_pod(u(10, 20)), None, []),
    ("too many resources fails", res_pod(u(1, 1)), res_pod(u(10, 20)), None,
     [ins("cpu", 1, 10, 10), ins("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu", res_pod(u(1, 1), init=[u(3, 1)]),
     res_pod(u(8, 19)), None, [ins("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu", res_pod(u(1, 1), init=[u(3, 1), u(2, 1)]),
     res_pod(u(8, 19)), None, [ins("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory", res_pod(u(1, 1), init=[u(1, 3)]),
     res_pod(u(9, 19)), None, [ins("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory", res_pod(u(1, 1), init=[u(1, 3), u(1, 2)]),
     res_pod(u(9, 19)), None, [ins("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum", res_pod(u(1, 1), init=[u(1, 1)]),
     res_pod(u(9, 19)), None, []),
    ("multiple init containers fit because it's the max, not sum", res_pod(u(1, 1), init=[u(1, 1), u(1, 1)]),
     res_pod(u(9, 19)), None, []),
    ("both resources fit", res_pod(u(1, 1)), res_pod(u(5, 5)), None, []),
    ("one resource memory fits", res_pod(u(2, 1)), res_pod(u(9, 5)), None, [ins("cpu", 2, 9, 10)]),
    ("one resource cpu fits", res_pod(u(1, 2)), res_pod(u(5, 19)), None, [ins("memory", 2, 19, 20)]),
    ("equal edge case", res_pod(u(5, 1)), res_pod(u(5, 19)), None, []),
    ("equal edge case for init container", res_pod(u(4, 1), init=[u(5, 1)]), res_pod(u(5, 19)), None, []),
    ("extended resource fits", res_pod(usc(**sc(EXT_A, 1))), res_pod(u()), None, []),
    ("extended resource fits for init container", res_pod(u(), init=[usc(**sc(EXT_A, 1))]), res_pod(u()), None, []),
    ("extended resource capacity enforced", res_pod(usc(1, 1, **sc(EXT_A, 10))),
     res_pod(usc(0, 0, **sc(EXT_A, 0))), None, [ins(EXT_A, 10, 0, 5)]),
    ("extended resource capacity enforced for init container", res_pod(u(), init=[usc(1, 1, **sc(EXT_A, 10))]),
     res_pod(usc(0, 0, **sc(EXT_A, 0))), None, [ins(EXT_A, 10, 0, 5)]),
    ("extended resource allocatable enforced", res_pod(usc(1, 1, **sc(EXT_A, 1))),
     res_pod(usc(0, 0, **sc(EXT_A, 5))), None, [ins(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container", res_pod(u(), init=[usc(1, 1, **sc(EXT_A, 1))]),
     res_pod(usc(0, 0, **sc(EXT_A, 5))), None, [ins(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers",
     res_pod(usc(1, 1, **sc(EXT_A, 3)), usc(1, 1, **sc(EXT_A, 3))),
     res_pod(usc(0, 0, **sc(EXT_A, 2))), None, [ins(EXT_A, 6, 2, 5)]),
    ("extended resource allocatable admits multiple init containers",
     res_pod(u(), init=[usc(1, 1, **sc(EXT_A, 3)), usc(1, 1, **sc(EXT_A, 3))]),
     res_pod(usc(0, 0, **sc(EXT_A, 2))), None, []),
    ("extended resource allocatable enforced for multiple init containers",
     res_pod(u(), init=[usc(1, 1, **sc(EXT_A, 6)), usc(1, 1, **sc(EXT_A, 3))]),
     res_pod(usc(0, 0, **sc(EXT_A, 2))), None, [ins(EXT_A, 6, 2, 5)]),
    ("extended resource allocatable enforced for unknown resource", res_pod(usc(1, 1, **sc(EXT_B, 1))),
     res_pod(u()), None, [ins(EXT_B, 1, 0, 0)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     res_pod(u(), init=[usc(1, 1, **sc(EXT_B, 1))]), res_pod(u()), None, [ins(EXT_B, 1, 0, 0)]),
    ("kubernetes.io resource capacity enforced for init container (subdomain)",
     res_pod(u(), init=[usc(1, 1, **sc(K8S_B, 10))]), res_pod(u()), None, [ins(K8S_B, 10, 0, 0)]),
    ("hugepages resource capacity enforced", res_pod(usc(1, 1, **sc(HUGE_A, 10))),
     res_pod(usc(0, 0, **sc(HUGE_A, 0))), None, [ins(HUGE_A, 10, 0, 5)]),
    ("hugepages resource capacity enforced for init container", res_pod(u(), init=[usc(1, 1, **sc(HUGE_A, 10))]),
     res_pod(usc(0, 0, **sc(HUGE_A, 0))), None, [ins(HUGE_A, 10, 0, 5)]),
    ("hugepages resource allocatable enforced for multiple containers",
     res_pod(usc(1, 1, **sc(HUGE_A, 3)), usc(1, 1, **sc(HUGE_A, 3))),
     res_pod(usc(0, 0, **sc(HUGE_A, 2))), None, [ins(HUGE_A, 6, 2, 5)]),
    ("skip checking ignored extended resource", res_pod(usc(1, 1, **sc(EXT_B, 1))), res_pod(u()),
     {"ignoredResources": ["example.com/bbb"]}, []),
    ("resources + pod overhead fits", res_pod(u(1, 1), overhead={"cpu": "3m", "memory": "13"}),
     res_pod(u(5, 5)), None, []),
    ("requests + overhead does not fit for memory", res_pod(u(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     res_pod(u(5, 5)), None, [ins("memory", 16, 5, 20)]),
    ("skip checking ignored extended resource via resource groups (subdomain.kubernetes.io is not extended)",
     res_pod({"cpu": 1, "memory": 1, "scalar": {EXT_B: 1, K8S_B: 1}}), res_pod(u()),
     {"ignoredResourceGroups": ["example.com"]}, [ins(K8S_B, 1, 0, 0)]),
    ("skip checking extended resource request with quantity zero via resource groups",
     res_pod(usc(1, 1, **sc(EXT_A, 0))), res_pod(usc(0, 0, **sc(EXT_A, 6))), None, []),
    ("skip checking resource request with quantity zero",
     make_pod().req({EXT_A: "1"}).obj(), res_pod(usc(20, 30, **sc(EXT_A, 1))), None, []),
    # Not upstream: several lacking scalar resources are reported in name order (Go's map
    # order is random there).
    ("several scalar resources, name order", res_pod({"scalar": {EXT_B: 1, "example.com/abc": 1, HUGE_A: 9}}),
     res_pod(u()), None, [ins("example.com/abc", 1, 0, 0), ins(EXT_B, 1, 0, 0), ins(HUGE_A, 9, 0, 5)]),
]


@pytest.mark.parametrize("name,pod,existing,args,want", ENOUGH, ids=[c[0] for c in ENOUGH])
def test_enough_requests(name, pod, existing, args, want):
    ni = node_info(alloc_node(10, 20, 32, 5, 20, 5), existing)
    pl = fit.new(args, None)
    state = CycleState()
    assert pl.pre_filter(state, pod) == (None, None)
    st = pl.filter(state, pod, ni)
    if want:
        assert st.code == Code.Unschedulable
        assert st.reasons == [r.reason for r in want]
    else:
        assert st is None
    s = fit.compute_pod_resource_request(pod, pl.ignored_resources, pl.ignored_resource_groups)
    assert fit.fits_request(s, ni) == want


def test_kubernetes_io_resource_capacity_enforced():
    pod = res_pod(usc(1, 1, **sc(K8S_A, 10)))
    ni = node_info(alloc_node(10, 20, 32, 5, 20, 5), res_pod(u()))
    assert fit.fits(pod, ni) == [ins(K8S_A, 10, 0, 0)]


def test_pre_filter_disabled():
    pl = fit.new(None, None)
    st = pl.filter(CycleState(), make_pod().obj(), node_info(make_node().name("n").obj()))
    assert st.code == Code.Error
    assert st.reasons == ['error reading "PreFilterNodeResourcesFit" from cycleState: not found']


NOT_ENOUGH = [
    ("even without specified resources, predicate fails when there's no space for additional pod",
     make_pod().obj(), res_pod(u(10, 20))),
    ("even if both resources fit, predicate fails when there's no space for additional pod",
     res_pod(u(1, 1)), res_pod(u(5, 5))),
    ("even for equal edge case, predicate fails when there's no space for additional pod",
     res_pod(u(5, 1)), res_pod(u(5, 19))),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     res_pod(u(5, 1), init=[u(5, 1)]), res_pod(u(5, 19))),
]


@pytest.mark.parametrize("name,pod,existing", NOT_ENOUGH, ids=[c[0] for c in NOT_ENOUGH])
def test_not_enough_requests(name, pod, existing):
    ni = node_info(alloc_node(10, 20, 1, 0, 0, 0), existing)
    pl = fit.new({}, None)
    state = CycleState()
    pl.pre_filter(state, pod)
    st = pl.filter(state, pod, ni)
    assert st.code == Code.Unschedulable and st.reasons == ["Too many pods"]
    assert fit.fits(pod, ni) == [IR("pods", "Too many pods", 1, 1, 1)]


STORAGE = [
    ("empty storage requested, and pod fits", res_pod(u(1, 1)), res_pod(u(2, 10)), None),
    ("storage ephemeral local storage request exceeds allocatable", res_pod(u(storage=25)), res_pod(u(2, 2)),
     "Insufficient ephemeral-storage"),
    ("ephemeral local storage is sufficient", res_pod(u(storage=5)), res_pod(u(2, 2, storage=10)), None),
    ("pod fits", res_pod(u(storage=10)), res_pod(u(2, 2)), None),
]


@pytest.mark.parametrize("name,pod,existing,reason", STORAGE, ids=[c[0] for c in STORAGE])
def test_storage_requests(name, pod, existing, reason):
    ni = node_info(alloc_node(10, 20, 32, 5, 20, 5), existing)
    pl = fit.new(None, None)
    state = CycleState()
    pl.pre_filter(state, pod)
    st = pl.filter(state, pod, ni)
    if reason:
        assert st.code == Code.Unschedulable and st.reasons == [reason]
    else:
        assert st is None


@pytest.mark.parametrize("restartable,sidecars,want", [
    (False, False, None),
    (True, False, "Pod has a restartable init container and the SidecarContainers feature is disabled"),
    (False, True, None),
    (True, True, None),
])
def test_restartable_init_containers(restartable, sidecars, want):
    b = make_pod().container(name="regular", image="pause")
    if restartable:
        b.init_req(restart_policy="Always")
    pod = b.obj()
    ni = node_info(make_node().name("n").allocatable(cpu="0", memory="0", pods=1).obj())
    pl = fit.new(None, None, enable_sidecar_containers=sidecars)
    state = CycleState()
    assert pl.pre_filter(state, pod) == (None, None)
    st = pl.filter(state, pod, ni)
    if want:
        assert st.code == Code.UnschedulableAndUnresolvable and st.reasons == [want]
    else:
        assert st is None


@pytest.mark.parametrize("in_place,pod_action", [
    (True, ActionType.Update | ActionType.Delete),
    (False, ActionType.Delete),
])
def test_events_to_register(in_place, pod_action):
    pl = fit.new(None, None, enable_in_place_pod_vertical_scaling=in_place)
    assert [(e.event.resource, e.event.action_type) for e in pl.events_to_register()] == [
        (GVK.Pod, pod_action), (GVK.Node, ActionType.Add | ActionType.Update)]


# ---------------------------------------------------------------------------------------------
# Scoring

EXT_RES = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_SET = DEFAULT + [{"name": EXT_RES, "weight": 1}]


def cap_node(name, **res):
    """st.MakeNode().Capacity(...) (pods 32); ``ext=`` is the extended resource abc.com/xyz."""
    r = {(EXT_RES if k == "ext" else k): v for k, v in res.items()}
    return make_node().name(name).capacity(r).obj()


def req_pod(*reqs, node=None):
    b = make_pod()
    if node:
        b.node(node)
    for r in reqs:
        b.req(r)
    return b.obj()


def run_scores(args, pod, nodes, existing=(), run_pre_score=True):
    pl = fit.new(args, snapshot_handle(existing, nodes))
    state = CycleState()
    if run_pre_score:
        assert pl.pre_score(state, pod, nodes) is None
    out = []
    for n in nodes:
        s, st = pl.score(state, pod, n.name)
        assert st is None
        out.append(s)
    return out


N4_10 = dict(cpu="4000", memory="10000")
N6_10 = dict(cpu="6000", memory="10000")
N10_20 = dict(cpu="10000", memory="20000")
R12 = {"cpu": "1000", "memory": "2000"}
R23 = {"cpu": "2000", "memory": "3000"}

LEAST = [
    ("nothing scheduled, nothing requested", req_pod(), [cap_node("node1", **N4_10), cap_node("node2", **N4_10)],
     [], DEFAULT, [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", req_pod(R12, R23),
     [cap_node("node1", **N4_10), cap_node("node2", **N6_10)], [], DEFAULT, [37, 50]),
    ("no resources requested, pods scheduled", req_pod(), [cap_node("node1", **N4_10), cap_node("node2", **N4_10)],
     [req_pod(node="node1"), req_pod(node="node1"), req_pod(node="node2"), req_pod(node="node2")],
     DEFAULT, [100, 100]),
    ("no resources requested, pods scheduled with resources", req_pod(),
     [cap_node("node1", **N10_20), cap_node("node2", **N10_20)],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "0"}, node="node1"),
      req_pod({"cpu": "3000", "memory": "0"}, node="node2"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [70, 57]),
    ("resources requested, pods scheduled with resources", req_pod(R12, R23),
     [cap_node("node1", **N10_20), cap_node("node2", **N10_20)],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [57, 45]),
    ("resources requested, pods scheduled with resources, differently sized nodes", req_pod(R12, R23),
     [cap_node("node1", **N10_20), cap_node("node2", cpu="10000", memory="50000")],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [57, 60]),
    ("requested resources exceed node capacity", req_pod({"cpu": "3000", "memory": "0"}),
     [cap_node("node1", **N4_10), cap_node("node2", **N4_10)],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [50, 25]),
    ("zero node resources, pods scheduled with resources", req_pod(),
     [make_node().name("node1").obj(), make_node().name("node2").obj()],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [0, 0]),
    ("different weight on CPU and memory", req_pod(R12, R23, node="node1"),
     [cap_node("node1", **N4_10), cap_node("node2", **N6_10)], [],
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], [41, 50]),
    ("bypass extended resource if the pod does not request", req_pod(R12, R23, node="node1"),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext="4")],
     [], EXT_SET, [50, 50]),
    ("honor extended resource if the pod requests",
     req_pod({"cpu": "3000", "memory": "5000", EXT_RES: "2"}, node="node1"),
     [cap_node("node1", cpu="6000", memory="10000", ext="4"),
      cap_node("node2", cpu="6000", memory="10000", ext="10")], [], EXT_SET, [50, 60]),
    ("if the node doesn't have a resource", req_pod({"cpu": "3000", "memory": "4000"}, node="node1"),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext="4")],
     [], [{"name": EXT_RES, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], [55, 55]),
]


@pytest.mark.parametrize("name,pod,nodes,existing,resources,expected", LEAST, ids=[c[0] for c in LEAST])
def test_least_allocated(name, pod, nodes, existing, resources, expected):
    args = {"scoringStrategy": {"type": "LeastAllocated", "resources": resources}}
    assert run_scores(args, pod, nodes, existing) == expected


MOST = [
    ("nothing scheduled, nothing requested", req_pod(), [cap_node("node1", **N4_10), cap_node("node2", **N4_10)],
     [], DEFAULT, [0, 0]),
    ("nothing scheduled, resources requested, differently sized nodes", req_pod(R12, R23),
     [cap_node("node1", **N4_10), cap_node("node2", **N6_10)], [], DEFAULT, [62, 50]),
    ("no resources requested, pods scheduled with resources", req_pod(),
     [cap_node("node1", **N10_20), cap_node("node2", **N10_20)],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "0"}, node="node1"),
      req_pod({"cpu": "3000", "memory": "0"}, node="node2"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [30, 42]),
    ("resources requested, pods scheduled with resources", req_pod(R12, R23),
     [cap_node("node1", **N10_20), cap_node("node2", **N10_20)],
     [req_pod({"cpu": "3000", "memory": "0"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     DEFAULT, [42, 55]),
    ("resources requested equal node capacity", req_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
     [cap_node("node1", cpu="5000", memory="10000"), cap_node("node2", cpu="10000", memory="9000")], [],
     DEFAULT, [95, 75]),
    ("different weights", req_pod(R12, R23), [cap_node("node1", **N4_10), cap_node("node2", **N6_10)], [],
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], [58, 50]),
    ("no resources requested, pods scheduled, nonzero request for resource",
     make_pod().container(name="container").obj(),
     [cap_node("node1", cpu="250m", memory="1000Mi"), cap_node("node2", cpu="250m", memory="1000Mi")],
     [make_pod().name("e1").node("node1").container(name="container").obj(),
      make_pod().name("e2").node("node1").container(name="container").obj()],
     DEFAULT, [80, 30]),
    ("bypass extended resource if the pod does not request", req_pod(R12, R23),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext="4")],
     [], EXT_SET, [50, 50]),
    ("honor extended resource if the pod request",
     req_pod({"cpu": "3000", "memory": "5000", EXT_RES: "2"}, node="node1"),
     [cap_node("node1", cpu="6000", memory="10000", ext="4"),
      cap_node("node2", cpu="6000", memory="10000", ext="10")], [], EXT_SET, [50, 40]),
    ("if the node doesn't have a resource", req_pod({"cpu": "3000", "memory": "4000"}, node="node1"),
     [cap_node("node1", cpu="6000", memory="10000"), cap_node("node2", cpu="6000", memory="10000", ext="4")],
     [], [{"name": EXT_RES, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], [45, 45]),
]


@pytest.mark.parametrize("name,pod,nodes,existing,resources,expected", MOST, ids=[c[0] for c in MOST])
def test_most_allocated(name, pod, nodes, existing, resources, expected):
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": resources}}
    assert run_scores(args, pod, nodes, existing) == expected


def rtcr_args(resources, shape):
    return {"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": resources,
                                "requestedToCapacityRatio": {"shape": [
                                    {"utilization": u_, "score": s} for u_, s in shape]}}}


SHAPE = [(0, 10), (100, 0)]

RTCR = [
    ("nothing scheduled, nothing requested", req_pod(), [cap_node("node1", **N4_10), cap_node("node2", **N4_10)],
     [req_pod(node="node1"), req_pod(node="node1")], [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", req_pod(R12, R23),
     [cap_node("node1", **N4_10), cap_node("node2", **N6_10)],
     [req_pod(node="node1"), req_pod(node="node1")], [38, 50]),
    ("no resources requested, pods scheduled with resources", req_pod(),
     [cap_node("node1", **N4_10), cap_node("node2", **N6_10)],
     [req_pod({"cpu": "3000", "memory": "5000"}, node="node1"), req_pod({"cpu": "3000", "memory": "5000"}, node="node2")],
     [38, 50]),
]


@pytest.mark.parametrize("name,pod,nodes,existing,expected", RTCR, ids=[c[0] for c in RTCR])
def test_requested_to_capacity_ratio(name, pod, nodes, existing, expected):
    assert run_scores(rtcr_args(DEFAULT, SHAPE), pod, nodes, existing) == expected


def mk_node(name, milli_cpu, memory, ext):
    """noderesources test_util.go makeNode."""
    r = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    r.update({k: str(v) for k, v in ext.items()})
    return make_node().name(name).allocatable(r).obj()


MI = 1024 * 1024
FOO4, FOO8 = {"intel.com/foo": 4}, {"intel.com/foo": 8}

BIN_SINGLE = [
    ("nothing scheduled, nothing requested", req_pod(), [], [0, 0]),
    ("resources requested, pods scheduled with less resources", req_pod({"intel.com/foo": "2"}), [req_pod()], [2, 5]),
    ("resources requested, pods scheduled with resources, on node with existing pod running",
     req_pod({"intel.com/foo": "2"}), [req_pod({"intel.com/foo": "2"}, node="node2")], [2, 10]),
    ("resources requested, pods scheduled with more resources", req_pod({"intel.com/foo": "4"}), [req_pod()], [5, 10]),
]


@pytest.mark.parametrize("name,pod,existing,expected", BIN_SINGLE, ids=[c[0] for c in BIN_SINGLE])
def test_resource_bin_packing_single_extended(name, pod, existing, expected):
    nodes = [mk_node("node1", 4000, 10000 * MI, FOO8), mk_node("node2", 4000, 10000 * MI, FOO4)]
    args = rtcr_args([{"name": "intel.com/foo", "weight": 1}], [(0, 0), (100, 1)])
    assert run_scores(args, pod, nodes, existing) == expected


R1 = {"intel.com/foo": 4, "intel.com/bar": 8}
R2 = {"intel.com/foo": 8, "intel.com/bar": 4}
P1 = {"intel.com/foo": "2", "intel.com/bar": "2"}
P2 = {"intel.com/foo": "4", "intel.com/bar": "2"}

BIN_MULTI = [
    ("nothing scheduled, nothing requested", req_pod(), [], [0, 0]),
    ("resources requested, pods scheduled with less resources", req_pod(P1), [req_pod()], [4, 3]),
    ("resources requested, pods scheduled with resources, on node with existing pod running",
     req_pod(P1), [req_pod(P2, node="node2")], [4, 7]),
    ("resources requested, pods scheduled with more resources", req_pod(P2), [req_pod()], [5, 5]),
]


@pytest.mark.parametrize("name,pod,existing,expected", BIN_MULTI, ids=[c[0] for c in BIN_MULTI])
def test_resource_bin_packing_multiple_extended(name, pod, existing, expected):
    nodes = [mk_node("node1", 4000, 10000 * MI, R2), mk_node("node2", 4000, 10000 * MI, R1)]
    args = rtcr_args([{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
                     [(0, 0), (100, 1)])
    assert run_scores(args, pod, nodes, existing) == expected


FIT_SCORE = [
    ("RequestedToCapacityRatio case1", rtcr_args(DEFAULT, [(0, 10), (100, 0)]), req_pod({"cpu": "3000", "memory": "5000"}),
     [10, 32]),
    ("RequestedToCapacityRatio case2", rtcr_args(DEFAULT, [(0, 0), (100, 10)]), req_pod({"cpu": "3000", "memory": "5000"}),
     [95, 68]),
    ("MostAllocated", {"scoringStrategy": {"type": "MostAllocated", "resources": DEFAULT}}, req_pod(R12), [67, 36]),
    ("LeastAllocated", {"scoringStrategy": {"type": "LeastAllocated", "resources": DEFAULT}}, req_pod(R12), [32, 63]),
    ("default args are LeastAllocated over cpu and memory", None, req_pod(R12), [32, 63]),
]


@pytest.mark.parametrize("run_pre_score", [True, False])
@pytest.mark.parametrize("name,args,pod,expected", FIT_SCORE, ids=[c[0] for c in FIT_SCORE])
def test_fit_score(name, args, pod, expected, run_pre_score):
    nodes = [cap_node("node1", **N4_10), cap_node("node2", **N6_10)]
    existing = [req_pod({"cpu": "2000", "memory": "4000"}, node="node1"),
                req_pod({"cpu": "1000", "memory": "2000"}, node="node2")]
    assert run_scores(args, pod, nodes, existing, run_pre_score) == expected


def test_resources_not_set_is_error():
    # Upstream "Resources not set, pods scheduled with error": only reachable without the v1
    # defaulting, which fills in cpu and memory.
    n = cap_node("node1", **N4_10)
    pl = fit.Fit(snapshot_handle([], [n]), scorer=new_scorer("LeastAllocated", []))
    state = CycleState()
    pod = req_pod(R12)
    pl.pre_score(state, pod, [n])
    s, st = pl.score(state, pod, "node1")
    assert s == 0 and st.code == Code.Error and st.reasons == ["resources not found"]


def test_score_unknown_node_is_error():
    pl = fit.new(None, snapshot_handle())
    s, st = pl.score(CycleState(), req_pod(), "nope")
    assert st.code == Code.Error


def test_v1_defaults():
    pl = fit.new({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}, None)
    assert pl.resources == [("cpu", 1)]
    pl = fit.new({"scoringStrategy": {"type": "MostAllocated"}}, None)
    assert pl.resources == [("cpu", 1), ("memory", 1)]
    pl = fit.new({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}, None)
    assert pl.resources == [("cpu", 1)]


P = "pluginConfig[NodeResourcesFit].args."


@pytest.mark.parametrize("args,problem", [
    ({"scoringStrategy": {"type": "Foo"}},
     P + 'scoringStrategy.type: "Foo" is not one of LeastAllocated, MostAllocated, RequestedToCapacityRatio'),
    ({"scoringStrategy": {"resources": DEFAULT}},
     P + 'scoringStrategy.type: "" is not one of LeastAllocated, MostAllocated, RequestedToCapacityRatio'),
    ({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]}},
     P + "scoringStrategy.resources[0].weight: resource weight of memory not in valid range (0, 100]"),
    ({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}]}},
     P + "scoringStrategy.resources[1].weight: resource weight of cpu not in valid range (0, 100]"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
     P + "scoringStrategy.requestedToCapacityRatio.shape: at least one point must be specified"),
    (rtcr_args(DEFAULT, [(50, 1), (40, 2)]),
     P + "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: utilization values must be sorted in increasing order"),
    (rtcr_args(DEFAULT, [(0, 11)]),
     P + "scoringStrategy.requestedToCapacityRatio.shape[0].score: 11: not in valid range [0, 10]"),
    (rtcr_args(DEFAULT, [(101, 1)]),
     P + "scoringStrategy.requestedToCapacityRatio.shape[0].utilization: 101: not in valid range [0, 100]"),
    ({"ignoredResourceGroups": ["example.com/foo"]},
     P + "ignoredResourceGroups[0]: \"example.com/foo\": resource group name can't contain '/'"),
    ({"ignoredResources": ["bad name!"]}, P + "ignoredResources[0]: 'bad name!' is not a valid resource name"),
    ({"scoringStrategy": {"type": "LeastAllocated"}, "bogus": 1}, P[:-1] + ": unknown field 'bogus'"),
])
def test_invalid_args(args, problem):
    with pytest.raises(ConfigError) as e:
        fit.new(args, None)
    assert any(p.startswith(problem) for p in e.value.problems), e.value.problems


def test_fits_helper_ignores_nothing():
    pod = res_pod(usc(1, 1, **sc(EXT_B, 1)))
    ni = node_info(alloc_node(10, 20, 32, 5, 20, 5))
    assert fit.fits(pod, ni) == [ins(EXT_B, 1, 0, 0)]
    pl = fit.new({"ignoredResources": [EXT_B]}, None)
    state = CycleState()
    pl.pre_filter(state, pod)
    assert pl.filter(state, pod, ni) is None


def test_inlined_score_matches_calculate_resource_allocatable_request():
    # ResourceAllocationScorer.score inlines calculateResourceAllocatableRequest; check the two
    # agree over a spread of resources, nodes and pods.
    from engine.plugins.noderesources.resource_allocation import ResourceAllocationScorer
    resources = [("cpu", 1), ("memory", 1), ("ephemeral-storage", 1), ("pods", 1), (EXT_RES, 1), (HUGE_A, 1),
                 ("example.com/none", 1)]
    nodes = [mk_node_ext("a", {"cpu": "4", "memory": "8Gi", EXT_RES: "4", HUGE_A: "0"}),
             mk_node_ext("b", {"cpu": "0", "memory": "1Gi", "ephemeral-storage": "10Gi"}),
             mk_node_ext("c", {})]
    pods = [req_pod(), req_pod({"cpu": "1", EXT_RES: "1", HUGE_A: "0", "ephemeral-storage": "1Gi"}),
            make_pod().container().obj()]
    existing = [req_pod({"cpu": "1", "memory": "1Gi", EXT_RES: "2"}, node="a"), make_pod().name("x").node("a").container().obj()]
    h = snapshot_handle(existing, nodes)
    for use_requested in (False, True):
        sc_ = ResourceAllocationScorer("t", lambda r, a: (tuple(r), tuple(a)), resources, use_requested)
        for p in pods:
            preq = sc_.calculate_pod_resource_request_list(p)
            for n in nodes:
                ni = h.snapshot().get(n.name)
                want_r, want_a = [], []
                for i, (name, _) in enumerate(resources):
                    a, r = sc_.calculate_resource_allocatable_request(ni, name, preq[i])
                    want_a.append(a if a else 0)
                    want_r.append(r if a else 0)
                assert sc_.score(p, ni, preq) == ((tuple(want_r), tuple(want_a)), None)


def mk_node_ext(name, alloc):
    return make_node().name(name).allocatable(alloc).obj()
