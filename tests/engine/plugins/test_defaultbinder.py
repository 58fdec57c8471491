"""DefaultBinder: Bind succeeds (the simulator binds)."""
from engine.framework import CycleState
from engine.plugins import defaultbinder
from tests.engine.builders import make_pod


def test_bind_success():
    pl = defaultbinder.new(None, None)
    assert pl.name == "DefaultBinder"
    assert pl.bind(CycleState(), make_pod().obj(), "n1") is None
