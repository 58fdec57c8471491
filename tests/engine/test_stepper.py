"""Stepping at every granularity drives the engine identically (issue: stepping for the UI)."""
import json

import pytest

from engine import Scenario
from engine.scenario import parse_action
from engine.objects import Problems
from engine.stepper import Stepper

SCENARIO = {
    "kind": "Scenario",
    "metadata": {"name": "stepper"},
    "simulation": {"schedulingCycleDuration": "500ms", "bindDuration": "250ms"},
    "objects": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "low"},
         "spec": {"nodeName": "n1", "priority": 1, "terminationGracePeriodSeconds": 2,
                  "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "high"},
         "spec": {"priority": 10, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4"}}}]}},
    ],
    "actions": [
        {"at": "3s", "create": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
                                "status": {"allocatable": {"cpu": "8", "memory": "4Gi", "pods": "110"}}}},
    ],
}


def scenario():
    return Scenario.from_dict(SCENARIO)


def drain(stepper, method):
    while getattr(stepper, method)():
        pass
    return stepper


def test_every_granularity_gives_the_same_events_and_state():
    runs = [drain(Stepper(scenario()), m) for m in ("step_event", "step_point", "step_cycle")]
    to_time = Stepper(scenario())
    to_time.run_until(1000)
    runs.append(to_time)
    ref_events = runs[0].events

    def state_without_clock(r):
        s = r.engine.state()
        s.pop("time")  # run_until(1000) leaves the clock at 1000 s; the rest must agree
        return json.dumps(s, sort_keys=True)

    ref_state = state_without_clock(runs[0])
    for r in runs[1:]:
        assert r.events == ref_events
        assert state_without_clock(r) == ref_state
    # the run really did something: preemption, then both pods bound
    assert any(e["type"] == "PreemptionCandidate" for e in ref_events)
    assert runs[0].engine.state()["pods"]["default/big"]["nodeName"] == "n2"


def test_step_event_reveals_exactly_one_event_in_order():
    st = Stepper(scenario())
    seqs = []
    for _ in range(20):
        got = st.step_event()
        assert len(got) == 1
        seqs.append(got[0]["seq"])
    assert seqs == list(range(20))
    assert st.position == 20


def test_step_point_groups_one_extension_point_of_one_cycle():
    st = Stepper(scenario())
    while True:
        group = st.step_point()
        assert group
        if group[0]["type"] == "PluginResult" and group[0]["point"] == "Filter" and len(group) > 1:
            break
    keys = {(e["pod"], e["cycle"], e["point"], e["dryRun"]) for e in group}
    assert len(keys) == 1


def test_step_cycle_stops_after_a_cycle_end():
    st = Stepper(scenario())
    got = st.step_cycle()
    assert got[-1]["type"] == "CycleEnd"
    assert sum(1 for e in got if e["type"] == "CycleEnd") == 1
    assert got[-1]["pod"] == "default/high"


def test_run_until_matches_the_cli_rule_at_that_time():
    st = Stepper(scenario())
    st.run_until(0.5)
    state = st.state()
    assert state["time"] == 0.5
    assert state["atUnitBoundary"] is True
    assert all(e["time"] <= 0.5 for e in st.revealed())
    # the preemptor's cycle (0 to 0.5 s) has ended: it is nominated and low is terminating
    assert state["pods"]["default/high"]["nominatedNodeName"] == "n1"
    assert state["pods"]["default/low"]["phase"] == "Terminating"


def test_injection_is_recorded_and_replays_exactly():
    probs = Problems()
    action = parse_action("create", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"},
                                     "status": {"allocatable": {"cpu": "8", "memory": "4Gi", "pods": "110"}}},
                          "inject", probs, scenario().simulation.start_time)
    assert not probs
    st = Stepper(scenario())
    st.run_until(0.2)
    st.inject(action)
    drain(st, "step_event")
    # replay the same injections from scratch up to the end: identical events
    again = Stepper.replay(scenario(), st.injections, len(st.events))
    drain(again, "step_event")
    assert again.events == st.events
    assert again.engine.state()["pods"]["default/big"]["nodeName"] == "extra"


def test_time_travel_back_reproduces_an_earlier_state():
    st = Stepper(scenario())
    st.run_until(0.5)
    position, state_then = st.position, json.dumps(st.engine.state(), sort_keys=True)
    drain(st, "step_event")
    back = Stepper.replay(scenario(), st.injections, position)
    assert json.dumps(back.engine.state(), sort_keys=True) == state_then
