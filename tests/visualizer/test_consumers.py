"""The session WebSocket: snapshots, live frames to every socket, and followers refused."""
import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from visualizer import runner
from visualizer.asgi import application
from visualizer.models import Session

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def in_thread(fn):
    # not the thread-sensitive executor: a database connection left open there would be
    # found by Channels' close_old_connections in later tests that have no database access
    return sync_to_async(fn, thread_sensitive=False)


@pytest.fixture
def create(scenario_text):
    async def create(name="too-big.yaml"):
        return await in_thread(runner.create_session)(scenario_text(name), name)
    return create


async def connect(path):
    comm = WebsocketCommunicator(application, path, headers=ORIGIN)
    connected, code = await comm.connect()
    assert connected, code
    return comm


async def presenter(session):
    return await connect(f"/ws/s/{session.presenter_token}/")


async def follower(session):
    return await connect(f"/ws/w/{session.follower_token}/")


def position(frame):
    match = re.search(r'id="panel-header"[^>]*data-position="(\d+)"', frame)
    return int(match.group(1)) if match else None


async def receive_until(comm, predicate, timeout=5):
    """The first message matching ``predicate`` (earlier ones are skipped)."""
    async def loop():
        while True:
            message = await comm.receive_from(timeout=timeout)
            if predicate(message):
                return message
    return await asyncio.wait_for(loop(), timeout)


def frame_at(n):
    return lambda message: position(message) == n


async def stored_position(session):
    row = await in_thread(Session.objects.get)(pk=session.pk)
    return row.position


async def test_connecting_sends_a_full_snapshot(create):
    session = await create()
    comm = await presenter(session)
    snapshot = await comm.receive_from()
    for panel in ("header", "timeline", "queues", "cycle", "nodes", "preemption", "log", "metrics",
                  "narrative", "targets"):
        assert f'id="panel-{panel}"' in snapshot
    assert position(snapshot) == 0
    await comm.disconnect()


async def test_an_unknown_or_mismatched_token_is_refused(create):
    session = await create()
    for path in ("/ws/s/nope/", f"/ws/s/{session.follower_token}/", f"/ws/w/{session.presenter_token}/"):
        comm = WebsocketCommunicator(application, path, headers=ORIGIN)
        connected, code = await comm.connect()
        assert not connected and code == 4404
        await comm.disconnect()


async def test_a_presenters_step_reaches_every_socket_of_the_session(create):
    session = await create()
    p, f = await presenter(session), await follower(session)
    await p.receive_from()
    await f.receive_from()
    await p.send_json_to({"action": "step-cycle", "HEADERS": {"HX-Request": "true"}})
    p_frame = await receive_until(p, lambda m: (position(m) or 0) > 0)
    f_frame = await receive_until(f, lambda m: (position(m) or 0) > 0)
    assert position(p_frame) == position(f_frame) == await stored_position(session)
    assert 'data-cycle-result="Scheduled"' in f_frame
    await p.disconnect()
    await f.disconnect()


@pytest.mark.parametrize("message", [
    {"action": "step-event"}, {"action": "step-cycle"}, {"action": "back"}, {"action": "jump", "position": 3},
    {"action": "run-until", "until": "100"}, {"action": "play", "speed": "0"}, {"action": "pause"},
    {"action": "inject", "form": "node-add", "name": "n9", "cpu": "8", "pods": "10"},
    {"action": "whatever"}, {"no": "action"},
])
async def test_a_follower_is_refused_any_control(create, message):
    session = await create()
    f = await follower(session)
    await f.receive_from()
    await f.send_json_to(message)
    status = await f.receive_from()
    assert 'data-status-kind="refused"' in status
    assert "only the presenter controls this session" in status
    await asyncio.sleep(0.2)
    assert await f.receive_nothing(timeout=0.2)
    assert await stored_position(session) == 0
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert row.injections == [] and row.version == 0
    assert not runner.is_playing(session.pk)
    await f.disconnect()


async def test_a_follower_may_filter_its_own_log(create):
    session = await create()
    p, f = await presenter(session), await follower(session)
    await p.receive_from()
    await f.receive_from()
    await p.send_json_to({"action": "step-cycle"})
    await receive_until(f, lambda m: (position(m) or 0) > 0)
    await f.send_json_to({"action": "filter", "pod": "", "node": "", "type": "CycleEnd"})
    log = await f.receive_from()
    assert log.lstrip().startswith('<section id="panel-log"')
    assert 'data-event-type="CycleEnd"' in log and 'data-event-type="QueueTransition"' not in log
    # the filter holds for later frames of this socket only
    await p.send_json_to({"action": "step-event"})
    f_frame = await receive_until(f, lambda m: position(m) is not None)
    p_frame = await receive_until(p, lambda m: position(m) is not None and 'data-event-type' in m)
    assert 'data-event-type="QueueTransition"' not in f_frame
    assert 'data-event-type="QueueTransition"' in p_frame
    await p.disconnect()
    await f.disconnect()


async def test_a_bad_control_answers_with_its_problems(create):
    session = await create()
    p = await presenter(session)
    await p.receive_from()
    await p.send_to(text_data="not json")
    assert "not a JSON object" in await p.receive_from()
    await p.send_json_to({"action": "inject", "form": "pod-add", "manifest": "metadata: {name: Bad}"})
    status = await receive_until(p, lambda m: "data-status-kind" in m)
    assert 'data-status-kind="error"' in status
    assert "inject[0].create.metadata.name" in status
    await p.disconnect()


async def test_an_injected_node_is_applied_and_broadcast(create):
    session = await create()
    p, f = await presenter(session), await follower(session)
    await p.receive_from()
    await f.receive_from()
    await p.send_json_to({"action": "run-until", "until": "1"})
    await receive_until(f, lambda m: 'data-clock>1<' in m)
    await p.send_json_to({"action": "inject", "form": "node-add", "name": "n2", "cpu": "8", "memory": "8Gi",
                          "pods": "110"})
    await receive_until(f, lambda m: 'data-node="n2"' in m)
    await p.send_json_to({"action": "run-until", "until": "2"})
    frame = await receive_until(f, lambda m: 'data-clock>2<' in m)
    n2 = frame.split('data-node="n2"')[1].split("</article>")[0]
    assert 'data-pod="default/big"' in n2
    await p.disconnect()
    await f.disconnect()


async def test_play_runs_server_side_and_pause_stops_it(create):
    session = await create("preemption.yaml")
    p, f = await presenter(session), await follower(session)
    await p.receive_from()
    await f.receive_from()
    await p.send_json_to({"action": "play", "speed": "25"})
    await receive_until(f, lambda m: 'data-run-state="playing"' in m and (position(m) or 0) > 0)
    await receive_until(f, lambda m: (position(m) or 0) > 10)
    await p.send_json_to({"action": "pause"})
    paused = await receive_until(f, lambda m: 'data-run-state="paused"' in m)
    stopped_at = position(paused)
    await asyncio.sleep(0.5)
    assert not runner.is_playing(session.pk)
    assert await stored_position(session) == stopped_at
    await p.disconnect()
    await f.disconnect()


async def test_play_at_full_speed_reaches_the_end_and_coalesces_frames(create):
    session = await create("preemption.yaml")
    p = await presenter(session)
    await p.receive_from()
    await p.send_json_to({"action": "play", "speed": "0"})
    frames = []
    final = await receive_until(p, lambda m: frames.append(m) or 'data-run-state="idle"' in m, timeout=20)
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert position(final) == row.position == row.high_water > 100
    assert len([m for m in frames if position(m) is not None]) < row.position / 3
    await p.disconnect()


async def test_a_reconnecting_socket_gets_the_current_state(create):
    session = await create()
    p = await presenter(session)
    await p.receive_from()
    await p.send_json_to({"action": "step-cycle"})
    at = position(await receive_until(p, lambda m: (position(m) or 0) > 0))
    await p.disconnect()
    runner.reset()   # as after a server restart: the engine is rebuilt from the database
    again = await follower(session)
    assert position(await again.receive_from()) == at
    await again.disconnect()


async def test_a_socket_from_another_origin_is_refused(create):
    session = await create()
    comm = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/",
                                 headers=[(b"origin", b"http://evil.example"), (b"host", b"localhost")])
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()


async def test_a_follower_may_set_its_own_view_of_a_large_cluster(create):
    """A page's own view (queue pages, node search and selection, matrix page): a follower may
    set it; the server answers with those panels re-rendered, later frames keep it, and the
    presenter's page is not changed by it."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("large", Path(__file__).with_name("test_large_cluster.py"))
    large = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(large)
    session = await in_thread(runner.create_session)(large.scenario_text(), "large.json")
    p, f = await presenter(session), await follower(session)
    await p.receive_from()
    await f.receive_from()
    await p.send_json_to({"action": "step-cycle"})
    await receive_until(f, lambda m: (position(m) or 0) > 0)
    await f.send_json_to({"action": "view", "find": "n1", "node": "n12", "page-activeQ": "1"})
    own = await receive_until(f, lambda m: 'id="panel-nodes"' in m)
    assert 'data-n="n12" class="h0 m s"' in own and '<article class="node' in own
    assert 'data-pager="activeQ"' in own and "11–20 of 24" in own
    # the view holds for this socket's later frames only
    await p.send_json_to({"action": "step-cycle"})
    f_frame = await receive_until(f, lambda m: 'id="panel-nodes"' in m and position(m) is not None)
    p_frame = await receive_until(p, lambda m: 'id="panel-nodes"' in m and position(m) == position(f_frame))
    assert 'data-n="n12" class="h0 m s"' in f_frame and "11–20 of 23" in f_frame
    assert 'data-n="n12" class="h0"' in p_frame and "1–10 of 23" in p_frame
    # a field left out keeps its value; an empty one resets it
    await f.send_json_to({"action": "view", "find": ""})
    own = await receive_until(f, lambda m: 'id="panel-nodes"' in m)
    assert 'data-n="n12" class="h0 s"' in own and "11–20 of 23" in own
    await p.disconnect()
    await f.disconnect()


async def test_a_checkpoint_due_after_a_step_is_taken_once_its_frame_is_out(create, monkeypatch):
    monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    session = await create("preemption.yaml")
    comm = await presenter(session)
    await comm.receive_from()

    def checkpoints():
        with runner.open_live(session.pk) as live:
            return len(live.checkpointer.checkpoints), live.checkpointer.due
    await comm.send_to(text_data=json.dumps({"action": "step-cycle"}))
    await receive_until(comm, lambda m: position(m) not in (None, 0))
    for _ in range(50):         # taken a moment after the frame (CHECKPOINT_DELAY_SECONDS)
        taken, due = await in_thread(checkpoints)()
        if taken:
            break
        await asyncio.sleep(0.02)
    assert (taken, due) == (1, False)
    await comm.disconnect()


async def test_a_due_checkpoint_waits_while_the_presenter_keeps_stepping(create, monkeypatch):
    """Taking a checkpoint at 5,000 nodes costs more than a step: while clicks keep coming it
    is put off (each step leaves it due again), and it is taken once the presenter is idle."""
    from visualizer import consumers
    monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", {"min_events": 1, "overhead": 0})
    monkeypatch.setattr(consumers, "CHECKPOINT_IDLE_SECONDS", 0.5)
    monkeypatch.setattr(consumers, "CHECKPOINT_MAX_WAIT_SECONDS", 60)
    session = await create("preemption.yaml")
    comm = await presenter(session)
    await comm.receive_from()

    def checkpoints():
        with runner.open_live(session.pk) as live:
            return len(live.checkpointer.checkpoints), live.checkpointer.due

    def shown_position():
        with runner.open_live(session.pk) as live:
            return live.position
    last = 0
    for _ in range(4):
        await comm.send_to(text_data=json.dumps({"action": "step-cycle"}))
        await receive_until(comm, lambda m: position(m) not in (None, last))
        last = await in_thread(shown_position)()
        await asyncio.sleep(0.1)
        assert await in_thread(checkpoints)() == (0, True)     # put off: clicks keep coming
    for _ in range(60):
        taken, due = await in_thread(checkpoints)()
        if taken:
            break
        await asyncio.sleep(0.05)
    assert (taken, due) == (1, False)
    await comm.disconnect()
