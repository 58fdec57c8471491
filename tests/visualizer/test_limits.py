"""The server stays up and loses nothing on bad input (issue 10): transactional controls,
bounded work per control, a memory budget per session, idle eviction, request size, and the
production settings."""
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from django.test import Client

from engine import Scenario
from engine.stepper import Stepper
from visualizer import runner
from visualizer.models import Session

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]

NAN_POD = "kind: Pod\nmetadata: {name: p, labels: {a: .nan}}\nspec: {containers: [{name: c}]}"


@pytest.fixture
def session(scenario_text):
    return runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")


def stored(session_id):
    row = Session.objects.get(pk=session_id)
    return row.position, row.high_water, row.injections, row.version


def shown(session_id):
    with runner.open_live(session_id) as live:
        return live.position, live.high_water, [i.as_json() for i in live.injections], live.version


# ---------------------------------------------------------------------- transactional controls

def test_an_injection_that_cannot_be_stored_is_not_applied(session):
    runner.control(session.pk, {"action": "step-cycle"})
    before = stored(session.pk)
    with pytest.raises(runner.ControlError) as e:
        runner.control(session.pk, {"action": "inject", "form": "pod-add", "manifest": NAN_POD})
    assert e.value.problems == ["the manifest cannot be stored: NaN and infinity (.nan, .inf) are not values a "
                                "cluster object can hold"]
    assert stored(session.pk) == before
    assert shown(session.pk) == before
    with runner.open_live(session.pk) as live:
        assert "default/p" not in live.stepper.engine.state()["pods"]


def test_a_control_that_fails_while_storing_leaves_memory_as_the_database(session, monkeypatch):
    runner.control(session.pk, {"action": "step-cycle"})
    before = stored(session.pk)

    def broken_persist(self, *, injections=False, extra=None):
        raise RuntimeError("the database went away")
    monkeypatch.setattr(runner.LiveSession, "persist", broken_persist)
    with pytest.raises(RuntimeError):
        runner.control(session.pk, {"action": "inject", "form": "node-add", "name": "n2", "cpu": "8"})
    assert session.pk not in runner._live        # the changed copy is forgotten...
    monkeypatch.undo()
    assert shown(session.pk) == before           # ...and rebuilt from the database
    with runner.open_live(session.pk) as live:
        assert "n2" not in live.stepper.engine.nodes


@pytest.mark.parametrize("until, problem", [
    ("1e308", 'run until (seconds): "1e308" is more than 1e+06'),
    (1e308, "run until (seconds): 1e+308 is more than 1e+06"),
    ("inf", 'run until (seconds): "inf" must be a finite number, zero or more'),
    ("nan", 'run until (seconds): "nan" must be a finite number, zero or more'),
    ([[1]], "run until (seconds): [1] is not a number"),
    ({"a": 1}, "run until (seconds): {'a': 1} is not a number"),
    ("9" * 5000, "is not a number"),
])
def test_run_until_refuses_what_it_cannot_do_before_doing_anything(session, until, problem):
    before = stored(session.pk)
    with pytest.raises(runner.ControlError) as e:
        runner.control(session.pk, {"action": "run-until", "until": until})
    assert problem in e.value.problems[0]
    assert stored(session.pk) == before


@pytest.mark.parametrize("position", ["1e308", "inf", -1, [[]]])
def test_jump_refuses_impossible_positions(session, position):
    with pytest.raises(runner.ControlError):
        runner.control(session.pk, {"action": "jump", "position": position})


@pytest.mark.parametrize("action", [[], {}, None, 1, "x" * 1000])
def test_an_action_that_is_not_a_control_name_is_refused(session, action):
    with pytest.raises(runner.ControlError) as e:
        runner.control(session.pk, {"action": action})
    assert e.value.problems[0].startswith("unknown control")
    assert len(e.value.problems[0]) < 200


def test_the_number_of_injections_is_bounded(session, monkeypatch):
    monkeypatch.setattr(runner, "MAX_INJECTIONS", 2)
    for name in ("a", "b"):
        runner.control(session.pk, {"action": "inject", "form": "node-add", "name": name, "cpu": "1"})
    with pytest.raises(runner.ControlError) as e:
        runner.control(session.pk, {"action": "inject", "form": "node-add", "name": "c", "cpu": "1"})
    assert e.value.title == "Too many cluster events"
    assert len(stored(session.pk)[2]) == 2


def test_the_size_of_all_injections_is_bounded(session, monkeypatch):
    monkeypatch.setattr(runner, "MAX_INJECTIONS_BYTES", 600)
    runner.control(session.pk, {"action": "inject", "form": "node-add", "name": "a", "cpu": "1",
                                "labels": "x=" + "y" * 200})
    with pytest.raises(runner.ControlError) as e:
        runner.control(session.pk, {"action": "inject", "form": "node-add", "name": "b", "cpu": "1",
                                    "labels": "x=" + "y" * 200})
    assert "at most 600 are kept per session" in e.value.problems[0]
    assert len(stored(session.pk)[2]) == 1


def test_an_alias_bomb_in_an_injected_manifest_is_refused_quickly(session):
    bomb = "".join([f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i else '"lol"'] * 10) + "]\n" for i in range(9)])
    started = time.perf_counter()
    with pytest.raises(runner.ControlError) as e:
        runner.control(session.pk, {"action": "inject", "form": "pod-add", "manifest": bomb})
    assert time.perf_counter() - started < 2
    assert "the document is too large: more than 20,000 values" in e.value.problems[0]
    assert stored(session.pk)[2] == []


# ---------------------------------------------------------------------- bounded work

def test_run_until_goes_in_slices_that_end_at_the_same_place(session, scenario_text, monkeypatch):
    whole = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    got = runner.control(whole.pk, {"action": "run-until", "until": "3000"})
    assert (got["note"], got["more"]) == ("", False)
    monkeypatch.setattr(runner, "RUN_SLICE_SECONDS", 0.0)    # one RUN_SLICE_UNITS per slice
    slices = 0
    while runner.control(session.pk, {"action": "run-until", "until": "3000"})["more"]:
        slices += 1
        assert stored(session.pk)[1] == shown(session.pk)[1]   # every slice is stored
    assert slices > 10
    runner.reset()
    with runner.open_live(whole.pk) as a:
        expected = json.dumps([a.stepper.state(), a.revealed()], sort_keys=True)
    with runner.open_live(session.pk) as b:
        assert json.dumps([b.stepper.state(), b.revealed()], sort_keys=True) == expected


# ---------------------------------------------------------------------- memory

@pytest.mark.parametrize("make", [
    lambda: Scenario.from_path(ROOT / "fixtures" / "03-backoff-max-too-low.yaml"),
    lambda: Scenario.from_dict(_scheduling_basic(100, 20, 100)),
], ids=["lesson-03", "SchedulingBasic-100-nodes"])
def test_the_estimate_is_at_least_what_the_kept_events_take(make):
    """EventLog.nbytes (what the memory budget counts) against what tracemalloc sees the
    compact store allocate, on a lesson and on a cluster with batched per-node results."""
    stepper = Stepper(make())
    stepper.run_until(0)
    gc.collect()
    tracemalloc.start(1)
    try:
        before = tracemalloc.take_snapshot()
        n, est = len(stepper.events), stepper.events.nbytes()
        stepper.run_until(400)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    only = [tracemalloc.Filter(True, "*engine/tracestore.py")]
    grown = sum(s.size_diff for s in after.filter_traces(only).compare_to(before.filter_traces(only), "filename"))
    events, estimated = len(stepper.events) - n, stepper.events.nbytes() - est
    assert events > 300
    assert grown <= estimated <= 2 * grown + 200 * events


def _scheduling_basic(nodes, init, pods):
    import sys
    sys.path.insert(0, str(ROOT / "bench"))
    import workloads
    return workloads.scheduling_basic(nodes, init, pods)


def test_a_session_stops_at_its_memory_budget_and_others_carry_on(session, scenario_text, settings):
    other = runner.create_session(scenario_text("backoff.yaml"), "backoff.yaml")
    with runner.open_live(session.pk) as live:
        cluster = live.cluster_objects * runner.CLUSTER_OBJECT_BYTES
    budget = cluster + 30 * 250                     # its cluster and about 30 of its events
    settings.SESSION_MEMORY_BUDGET_MB = budget / (1024 * 1024)
    sizes = []      # the estimate before each step that went through
    with pytest.raises(runner.OverBudget) as e:
        for _ in range(400):
            with runner.open_live(session.pk) as live:
                size = live.estimated_bytes()
            runner.control(session.pk, {"action": "step-event"})
            sizes.append(size)
    assert e.value.title == "Stopped: this session reached its memory budget"
    assert "its memory budget is" in e.value.problems[0] and "SESSION_MEMORY_BUDGET_MB" in e.value.problems[0]
    position = stored(session.pk)[0]
    with runner.open_live(session.pk) as live:
        kept = len(live.timeline)
        assert live.estimated_bytes() >= budget
    # it stops within one engine unit: once over, only the unit's events already computed
    # are revealed (stepping through them runs no engine work)
    over = [i for i, size in enumerate(sizes) if size >= budget]
    assert len(sizes) > 10 and len(over) < 20
    assert position == kept
    # travelling back still works; going forward again over the recorded timeline too
    runner.control(session.pk, {"action": "back"})
    runner.control(session.pk, {"action": "step-event"})
    assert stored(session.pk)[0] == position
    with pytest.raises(runner.OverBudget):
        runner.control(session.pk, {"action": "run-until", "until": "100"})
    # the other session is not affected by this one's budget
    runner.control(other.pk, {"action": "step-event"})
    assert stored(other.pk)[0] == 1


def test_the_budget_counts_the_cluster_a_session_holds(session, settings):
    """A session's estimate includes its cluster objects (issue 22): one whose cluster alone
    passes the budget goes no further forward, and says why."""
    with runner.open_live(session.pk) as live:
        objects = live.cluster_objects
        assert objects == len(live.scenario.objects) + sum(a.verb == "create" for a in live.scenario.actions) > 0
        assert live.estimated_bytes() >= objects * runner.CLUSTER_OBJECT_BYTES
    settings.SESSION_MEMORY_BUDGET_MB = (objects * runner.CLUSTER_OBJECT_BYTES - 1) / (1024 * 1024)
    with pytest.raises(runner.OverBudget) as e:
        runner.control(session.pk, {"action": "run-until", "until": "10"})
    assert e.value.problems[0].startswith(f"this session keeps {objects:,} cluster objects and ")


def test_idle_live_sessions_are_evicted_and_rebuilt_on_the_next_visit(session, scenario_text, settings):
    settings.LIVE_SESSION_IDLE_SECONDS = 60
    settings.LIVE_SESSIONS_MAX = 2
    runner.control(session.pk, {"action": "step-cycle"})
    before = shown(session.pk)
    assert session.pk in runner._live
    assert runner.evict_idle(now=time.monotonic() + 61) == [session.pk]
    assert session.pk not in runner._live
    assert shown(session.pk) == before            # rebuilt exactly from the database
    # beyond LIVE_SESSIONS_MAX, the least recently used goes first
    b = runner.create_session(scenario_text("backoff.yaml"), "b.yaml")
    c = runner.create_session(scenario_text("gates.yaml"), "c.yaml")
    for s in (session, b, c):
        shown(s.pk)
    assert set(runner._live) == {b.pk, c.pk}


# ---------------------------------------------------------------------- HTTP

def test_a_pasted_scenario_over_the_request_limit_gets_the_forms_error_list(settings):
    client = Client(enforce_csrf_checks=True)
    token = client.get("/").cookies["csrftoken"].value
    big = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    response = client.post("/sessions/", {"scenario": big, "csrfmiddlewaretoken": token})
    assert response.status_code == 413
    text = response.content.decode()
    assert "RequestDataTooBig" not in text
    assert "the scenario is too large:" in text and "the limit is 6,291,456 bytes (6 MiB)" in text
    assert len(response.content) < 200_000   # the pasted text is not echoed back
    assert Session.objects.count() == 0


def test_an_alias_bomb_pasted_on_the_page_is_refused_with_a_small_response(client):
    bomb = "".join([f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i else '"lol"'] * 9) + "]\n" for i in range(9)])
    started = time.perf_counter()
    response = client.post("/sessions/", {"scenario": bomb})
    assert time.perf_counter() - started < 5
    assert response.status_code == 400
    assert "the document is too large" in response.content.decode()
    assert len(response.content) < 200_000
    assert Session.objects.count() == 0


def test_deeply_nested_json_pasted_on_the_page_is_a_clear_error(client):
    response = client.post("/sessions/", {"scenario": "[" * 500 + "]" * 500})
    assert response.status_code == 400
    assert "values are nested more than 100 levels deep" in response.content.decode()


def _boom(*args, **kwargs):
    raise RuntimeError("secret detail")


@pytest.mark.parametrize("remote, debug_page", [("203.0.113.9", False), ("127.0.0.1", True), ("::1", True)])
def test_debug_pages_reach_only_local_clients(settings, session, monkeypatch, remote, debug_page):
    settings.DEBUG = True
    client = Client(REMOTE_ADDR=remote, raise_request_exception=False)
    not_found = client.get("/no/such/page/")
    assert not_found.status_code == 404
    assert ("Using the URLconf" in not_found.content.decode()) is debug_page
    from visualizer import presenters
    monkeypatch.setattr(presenters, "context", _boom)
    error = client.get(f"/s/{session.presenter_token}/")
    assert error.status_code == 500
    assert ("secret detail" in error.content.decode()) is debug_page


def _django(*args, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REDIS_URL"))}
    environment.update(env, DJANGO_SETTINGS_MODULE="visualizer.settings")
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=120)


def test_production_without_a_secret_key_refuses_to_start():
    result = _django("manage.py", "check", DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_DEBUG=0 (production) needs DJANGO_SECRET_KEY" in result.stderr


def test_check_deploy_is_clean_with_the_documented_production_settings():
    result = _django("manage.py", "check", "--deploy", "--fail-level", "WARNING", DJANGO_DEBUG="0",
                     DJANGO_SECRET_KEY="k" * 10 + "-Zq8#vT2$wX9!mR4@nB7%cL1^pF6&hJ3*dG5(sK0)yE",
                     DJANGO_ALLOWED_HOSTS="scheduler.example.org", DJANGO_HTTPS="1")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
