"""A session that has not begun loads its scenario into a second engine when it opens
(engine.timeline.Timeline._preload), which the first step or run takes over: the first click at 5,000 nodes
and 10,000 pods no longer runs that unit. What the session does must not change: every
sequence of controls gives the same events, positions, pages and states with the preload as
without it, and the page before the first step is the untouched one."""
import json

import pytest

from visualizer import presenters, runner

pytestmark = pytest.mark.django_db

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}
INJECT = ("inject", {"form": "yaml", "verb": "create", "manifest": json.dumps(NODE)})

SEQUENCES = [
    [("step-event", {})] * 3 + [("step-cycle", {})] * 3,
    [("step-cycle", {})] * 4 + [("back", {})] * 2 + [("step-point", {})] * 3,
    [("run-until", {"until": 2})] + [("step-cycle", {})] * 2,
    [INJECT, ("step-cycle", {}), ("step-cycle", {})],
    [("step-event", {}), INJECT, ("step-cycle", {})],
]


def _play(text, sequence, preload, monkeypatch):
    if not preload:
        from engine.timeline import Timeline
        monkeypatch.setattr(Timeline, "_preload", lambda self: None)
    else:
        monkeypatch.undo()
    runner.reset()
    session = runner.create_session(text, "preemption.yaml")
    seen = []
    for action, fields in sequence:
        runner.control(session.pk, {"action": action, **fields})
        with runner.open_live(session.pk) as live:
            state = live.stepper.state()
            seen.append((live.position, live.high_water, len(live.timeline),
                         list(live.timeline[:live.high_water]), state))
    with runner.open_live(session.pk) as live:
        panels = [(name, html.replace(session.presenter_token, "P").replace(session.follower_token, "F"))
                  for name, html in presenters.render_panels(live)]
    return seen, panels


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_the_preload_changes_nothing_a_session_does(scenario_text, sequence, monkeypatch):
    text = scenario_text("preemption.yaml")
    with_preload = _play(text, sequence, True, monkeypatch)
    without = _play(text, sequence, False, monkeypatch)
    assert with_preload[0] == without[0]
    assert with_preload[1] == without[1]


def test_the_first_step_takes_over_the_preloaded_engine(scenario_text):
    session = runner.create_session(scenario_text("preemption.yaml"), "preemption.yaml")
    with runner.open_live(session.pk) as live:
        pre = live._preloaded
        # the head shown before the first step is untouched; the preloaded one ran its first unit
        assert pre is not None and not live.head.engine._loaded and live.head.events.__len__() == 0
        assert pre.engine._loaded and len(pre.events) > 0 and pre.position == 0
        page = presenters.render_panels(live)
    assert "Nothing has happened yet" in str(page)
    runner.control(session.pk, {"action": "step-event"})
    with runner.open_live(session.pk) as live:
        assert live.head is pre and live.stepper is pre and live._preloaded is None
        assert live.position == 1


def test_a_cluster_event_first_drops_the_preloaded_engine(scenario_text):
    session = runner.create_session(scenario_text("preemption.yaml"), "preemption.yaml")
    with runner.open_live(session.pk) as live:
        pre = live._preloaded
        head = live.head
    runner.control(session.pk, {"action": INJECT[0], **INJECT[1]})
    with runner.open_live(session.pk) as live:
        assert live._preloaded is None and live.head is head and live.head is not pre
        assert not vars(pre)        # discarded at once


def test_a_session_opens_with_the_scenario_its_creation_parsed(scenario_text):
    """validate_scenario keeps the last scenario it parsed; the session made of that text
    opens with it rather than parsing it again (a 5,000-node scenario took seconds each)."""
    text = scenario_text("preemption.yaml")
    session = runner.create_session(text, "preemption.yaml")
    validated = runner._last_parsed[1]
    with runner.open_live(session.pk) as live:
        assert live.scenario is validated
    # another text (or source) is parsed afresh
    other = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    runner.reset()
    with runner.open_live(session.pk) as live:
        assert live.scenario is not validated and live.scenario.name == validated.name
    with runner.open_live(other.pk) as live:
        assert live.scenario is runner._last_parsed[1]
