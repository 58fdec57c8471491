"""The panels read the engine's state once per unit of work (``panels.common.unit_state``): at
every position of every lesson, stepping by event and injecting, it must be what
``Stepper.state()`` gives there, and inside a unit it must not be built again."""
import json
from pathlib import Path

import pytest

from engine import Scenario
from engine.stepper import Stepper
from visualizer import moment, runner
from visualizer.panels.common import unit_state

# the gang lesson needs its plugin loaded (tests/visualizer/browser/test_gang_lesson.py)
FIXTURES = [p for p in sorted((Path(__file__).resolve().parents[2] / "fixtures").glob("*.yaml"))
            if "gang" not in p.stem]
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late"},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


def _same(st):
    assert json.dumps(unit_state(st), sort_keys=True, default=str) == json.dumps(st.state(), sort_keys=True,
                                                                                default=str)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_unit_state_is_the_steppers_state_at_every_event(path):
    st = Stepper(Scenario.from_text(path.read_text(), path.name))
    moment.attach(st)
    _same(st)
    for i in range(1500):
        if not st.step_event():
            break
        _same(st)
        if i == 20:     # an injection: the engine changes at the same position
            st.inject(runner.parse_injection(st.scenario, "create", NODE, 0))
            _same(st)


def test_unit_state_is_built_once_per_unit():
    path = FIXTURES[0]
    st = Stepper(Scenario.from_text(path.read_text(), path.name))
    built = []
    state = st.engine.state
    st.engine.state = lambda: built.append(st.position) or state()
    st.step_cycle()
    unit_state(st)
    unit_state(st)
    assert len(built) == 1
    st.step_cycle()
    unit_state(st)
    assert len(built) == 2
