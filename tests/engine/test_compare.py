"""engine.compare: two runs of one scenario and what changed between them.

The expectations are computed by running the engine another way (Engine.run with a list sink,
or a Stepper driven by hand) and comparing those results directly, so a comparison that
missed or invented a difference would fail here."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from engine import US, Engine, Scenario, ScenarioError, Trace
from engine.compare import (MAX_EVENTS, POD_FIELDS, Variation, compare, compare_scenarios, cycle_results,
                            drive, first_divergence, format_text, vary)
from engine.plugins import loader
from engine.scenario import parse_action
from engine.objects import Problems
from engine.stepper import Stepper

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "fixtures" / "07-move-request-cycle.yaml"


def plain_run(scenario, until_us=None):
    """(trace, state) of Engine.run: the way the CLI runs a scenario."""
    events = []
    trace = Trace()
    trace.add_sink(events.append)
    eng = Engine(scenario, trace)
    eng.run(until_us)
    return events, eng.state()


def without_seq(events):
    return [{k: v for k, v in e.items() if k != "seq"} for e in events]


def expected_changes(sa, sb):
    """Pods whose POD_FIELDS differ, straight from two states."""
    out = {}
    for key in sorted(set(sa["pods"]) | set(sb["pods"])):
        a, b = sa["pods"].get(key, {}), sb["pods"].get(key, {})
        fields = [f for f in POD_FIELDS if a.get(f) != b.get(f)]
        if fields:
            out[key] = fields
    return out


# ---------------------------------------------------------------------- queueing hints on/off

@pytest.mark.parametrize("until", [1.2, 2.5, None])
def test_queueing_hints_on_vs_off_on_the_lesson(until):
    a = Scenario.from_path(LESSON)
    b = vary(a, Variation(gates={"SchedulerQueueingHints": True}))
    assert a.simulation.feature_gates["SchedulerQueueingHints"] is False
    assert b.simulation.feature_gates["SchedulerQueueingHints"] is True
    until_us = None if until is None else int(until * US)
    result, ra, rb = compare_scenarios(a, b, time_us=until_us)

    ea, sa = plain_run(a, until_us)
    eb, sb = plain_run(b, until_us)
    assert ra.events == ea and rb.events == eb          # drive() is the ordinary run
    assert ra.state == sa and rb.state == sb
    assert {p["pod"]: p["fields"] for p in result["pods"]} == expected_changes(sa, sb)

    ta, tb = without_seq(ea), without_seq(eb)
    first = next(i for i in range(min(len(ta), len(tb))) if ta[i] != tb[i])
    d = result["divergence"]
    assert d["index"] == first
    assert ta[:first] == tb[:first]
    assert d["a"] == ea[first] and d["b"] == eb[first]
    # the lesson's point: with the gate off the failed big goes to backoffQ (moveRequestCycle),
    # with it on it parks in unschedulablePods (the sidecar's event does not concern Fit)
    assert (d["a"]["type"], d["a"]["pod"], d["a"]["to"]) == ("QueueTransition", "default/big", "backoffQ")
    assert (d["b"]["type"], d["b"]["pod"], d["b"]["to"]) == ("QueueTransition", "default/big", "unschedulablePods")
    assert d["fields"] == ["message", "to"]
    assert d["cycle_a"] == d["cycle_b"] == 1
    sbs = d["side_by_side"]
    assert sbs["a"]["pod"] == sbs["b"]["pod"] == "default/big"
    assert sbs["a"]["result"] == sbs["b"]["result"] == "Unschedulable"
    fit = sbs["filter"]["plugins"].index("NodeResourcesFit")
    row = sbs["filter"]["rows"][0]
    assert row["node"] == "n1"
    assert row["cells"][fit]["a"]["code"] == row["cells"][fit]["b"]["code"] == "Unschedulable"
    assert not row["changed"]                            # same Filter results; the queueing differs
    if until == 1.2:
        assert expected_changes(sa, sb) == {"default/big": ["queue"]}
        assert sa["pods"]["default/big"]["queue"] == "backoffQ"
        assert sb["pods"]["default/big"]["queue"] == "unschedulablePods"
    assert not result["identical"]


def test_a_scenario_against_itself_is_identical():
    a = Scenario.from_path(LESSON)
    result, ra, rb = compare_scenarios(a, Scenario.from_path(LESSON))
    assert result["identical"] and result["pods"] == [] and result["divergence"] is None
    assert ra.events == rb.events and len(ra.events) > 50
    assert "No difference" in format_text(result)


def test_the_comparison_is_deterministic():
    a = Scenario.from_path(LESSON)
    b = vary(a, Variation(gates={"SchedulerQueueingHints": True}))
    one = json.dumps(compare_scenarios(a, b)[0], sort_keys=True)
    two = json.dumps(compare_scenarios(a, b)[0], sort_keys=True)
    assert one == two


def test_first_divergence_counts_a_shorter_trace_as_a_difference():
    e = [{"seq": 0, "time": 0.0, "type": "X"}, {"seq": 1, "time": 0.0, "type": "Y"}]
    assert first_divergence(e, e[:1]) == 1
    assert first_divergence(e, [dict(x, seq=x["seq"] + 7) for x in e]) is None
    assert first_divergence(e, [e[0], {"seq": 1, "time": 0.0, "type": "Y", "extra": None}]) == 1


# ---------------------------------------------------------------------- plugins and weights

PLUGIN_V1 = '''
from engine.framework import Code, Status
from engine.framework.interface import FilterPlugin

class AvoidNode(FilterPlugin):
    """Keeps pods off one node."""
    name = "AvoidNode"
    def filter(self, state, pod, node_info):
        if node_info.node.name == "{node}":
            return Status(Code.Unschedulable, ["AvoidNode avoids {node}"])
        return None

def new(args, handle):
    return AvoidNode()

PLUGINS = {{"AvoidNode": new}}
'''

TWO_NODES = {
    "kind": "Scenario", "metadata": {"name": "avoid"},
    "scheduler": {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "AvoidNode"}]}}}]},
    "objects": [
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}},
        {"kind": "Node", "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "2", "pods": "10"}}},
        {"kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
    ],
}


@pytest.fixture
def avoid_plugin(tmp_path):
    path = tmp_path / "avoid_node.py"
    path.write_text(PLUGIN_V1.format(node="n2"))
    source = str(path)
    loader.load(source)
    yield path
    loader.unload(source)


def test_a_changed_plugin_after_reload(avoid_plugin):
    scenario = Scenario.from_dict(TWO_NODES)
    before = drive(scenario, label="n2 avoided")
    assert before.state["pods"]["default/p"]["nodeName"] == "n1"
    avoid_plugin.write_text(PLUGIN_V1.format(node="n1"))
    assert loader.changed_sources() == [str(avoid_plugin)]
    loader.reload([str(avoid_plugin)])
    after = drive(Scenario.from_dict(TWO_NODES), label="n1 avoided")
    result = compare(before, after)
    expected = expected_changes(before.state, after.state)
    assert {p["pod"]: p["fields"] for p in result["pods"]} == expected == {"default/p": ["nodeName"]}
    d = result["divergence"]
    assert d["a"]["plugin"] == d["b"]["plugin"] == "AvoidNode" and d["a"]["node"] == "n1"
    assert (d["a"]["code"], d["b"]["code"]) == ("Success", "Unschedulable")
    table = d["side_by_side"]["filter"]
    col = table["plugins"].index("AvoidNode")
    cells = {r["node"]: r["cells"][col] for r in table["rows"]}
    assert (cells["n1"]["a"]["code"], cells["n1"]["b"]["code"]) == ("Success", "Unschedulable")
    assert cells["n1"]["b"]["reasons"] == ["AvoidNode avoids n1"]
    assert (cells["n2"]["a"]["code"], cells["n2"]["b"]["code"]) == ("Unschedulable", "Success")
    sbs = d["side_by_side"]
    assert (sbs["a"]["selected"], sbs["b"]["selected"]) == ("n1", "n2")


def test_without_a_plugin(avoid_plugin):
    a = Scenario.from_dict(TWO_NODES)
    b = vary(a, Variation(disable=["AvoidNode"]))
    ea, sa = plain_run(a)
    eb, sb = plain_run(b)
    assert not any(e.get("plugin") == "AvoidNode" for e in eb)
    result, _, _ = compare_scenarios(a, b)
    assert {p["pod"]: p["fields"] for p in result["pods"]} == expected_changes(sa, sb)
    # n1 (4 CPUs) outscores n2 (2 CPUs) either way, so no pod moves: the difference is the
    # AvoidNode column of the Filter matrix, present in A and gone in B.
    assert result["pods"] == []
    col = result["divergence"]["side_by_side"]["filter"]["plugins"]
    assert "AvoidNode" in col
    rows = result["divergence"]["side_by_side"]["filter"]["rows"]
    i = col.index("AvoidNode")
    assert all(r["cells"][i]["b"] is None for r in rows) and any(r["cells"][i]["a"] for r in rows)


def test_a_weight_changes_the_weighted_scores():
    a = Scenario.from_dict({**TWO_NODES, "scheduler": {}})
    b = vary(a, Variation(weights={"NodeResourcesFit": 7}))
    eb, _ = plain_run(b)
    norm = [e for e in eb if e["type"] == "PluginResult" and e["point"] == "NormalizeScore"
            and e["plugin"] == "NodeResourcesFit"]
    result, ra, rb = compare_scenarios(a, b)
    scores = result["divergence"]["side_by_side"]["scores"]
    col = scores["plugins"].index("NodeResourcesFit")
    for row in scores["rows"]:
        cell_a, cell_b = row["cells"][col]["a"], row["cells"][col]["b"]
        assert cell_b["weighted"] == cell_b["normalized"] * 7
        assert cell_a["weighted"] == cell_a["normalized"] * 1
    if norm:
        assert all(e["weight"] == 7 for e in norm)


def test_variation_problems_name_their_place():
    a = Scenario.from_path(LESSON)
    with pytest.raises(ScenarioError) as e:
        vary(a, Variation(gates={"Nope": True}, disable=["Ghost"], weights={"NodeName": 3, "NodeResourcesFit": 0},
                          profile="other"))
    problems = e.value.problems
    assert "variation.gates.Nope: is not a feature gate the engine models (known: SchedulerQueueingHints)" in problems
    assert any(p.startswith("variation.profile: 'other' is not a profile") for p in problems)
    assert any(p.startswith("variation.weights.NodeResourcesFit: 0 is not a weight") for p in problems)
    with pytest.raises(ScenarioError) as e:
        vary(a, Variation(scheduler={"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]}))
    [problem] = e.value.problems
    assert problem.startswith("variation: scheduler.profiles[0].plugins: 'Nope' is not a known plugin (")
    with pytest.raises(ScenarioError) as e:
        vary(a, Variation(scheduler={"podMaxBackoffSeconds": "x"}))
    assert e.value.problems[0].startswith("variation: scheduler.podMaxBackoffSeconds")


def test_a_replaced_scheduler_section():
    a = Scenario.from_path(LESSON)
    b = vary(a, Variation(scheduler={"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 20}))
    assert b.scheduler.pod_initial_backoff == 2 * US
    assert a.scheduler.pod_initial_backoff == 1 * US         # A untouched
    result, _, _ = compare_scenarios(a, b, time_us=int(2.5 * US))
    _, sa = plain_run(a, int(2.5 * US))
    _, sb = plain_run(b, int(2.5 * US))
    assert {p["pod"]: p["fields"] for p in result["pods"]} == expected_changes(sa, sb)
    assert result["divergence"] is not None


# ---------------------------------------------------------------------- injections and heads

def test_injections_replay_where_they_were_made():
    """drive() with a session's recorded injections rebuilds exactly the run a Stepper made
    when those events were injected by hand (the web UI's way)."""
    scenario = Scenario.from_path(ROOT / "fixtures" / "06-move-request-node-add.yaml")
    st = Stepper(scenario)
    for _ in range(7):
        st.step_event()
    body = {"kind": "Node", "metadata": {"name": "big"}, "status": {"allocatable": {"cpu": "32", "pods": "110"}}}
    probs = Problems()
    st.inject(parse_action("create", body, "inject[0].create", probs, scenario.simulation.start_time))
    st.run_until(2.0)
    body2 = {"kind": "Node", "name": "big"}
    st.inject(parse_action("delete", body2, "inject[1].delete", probs, scenario.simulation.start_time))
    st.step_cycle()
    recorded = [(p, t, v, b) for (p, t, _), v, b in zip(st.injections, ("create", "delete"), (body, body2))]
    run = drive(scenario, recorded, position=st.position, time_us=st.engine.now)
    assert run.events == st.events[:st.position]
    assert run.state == st.engine.state()
    assert run.injections == recorded


def test_a_run_stops_at_the_event_limit():
    scenario = Scenario.from_path(LESSON)
    run = drive(scenario, max_events=10)
    assert run.truncated and run.position == 10
    assert drive(scenario).truncated is False and MAX_EVENTS > 1000


def test_cycle_results_of_a_missing_cycle():
    scenario = Scenario.from_path(LESSON)
    run = drive(scenario)
    assert cycle_results(run.events, 999) is None
    c = cycle_results(run.events, 1)
    assert c["pod"] == "default/big" and c["result"] == "Unschedulable"
    assert c["filter"]["cells"]["n1"]["NodeResourcesFit"]["code"] == "Unschedulable"


# ---------------------------------------------------------------------- the CLI

def cli(*args):
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_cli_compare_queueing_hints():
    out = cli("compare", str(LESSON), "--gate-b", "SchedulerQueueingHints=true", "--until", "1.2")
    assert out.returncode == 0, out.stderr
    assert "1 pod(s) with a different outcome:" in out.stdout
    assert "default/big: queue" in out.stdout
    assert "A: Pending, in backoffQ, attempts 1, rejected by NodeResourcesFit" in out.stdout
    assert "B: Pending, in unschedulablePods, attempts 1, rejected by NodeResourcesFit" in out.stdout
    js = cli("compare", str(LESSON), "--gate-b", "SchedulerQueueingHints=true", "--until", "1.2", "--json")
    data = json.loads(js.stdout)
    assert [p["pod"] for p in data["pods"]] == ["default/big"]
    assert data["b"]["label"] == "SchedulerQueueingHints=true"


def test_cli_compare_with_a_plugin_file_and_config_b(tmp_path):
    plugin = tmp_path / "avoid.py"
    plugin.write_text(PLUGIN_V1.format(node="n1"))
    scen = tmp_path / "s.yaml"
    scen.write_text(yaml.safe_dump(TWO_NODES))
    conf = tmp_path / "b.yaml"
    conf.write_text(textwrap.dedent("""\
        scheduler:
          profiles:
            - plugins: {}
        """))
    out = cli("compare", str(scen), "--plugins", str(plugin), "--config-b", str(conf))
    assert out.returncode == 0, out.stderr
    assert "default/p: nodeName" in out.stdout
    assert "A: Running, on n2" in out.stdout and "B: Running, on n1" in out.stdout


@pytest.mark.parametrize("args, message", [
    ((), "compare needs a configuration B"),
    (("--gate-b", "SchedulerQueueingHints"), "--gate-b SchedulerQueueingHints: expected GATE=true or GATE=false"),
    (("--weight-b", "NodeResourcesFit=heavy"), "--weight-b NodeResourcesFit=heavy: expected PLUGIN=WEIGHT"),
    (("--disable-b", "Ghost"), "variation.disable: 'Ghost' is not enabled in any profile"),
    (("--gate-b", "X=true", "--until", "soon"), "--until"),
    (("--config-b", "/nonexistent/b.yaml"), "/nonexistent/b.yaml: No such file or directory"),
])
def test_cli_compare_bad_arguments(args, message):
    out = cli("compare", str(LESSON), *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_a_difference_in_wording_only_points_at_the_first_difference_in_effect():
    """With the gate off, GPUOnly's rejection is explained by moveRequestCycle instead of the
    replayed events: the first differing event differs in its message only; ``effect`` is the
    first event where something else happened (cpu-2's NodeAdd retries the pod)."""
    source = str(ROOT / "docs" / "examples" / "gpu_only.py")
    loader.load(source)
    try:
        a = Scenario.from_path(ROOT / "docs" / "examples" / "gpu-hints.yaml")
        b = vary(a, Variation(gates={"SchedulerQueueingHints": False}))
        result, ra, rb = compare_scenarios(a, b)
        ea, eb = plain_run(a)[0], plain_run(b)[0]
    finally:
        loader.unload(source)
    d = result["divergence"]
    assert d["fields"] == ["message"]
    strip = lambda evs: [{k: v for k, v in e.items() if k not in ("seq", "message")} for e in evs]  # noqa: E731
    sa, sb = strip(ea), strip(eb)
    first = next(i for i in range(min(len(sa), len(sb))) if sa[i] != sb[i])
    assert first > d["index"]
    eff = result["effect"]
    assert eff["index"] == first and eff["a"] == ea[first] and eff["b"] == eb[first]
    assert eff["time"] == min(ea[first]["time"], eb[first]["time"]) == 5.0
    assert (eff["cycle_b"], eff["relation_b"]) == (2, "next")     # between cycles 1 and 2
    assert [p["pod"] for p in result["pods"]] == ["default/train"]
    assert result["pods"][0]["fields"] == ["attempts"]
    assert "The first difference in what happened" in format_text(result)


def test_cycle_of_an_event():
    run = drive(Scenario.from_path(LESSON))
    ev = run.events
    starts = [i for i, e in enumerate(ev) if e["type"] == "CycleStart"]
    ends = {e["cycle"]: i for i, e in enumerate(ev) if e["type"] == "CycleEnd"}
    from engine.compare import cycle_of
    # a PluginResult carries its cycle
    pr = next(i for i, e in enumerate(ev) if e["type"] == "PluginResult" and e.get("cycle") == 1)
    assert cycle_of(ev, pr) == (1, "own")
    # big's requeueing right after cycle 1 ends belongs to cycle 1
    requeue = ends[1] + 1
    assert ev[requeue]["type"] == "QueueTransition" and ev[requeue]["pod"] == "default/big"
    assert cycle_of(ev, requeue) == (1, "within")
    # the sidecar created at 0.5 s, while cycle 1 is in flight (cycles take 1 s here)
    sidecar = next(i for i, e in enumerate(ev) if e["type"] == "Action" and e["name"] == "default/sidecar")
    assert starts[0] < sidecar < ends[1] and cycle_of(ev, sidecar) == (1, "within")
    # after the last cycle ended nothing is next
    assert cycle_of(ev, len(ev)) == (None, None)


def test_a_variation_limited_to_one_profile():
    two = {"kind": "Scenario", "metadata": {"name": "two"},
           "scheduler": {"profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "second"}]},
           "objects": TWO_NODES["objects"][:2]}
    a = Scenario.from_dict(two)
    b = vary(a, Variation(disable=["ImageLocality"], weights={"NodeResourcesFit": 4}, profile="second"))
    plugins = {}
    for name, fw in Engine(b, Trace(enabled=False)).frameworks.items():
        plugins[name] = ([p.name for p in fw.score_plugins], fw.score_plugin_weight.get("NodeResourcesFit"))
    assert "ImageLocality" in plugins["default-scheduler"][0] and plugins["default-scheduler"][1] == 1
    assert "ImageLocality" not in plugins["second"][0] and plugins["second"][1] == 4
    assert "(profile second)" in Variation(disable=["X"], profile="second").describe()
