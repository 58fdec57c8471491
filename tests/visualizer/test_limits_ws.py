"""The session WebSocket answers bad input with a status and stays open; one presenter's
flood or runaway run does not starve another session (issue 10)."""
import asyncio
import json
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from visualizer import consumers, runner
from visualizer.asgi import application
from visualizer.models import Session

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def in_thread(fn):
    return sync_to_async(fn, thread_sensitive=False)


@pytest.fixture
def create(scenario_text):
    async def create(name="too-big.yaml"):
        return await in_thread(runner.create_session)(scenario_text(name), name)
    return create


async def presenter(session):
    comm = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/", headers=ORIGIN)
    connected, code = await comm.connect()
    assert connected, code
    await comm.receive_from()   # the snapshot
    return comm


async def status_of(comm, timeout=10):
    """The next status panel sent to this socket (frames before it are skipped)."""
    async def loop():
        while True:
            message = await comm.receive_from(timeout=timeout)
            if 'id="panel-status"' in message and "data-status-kind" in message:
                return message
    return await asyncio.wait_for(loop(), timeout)


async def row(session):
    return await in_thread(Session.objects.get)(pk=session.pk)


async def still_works(comm, session):
    """The socket is open and controls still work after the bad message."""
    before = (await row(session)).version
    await comm.send_json_to({"action": "step-event"})
    await receive_panel(comm, 'id="panel-header"')
    assert (await row(session)).version == before + 1


async def receive_panel(comm, marker, timeout=10):
    async def loop():
        while True:
            message = await comm.receive_from(timeout=timeout)
            if marker in message:
                return message
    return await asyncio.wait_for(loop(), timeout)


@pytest.mark.parametrize("text, kind, title", [
    ("not json", "invalid", "The message is not a JSON object"),
    ("[1, 2]", "invalid", "The message is not a JSON object"),
    ('{"action": ["step-event", "back"]}', "invalid", "The message&#x27;s action is not a name"),
    ('{"action": {"a": 1}}', "invalid", "The message&#x27;s action is not a name"),
    ('{"action": 7}', "invalid", "The message&#x27;s action is not a name"),
    ('{"action": ' + "[" * 500 + "]" * 500 + "}", "invalid", "nested more than 8 levels deep"),
    ("[" * 100000 + "]" * 100000, "invalid", "The message is nested too deeply"),
    ('{"action": "step-event", "x": "' + "a" * (600 * 1024) + '"}', "invalid", "The message is too large"),
    ('{"action": "run-until", "until": 1e308}', "error", "is more than 1e+06"),
    ('{"action": "run-until", "until": "1e999999999"}', "error", "must be a finite number"),
    ('{"action": "jump", "position": "inf"}', "error", "must be a finite number"),
    ('{"action": "play", "speed": 1e308}', "error", "The speed is not valid"),
    ('{"action": "nope"}', "invalid", "Unknown control"),
])
async def test_bad_messages_get_a_reply_and_the_socket_stays_open(create, text, kind, title):
    session = await create()
    p = await presenter(session)
    started = time.perf_counter()
    await p.send_to(text_data=text)
    status = await status_of(p)
    assert time.perf_counter() - started < 5
    assert f'data-status-kind="{kind}"' in status
    assert title in status
    assert len(status) < 5000
    await still_works(p, session)
    await p.disconnect()


async def test_an_injected_pod_with_nan_is_refused_and_nothing_changes(create):
    session = await create()
    p = await presenter(session)
    await p.send_json_to({"action": "inject", "form": "pod-add",
                          "manifest": "kind: Pod\nmetadata: {name: p, labels: {a: .nan}}\nspec: {containers: [{name: c}]}"})
    status = await status_of(p)
    assert 'data-status-kind="error"' in status and "NaN and infinity" in status
    stored = await row(session)
    assert (stored.injections, stored.version) == ([], 0)
    # a new process (restart) and this one show the same timeline
    runner.reset()
    await still_works(p, session)
    await p.disconnect()


async def test_a_flood_of_controls_is_bounded_and_other_sessions_carry_on(create):
    flooded, other = await create(), await create("backoff.yaml")
    p, q = await presenter(flooded), await presenter(other)
    for _ in range(200):
        await p.send_json_to({"action": "step-event"})
    # the other session answers while the flood is carried out
    started = time.perf_counter()
    await q.send_json_to({"action": "step-cycle"})
    await receive_panel(q, 'id="panel-header"')
    assert time.perf_counter() - started < 5
    # every control is either carried out (stored) or refused with a message
    refused = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        message = await p.receive_from(timeout=30)
        if "too many controls are waiting" in message:
            refused += 1
        if refused and (await row(flooded)).version + refused == 200:
            break
    done = (await row(flooded)).version
    assert refused > 0
    assert done + refused == 200
    assert done <= 200 - refused + consumers.MAX_PENDING_CONTROLS
    await p.disconnect()
    await q.disconnect()


async def test_a_long_run_until_goes_in_slices_and_stops_at_its_budget(create, monkeypatch):
    monkeypatch.setattr(runner, "RUN_SLICE_SECONDS", 0.0)
    monkeypatch.setattr(runner, "MAX_SLICES_PER_CONTROL", 3)
    session = await create()
    p = await presenter(session)
    await p.send_json_to({"action": "run-until", "until": "80000"})
    status = await status_of(p, timeout=30)
    assert "Stopped: this run took its whole budget of work (3 slices); run again to go on." in status
    stored = await row(session)
    assert stored.version == 3                  # every slice stored
    assert 0 < stored.head_clock_us < 80000 * 10**6
    await p.disconnect()


async def test_a_session_over_its_budget_says_so_while_playing(create, settings):
    settings.SESSION_MEMORY_BUDGET_MB = 20 * runner.EVENT_BYTES / (1024 * 1024)
    session = await create("preemption.yaml")
    p = await presenter(session)
    await p.send_json_to({"action": "play", "speed": "0"})
    status = await status_of(p)
    while "memory budget" not in status:
        status = await status_of(p)
    assert 'data-status-kind="error"' in status
    assert "Stopped: this session reached its memory budget" in status
    await asyncio.sleep(0.3)
    assert not runner.is_playing(session.pk)
    await p.disconnect()


async def test_parse_message_limits():
    assert consumers.parse_message('{"action": ["step-event"], "HEADERS": {}}') == {"action": "step-event"}
    with pytest.raises(consumers.InvalidMessage):
        consumers.parse_message(json.dumps({"a": [[[[[[[[[1]]]]]]]]]}))
