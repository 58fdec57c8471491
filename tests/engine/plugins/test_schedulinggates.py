"""SchedulingGates.  Mirrors upstream schedulinggates/scheduling_gates_test.go TestPreEnqueue
(feature-enabled rows: PodSchedulingReadiness is on by default in v1.28)."""
import pytest

from engine.framework import ActionType, Code
from engine.framework.interface import GVK
from engine.plugins import schedulinggates
from tests.engine.builders import make_pod


def test_no_gates_is_success():
    pl = schedulinggates.new(None, None)
    assert pl.pre_enqueue(make_pod().name("p").obj()) is None


@pytest.mark.parametrize("gates,message", [
    (("foo", "bar"), "waiting for scheduling gates: [foo bar]"),
    (("only",), "waiting for scheduling gates: [only]"),
])
def test_gates_block(gates, message):
    pl = schedulinggates.new(None, None)
    st = pl.pre_enqueue(make_pod().name("p").scheduling_gates(*gates).obj())
    assert st.code == Code.UnschedulableAndUnresolvable
    assert st.reasons == [message]


def test_events():
    pl = schedulinggates.new(None, None)
    evs = pl.events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in evs] == [(GVK.Pod, ActionType.Update)]
    assert pl.name == "SchedulingGates"
