"""Out-of-tree plugins in the server (issue 9): loading at start, the library's list, an unknown
plugin's message, a plugin that raises on some nodes stepped over the socket and rendered, and a
pod's history."""
import asyncio
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from engine.plugins import loader, registry
from visualizer import plugins, runner
from visualizer.asgi import application

from .plugin_sources import SCORE_BUG, SCORE_BUG_LINE, SCORE_BUGS, ZONE_PIN, ZONE_PIN_BUG_LINE, ZONES, write_plugin

ROOT = Path(__file__).resolve().parents[2]
ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


@pytest.fixture
def zone_pin(tmp_path):
    """ZonePin loaded into this process, as SCHEDULER_PLUGINS would (unloaded afterwards)."""
    path = str(write_plugin(tmp_path))
    loader.load(path)
    yield path
    loader.unload(path)


@pytest.fixture
def start_state():
    """load_configured runs once per process: let a test run it again, and forget it after."""
    plugins.reset_for_tests()
    yield
    plugins.reset_for_tests()


# ------------------------------------------------------------------ loading at start

SHOW_LIBRARY = """
import django
django.setup()
from django.test import Client
response = Client().get("/")
print("STATUS", response.status_code)
print(response.content.decode())
"""


def test_a_server_started_with_broken_plugin_sources_reports_each_and_keeps_the_good_one(tmp_path):
    good = write_plugin(tmp_path)
    broken = tmp_path / "broken.py"
    broken.write_text("import os\n\nraise RuntimeError('no config file')\n", encoding="utf-8")
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n", encoding="utf-8")
    dup = tmp_path / "dup.py"
    dup.write_text("from engine.plugins.noderesources import fit\nPLUGINS = {'NodeResourcesFit': fit.new}\n",
                   encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(DJANGO_SETTINGS_MODULE="visualizer.settings", DATABASE_PATH=str(tmp_path / "db.sqlite3"),
               SCHEDULER_PLUGINS=f"{good}, {broken},{empty},{dup},{tmp_path / 'missing.py'}")
    result = subprocess.run([sys.executable, "-c", SHOW_LIBRARY], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if "plugin not loaded" in ln]
    assert len(lines) == 4, result.stderr
    assert f"{broken}: importing it raised RuntimeError: no config file (at {broken}:3)" in lines[0]
    assert f"{empty}: defines no PLUGINS mapping" in lines[1]
    assert f"{dup}: PLUGINS['NodeResourcesFit']: a plugin named 'NodeResourcesFit' already exists" in lines[2]
    assert f"{tmp_path / 'missing.py'}: no such file" in lines[3]
    page = result.stdout
    assert "STATUS 200" in page
    for source in (broken, empty, dup, tmp_path / "missing.py"):
        assert f'data-plugin-load-error="{source}"' in page
    assert "4 plugin sources did not load" in page
    assert 'data-loaded-plugin="ZonePin"' in page


def test_a_server_loads_the_plugin_modules_installed_packages_advertise(tmp_path):
    # an installed distribution, as pip leaves it: a module and its entry point
    site = tmp_path / "site"
    (site / "acme_plugins").mkdir(parents=True)
    (site / "acme_plugins" / "__init__.py").write_text("")
    (site / "acme_plugins" / "zone_pin.py").write_text(ZONE_PIN, encoding="utf-8")
    (site / "acme_broken.py").write_text("PLUGINS = 'ZonePin'\n", encoding="utf-8")
    info = site / "acme_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[kube_scheduler_visualizer.plugins]\nzonepin = acme_plugins.zone_pin\nbroken = acme_broken\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "SCHEDULER_PLUGINS")}
    env.update(DJANGO_SETTINGS_MODULE="visualizer.settings", DATABASE_PATH=str(tmp_path / "db.sqlite3"),
               PYTHONPATH=f"{site}{os.pathsep}{ROOT}")
    result = subprocess.run([sys.executable, "-c", SHOW_LIBRARY], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert ("plugin not loaded: entry point: entry point broken = acme_broken: PLUGINS must be a mapping "
            "of name to factory, not str") in result.stderr
    assert 'data-loaded-plugin="ZonePin"' in result.stdout
    assert str(site / "acme_plugins" / "zone_pin.py") in result.stdout
    assert 'data-plugin-load-error="entry point broken = acme_broken"' in result.stdout


def test_load_configured_loads_once_and_reports_problems(tmp_path, start_state):
    good = write_plugin(tmp_path)
    out = io.StringIO()
    try:
        found = plugins.load_configured(f"{good},{tmp_path}/nope.py", entry_points=False, stream=out)
        assert [(p.source, p.reason) for p in found] == [(f"{tmp_path}/nope.py", "no such file")]
        assert out.getvalue() == f"kube-scheduler visualizer: plugin not loaded: SCHEDULER_PLUGINS: {tmp_path}/nope.py: no such file\n"
        assert registry.get("ZonePin") is not None and not registry.is_in_tree("ZonePin")
        # a second call (another AppConfig.ready) loads nothing again and prints nothing
        again = io.StringIO()
        assert plugins.load_configured("", entry_points=False, stream=again) == found
        assert again.getvalue() == "" and plugins.problems() == found
    finally:
        loader.unload(str(good))


def test_an_entry_point_that_fails_is_reported_and_the_rest_loads(start_state, monkeypatch):
    def broken_entry_points(group=loader.ENTRY_POINT_GROUP):
        return [], [loader.PluginLoadError("entry point acme = acme.plugins", "loading it raised ImportError: x")]
    monkeypatch.setattr(loader, "load_entry_points", broken_entry_points)
    out = io.StringIO()
    found = plugins.load_configured("", stream=out)
    assert [str(p) for p in found] == ["entry point: entry point acme = acme.plugins: loading it raised ImportError: x"]
    assert "acme" in out.getvalue()


# ------------------------------------------------------------------ the library page

@pytest.mark.django_db
def test_the_library_lists_the_loaded_plugins(client, zone_pin, scenarios_dir):
    html = client.get("/").content.decode()
    entry = re.search(r'<li class="plugin" data-loaded-plugin="ZonePin">.*?</li>', html, re.S).group(0)
    assert "Keeps pods labelled zone=X on nodes of zone X; prefers emptier nodes." in entry
    assert re.findall(r'<span class="badge">(\w+)</span>', entry) == ["Filter", "Score"]
    assert zone_pin in entry
    assert "data-plugin-load-errors" not in html


@pytest.mark.django_db
def test_the_library_says_when_no_plugin_is_loaded_and_how_to_load_one(client, scenarios_dir):
    html = client.get("/").content.decode()
    assert "data-no-plugins" in html and "data-loaded-plugin" not in html
    assert "SCHEDULER_PLUGINS=path/to/my_plugin.py bash scripts/run.sh" in html


@pytest.mark.django_db
def test_an_upload_naming_an_unknown_plugin_says_which_exist_and_how_to_load_one(client, zone_pin, scenarios_dir):
    response = client.post("/sessions/", {"scenario": ZONES.replace("name: ZonePin", "name: ZonePinn")})
    assert response.status_code == 400
    problems = re.findall(r"<li data-problem>(.*?)</li>", response.content.decode(), re.S)
    assert len(problems) == 1
    assert "&#x27;ZonePinn&#x27; is not a known plugin (did you mean &#x27;ZonePin&#x27;? " \
           "out-of-tree plugins loaded: ZonePin;" in problems[0]
    assert "SCHEDULER_PLUGINS" in problems[0] and "--plugins" in problems[0]


@pytest.mark.django_db
def test_no_view_takes_plugin_code_or_paths(client, tmp_path, scenarios_dir):
    # a scenario can only name registered plugins: a path or a module is just an unknown name
    plugin = write_plugin(tmp_path)
    response = client.post("/sessions/", {"scenario": ZONES.replace("name: ZonePin", f"name: {plugin}"),
                                          "plugins": str(plugin), "SCHEDULER_PLUGINS": str(plugin)})
    assert response.status_code == 400
    assert registry.get("ZonePin") is None and not loader.loaded_plugins()


# ------------------------------------------------------------------ a plugin that raises, in a session

def in_thread(fn):
    return sync_to_async(fn, thread_sensitive=False)


def position(frame):
    match = re.search(r'id="panel-header"[^>]*data-position="(\d+)"', frame)
    return int(match.group(1)) if match else None


def plugin_cells(html, plugin) -> dict:
    """node -> the data-code of ``plugin``'s cell in the Filter matrix (None: not run)."""
    matrix = re.search(r"<table class=\"matrix\" data-filter-matrix>.*?</table>", html, re.S).group(0)
    out = {}
    for node, row in re.findall(r'<tr data-filter-node="([\w-]+)"(.*?)</tr>', matrix, re.S):
        cell = re.search(rf'<td class="[^"]*" data-plugin="{plugin}" data-code="(\w+)">', row)
        out[node] = cell.group(1) if cell else None
    return out


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_session_whose_plugin_raises_on_some_nodes_keeps_working_over_the_socket(zone_pin):
    session = await in_thread(runner.create_session)(ZONES, "zones.yaml")
    comm = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/", headers=ORIGIN)
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_from()
    frames = []
    for _ in range(2):
        await comm.send_json_to({"action": "step-cycle"})
        async def until_new():
            while True:
                m = await comm.receive_from(timeout=10)
                if position(m) is not None and (not frames or position(m) > position(frames[-1])):
                    return m
        frames.append(await asyncio.wait_for(until_new(), 15))
    first, second = frames
    # cycle 1, web: every code ZonePin returned, in its own column
    assert 'data-cycle-result="Scheduled"' in first
    assert plugin_cells(first, "ZonePin") == {"a-1": "Success", "b-1": "Unschedulable", "a-2": "Success",
                                              "a-gpu": "UnschedulableAndUnresolvable", "edge-1": None}
    assert plugin_cells(first, "TaintToleration")["edge-1"] == "UnschedulableAndUnresolvable"
    assert '<th scope="col" class="plugin-col" data-plugin="ZonePin"' in first
    # cycle 2, batch: the KeyError on edge-1 is that cell's Error, with the plugin's own frame
    assert 'data-cycle-result="Error"' in second
    error_cell = re.search(r'<tr data-filter-node="edge-1".*?</tr>', second, re.S).group(0)
    assert 'data-plugin="ZonePin" data-code="Error"' in error_cell
    assert "⚠ Error: KeyError</button>" in error_cell
    # as Python prints a traceback, with the source line (issue 26)
    assert f'<code class="tb-where">File "{zone_pin}", line {ZONE_PIN_BUG_LINE}, in filter</code>' in error_cell
    assert ('<code class="tb-source" data-frame-source>zone = node_info.node.labels'
            '[&quot;topology.kubernetes.io/zone&quot;]</code>') in error_cell
    assert "&#x27;topology.kubernetes.io/zone&#x27;" in error_cell
    assert "data-cycle-errors" in second
    # the socket is still open and the session still steps
    await comm.send_json_to({"action": "step-event"})
    third = await asyncio.wait_for(comm.receive_from(timeout=10), 15)
    assert third
    await comm.disconnect()


@pytest.mark.django_db
def test_the_session_page_and_the_pod_history_render_a_failed_call(client, zone_pin):
    session = runner.create_session(ZONES, "zones.yaml")
    runner.control(session.pk, {"action": "step-cycle"})
    runner.control(session.pk, {"action": "step-cycle"})
    page = client.get(f"/s/{session.presenter_token}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-code="Error"' in html and f"{zone_pin}:{ZONE_PIN_BUG_LINE} in filter" in html
    # read-only, so the follower's URL serves both roles (a projected page never shows the presenter token)
    assert f'data-history-url="/w/{session.follower_token}/history/"' in html

    response = client.get(f"/s/{session.presenter_token}/history/", {"pod": "default/batch"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section id="pod-history"')
    assert 'data-pod-history="default/batch"' in fragment
    assert re.findall(r'data-history-cycle="(\d+)"', fragment) == ["2"]
    assert 'data-history-result="Error"' in fragment
    assert 'data-plugin="ZonePin" data-code="Error"' in fragment
    assert "Then, at" not in fragment        # the pod's next queue move is not revealed yet
    runner.control(session.pk, {"action": "step-event"})
    fragment = client.get(f"/s/{session.presenter_token}/history/", {"pod": "default/batch"},
                          HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r"Then, at 0 s, to <strong>\w+</strong>", fragment)   # where the failed attempt sent it


@pytest.mark.django_db
def test_the_pod_history_shows_every_revealed_cycle_only(client, scenario_text):
    session = runner.create_session(scenario_text("backoff.yaml"), "backoff.yaml")
    for _ in range(3):
        runner.control(session.pk, {"action": "step-cycle"})
    with runner.open_live(session.pk) as live:
        pod = live.revealed()[-1]["pod"]
        starts = [e["cycle"] for e in live.revealed() if e["type"] == "CycleStart" and e["pod"] == pod]
    url = f"/w/{session.follower_token}/history/"      # followers may read it too
    fragment = client.get(url, {"pod": pod}, HTTP_HX_REQUEST="true").content.decode()
    assert [int(c) for c in re.findall(r'data-history-cycle="(\d+)"', fragment)] == starts
    assert fragment.count("data-filter-matrix") == len(starts)
    # travelling back hides the later cycles
    runner.control(session.pk, {"action": "jump", "position": 1})
    fragment = client.get(url, {"pod": pod}, HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'data-history-cycle="(\d+)"', fragment) == []


@pytest.mark.django_db
def test_the_pod_history_as_a_page_and_its_errors(client, scenario_text):
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    runner.control(session.pk, {"action": "step-cycle"})
    base = f"/s/{session.presenter_token}/history/"
    page = client.get(base, {"pod": "default/small"})
    assert page.status_code == 200 and "<html" in page.content.decode()
    assert "data-filter-matrix" in page.content.decode()
    assert client.get(base, {"pod": "default/nobody"}).status_code == 404
    assert client.get(base).status_code == 400
    assert client.get(base, {"pod": "x" * 5000}).status_code == 400
    assert client.get("/s/not-a-token/history/", {"pod": "default/small"}).status_code == 404
    assert client.get(f"/w/{session.presenter_token}/history/", {"pod": "default/small"}).status_code == 404
    missing = client.get(base, {"pod": "default/nobody"}, HTTP_HX_REQUEST="true")
    assert missing.status_code == 200 and "No pod default/nobody" in missing.content.decode()


def test_the_development_server_watches_a_plugin_file_that_failed_to_load(tmp_path, start_state):
    broken = tmp_path / "wip.py"
    broken.write_text("def filter(:\n", encoding="utf-8")
    plugins.load_configured(f"{broken},{tmp_path}/gone.py,no.such.module", entry_points=False, stream=io.StringIO())

    class Reloader:
        extra_files = set()
    plugins.watch_failed_files(Reloader)
    assert Reloader.extra_files == {broken}


@pytest.mark.django_db
def test_a_session_whose_plugin_is_not_loaded_any_more_says_so_instead_of_failing(client, tmp_path):
    path = str(write_plugin(tmp_path))
    loader.load(path)
    try:
        session = runner.create_session(ZONES, "zones.yaml")
        runner.control(session.pk, {"action": "step-cycle"})
    finally:
        loader.unload(path)
    runner.reset()                      # as a server restarted without SCHEDULER_PLUGINS
    for url in (f"/s/{session.presenter_token}/", f"/w/{session.follower_token}/"):
        response = client.get(url)
        assert response.status_code == 503
        html = response.content.decode()
        assert "data-session-unavailable" in html and "ws-connect" not in html
        assert "&#x27;ZonePin&#x27; is not a known plugin" in html
        assert "SCHEDULER_PLUGINS=path/to/my_plugin.py" in html
    history = client.get(f"/s/{session.presenter_token}/history/", {"pod": "default/web"})
    assert history.status_code == 503 and "cannot be rebuilt here" in history.content.decode()
    # loaded again, the session resumes where it was
    loader.load(path)
    try:
        response = client.get(f"/s/{session.presenter_token}/")
        assert response.status_code == 200 and 'data-cycle-result="Scheduled"' in response.content.decode()
    finally:
        loader.unload(path)




@pytest.mark.django_db
def test_a_score_call_that_raised_and_a_prefilter_that_returned_garbage_render_as_error_cells(client, tmp_path):
    path = str(write_plugin(tmp_path, "score_bug.py", SCORE_BUG))
    loader.load(path)
    try:
        session = runner.create_session(SCORE_BUGS, "score.yaml")
        runner.control(session.pk, {"action": "step-cycle"})          # web: ScoreBug raises on b-1
        html = client.get(f"/s/{session.presenter_token}/").content.decode()
        table = re.search(r'<table class="matrix scores" data-scores>.*?</table>', html, re.S).group(0)
        assert '<th scope="col" class="plugin-col" data-plugin="ScoreBug"' in table
        row = re.search(r'<tr data-score-node="b-1".*?</tr>', table, re.S).group(0)
        assert 'data-code="Error" data-plugin="ScoreBug" class="cell--error"' in row
        assert "⚠ Error: ZeroDivisionError</button>" in row and f"{path}:{SCORE_BUG_LINE} in score" in row
        assert 'data-cycle-result="Error"' in html

        runner.control(session.pk, {"action": "step-cycle"})          # batch: PreBug returns "oops"
        html = client.get(f"/s/{session.presenter_token}/").content.decode()
        prefilter = re.search(r'<div class="prefilter">.*?</div>\n', html, re.S).group(0)
        assert 'data-plugin="PreBug" data-code="Error"' in prefilter
        assert "⚠ Error: InvalidReturn</button>" in prefilter
        assert "returned a value its extension point does not return" in prefilter
        assert "PreFilter returned &#x27;oops&#x27; (str)" in prefilter
    finally:
        loader.unload(path)


def test_a_plugin_error_event_reads_as_a_failure_in_the_log():
    from visualizer import presenters
    event = {"seq": 7, "time": 1.0, "type": "PluginError", "pod": "default/a", "cycle": 3, "point": "QueueSort",
             "plugin": "Fifo", "node": None,
             "error": {"type": "TypeError", "message": "'<' not supported", "frames": ["fifo.py:9 in less"]}}
    assert presenters.summary(event) == "QueueSort Fifo failed: TypeError: '<' not supported at fifo.py:9"
    row = presenters.log([event], 1)["rows"][0]
    assert row["failed"] and row["pods"] == ["default/a"]


def test_a_cycle_lists_at_most_twenty_failed_calls():
    from django.template.loader import render_to_string
    errors = [{"plugin": "P", "code": "Error", "point": "Filter", "node": f"n{i}", "dry_run": True,
               "error": {"type": "KeyError", "message": "x", "frames": [], "key": f"k{i}"}} for i in range(23)]
    html = render_to_string("visualizer/partials/_cycle_errors.html", {"c": {"errors": errors}})
    assert "23 plugin calls failed" in html and html.count("<li ") == 20 and "and 3 more" in html
