"""NodePorts.  Mirrors upstream nodeports/node_ports_test.go TestNodePorts and
TestPreFilterDisabled."""
import pytest

from engine.framework import ActionType, Code, CycleState
from engine.framework.interface import GVK
from engine.plugins import nodeports
from tests.engine.builders import make_node, make_pod, node_info

REASON = "node(s) didn't have free ports for the requested pod ports"


def new_pod(*ports):
    b = make_pod().node("m1")
    if ports:
        b.host_ports(*ports)
    return b.obj()


# name, pod ports, existing pod ports, conflict?
CASES = [
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], False),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], False),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    ("first tcp port conflict", ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
     ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], True),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], True),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
     ["TCP/127.0.0.1/8001"], True),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", ["UDP/127.0.0.1/8001"],
     ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], True),
    # Not upstream: an empty hostIP means 0.0.0.0.
    ("empty hostIP conflicts with any address", ["TCP//8001"], ["TCP/10.1.1.1/8001"], True),
]


@pytest.mark.parametrize("name,ports,existing,conflict", CASES, ids=[c[0] for c in CASES])
def test_node_ports(name, ports, existing, conflict):
    pl = nodeports.new(None, None)
    pod = new_pod(*ports)
    ni = node_info(make_node().name("m1").obj(), new_pod(*existing))
    state = CycleState()
    res, st = pl.pre_filter(state, pod)
    assert res is None and st is None
    got = pl.filter(state, pod, ni)
    if conflict:
        assert got.code == Code.Unschedulable and got.reasons == [REASON]
    else:
        assert got is None
    assert nodeports.fits(pod, ni) is (not conflict)


def test_skip_filter():
    pl = nodeports.new(None, None)
    res, st = pl.pre_filter(CycleState(), make_pod().obj())
    assert res is None
    assert st.code == Code.Skip and st.reasons == []


def test_pre_filter_disabled():
    pl = nodeports.new(None, None)
    st = pl.filter(CycleState(), new_pod("TCP/127.0.0.1/80"), node_info(make_node().name("m1").obj()))
    assert st.code == Code.Error
    assert st.reasons == ['reading "PreFilterNodePorts" from cycleState: not found']


def test_events():
    evs = nodeports.new(None, None).events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in evs] == [
        (GVK.Pod, ActionType.Delete), (GVK.Node, ActionType.Add | ActionType.Update)]
