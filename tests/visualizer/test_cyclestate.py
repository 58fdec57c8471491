"""The CycleState inspector's view (visualizer/cyclestate.py): ``GET /s/<token>/cyclestate/?cycle=N``
rebuilds the cycle with the engine's recorder on and shows what each extension point's plugins
stored, as far as the page shows the cycle; never the future; followers read it too; the live
session's position does not move."""
from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import pytest

from visualizer import cyclestate, runner
from visualizer.models import Session

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "fixtures/09-interpod-affinity.yaml"
SPREAD = Path(__file__).resolve().parent / "scenarios/topology-spread.yaml"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cyclestate.clear_cache()
    yield
    cyclestate.clear_cache()


def _get(client, session, cycle, role="presenter", htmx=False):
    token = session.presenter_token if role == "presenter" else session.follower_token
    prefix = "s" if role == "presenter" else "w"
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.get(f"/{prefix}/{token}/cyclestate/", {"cycle": cycle}, **extra)


def _rows(body: str, point: str) -> list:
    """(plugin, key) of the rows of one point's tbody."""
    m = re.search(rf'<tbody data-cs-point="{point}">(.*?)</tbody>\s*(?:<tbody data-cs-point|</table>)', body, re.S)
    if m is None:
        return []
    return re.findall(r'<tr data-cs-plugin="([^"]+)" data-cs-key="([^"]+)">', m.group(1))


def _position(session) -> int:
    with runner.open_live(session.pk) as live:
        return live.position


@pytest.mark.django_db
def test_a_lessons_cycle_shows_node_resources_fits_prefilter_state(client):
    session = runner.create_session(LESSON.read_text(), "09-interpod-affinity.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "10"})
    before = _position(session)
    row_before = Session.objects.get(pk=session.pk).position
    r = _get(client, session, 1)
    assert r.status_code == 200
    body = r.content.decode()
    pre = _rows(body, "PreFilter")
    assert ("NodeResourcesFit", "PreFilterNodeResourcesFit") in pre
    assert ("InterPodAffinity", "PreFilterInterPodAffinity") in pre
    assert re.search(r"<span class=\"small cs-type\" title=\"engine.plugins.noderesources.fit._PreFilterState\">_PreFilterState</span>", body)
    assert "cpu: 500\nmemory: 0" in body
    assert "topologyKey=kubernetes.io/hostname selector=app=database" in htmllib.unescape(body)
    # the live session did not move, in memory or in the database
    assert _position(session) == before
    assert Session.objects.get(pk=session.pk).position == row_before


@pytest.mark.django_db
def test_topology_spread_states_at_prefilter_and_prescore(client):
    session = runner.create_session(SPREAD.read_text(), "topology-spread.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "5"})
    body = htmllib.unescape(_get(client, session, 1).content.decode())
    assert ("PodTopologySpread", "PreFilterPodTopologySpread") in _rows(body, "PreFilter")
    assert ("PodTopologySpread", "PreScorePodTopologySpread") in _rows(body, "PreScore")
    assert "topology.kubernetes.io/zone: b=1 (min), a=2" in body
    assert "TpPairToMatchNum:\n  topology.kubernetes.io/zone=a: 2\n  topology.kubernetes.io/zone=b: 1" in body
    assert "maxSkew=1 topologyKey=kubernetes.io/hostname selector=app=web" in body
    # the state as PreScore left it lists PreFilter's keys too
    after = re.search(r'<details data-cs-after="PreScore">(.*?)</details>', body, re.S).group(1)
    assert 'data-cs-key="PreFilterPodTopologySpread"' in after and 'data-cs-key="PreScorePodTopologySpread"' in after


@pytest.mark.django_db
def test_the_future_is_refused(client):
    session = runner.create_session(SPREAD.read_text(), "topology-spread.yaml")
    assert _get(client, session, 1).status_code == 404          # nothing revealed yet
    r = _get(client, session, 1, htmx=True)                     # htmx swaps 2xx only: a fragment saying so
    assert r.status_code == 200 and "No cycle 1 on the page yet." in r.content.decode()
    runner.control(session.pk, {"action": "run-until", "until": "5"})
    assert _get(client, session, 1).status_code == 200
    assert _get(client, session, 2).status_code == 404          # no such cycle (yet)
    # travelled back before the cycle: refused again
    runner.control(session.pk, {"action": "jump", "position": 0})
    assert _position(session) == 0
    assert _get(client, session, 1).status_code == 404
    assert _get(client, session, "x").status_code == 400
    assert _get(client, session, -1).status_code == 400


@pytest.mark.django_db
def test_a_cycle_shown_in_part_shows_only_its_revealed_points(client):
    session = runner.create_session(SPREAD.read_text(), "topology-spread.yaml")
    # step events until PreFilter's results are revealed, PreScore's not yet
    for _ in range(200):
        runner.control(session.pk, {"action": "step-event"})
        with runner.open_live(session.pk) as live:
            seen = [e for e in live.revealed() if e["type"] == "PluginResult" and e.get("cycle") == 1]
        if seen and seen[-1]["point"] == "PreFilter":
            break
    body = _get(client, session, 1).content.decode()
    assert _rows(body, "PreFilter")
    assert 'data-cs-point="PreScore"' not in body and "so far" in body
    runner.control(session.pk, {"action": "run-until", "until": "5"})
    body = _get(client, session, 1).content.decode()
    assert 'data-cs-point="PreScore"' in body and "so far" not in body


@pytest.mark.django_db
def test_a_follower_reads_it_and_it_is_cached(client, monkeypatch):
    session = runner.create_session(SPREAD.read_text(), "topology-spread.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "5"})
    calls = []
    real = cyclestate._record
    monkeypatch.setattr(cyclestate, "_record", lambda *a: calls.append(a) or real(*a))
    follower = _get(client, session, 1, role="follower")
    assert follower.status_code == 200 and 'data-cs-plugin="PodTopologySpread"' in follower.content.decode()
    assert _get(client, session, 1).content == follower.content
    assert len(calls) == 1
    assert client.get(f"/w/{session.presenter_token}/cyclestate/", {"cycle": 1}).status_code == 404


@pytest.mark.django_db
def test_rebuilt_from_checkpoints_taken_inside_the_cycle(client, monkeypatch):
    """With a checkpoint at every unit, one falls between the cycle's Pop and its end: the
    inspector starts from an earlier one, so the cycle's state is recorded from its start."""
    monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    session = runner.create_session(LESSON.read_text(), "09-interpod-affinity.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "10"})
    runner.control(session.pk, {"action": "back"})
    with runner.open_live(session.pk) as live:
        assert len(live.checkpointer.checkpoints) > 5
        position = live.position
        last = max(e["cycle"] for e in live.revealed() if e["type"] == "CycleEnd")
    body = _get(client, session, last).content.decode()
    assert ("NodeResourcesFit", "PreFilterNodeResourcesFit") in _rows(body, "PreFilter")
    assert _position(session) == position


@pytest.mark.django_db
def test_the_panels_offer_it(client):
    session = runner.create_session(SPREAD.read_text(), "topology-spread.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "5"})
    page = client.get(f"/s/{session.presenter_token}/").content.decode()
    assert re.search(r'<details class="cycle-state-disclosure" data-cycle-state="1"[^>]*'
                     r'hx-get="cyclestate/\?cycle=1"', page)
    hist = client.get(f"/w/{session.follower_token}/history/", {"pod": "default/web-new"},
                      HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="/w/{session.follower_token}/cyclestate/?cycle=1"' in hist
    assert session.presenter_token not in hist


@pytest.mark.django_db
@pytest.mark.parametrize("lesson", ["fixtures/09-interpod-affinity.yaml", "fixtures/11-preemption-reprieve.yaml",
                                    "fixtures/17-nominated-two-passes.yaml",
                                    "tests/visualizer/scenarios/topology-spread.yaml"])
@pytest.mark.parametrize("every_unit", [False, True])
def test_on_demand_equals_recording_the_whole_run(lesson, every_unit, monkeypatch, client):
    """Every cycle's record, rebuilt on demand (from the start with the trace-off fast forward,
    or from a checkpoint at every unit), is what recording the whole run from the start gives."""
    from engine.framework.recorder import CycleStateRecorder
    from engine.scenario import load_scenario
    from engine.stepper import Stepper
    if every_unit:
        monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    text = (ROOT / lesson).read_text()
    direct = Stepper(load_scenario(ROOT / lesson))
    rec = CycleStateRecorder()
    direct.engine.cycle_state_recorder = rec
    direct.run_until(600)
    rec.finish()
    session = runner.create_session(text, Path(lesson).name)
    runner.control(session.pk, {"action": "run-until", "until": "600"})
    with runner.open_live(session.pk) as live:
        starts = [e for e in live.revealed() if e["type"] == "CycleStart"]
        assert starts
        for e in starts:
            i, cycle = e["seq"], e["cycle"]
            ext = cyclestate._extent(live.timeline, i, e, live.position)
            got = cyclestate._record(live, i, cycle, ext["stop"])
            want = rec.records[cycle]
            assert got.writes == want.writes, (lesson, cycle)
            assert got.snapshots == want.snapshots, (lesson, cycle)
    assert _get(client, session, starts[-1]["cycle"]).status_code == 200
