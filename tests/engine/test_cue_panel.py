"""A cue's ``panel``: the panel of the web UI the cue is about (docs/scenario-format.md, cues).
The engine validates it like the cue's other fields and keeps it; it never changes a run."""
import pytest

from engine import Scenario, ScenarioError
from engine.compare import Variation, vary
from engine.export import scenario_at
from engine.importers import dump_scenario
from engine.scenario import CUE_PANELS
from engine.stepper import Stepper


def node(name, cpu="2"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name, cpu="1"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


def scenario(*panels, **extra):
    """Two nodes at t=0 (n1, n2), n3 created at 1 s, and one cue per panel."""
    cues = [{"at": 0, "text": "t"} if p is ... else {"at": 0, "text": "t", "panel": p} for p in panels]
    return {"kind": "Scenario", "metadata": {"name": "cue-panels"},
            "objects": [node("n1"), node("n2"), pod("big", "4")],
            "actions": [{"at": 1, "create": node("n3", "8")}],
            "cues": cues, **extra}


def problems(data):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data, "s.yaml")
    return e.value.problems


@pytest.mark.parametrize("panel", [*CUE_PANELS, "node:n1", "node:n2", "node:n3"])
def test_a_panel_is_kept_in_the_parsed_cue(panel):
    sc = Scenario.from_dict(scenario(panel), "s.yaml")
    assert sc.cues == [{"text": "t", "title": "", "at": 0.0, "panel": panel}]


def test_the_panels_are_the_ones_the_docs_list():
    assert CUE_PANELS == ("queues", "cycle", "filter", "scores", "preemption", "nodes", "metrics", "log")


def test_a_cue_without_a_panel_has_none():
    [cue] = Scenario.from_dict(scenario(...), "s.yaml").cues
    assert "panel" not in cue


@pytest.mark.parametrize(("panel", "message"), [
    ("foo", '"foo" is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log or node:<name>'),
    ("Queues", '"Queues" is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log or node:<name>'),
    ("filter matrix", '"filter matrix" is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log '
                      'or node:<name>'),
    (3, "3 is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log or node:<name>"),
    (None, "None is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log or node:<name>"),
    (["queues"], "['queues'] is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log "
                 "or node:<name>"),
    ("node:", '"node:" names no node (write node:<name>, e.g. node:n1)'),
    ("node: n1", '"node: n1" names no node (write node:<name>, e.g. node:n1)'),
    ("node:n9", '"node:n9" names no Node of the scenario (its objects or a create action)'),
    ("node:big", '"node:big" names no Node of the scenario (its objects or a create action)'),   # a pod
])
def test_a_bad_panel_is_one_problem_at_its_place(panel, message):
    assert problems(scenario(..., ..., ..., panel)) == [f"cues[3].panel: {message}"]


def test_every_bad_panel_is_reported_at_once_with_its_line():
    text = """kind: Scenario
metadata: {name: t}
objects:
  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "2"}}}
cues:
  - at: 0
    panel: queues
    text: fine
  - at: 0
    panel: foo
    text: bad
  - at: 0
    panel: node:n2
    text: no such node
"""
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text, "s.yaml")
    assert e.value.problems == [
        'cues[1].panel: "foo" is not one of queues, cycle, filter, scores, preemption, nodes, metrics, log or '
        'node:<name> (line 10, column 12)',
        'cues[2].panel: "node:n2" names no Node of the scenario (its objects or a create action) (line 13, column 12)',
    ]


def test_a_node_with_a_problem_of_its_own_is_still_a_node_a_cue_may_name():
    data = scenario("node:n1")
    data["objects"][0]["status"]["allocatable"]["cpu"] = "2x"
    assert problems(data) == ['objects[0].status.allocatable.cpu: "2x" is not a quantity']


def test_the_panel_never_changes_a_run():
    def run(data):
        st = Stepper(Scenario.from_dict(data, "s.yaml"))
        while st.step_event():
            pass
        return st.events[:], st.state()
    assert run(scenario("nodes", "node:n3")) == run(scenario(..., ...))


def test_the_panel_goes_through_the_yaml_writer_and_configuration_b():
    sc = Scenario.from_dict(scenario("preemption", ..., "node:n3"), "s.yaml")
    again = Scenario.from_text(dump_scenario(sc.raw), "again.yaml")
    assert again.cues == sc.cues
    assert [c.get("panel") for c in again.cues] == ["preemption", None, "node:n3"]
    b = vary(sc, Variation(gates={"SchedulerQueueingHints": False}))
    assert b.cues == sc.cues


def test_an_export_leaves_the_cues_out_as_documented():
    """``export`` writes the cluster at a position as a new scenario starting at t=0: a cue's
    time and event belong to the old run, so cues (and their panels) are not carried over
    (engine/export.py, docs/import-export.md)."""
    st = Stepper(Scenario.from_dict(scenario("filter", "node:n3"), "s.yaml"))
    st.step_event()
    out = scenario_at(st.engine)
    assert "cues" not in out
    Scenario.from_text(dump_scenario(out), "exported.yaml")
