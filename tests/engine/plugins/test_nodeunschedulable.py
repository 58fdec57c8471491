"""NodeUnschedulable.  Mirrors upstream nodeunschedulable/node_unschedulable_test.go
TestNodeUnschedulable, plus toleration variants."""
import pytest

from engine.framework import ActionType, Code, CycleState
from engine.framework.interface import GVK
from engine.plugins import nodeunschedulable
from tests.engine.builders import make_node, make_pod, node_info

UU = Code.UnschedulableAndUnresolvable
KEY = "node.kubernetes.io/unschedulable"

CASES = [
    ("Does not schedule pod to unschedulable node", make_pod(), True, "node(s) were unschedulable"),
    ("Schedule pod to normal node", make_pod(), False, None),
    ("Schedule pod with toleration to unschedulable node",
     make_pod().toleration(KEY, effect="NoSchedule", operator="Exists"), True, None),
    # ToleratesTaint: an empty effect tolerates every effect; Equal with an empty value
    # matches the taint's empty value.
    ("toleration without effect", make_pod().toleration(KEY, operator="Exists"), True, None),
    ("toleration Equal with empty value", make_pod().toleration(KEY, value="", effect="NoSchedule"), True, None),
    ("tolerate-everything toleration", make_pod().toleration(operator="Exists"), True, None),
    ("toleration with another effect", make_pod().toleration(KEY, effect="NoExecute", operator="Exists"),
     True, "node(s) were unschedulable"),
    ("toleration with a value", make_pod().toleration(KEY, value="x", effect="NoSchedule"),
     True, "node(s) were unschedulable"),
]


@pytest.mark.parametrize("name,pod,unsched,reason", CASES, ids=[c[0] for c in CASES])
def test_filter(name, pod, unsched, reason):
    node = make_node().name("n1").unschedulable(unsched).obj()
    pl = nodeunschedulable.new(None, None)
    st = pl.filter(CycleState(), pod.obj(), node_info(node))
    if reason is None:
        assert st is None
    else:
        assert st.code == UU and st.reasons == [reason]


def test_events():
    evs = nodeunschedulable.new(None, None).events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in evs] == [
        (GVK.Node, ActionType.Add | ActionType.UpdateNodeTaint)]
