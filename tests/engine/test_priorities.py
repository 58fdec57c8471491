"""Priorities as Kubernetes v1.28 allows them (issue 14).

Upstream: ``pkg/apis/scheduling/types.go`` (HighestUserDefinablePriority = 1e9,
SystemCriticalPriority = 2e9, the ``system-`` prefix), ``pkg/apis/scheduling/v1/helpers.go``
(systemPriorityClasses, IsKnownSystemPriorityClass), ``pkg/apis/scheduling/validation``
(ValidatePriorityClass), ``plugin/pkg/admission/priority`` (a pod's priority comes from its
class; ``spec.priority`` is an int32) and ``pkg/registry/scheduling/priorityclass/storage``
(system classes cannot be deleted).
"""
import pytest

from engine import Engine, Scenario, ScenarioError, Trace, US
from engine.objects import PREEMPT_LOWER_PRIORITY

NODE_CRITICAL, CLUSTER_CRITICAL = 2000001000, 2000000000


def node(name, cpu="1"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "32"}}}


def pod(name, cpu="1", node_name=None, **spec):
    s = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
    if node_name:
        s["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": s}


def pclass(name, value, **extra):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, **extra}


def scenario(objects=(), actions=()):
    return {"kind": "Scenario", "metadata": {"name": "t"}, "objects": list(objects), "actions": list(actions)}


def problems(data):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data, "s.yaml")
    return e.value.problems


def run(data, until=None):
    events = []
    tr = Trace()
    tr.add_sink(events.append)
    eng = Engine(Scenario.from_dict(data), tr)
    eng.run(until=None if until is None else int(until * US))
    return eng, events


# ------------------------------------------------------------------ validation, one rule each

SYSTEM_PREFIX = "priority class names with 'system-' prefix are reserved for system use only. error: "
USER_MAX = ("maximum allowed value of a user defined priority is 1000000000 (values above it are reserved "
            "for the built-in system-cluster-critical and system-node-critical classes)")


@pytest.mark.parametrize("obj, expected", [
    # ValidatePriorityClass: a user-defined class may go up to HighestUserDefinablePriority ...
    pytest.param(pclass("too-high", 1000000001), f"objects[0].value: 1000000001: {USER_MAX}", id="user-class-above-1e9"),
    # ... so a non-system- name with a system value is refused
    pytest.param(pclass("my-critical", NODE_CRITICAL), f"objects[0].value: 2000001000: {USER_MAX}",
                 id="non-system-name-with-node-critical-value"),
    pytest.param(pclass("critical", CLUSTER_CRITICAL), f"objects[0].value: 2000000000: {USER_MAX}",
                 id="non-system-name-with-cluster-critical-value"),
    # IsKnownSystemPriorityClass: the prefix is reserved, the value and globalDefault are fixed
    pytest.param(pclass("system-foo", 10), 'objects[0].metadata.name: "system-foo": ' + SYSTEM_PREFIX +
                 "system-foo is not a known system priority class", id="unknown-system-name"),
    pytest.param(pclass("system-node-critical", CLUSTER_CRITICAL), 'objects[0].metadata.name: "system-node-critical": '
                 + SYSTEM_PREFIX + "value of system-node-critical PriorityClass must be 2000001000",
                 id="system-class-wrong-value"),
    pytest.param(pclass("system-cluster-critical", CLUSTER_CRITICAL, globalDefault=True),
                 'objects[0].metadata.name: "system-cluster-critical": ' + SYSTEM_PREFIX +
                 "globalDefault of system-cluster-critical PriorityClass must be false", id="system-class-global-default"),
    # value and spec.priority are int32
    pytest.param(pclass("huge", 2**31), "objects[0].value: 2147483648 is outside the int32 range "
                 "-2147483648..2147483647 (a PriorityClass's value is an int32)", id="class-value-above-int32"),
    pytest.param(pclass("system-node-critical", 2**40), "objects[0].value: 1099511627776 is outside the int32 range "
                 "-2147483648..2147483647 (a PriorityClass's value is an int32)", id="system-class-value-above-int32"),
    pytest.param(pod("p", priority=2**31), "objects[0].spec.priority: 2147483648 is outside the int32 range "
                 "-2147483648..2147483647 (a pod's priority is an int32)", id="pod-priority-above-int32"),
    pytest.param(pod("p", priority=-2**31 - 1), "objects[0].spec.priority: -2147483649 is outside the int32 range "
                 "-2147483648..2147483647 (a pod's priority is an int32)", id="pod-priority-below-int32"),
])
def test_priority_rules_refuse(obj, expected):
    assert problems(scenario([obj])) == [expected]


def test_the_rules_apply_to_actions_too():
    got = problems(scenario(actions=[{"at": 1, "create": pclass("my-critical", NODE_CRITICAL)},
                                     {"at": 2, "update": pclass("system-x", 5)}]))
    assert got == [f"actions[0].create.value: 2000001000: {USER_MAX}",
                   'actions[1].update.metadata.name: "system-x": ' + SYSTEM_PREFIX +
                   "system-x is not a known system priority class"]


@pytest.mark.parametrize("obj", [
    pclass("top-user", 1000000000),                       # exactly HighestUserDefinablePriority
    pclass("lowest", -2**31),
    pclass("system-node-critical", NODE_CRITICAL),        # a cluster dump lists the built-in classes
    pclass("system-cluster-critical", CLUSTER_CRITICAL, globalDefault=False),
    pod("p", priority=NODE_CRITICAL),                     # admission's result, as a dump has it
    pod("p", priority=2**31 - 1),
    pod("p", priority=-2**31),
])
def test_priority_rules_accept(obj):
    Scenario.from_dict(scenario([obj]))


# ------------------------------------------------------------------ the built-in classes exist

def test_system_classes_are_known_without_being_declared():
    eng, _ = run(scenario([node("n1", cpu="4"),
                           pod("proxy", priorityClassName="system-node-critical"),
                           pod("dns", priorityClassName="system-cluster-critical")]))
    st = eng.state()["pods"]
    assert st["default/proxy"]["priority"] == NODE_CRITICAL
    assert st["default/dns"]["priority"] == CLUSTER_CRITICAL
    # admission copies the class's (defaulted) preemptionPolicy onto the pod
    assert eng.pods["default/proxy"].preemption_policy == PREEMPT_LOWER_PRIORITY
    assert st["default/proxy"]["nodeName"] == "n1" and st["default/dns"]["nodeName"] == "n1"


def test_declared_system_classes_load_and_resolve():
    eng, _ = run(scenario([pclass("system-node-critical", NODE_CRITICAL),
                           pclass("system-cluster-critical", CLUSTER_CRITICAL),
                           node("n1", cpu="4"), pod("proxy", priorityClassName="system-node-critical")]))
    assert eng.state()["pods"]["default/proxy"]["priority"] == NODE_CRITICAL


def test_system_classes_cannot_be_deleted_or_created_again():
    eng, ev = run(scenario([node("n1", cpu="4")], actions=[
        {"at": 1, "delete": {"kind": "PriorityClass", "name": "system-node-critical"}},
        {"at": 2, "create": pclass("system-cluster-critical", CLUSTER_CRITICAL)},
        {"at": 3, "create": pod("proxy", priorityClassName="system-node-critical")},
    ]))
    skipped = [(e["time"], e["reason"]) for e in ev if e["type"] == "ActionSkipped"]
    assert skipped == [(1.0, "PriorityClass system-node-critical is a system priority class and cannot be deleted"),
                       (2.0, "PriorityClass system-cluster-critical already exists")]
    assert eng.state()["pods"]["default/proxy"]["priority"] == NODE_CRITICAL


# ------------------------------------------------------------------ they order and preempt as numbers

def test_queue_pops_system_critical_pods_before_the_highest_user_priority():
    _, ev = run(scenario([pclass("top-user", 1000000000), node("n1", cpu="4"),
                          pod("user", priorityClassName="top-user"),
                          pod("dns", priorityClassName="system-cluster-critical"),
                          pod("proxy", priorityClassName="system-node-critical")]))
    popped = [e["pod"] for e in ev if e["type"] == "QueueTransition" and e["event"] == "Pop"]
    assert popped[:3] == ["default/proxy", "default/dns", "default/user"]


def test_a_system_node_critical_pod_preempts_the_highest_user_priority_pod():
    # The node is full with a pod at HighestUserDefinablePriority; kube-proxy arrives at t=1.
    eng, ev = run(scenario([pclass("top-user", 1000000000), node("n1"),
                            pod("batch", priorityClassName="top-user", node_name="n1",
                                terminationGracePeriodSeconds=5)],
                           actions=[{"at": 1, "create": pod("proxy", priorityClassName="system-node-critical")}]))
    cand = [e for e in ev if e["type"] == "PreemptionCandidate" and e["preemptor"] == "default/proxy"]
    assert [(c["node"], c["victims"]) for c in cand] == [("n1", ["default/batch"])]
    st = eng.state()["pods"]
    assert st["default/proxy"]["priority"] == NODE_CRITICAL
    assert st["default/proxy"]["nodeName"] == "n1"            # bound once the victim's grace period ended
    assert "default/batch" not in st
    bound = [e for e in ev if e["type"] == "Bound" and e["pod"] == "default/proxy"]
    assert len(bound) == 1 and bound[0]["time"] >= 6.0


def test_a_user_pod_cannot_preempt_a_system_cluster_critical_pod():
    eng, ev = run(scenario([pclass("top-user", 1000000000), node("n1"),
                            pod("dns", priorityClassName="system-cluster-critical", node_name="n1")],
                           actions=[{"at": 1, "create": pod("user", priorityClassName="top-user")}]), until=30)
    assert not [e for e in ev if e["type"] == "PreemptionCandidate"]
    st = eng.state()["pods"]
    assert st["default/dns"]["nodeName"] == "n1" and st["default/user"]["nodeName"] in (None, "")
