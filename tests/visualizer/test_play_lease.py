"""Playing across server processes (issue 27): the play lives in the session's row.

A play's process renews a lease with every tick; any process's pause or control clears the
play in the row, and the player's next tick stops; a process that finds a lease run out (the
player was killed) claims the play, exactly one process per play, and plays on from the
database. The multi-process test (test_multiprocess.py) does this with real processes; these
tests look at each rule in one process, on SQLite and (the suite's second pass) PostgreSQL.
"""
import asyncio
import datetime
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.utils import timezone

from visualizer import runner
from visualizer.asgi import application
from visualizer.models import Session

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
OTHER = "another-host:4242:dead"


def in_thread(fn):
    return sync_to_async(fn, thread_sensitive=False)


def mark_playing(session_id, owner=OTHER, seconds=60.0, speed=5.0):
    """The row as a process ``owner`` playing it leaves it, its lease ``seconds`` from now."""
    Session.objects.filter(pk=session_id).update(
        play_speed=speed, play_owner=owner, play_lease_until=timezone.now() + datetime.timedelta(seconds=seconds))


def row(session_id) -> Session:
    return Session.objects.get(pk=session_id)


@pytest.fixture
def session(scenario_text):
    return runner.create_session(scenario_text("preemption.yaml"), "preemption.yaml")


def test_a_play_whose_lease_ran_out_is_adopted_by_exactly_one_look(session, scenario_text):
    live_lease = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    paused = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    mark_playing(session.pk, seconds=-1, speed=25)      # its player stopped renewing a second ago
    mark_playing(live_lease.pk, seconds=30)             # its player is alive
    before = timezone.now()
    assert runner.adopt_orphaned_plays() == [(session.pk, 25.0)]
    adopted = row(session.pk)
    assert adopted.play_owner == runner.PROCESS_ID and adopted.play_speed == 25
    assert adopted.play_lease_until > before + datetime.timedelta(seconds=runner.PLAY_LEASE_SECONDS - 1)
    assert runner.adopt_orphaned_plays() == []          # claimed: no second process gets it
    assert row(live_lease.pk).play_owner == OTHER
    assert row(paused.pk).play_speed is None and row(paused.pk).play_owner == ""


def test_a_control_in_one_process_pauses_a_play_of_another(session):
    mark_playing(session.pk)
    version = row(session.pk).version
    runner.control(session.pk, {"action": "step-event"})
    after = row(session.pk)
    assert (after.play_speed, after.play_owner, after.play_lease_until) == (None, "", None)
    assert (after.position, after.version) == (1, version + 1)      # and the step, once


def test_stop_play_clears_the_row_and_says_whether_it_played(session):
    assert runner.stop_play(session.pk) is False
    mark_playing(session.pk)
    assert runner.stop_play(session.pk) is True
    assert row(session.pk).play_speed is None
    with runner.open_live(session.pk) as live:
        assert live.playing is None


def test_a_tick_steps_only_while_the_row_names_this_process_and_renews_the_lease(session):
    token = runner._play_tokens[session.pk] = object()
    try:
        mark_playing(session.pk, owner=OTHER)
        assert runner._play_tick(session.pk, token, 3, 1.0, lambda live: live.position) is None
        assert row(session.pk).position == 0                        # another process plays it
        mark_playing(session.pk, owner=runner.PROCESS_ID, seconds=0.5)
        leased = row(session.pk).play_lease_until
        finished, version, shown = runner._play_tick(session.pk, token, 3, 1.0, lambda live: live.position)
        after = row(session.pk)
        assert (finished, shown, after.position, after.version) == (False, 3, 3, version)
        assert after.play_lease_until > leased and after.play_owner == runner.PROCESS_ID
        Session.objects.filter(pk=session.pk).update(**runner.NOT_PLAYING)    # a pause elsewhere
        assert runner._play_tick(session.pk, token, 3, 1.0, lambda live: live.position) is None
        assert row(session.pk).position == 3
    finally:
        runner._play_tokens.pop(session.pk, None)


def test_a_play_that_reaches_the_end_leaves_the_row_paused(session):
    token = runner._play_tokens[session.pk] = object()
    try:
        mark_playing(session.pk, owner=runner.PROCESS_ID)
        for _ in range(1000):
            finished, _version, _ = runner._play_tick(session.pk, token, None, 1.0, lambda live: None)
            if finished:
                break
        after = row(session.pk)
        assert finished and after.position == after.high_water > 100
        assert (after.play_speed, after.play_owner) == (None, "")
        assert runner.adopt_orphaned_plays() == []
    finally:
        runner._play_tokens.pop(session.pk, None)


def header_position(frame):
    match = re.search(r'id="panel-header"[^>]*data-position="(\d+)"', frame)
    return int(match.group(1)) if match else None


@pytest.mark.asyncio
async def test_a_killed_players_session_plays_on_here_to_the_end_and_followers_see_it(session, monkeypatch):
    """The player (another process) stopped ticking mid-play: a follower's page on this process
    shows the play going on from where the database has it, to the end of the run."""
    monkeypatch.setattr(runner, "ADOPT_INTERVAL", 0.1)
    await in_thread(runner.control)(session.pk, {"action": "run-until", "until": "0"})
    await in_thread(runner.control)(session.pk, {"action": "step-cycle"})
    killed_at = (await in_thread(row)(session.pk)).position
    await in_thread(mark_playing)(session.pk, seconds=-1, speed=0)
    f = WebsocketCommunicator(application, f"/ws/w/{session.follower_token}/", headers=ORIGIN)
    assert (await f.connect())[0]
    positions = []

    async def until_idle():
        while True:
            m = await f.receive_from(timeout=10)
            if header_position(m) is not None:
                positions.append(header_position(m))
            if 'data-run-state="idle"' in m:
                return
    await asyncio.wait_for(until_idle(), 20)
    final = await in_thread(row)(session.pk)
    assert positions[0] == killed_at                       # the snapshot: where the player stopped
    assert positions[-1] == final.position == final.high_water > killed_at
    assert positions == sorted(positions)
    assert final.play_speed is None
    await f.disconnect()


async def api(method, path, body=None):
    comm = HttpCommunicator(application, method, path, body=json.dumps(body).encode() if body is not None else b"",
                            headers=[(b"content-type", b"application/json"), (b"host", b"localhost")])
    response = await comm.get_response(timeout=10)
    return response["status"], json.loads(response["body"] or b"null")


@pytest.mark.asyncio
async def test_play_and_pause_through_the_rest_api(session):
    base = f"/api/s/{session.presenter_token}"
    status, body = await api("POST", f"{base}/control", {"action": "play", "speed": "fast"})
    assert status == 400 and any("speed" in p for p in body["problems"]), body         # the schema's
    status, body = await api("POST", f"{base}/control", {"action": "play", "speed": 5000})
    assert status == 400 and body["title"] == "The speed is not valid"                  # the page's
    assert body["problems"] == ["speed: 5000.0 is not a number from 0 to 1000"]      # (as the schema read it)
    status, body = await api("POST", f"{base}/control", {"action": "play", "speed": 50})
    assert status == 200 and body["playing"] == 50
    for _ in range(100):
        await asyncio.sleep(0.05)
        status, state = await api("GET", f"/api/w/{session.follower_token}/state")
        if state["position"] > 5:
            break
    status, body = await api("POST", f"{base}/control", {"action": "pause"})
    assert status == 200 and body["note"] == "Paused." and body["playing"] is None
    stopped = body["position"]
    assert 5 < stopped < body["head"] or stopped == body["head"]
    await asyncio.sleep(0.3)
    assert (await in_thread(row)(session.pk)).position == stopped           # it stayed paused
    assert not runner.is_playing(session.pk)
    status, body = await api("POST", f"{base}/control", {"action": "pause"})
    assert status == 200 and body["note"] == "It was not playing."
    status, body = await api("POST", f"{base}/control", {"action": "play", "speed": 0})
    for _ in range(200):
        status, state = await api("GET", f"{base}/state")
        if not runner.is_playing(session.pk):
            break
        await asyncio.sleep(0.05)
    final = await in_thread(row)(session.pk)
    assert final.position == final.high_water > stopped and final.play_speed is None
    status, body = await api("POST", f"/api/w/{session.follower_token}/control", {"action": "play"})
    assert status == 403
