"""NodeName.  Mirrors upstream nodename/node_name_test.go TestNodeName."""
import pytest

from engine.framework import ActionType, Code, CycleState
from engine.framework.interface import GVK
from engine.plugins import nodename
from tests.engine.builders import make_node, make_pod, node_info

CASES = [
    ("no host specified", make_pod(), "foo", None),
    ("host matches", make_pod().node("foo"), "foo", None),
    ("host doesn't match", make_pod().node("bar"), "foo", "node(s) didn't match the requested node name"),
]


@pytest.mark.parametrize("name,pod,node_name,reason", CASES, ids=[c[0] for c in CASES])
def test_filter(name, pod, node_name, reason):
    pl = nodename.new(None, None)
    p = pod.obj()
    ni = node_info(make_node().name(node_name).obj())
    st = pl.filter(CycleState(), p, ni)
    if reason is None:
        assert st is None
        assert nodename.fits(p, ni)
    else:
        assert st.code == Code.UnschedulableAndUnresolvable and st.reasons == [reason]
        assert not nodename.fits(p, ni)


def test_events():
    evs = nodename.new(None, None).events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in evs] == [
        (GVK.Node, ActionType.Add | ActionType.Update)]
