"""Export (engine/export.py): the cluster at a position as a scenario that runs on as the
original would; kube-scheduler-simulator's result annotations; the CLI."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine import Engine, Scenario, ScenarioError, Trace
from engine.export import (FILTER, FINALSCORE, POSTFILTER, PRESCORE, PREFILTER_STATUS, RESULT_HISTORY, SCORE,
                           SELECTED_NODE, BIND, annotated_pods, result_annotations, scenario_at)
from engine.importers import dump_scenario, import_files
from engine.quantity import US

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "docs" / "examples").glob("*.yaml")) + sorted((ROOT / "fixtures").glob("*.yaml"))


def runnable(path):
    try:
        Engine(Scenario.from_path(path))
        return True
    except ScenarioError:
        return False


def outcome(eng, already_deleted=()):
    st = eng.state()
    return ({k: (p["phase"], p["nodeName"], p["nominatedNodeName"]) for k, p in st["pods"].items()},
            set(st["deletedPods"]) - set(already_deleted))


def positions(path):
    full = Engine(Scenario.from_path(path))
    full.run()
    end = full.now / US
    return sorted({0, 0.25, 1, 2.5, 7.3, end / 2, end})


def _cases():
    # the lessons' example plugins (tests/conftest.py) are loaded while the cases are listed,
    # and again, by the module's fixture, while they run
    from tests.conftest import load_lesson_plugins, unload_lesson_plugins
    loaded = load_lesson_plugins()
    try:
        return [(p, t) for p in SCENARIOS if runnable(p) for t in positions(p)]
    finally:
        unload_lesson_plugins(loaded)


CASES = _cases()
pytestmark = pytest.mark.usefixtures("lesson_plugins")


@pytest.mark.parametrize(("path", "t"), CASES, ids=[f"{p.stem}@{t:g}" for p, t in CASES])
def test_round_trip_export_import_run_on_gives_the_same_outcome(path, t):
    full = Engine(Scenario.from_path(path))
    full.run()
    at = Engine(Scenario.from_path(path))
    at.run(int(round(t * US)))
    gone = set(at.state()["deletedPods"])
    exported = dump_scenario(scenario_at(at))
    imported = import_files([("export.yaml", exported)])
    assert imported.report.formats == {"export.yaml": "scenario"}
    again = Engine(Scenario.from_dict(imported.scenario))
    again.run()
    waiting = sorted(at.state().get("waitingPods") or {})
    if waiting:
        # Pods waiting on Permit are pending in the API: they start again from the export,
        # with fresh timers, so where they land may differ; the description says so. The
        # outcome is still the same phases.
        assert f"{len(waiting)} pod(s) waiting on Permit" in scenario_at(at)["metadata"]["description"]
        assert {k: v[0] for k, v in outcome(again)[0].items()} == {k: v[0] for k, v in outcome(full, gone)[0].items()}
        return
    assert outcome(again) == outcome(full, gone)
    # and it goes idle at the same virtual time, counted from the export, unless a cycle or a
    # binding was in flight (they start again) or a grace period ends between whole seconds
    # (it is rounded up)
    in_flight = at.cycle_in_flight is not None or at.binding or at.cache.assumed_pods
    rounded = any((end - at.now) % US for end in at.terminating.values())
    if at.now <= full.now and not in_flight and not rounded:
        assert again.now + at.now == full.now


def test_export_keeps_start_times_terminations_queue_and_the_rest_of_the_timeline():
    sc = Scenario.from_path(ROOT / "docs/examples/preemption.yaml")
    eng = Engine(sc)
    eng.run(3 * US)
    out = scenario_at(eng)
    assert out["simulation"]["startTime"] == "2026-01-01T00:00:03Z"
    assert out["simulation"]["bindDuration"] == "1s"
    pods = {o["metadata"]["name"]: o for o in out["objects"] if o["kind"] == "Pod"}
    # f is terminating on n3 (preempted at 0 with a 5s grace period): 2s left
    assert pods["f"]["spec"]["nodeName"] == "n3" and pods["f"]["spec"]["terminationGracePeriodSeconds"] == 2
    assert {"at": 0, "delete": {"kind": "Pod", "namespace": "default", "name": "f"}} in out["actions"]
    assert pods["urgent"]["status"] == {"nominatedNodeName": "n3"}
    assert pods["a"]["status"] == {"startTime": "2026-01-01T00:00:00Z"}
    assert out["queue"]["pods"] == [{"pod": "default/urgent", "queue": "unschedulablePods", "attempts": 1,
                                     "timestamp": -3, "unschedulablePlugins": ["NodeResourcesFit", "TaintToleration"]}]
    later = [a for a in out["actions"] if "create" in a]
    assert later
    original = {a.obj.name: a.at for a in sc.actions if a.verb == "create"}
    for a in later:
        assert a["at"] * US == original[a["create"]["metadata"]["name"]] - 3 * US


def test_queue_state_is_validated():
    base = {"kind": "Scenario", "metadata": {"name": "q"},
            "objects": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(dict(base, queue={"pods": [{"pod": "default/x", "queue": "activeQ"},
                                                      {"pod": "default/p", "queue": "nowhere"},
                                                      {"pod": "default/p", "queue": "backoffQ", "attempts": -1}],
                                             "nextFlushBackoffQCompleted": 2, "extra": 1}))
    assert e.value.problems == [
        "queue.extra: is not a queue field (pods, nextFlushBackoffQCompleted, nextFlushUnschedulablePodsLeftover)",
        "queue.nextFlushBackoffQCompleted: 2 is not a number of seconds in [0, 1]",
        'queue.pods[0].pod: "default/x" is not a pending pod of objects (namespace/name)',
        'queue.pods[1].queue: "nowhere" is not one of activeQ, backoffQ, unschedulablePods',
        "queue.pods[2].attempts: -1 is not an integer >= 0"]


def test_a_scenario_without_queue_state_loads_as_before():
    events = []
    tr = Trace()
    tr.add_sink(events.append)
    Engine(Scenario.from_path(ROOT / "docs/examples/backoff.yaml"), tr).run()
    assert not any("restored" in (e.get("message") or "") for e in events)


def test_result_annotations_have_the_simulator_shapes():
    events = []
    tr = Trace()
    tr.add_sink(events.append)
    eng = Engine(Scenario.from_path(ROOT / "docs/examples/preemption.yaml"), tr)
    eng.run()
    ann = result_annotations(events)
    urgent = ann["default/urgent"]
    # the latest attempt: scheduled on n3 after the victim left
    assert urgent[SELECTED_NODE] == "n3"
    assert json.loads(urgent[BIND]) == {"DefaultBinder": "success"}
    history = json.loads(urgent[RESULT_HISTORY])
    assert len(history) == 2
    first = history[0]
    flt = json.loads(first[FILTER])
    assert flt["n1"]["NodeResourcesFit"] == "Insufficient cpu" and flt["n1"]["NodeName"] == "passed"
    assert flt["n4"]["TaintToleration"] == "node(s) had untolerated taint {dedicated: gpu}"
    assert json.loads(first[POSTFILTER]) == {"n1": {}, "n2": {}, "n3": {"DefaultPreemption": "preemption victim"},
                                             "n4": {}, "n5": {}}
    assert first[SELECTED_NODE] == ""
    assert json.loads(first[PREFILTER_STATUS])["NodeResourcesFit"] == "success"
    # every value is a JSON string, as annotations are
    assert all(isinstance(v, str) for v in urgent.values())
    # a scored attempt: raw and weighted scores per node and plugin
    events2 = []
    tr2 = Trace()
    tr2.add_sink(events2.append)
    Engine(Scenario.from_path(ROOT / "docs/examples/events.yaml"), tr2).run()
    scored = next(e for e in events2 if e["type"] == "HostSelected" and e.get("detail"))
    a = result_annotations(events2)[scored["pod"]]
    history = [h for h in json.loads(a[RESULT_HISTORY]) if json.loads(h[SCORE])]
    sc, fs = json.loads(history[0][SCORE]), json.loads(history[0][FINALSCORE])
    node, plugins = next(iter(scored["detail"].items()))
    for plugin, v in plugins.items():
        assert sc[node][plugin] == str(v["score"]) and fs[node][plugin] == str(v["weighted"])
    assert "TaintToleration" in json.loads(history[0][PRESCORE])


def test_annotated_pods_is_a_list_the_importer_reads():
    events = []
    tr = Trace()
    tr.add_sink(events.append)
    eng = Engine(Scenario.from_path(ROOT / "docs/examples/preemption.yaml"), tr)
    eng.run(3 * US)
    lst = annotated_pods(eng, events)
    assert lst["kind"] == "List" and all(p["kind"] == "Pod" for p in lst["items"])
    r = import_files([("results.json", json.dumps(lst)), ("rest.yaml", yaml.safe_dump(
        {"kind": "List", "items": [o for o in scenario_at(eng)["objects"] if o["kind"] != "Pod"]}))])
    assert r.report.fields_ignored["Pod"]["metadata.annotations"] >= 1


def test_cli_export(tmp_path):
    ex = ROOT / "docs/examples/preemption.yaml"
    r = subprocess.run([sys.executable, "-m", "engine", "export", str(ex), "--until", "3",
                        "--scenario", str(tmp_path / "s.yaml"), "--state", str(tmp_path / "st.json"),
                        "--trace", str(tmp_path / "t.jsonl"), "--results", str(tmp_path / "r.json")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    run = subprocess.run([sys.executable, "-m", "engine", "run", str(ex), "--until", "3", "--state", "-"],
                         cwd=ROOT, capture_output=True, text=True)
    assert (tmp_path / "st.json").read_text() == run.stdout
    tr = subprocess.run([sys.executable, "-m", "engine", "run", str(ex), "--until", "3", "--trace", "-"],
                        cwd=ROOT, capture_output=True, text=True)
    assert (tmp_path / "t.jsonl").read_text() == tr.stdout
    v = subprocess.run([sys.executable, "-m", "engine", "validate", str(tmp_path / "s.yaml")], cwd=ROOT,
                       capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    assert json.loads((tmp_path / "r.json").read_text())["kind"] == "List"
    r = subprocess.run([sys.executable, "-m", "engine", "export", str(ex)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "give at least one of --scenario, --state, --trace, --results" in r.stderr
