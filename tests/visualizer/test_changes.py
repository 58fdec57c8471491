"""Reload a session's plugins and compare two configurations (visualizer.changes): the
recorded code, the baseline kept on reload, a failed reload, the notice after a restart with
other code, the WebSocket control, development auto-reload, and the compare page."""
import asyncio
import hashlib
import re
import textwrap
from pathlib import Path

import pytest
from channels.testing import WebsocketCommunicator

from engine import Engine, Scenario, Trace
from engine.plugins import loader
from visualizer import changes, runner
from visualizer.asgi import application
from visualizer.models import Session

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "fixtures" / "07-move-request-cycle.yaml"
ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]

PLUGIN = '''
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

SCENARIO = textwrap.dedent("""\
    kind: Scenario
    metadata: {name: avoid, title: Avoid a node}
    scheduler:
      profiles:
        - plugins: {multiPoint: {enabled: [{name: AvoidNode}]}}
    objects:
      - {kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - {kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - kind: Pod
        metadata: {name: a}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
      - kind: Pod
        metadata: {name: b}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
    """)


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def final_nodes(text) -> dict:
    """Where each pod ends, run by the plain engine with the code loaded now."""
    eng = Engine(Scenario.from_text(text), Trace(enabled=False))
    eng.run(None)
    return {k: v["nodeName"] for k, v in eng.state()["pods"].items()}


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "avoid_node.py"
    path.write_text(PLUGIN.format(node="n2"))
    loader.load(str(path))
    yield path
    loader.unload(str(path))


def run_session(session_id, steps=("step-cycle", "step-cycle")):
    for action in steps:
        runner.control(session_id, {"action": action})


# ---------------------------------------------------------------------- the recorded code

@pytest.mark.django_db
def test_a_session_records_the_plugin_code_it_runs(plugin):
    session = runner.create_session(SCENARIO, "")
    assert session.plugin_code == {"AvoidNode": {"source": str(plugin), "file": "avoid_node.py",
                                                 "digest": digest(plugin)}}
    plain = runner.create_session(LESSON.read_text(), "07.yaml")
    assert plain.plugin_code == {}


@pytest.mark.django_db
def test_reload_keeps_the_old_run_as_the_baseline_and_shows_what_changed(plugin, client):
    session = runner.create_session(SCENARIO, "")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    before = Session.objects.get(pk=session.pk)
    old_nodes = final_nodes(SCENARIO)
    assert set(old_nodes.values()) == {"n1"}            # n2 is avoided
    old_digest = digest(plugin)

    plugin.write_text(PLUGIN.format(node="n1"))
    result = changes.reload_session(session.pk)
    new_nodes = final_nodes(SCENARIO)                   # the new code, run plainly
    assert set(new_nodes.values()) == {"n2"}
    expected = sorted(k for k in old_nodes if old_nodes[k] != new_nodes[k])
    assert expected == ["default/a", "default/b"]

    row = Session.objects.get(pk=session.pk)
    assert row.version == before.version + 1
    assert row.plugin_code["AvoidNode"]["digest"] == digest(plugin) != old_digest
    assert row.baseline["plugin_code"]["AvoidNode"]["digest"] == old_digest
    comparison = row.baseline["comparison"]
    assert [p["pod"] for p in comparison["pods"]] == expected
    assert all(p["fields"] == ["nodeName"] for p in comparison["pods"])
    assert "2 pod(s) with a different outcome" in result["note"]
    d = comparison["divergence"]
    assert d["a"]["plugin"] == "AvoidNode" and (d["a"]["code"], d["b"]["code"]) == ("Success", "Unschedulable")
    # the session now shows the new code's run, at the same time
    with runner.open_live(session.pk) as live:
        state = live.stepper.engine.state()
        assert {k: v["nodeName"] for k, v in state["pods"].items()} == new_nodes
        assert live.stepper.engine.now == before.head_clock_us
    # the page links to the baseline, and the changes page shows the side-by-side results
    page = client.get(f"/s/{session.presenter_token}/").content.decode()
    assert 'data-reload-summary data-changed-pods="2"' in page
    assert 'href="changes/" data-changes-link' in page   # relative: each page keeps its role (test_session_links)
    changes_page = client.get(f"/s/{session.presenter_token}/changes/").content.decode()
    assert 'data-changed-pod="default/a"' in changes_page and 'data-changed-pod="default/b"' in changes_page
    assert 'data-compare-filter' in changes_page
    cell = re.search(r'<tr data-compare-node="n1".*?</tr>', changes_page, re.S).group(0)
    assert 'data-side="a" data-code="Success"' in cell and 'data-side="b" data-code="Unschedulable"' in cell
    follower_page = client.get(f"/w/{session.follower_token}/changes/")
    assert follower_page.status_code == 200


@pytest.mark.django_db
def test_a_reload_that_does_not_import_leaves_the_old_code(plugin):
    session = runner.create_session(SCENARIO, "")
    run_session(session.pk)
    before = Session.objects.get(pk=session.pk)
    plugin.write_text("def broken(:\n")
    with pytest.raises(runner.ControlError) as e:
        changes.reload_session(session.pk)
    assert e.value.title == "Reload failed: the plugin did not load"
    assert e.value.problems[0].startswith(f"{plugin}: SyntaxError")
    assert "the session still runs the code it was recorded with" in e.value.problems
    after = Session.objects.get(pk=session.pk)
    assert (after.version, after.plugin_code, after.baseline) == (before.version, before.plugin_code, None)
    assert set(final_nodes(SCENARIO).values()) == {"n1"}   # the old factory is still registered


@pytest.mark.django_db
def test_reloading_a_session_without_plugins_says_so():
    session = runner.create_session(LESSON.read_text(), "07.yaml")
    with pytest.raises(runner.ControlError) as e:
        changes.reload_session(session.pk)
    assert e.value.title == "Nothing to reload"


@pytest.mark.django_db
def test_other_code_than_recorded_is_named_on_the_page(plugin, client):
    session = runner.create_session(SCENARIO, "")
    old = digest(plugin)
    plugin.write_text(PLUGIN.format(node="n1"))
    loader.reload([str(plugin)])                         # as a server restarted with the new file
    runner.reset()
    new = digest(plugin)
    page = client.get(f"/s/{session.presenter_token}/").content.decode()
    assert (f"This session was recorded with AvoidNode from avoid_node.py@{old[:8]}; "
            f"the server now runs @{new[:8]}.") in page
    assert "data-code-mismatch" in page
    # Reload adopts the code the server runs, and says the recorded run cannot be shown
    note = changes.reload_session(session.pk)["note"]
    assert note.startswith(f"This session now runs AvoidNode from avoid_node.py@{new[:8]}. The code it was "
                           f"recorded with (AvoidNode from avoid_node.py@{old[:8]}) is no longer loaded")
    row = Session.objects.get(pk=session.pk)
    assert row.baseline["stale"] and row.plugin_code["AvoidNode"]["digest"] == new
    assert row.baseline["label_a"].startswith("replayed with the code this server ran")
    assert "data-code-mismatch" not in client.get(f"/s/{session.presenter_token}/").content.decode()
    assert "data-stale-baseline" in client.get(f"/s/{session.presenter_token}/changes/").content.decode()


def test_plugin_files_are_not_watched_by_the_autoreloader(plugin):
    from django.utils import autoreload

    def watched():
        autoreload.iter_modules_and_files.cache_clear()
        return {str(p) for p in autoreload.iter_all_python_module_files()}
    assert str(plugin.resolve()) in watched()           # loaded from a file: Django would watch it
    changes.keep_plugins_off_autoreloader()
    assert str(plugin.resolve()) not in watched()
    assert str(Path(changes.__file__).resolve()) in watched()


# ---------------------------------------------------------------------- over the WebSocket

def in_thread(fn):
    from asgiref.sync import sync_to_async
    return sync_to_async(fn, thread_sensitive=False)


async def receive_until(comm, predicate, timeout=10):
    async def loop():
        while True:
            message = await comm.receive_from(timeout=timeout)
            if predicate(message):
                return message
    return await asyncio.wait_for(loop(), timeout)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_reload_button_over_the_websocket(plugin):
    session = await in_thread(runner.create_session)(SCENARIO, "")
    await in_thread(run_session)(session.pk)
    p = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/", headers=ORIGIN)
    f = WebsocketCommunicator(application, f"/ws/w/{session.follower_token}/", headers=ORIGIN)
    assert (await p.connect())[0] and (await f.connect())[0]
    first = await p.receive_from()
    assert 'data-action="reload-plugins"' in first
    await f.receive_from()
    await f.send_json_to({"action": "reload-plugins"})
    assert 'data-status-kind="refused"' in await f.receive_from()

    plugin.write_text(PLUGIN.format(node="n1"))
    await p.send_json_to({"action": "reload-plugins"})
    status = await receive_until(p, lambda m: "panel-status" in m)
    assert "Reloaded AvoidNode: 2 pod(s) with a different outcome" in status
    frame = await receive_until(f, lambda m: "data-reload-summary" in m)
    assert 'data-changed-pods="2"' in frame
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert row.baseline is not None

    plugin.write_text("raise RuntimeError('half-edited')\n")
    await p.send_json_to({"action": "reload-plugins"})
    status = await receive_until(p, lambda m: "panel-status" in m)
    assert "Reload failed: the plugin did not load" in status
    assert "importing it raised RuntimeError: half-edited" in status
    await p.disconnect()
    await f.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_in_development_a_changed_plugin_reloads_on_the_next_control(plugin, settings):
    settings.DEBUG = True
    session = await in_thread(runner.create_session)(SCENARIO, "")
    await in_thread(run_session)(session.pk, ("step-cycle",))
    p = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/", headers=ORIGIN)
    assert (await p.connect())[0]
    await p.receive_from()
    before = await in_thread(Session.objects.get)(pk=session.pk)
    await p.send_json_to({"action": "step-event"})                 # nothing changed: no reload
    await receive_until(p, lambda m: "panel-status" in m)
    plugin.write_text(PLUGIN.format(node="n1"))
    await p.send_json_to({"action": "step-event"})
    status = await receive_until(p, lambda m: "panel-status" in m and "Reloaded" in m)
    assert "Reloaded AvoidNode" in status
    await receive_until(p, lambda m: "data-reload-summary" in m)
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert row.baseline is not None and row.plugin_code["AvoidNode"]["digest"] == digest(plugin)
    assert row.high_water > before.high_water               # the step was carried out too
    await p.disconnect()


# ---------------------------------------------------------------------- the compare page

@pytest.mark.django_db
def test_compare_queueing_hints_on_a_lesson(client):
    session = runner.create_session(LESSON.read_text(), "07-move-request-cycle.yaml")
    url = f"/s/{session.presenter_token}/compare/"
    form = client.get(url).content.decode()
    assert 'name="kind" value="gate"' in form and "SchedulerQueueingHints" in form
    page = client.post(url, {"kind": "gate", "gate": "SchedulerQueueingHints", "until": "1.2"})
    assert page.status_code == 200
    html = page.content.decode()
    from engine.compare import Variation, compare_scenarios, vary
    a = Scenario.from_path(LESSON)
    expected, _, _ = compare_scenarios(a, vary(a, Variation(gates={"SchedulerQueueingHints": True})),
                                       time_us=1_200_000)
    assert [p["pod"] for p in expected["pods"]] == ["default/big"]
    for p in expected["pods"]:
        assert f'data-changed-pod="{p["pod"]}"' in html
    assert f'data-divergence-index="{expected["divergence"]["index"]}"' in html
    assert "What changed with SchedulerQueueingHints=true" in html
    assert Session.objects.get(pk=session.pk).version == session.version     # the session is untouched


@pytest.mark.django_db
@pytest.mark.parametrize("data, problem", [
    ({"kind": "weight", "weight_plugin": "NodeResourcesFit", "weight": "heavy"}, "weight: 'heavy' is not a whole number"),
    ({"kind": "weight", "weight_plugin": "NodeName", "weight": "3"}, "variation.weights.NodeName: 'NodeName' is not a Score plugin"),
    ({"kind": "disable", "plugin": "Ghost"}, "variation.disable: 'Ghost' is not enabled in any profile"),
    ({"kind": "scheduler", "scheduler": "profiles: [\n"}, "scheduler: line"),
    ({"kind": "scheduler", "scheduler": "profiles:\n  - plugins: {filter: {enabled: [{name: Nope}]}}"},
     "variation: scheduler.profiles[0].plugins: &#x27;Nope&#x27; is not a known plugin"),
    ({"kind": "gate", "until": "-3"}, "until: &#x27;-3&#x27; must be from 0"),
    ({"kind": "rm -rf"}, "kind: &#x27;rm -rf&#x27; is not one of"),
])
def test_compare_form_problems(client, data, problem):
    session = runner.create_session(LESSON.read_text(), "07.yaml")
    page = client.post(f"/s/{session.presenter_token}/compare/", data)
    assert page.status_code == 400
    html = page.content.decode()
    assert "Configuration B is not valid" in html
    assert problem.replace("'", "&#x27;") in html or problem in html


@pytest.mark.django_db
def test_compare_without_a_plugin_and_with_a_weight(client, plugin):
    session = runner.create_session(SCENARIO, "")
    url = f"/w/{session.follower_token}/compare/"
    html = client.post(url, {"kind": "disable", "plugin": "AvoidNode"}).content.decode()
    assert "What changed with without AvoidNode" in html
    html = client.post(url, {"kind": "weight", "weight_plugin": "NodeResourcesFit", "weight": "9"}).content.decode()
    assert "NodeResourcesFit weight 9" in html
    assert client.get("/s/nope/compare/").status_code == 404


@pytest.mark.django_db
def test_a_broken_save_is_reported_once_then_the_session_goes_on(plugin, settings):
    settings.DEBUG = True
    session = runner.create_session(SCENARIO, "")
    assert changes.maybe_auto_reload(session.pk) == ""          # nothing changed yet
    plugin.write_text("def broken(:\n")
    with pytest.raises(runner.ControlError) as e:
        changes.maybe_auto_reload(session.pk)
    assert e.value.title == "Reload failed: the plugin did not load"
    assert changes.maybe_auto_reload(session.pk) == ""          # the same broken version: once only
    plugin.write_text(PLUGIN.format(node="n1"))
    note = changes.maybe_auto_reload(session.pk)
    assert note.startswith("Reloaded AvoidNode")
    assert Session.objects.get(pk=session.pk).plugin_code["AvoidNode"]["digest"] == digest(plugin)
    settings.DEBUG = False
    plugin.write_text(PLUGIN.format(node="n2"))
    assert changes.maybe_auto_reload(session.pk) == ""          # production: only the button reloads


@pytest.mark.django_db
def test_reload_replays_the_injections_and_keeps_a_travelled_back_position(plugin):
    session = runner.create_session(SCENARIO, "")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    runner.control(session.pk, {"action": "inject", "form": "pod-add",
                                "manifest": "metadata: {name: late}\nspec:\n  containers:\n"
                                            "    - {name: c, resources: {requests: {cpu: '1'}}}\n"})
    runner.control(session.pk, {"action": "run-until", "until": "2"})
    for _ in range(3):
        runner.control(session.pk, {"action": "back"})
    before = Session.objects.get(pk=session.pk)
    assert before.position == before.high_water - 3
    with runner.open_live(session.pk) as live:
        shown_before = live.stepper.events[live.position - 1]["time"]
    plugin.write_text(PLUGIN.format(node="n1"))
    changes.reload_session(session.pk)
    row = Session.objects.get(pk=session.pk)
    # the same run written as a scenario with the pod created at 1 s, run plainly with the new code
    as_action = SCENARIO + textwrap.indent(textwrap.dedent("""\
        actions:
          - at: 1s
            create:
              kind: Pod
              metadata: {name: late}
              spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
        """), "")
    expected = final_nodes(as_action)
    assert expected == {"default/a": "n2", "default/b": "n2", "default/late": "n2"}
    assert len(row.injections) == 1 and row.injections[0]["timeUs"] == 1_000_000
    with runner.open_live(session.pk) as live:
        head = runner.rebuild(live.scenario, live.injections, live.high_water, live.head_clock_us)
        assert {k: v["nodeName"] for k, v in head.engine.state()["pods"].items()} == expected
        assert head.engine.now == before.head_clock_us
        assert not live.at_head and live.position <= row.high_water
        assert live.position <= before.position
        assert live.stepper.events[live.position - 1]["time"] <= shown_before
    comparison = row.baseline["comparison"]
    assert {p["pod"] for p in comparison["pods"]} == {"default/a", "default/b", "default/late"}



@pytest.mark.django_db
def test_a_session_whose_plugin_is_not_loaded_says_so_and_changes_nothing(tmp_path, client):
    path = tmp_path / "avoid_node.py"
    path.write_text(PLUGIN.format(node="n2"))
    loader.load(str(path))
    session = runner.create_session(SCENARIO, "")
    runner.control(session.pk, {"action": "step-cycle"})
    before = Session.objects.get(pk=session.pk)
    loader.unload(str(path))                            # as a server started without it
    runner.reset()
    page = client.get(f"/s/{session.presenter_token}/")
    assert page.status_code == 503
    html = page.content.decode()
    assert "scheduler.profiles[0].plugins: &#x27;AvoidNode&#x27; is not a known plugin" in html
    assert (f"This session was recorded with AvoidNode from avoid_node.py@{digest(path)[:8]}; "
            f"the server has no plugin AvoidNode loaded now.") in html
    assert Session.objects.get(pk=session.pk).version == before.version


def test_a_stored_comparison_keeps_at_most_max_stored_pods(monkeypatch, client):
    monkeypatch.setattr(changes, "MAX_STORED_PODS", 1)
    pods = [{"pod": f"default/p{i}", "fields": ["nodeName"], "a": {}, "b": {}} for i in range(3)]
    stored = changes._bounded({"pods": pods, "identical": False})
    assert stored["pods"] == pods[:1] and stored["pods_hidden"] == 2
    assert changes._bounded({"pods": pods[:1]})["pods"] == pods[:1]
    from django.template.loader import render_to_string
    result = changes.present({"a": {"label": "A", "events": 1, "time": 0.0, "truncated": False},
                              "b": {"label": "B", "events": 1, "time": 0.0, "truncated": False},
                              "identical": False, "run": [], "divergence": None, "effect": None, **stored})
    html = render_to_string("visualizer/partials/_what_changed.html", {"result": result})
    assert 'data-changed-count>3<' in html and "2 more pods with a different outcome not shown." in html
