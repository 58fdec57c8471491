"""A process's copy of a session catches up with another process's change by running on
(``LiveSession.catch_up``, ``Timeline.extend_head``) instead of replaying the whole run, and
ends exactly where a rebuild from the database would: the same state, the same revealed
events, the same position. A change that alters the run (an injection) still rebuilds."""
import json

import pytest

from visualizer import metrics, runner
from visualizer.models import Session

pytestmark = pytest.mark.django_db

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"},
        "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}}


@pytest.fixture(autouse=True, params=["default checkpoints", "a checkpoint at every unit"])
def checkpoints(request, monkeypatch):
    if request.param != "default checkpoints":
        monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})


def picture(live) -> str:
    return json.dumps({"state": live.stepper.state(), "events": live.revealed(), "position": live.position,
                       "head": live.high_water, "clock": live.head_clock_us}, sort_keys=True)


def rebuilt(session_id) -> str:
    """What a process with no copy of the session builds from the database."""
    return picture(runner.LiveSession(Session.objects.get(pk=session_id)))


def count(counter) -> float:
    return counter._value.get()


def other_process(session_id, *moves):
    """Another server process: its own copy from the row, moved, persisted."""
    b = runner.LiveSession(Session.objects.get(pk=session_id))
    for move in moves:
        move(b)
    b.persist(injections=True)


def seen_here(session_id):
    """This process's copy after the other process's change: (picture, caught up?, rebuilt?)."""
    catch_ups, rebuilds = count(metrics.CATCH_UPS), count(metrics.REBUILDS)
    with runner.open_live(session_id) as live:
        shown = picture(live)
    return shown, count(metrics.CATCH_UPS) - catch_ups, count(metrics.REBUILDS) - rebuilds


@pytest.mark.parametrize("name", ["preemption.yaml", "backoff.yaml", "topology-spread.yaml"])
def test_runs_further_and_travel_elsewhere_are_caught_up_exactly(scenario_text, name):
    session = runner.create_session(scenario_text(name), name)
    runner.control(session.pk, {"action": "step-cycle"})
    with runner.open_live(session.pk) as live:
        assert live.position > 0

    def steps(n, kind="event"):
        def move(b):
            for _ in range(n):
                b.step(kind)
        return move

    for moves in ([steps(7)], [steps(2, "cycle")], [lambda b: b.move_to(3)], [lambda b: b.move_to(b.high_water)],
                  [steps(1, "point"), steps(5)], [lambda b: b.run_until(45.0)], [steps(3)]):
        other_process(session.pk, *moves)
        shown, caught_up, rebuilt_here = seen_here(session.pk)
        assert shown == rebuilt(session.pk)
        assert (caught_up, rebuilt_here) == (1, 0)


def test_an_injection_elsewhere_is_rebuilt_not_caught_up(scenario_text):
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    with runner.open_live(session.pk):
        pass
    other_process(session.pk, lambda b: b.inject("create", NODE), lambda b: b.step("cycle"))
    shown, caught_up, rebuilt_here = seen_here(session.pk)
    assert shown == rebuilt(session.pk)
    assert (caught_up, rebuilt_here) == (0, 1)
    assert '"n9"' in shown
