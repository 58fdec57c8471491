"""The session service: stepping, time travel, injections, and exact rebuilds from the database."""
import json

import pytest

from engine import ScenarioError
from visualizer import frames, runner
from visualizer.models import Session

pytestmark = pytest.mark.django_db

NODE_N2 = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
           "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


@pytest.fixture(autouse=True, params=["default checkpoints", "a checkpoint at every unit"])
def checkpoints(request, monkeypatch):
    """Every test runs with the sessions' checkpoints as configured (small sessions have none)
    and with one at every unit, so travelling back restores one and replays from there."""
    if request.param != "default checkpoints":
        monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    return request.param


@pytest.fixture
def session(scenario_text):
    return runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")


def snapshot(session_id):
    """The engine's state and the revealed events, as the page would get them."""
    with runner.open_live(session_id) as live:
        return json.dumps({"state": live.stepper.state(), "events": live.revealed()}, sort_keys=True)


def after_restart(session_id):
    """The same, rebuilt from the database alone (a new server process)."""
    runner.reset()
    return snapshot(session_id)


def control(session_id, action, **fields):
    return runner.control(session_id, {"action": action, **fields})


def test_create_session_stores_the_scenario_and_two_distinct_unguessable_tokens(session):
    assert session.title == "A pod too big for the cluster"
    assert session.scenario_name == "too-big"
    assert session.source == "too-big.yaml"
    assert session.presenter_token != session.follower_token
    assert len(session.presenter_token) >= 40 and len(session.follower_token) >= 40
    assert (session.position, session.high_water, session.injections) == (0, 0, [])


def test_an_invalid_scenario_creates_nothing():
    with pytest.raises(ScenarioError) as info:
        runner.create_session("kind: Scenario\nmetadata: {name: Bad_Name}\nobjects: [{kind: Service}]\n")
    assert len(info.value.problems) == 2
    assert Session.objects.count() == 0


def test_a_scheduler_configuration_problem_is_found_before_anything_is_stored():
    text = ("kind: Scenario\nmetadata: {name: cfg}\nscheduler:\n  profiles:\n"
            "    - plugins: {filter: {enabled: [{name: NoSuchPlugin}]}}\n")
    with pytest.raises(ScenarioError) as info:
        runner.create_session(text)
    assert "NoSuchPlugin" in str(info.value)
    assert Session.objects.count() == 0


def test_steps_move_the_position_and_are_stored(session):
    control(session.pk, "step-event")
    control(session.pk, "step-point")
    control(session.pk, "step-cycle")
    session.refresh_from_db()
    with runner.open_live(session.pk) as live:
        assert session.position == session.high_water == live.position
        assert live.revealed()[-1]["type"] == "CycleEnd"
    assert session.version == 3


def test_a_rebuilt_session_is_exactly_the_live_one(session):
    for action in ("step-cycle", "step-event", "step-event"):
        control(session.pk, action)
    live_view = snapshot(session.pk)
    assert after_restart(session.pk) == live_view


def test_back_and_jump_travel_in_time_and_forward_steps_follow_the_recorded_timeline(session):
    control(session.pk, "step-cycle")
    control(session.pk, "step-cycle")
    with runner.open_live(session.pk) as live:
        head, events = live.position, list(live.revealed())
    control(session.pk, "jump", position=5)
    with runner.open_live(session.pk) as live:
        assert (live.position, live.high_water) == (5, head)
        assert live.revealed() == events[:5]
    control(session.pk, "back")
    control(session.pk, "step-event")
    control(session.pk, "step-event")
    with runner.open_live(session.pk) as live:
        assert live.position == 6
        assert live.revealed() == events[:6]
    control(session.pk, "step-cycle")   # forward to the first CycleEnd on the recorded timeline
    with runner.open_live(session.pk) as live:
        assert live.revealed()[-1]["type"] == "CycleEnd"
        assert live.high_water == head
    control(session.pk, "jump", position=head)
    assert after_restart(session.pk) == snapshot(session.pk)


def test_the_state_after_time_travel_is_the_state_at_that_point(session):
    control(session.pk, "step-event")
    control(session.pk, "step-event")
    with runner.open_live(session.pk) as live:
        at_two = json.dumps(live.stepper.state(), sort_keys=True)
    control(session.pk, "step-cycle")
    control(session.pk, "jump", position=2)
    with runner.open_live(session.pk) as live:
        assert json.dumps(live.stepper.state(), sort_keys=True) == at_two
    assert after_restart(session.pk) == snapshot(session.pk)


def test_an_injected_node_is_recorded_and_replayed_exactly(session):
    control(session.pk, "run-until", until=1)
    with runner.open_live(session.pk) as live:
        assert live.stepper.state()["pods"]["default/big"]["queue"] == "unschedulablePods"
        assert live.stepper.state()["time"] == 1.0
    control(session.pk, "inject", form="yaml", verb="create", manifest=json.dumps(NODE_N2))
    control(session.pk, "run-until", until=2)
    with runner.open_live(session.pk) as live:
        state = live.stepper.state()
        assert state["pods"]["default/big"]["nodeName"] == "n2"
        assert state["time"] == 2.0
    session.refresh_from_db()
    assert session.injections == [{"position": session.injections[0]["position"], "timeUs": 1_000_000,
                                   "verb": "create", "body": NODE_N2}]
    assert after_restart(session.pk) == snapshot(session.pk)


def test_travelling_back_before_an_injection_and_forward_again_reapplies_it(session):
    control(session.pk, "step-cycle")
    control(session.pk, "step-cycle")
    control(session.pk, "inject", form="yaml", verb="create", manifest=json.dumps(NODE_N2))
    control(session.pk, "step-cycle")
    with runner.open_live(session.pk) as live:
        head, events = live.position, list(live.revealed())
        injected_at = live.injections[0].position
    control(session.pk, "jump", position=injected_at)
    with runner.open_live(session.pk) as live:
        assert "n2" not in live.stepper.engine.nodes
    control(session.pk, "step-event")
    with runner.open_live(session.pk) as live:
        assert "n2" in live.stepper.engine.nodes
        assert live.revealed() == events[:injected_at + 1]
    control(session.pk, "jump", position=head)
    with runner.open_live(session.pk) as live:
        assert live.revealed() == events
    assert after_restart(session.pk) == snapshot(session.pk)


def test_injecting_behind_the_head_drops_the_recorded_future(session):
    control(session.pk, "step-cycle")
    control(session.pk, "inject", form="node-add", name="n2", cpu="8", memory="8Gi", pods="110")
    control(session.pk, "step-cycle")
    control(session.pk, "jump", position=3)
    control(session.pk, "inject", form="node-add", name="n3", cpu="8", memory="8Gi", pods="110")
    with runner.open_live(session.pk) as live:
        assert [i.body["metadata"]["name"] for i in live.injections] == ["n3"]
        assert live.high_water == live.position
        assert sorted(live.stepper.engine.nodes) == ["n1", "n3"]
    assert after_restart(session.pk) == snapshot(session.pk)


def test_an_invalid_injection_lists_its_problems_and_changes_nothing(session):
    control(session.pk, "step-event")
    with pytest.raises(runner.ControlError) as info:
        control(session.pk, "inject", form="pod-add",
                manifest="metadata: {name: Bad}\nspec: {containers: [{name: c, resources: {requests: {cpu: 12x}}}]}")
    assert any(p.startswith("inject[0].create.metadata.name") for p in info.value.problems)
    assert any("12x" in p for p in info.value.problems)
    session.refresh_from_db()
    assert session.injections == [] and session.position == 1


def test_run_until_an_earlier_time_travels_back(scenario_text):
    session = runner.create_session(scenario_text("backoff.yaml"))
    control(session.pk, "run-until", until=4)
    control(session.pk, "run-until", until=1)
    with runner.open_live(session.pk) as live:
        assert not live.at_head
        assert all(e["time"] <= 1 for e in live.revealed())
        assert live.timeline[live.position]["time"] > 1
    control(session.pk, "run-until", until=6)
    with runner.open_live(session.pk) as live:
        assert live.at_head and live.stepper.state()["time"] == 6
    assert after_restart(session.pk) == snapshot(session.pk)


def test_stepping_past_the_end_says_so(session):
    control(session.pk, "run-until", until=100)
    result = control(session.pk, "step-event")
    assert "Nothing more happens on its own" in result["note"]


def test_run_until_refuses_more_than_a_day_ahead(session):
    control(session.pk, "run-until", until=86400)
    with pytest.raises(runner.ControlError, match="more than 24 hours of virtual time ahead"):
        control(session.pk, "run-until", until=86400 * 2 + 1)


def test_a_bad_number_is_refused(session):
    with pytest.raises(runner.ControlError, match="is not a number"):
        control(session.pk, "run-until", until="soon")
    with pytest.raises(runner.ControlError, match="unknown control"):
        control(session.pk, "explode")


def test_a_change_made_by_another_process_is_picked_up(session):
    control(session.pk, "step-event")
    with runner.open_live(session.pk) as live:
        stale = live
    # another process steps the session: the database row moves on (this copy runs on to it,
    # tests/visualizer/test_catch_up.py)
    Session.objects.filter(pk=session.pk).update(position=2, high_water=2, version=stale.version + 1)
    with runner.open_live(session.pk) as live:
        assert live.position == 2 and live.version == Session.objects.get(pk=session.pk).version
    expected = snapshot(session.pk)
    assert after_restart(session.pk) == expected


def test_a_concurrent_write_is_detected(session):
    control(session.pk, "step-event")
    with runner.open_live(session.pk) as live:
        Session.objects.filter(pk=session.pk).update(version=live.version + 5)
        live.step("event")
        with pytest.raises(runner.Conflict):
            live.persist()


def test_travelling_back_restores_a_checkpoint_and_shows_exactly_the_replayed_state(scenario_text, checkpoints):
    session = runner.create_session(scenario_text("preemption.yaml"), "preemption.yaml")
    control(session.pk, "run-until", until=3)
    control(session.pk, "inject", form="node-add", name="late", cpu="8", memory="8Gi", pods="110")
    control(session.pk, "run-until", until=400)
    with runner.open_live(session.pk) as live:
        head, events = live.position, list(live.revealed())
        taken = len(live.checkpointer.checkpoints)
    assert (taken > 5) == (checkpoints != "default checkpoints")
    seen = []
    resume = runner.Stepper.resume

    def spy(*args, **kwargs):
        seen.append("restored")
        return resume(*args, **kwargs)
    for target in (head - 1, head // 2, 7, head - 30, 1, head // 3):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(runner.Stepper, "resume", spy)
            control(session.pk, "jump", position=target)
        with runner.open_live(session.pk) as live:
            assert live.revealed() == events[:target]
        assert snapshot(session.pk) == after_restart(session.pk)
        frame = frames.render_frame(session.pk)
        with pytest.MonkeyPatch.context() as mp:        # the page from a replay from the start
            mp.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 10 ** 12})
            runner.reset()
            assert frames.render_frame(session.pk) == frame
        runner.reset()
    assert ("restored" in seen) == (checkpoints != "default checkpoints")
    # a cluster event injected behind the head: the new head goes on from the restored engine
    control(session.pk, "jump", position=head // 2)
    control(session.pk, "inject", form="node-add", name="branch", cpu="4", memory="8Gi", pods="110")
    control(session.pk, "run-until", until=400)
    with runner.open_live(session.pk) as live:
        assert "branch" in live.stepper.engine.nodes and live.at_head
    assert snapshot(session.pk) == after_restart(session.pk)


def test_the_collector_is_paused_only_while_a_checkpoint_is_restored_and_replayed(monkeypatch, scenario_text):
    import gc
    seen = []
    from engine import timeline as tl
    real = tl._rebuild

    def spy(*args):
        seen.append((args[4] is not None, gc.isenabled()))
        return real(*args)
    monkeypatch.setattr(tl, "_rebuild", spy)
    from engine import Scenario
    from engine.checkpoint import Checkpointer
    from engine.stepper import Stepper
    sc = Scenario.from_text(scenario_text("preemption.yaml"), "preemption.yaml")
    head = Stepper(sc)
    ck = Checkpointer(min_events=1, overhead=0)
    ck.attach(head)
    head.advance_until(400)
    assert gc.isenabled()
    st = runner.rebuild(sc, [], len(head.events) // 2, checkpoints=ck, timeline=head.events)
    assert st.revealed() == head.events[:len(head.events) // 2]
    runner.rebuild(sc, [], 3)      # no checkpoints: from the start, the collector on
    assert seen == [(True, False), (False, True)] and gc.isenabled()
    gc.disable()
    try:
        runner.rebuild(sc, [], len(head.events) // 2, checkpoints=ck, timeline=head.events)
        assert not gc.isenabled()   # left as it was
    finally:
        gc.enable()


def test_a_loaded_session_is_out_of_the_collectors_full_passes_until_one_leaves(scenario_text):
    """runner._settle_heap: after a session is loaded, the objects there are are frozen (the
    collector's full passes walk only newer ones); a session leaving memory unfreezes them."""
    import gc
    session = runner.create_session(scenario_text("preemption.yaml"), "preemption.yaml")
    runner.reset()
    assert gc.get_freeze_count() == 0
    control(session.pk, "run-until", until=3)
    assert gc.get_freeze_count() > 10_000
    assert len(gc.get_objects(generation=2)) < gc.get_freeze_count()
    runner.reset()
    assert gc.get_freeze_count() == 0


def test_a_checkpoint_due_in_a_step_waits_until_the_frame_is_out(scenario_text, monkeypatch):
    """A single step only notes a checkpoint that comes due (at 5,000 nodes taking one costs
    more than the step); take_due_checkpoint takes it afterwards, at the head as it is then,
    and travelling back restores it like any other."""
    monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    session = runner.create_session(scenario_text("preemption.yaml"), "preemption.yaml")
    got = runner.control(session.pk, {"action": "step-cycle"})
    with runner.open_live(session.pk) as live:
        assert got["checkpoint_due"] and live.checkpointer.due and live.checkpointer.checkpoints == []
    assert runner.take_due_checkpoint(session.pk)
    with runner.open_live(session.pk) as live:
        cps = live.checkpointer.checkpoints
        assert not live.checkpointer.due and [cp.position for cp in cps] == [len(live.head.events)]
        taken_at = cps[0].position
    assert not runner.take_due_checkpoint(session.pk)       # nothing due any more
    runner.control(session.pk, {"action": "step-cycle"})
    runner.reset()                                          # evicted meanwhile: not rebuilt
    rebuilds = runner.metrics.REBUILDS._value.get()
    assert not runner.take_due_checkpoint(session.pk)
    assert runner.metrics.REBUILDS._value.get() == rebuilds
    for _ in range(3):
        runner.control(session.pk, {"action": "step-cycle"})
    runner.take_due_checkpoint(session.pk)
    with runner.open_live(session.pk) as live:
        assert live.high_water > taken_at + 1
    control(session.pk, "jump", position=taken_at + 1)
    with runner.open_live(session.pk) as live:
        assert type(live.stepper.events).__name__ == "ForkedLog"      # restored from it
    assert snapshot(session.pk) == after_restart(session.pk)
    # a run takes its checkpoints as it goes
    runner.control(session.pk, {"action": "run-until", "until": 400})
    with runner.open_live(session.pk) as live:
        assert len(live.checkpointer.checkpoints) > 3 and not live.checkpointer.due


def test_travel_reaches_every_position_of_a_run_that_went_on_past_idle_queues(scenario_text):
    """A run to a later time goes on through periodic flushes when the queues are idle; a
    replay (travelling back, a restart) reaches every position of it, not only those before
    the first idle moment."""
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    control(session.pk, "run-until", until=3000)
    with runner.open_live(session.pk) as live:
        head, events = live.high_water, list(live.revealed())
    assert head > 20
    for target in sorted({head - 1, head - 2, head // 2, head // 3, 5, head - 7}):
        control(session.pk, "jump", position=target)
        with runner.open_live(session.pk) as live:
            assert live.position == target and live.revealed() == events[:target]
        assert snapshot(session.pk) == after_restart(session.pk)
    control(session.pk, "jump", position=head // 3)
    for _ in range(5):                          # stepping forward behind the head
        before = snapshot(session.pk)
        control(session.pk, "step-event")
        with runner.open_live(session.pk) as live:
            assert live.revealed() == events[:live.position]


def test_play_takes_checkpoints_and_a_run_takes_a_due_one_itself(scenario_text, monkeypatch):
    monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    with runner.open_live(session.pk) as live:
        for _ in range(12):
            live.step("point")                  # what play does: checkpoints as it goes
        assert live.checkpointer.checkpoints and not live.checkpointer.due
        for _ in range(12):
            live.step("cycle", defer_checkpoint=True)   # a presenter's step: left due
            if live.checkpointer.due:
                break
        assert live.checkpointer.due
        taken = len(live.checkpointer.checkpoints)
        live.run_until(3000)
        assert not live.checkpointer.due and len(live.checkpointer.checkpoints) > taken
        positions = [cp.position for cp in live.checkpointer.checkpoints]
        assert positions == sorted(set(positions))      # never two at one place
