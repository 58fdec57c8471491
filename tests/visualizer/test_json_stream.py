"""The JSON stream on the WebSocket (/ws/json/s/, /ws/json/w/): the trace events as revealed,
equal to the CLI's --trace; followers read only; resume with "from"; rewind; injections."""
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from visualizer import runner, stream
from visualizer.asgi import application
from visualizer.models import Session

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def in_thread(fn):
    return sync_to_async(fn, thread_sensitive=False)


async def create_from(path):
    return await in_thread(runner.create_session)(Path(path).read_text(encoding="utf-8"), Path(path).name)


@pytest.fixture
def create(scenario_text):
    async def create(name="too-big.yaml"):
        return await in_thread(runner.create_session)(scenario_text(name), name)
    return create


async def connect(path, headers=ORIGIN):
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await comm.connect()
    assert connected, code
    return comm


class Client:
    """A JSON stream client: keeps the events it has by position, as the docs describe."""

    def __init__(self, comm):
        self.comm, self.events, self.messages = comm, [], []

    async def next(self, timeout=5):
        msg = json.loads(await self.comm.receive_from(timeout=timeout))
        self.messages.append(msg)
        assert "position" in msg, msg
        if msg["type"] == "event":
            assert msg["position"] == len(self.events), (msg["position"], len(self.events))   # no gap, no duplicate
            self.events.append(msg["event"])
        elif msg["type"] == "rewind":
            del self.events[msg["kept"]:]
        return msg

    async def until(self, predicate, timeout=10):
        async def loop():
            while True:
                msg = await self.next(timeout)
                if predicate(msg):
                    return msg
        return await asyncio.wait_for(loop(), timeout)

    async def frame_at_end(self, timeout=20):
        return await self.until(lambda m: m["type"] == "frame" and not m["playing"] and m["position"] == m["head"]
                                and m["position"] > 0 and self.settled(m), timeout)

    def settled(self, m):
        return len(self.events) == m["position"]


def exported(session):
    """The session's trace.jsonl download (the events revealed), parsed."""
    with runner.open_live(session.pk) as live:
        return [json.loads(line) for line in runner.export(live, "trace.jsonl").splitlines()]


def cli_trace(path, *extra):
    out = subprocess.run([sys.executable, "-m", "engine", "run", str(path), "--trace", "-", *extra],
                         capture_output=True, text=True, cwd=ROOT, check=True, timeout=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("lesson", ["01-activeq-order.yaml", "11-preemption-reprieve.yaml"])
async def test_the_stream_of_a_lesson_played_to_its_end_equals_the_cli_trace(lesson):
    session = await create_from(ROOT / "fixtures" / lesson)
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    first = await p.next()
    assert first["type"] == "frame" and first["position"] == 0
    assert set(first["queues"]) == {"activeQ", "backoffQ", "unschedulablePods"}
    await p.comm.send_json_to({"action": "play", "speed": "0"})
    end = await p.frame_at_end()
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert end["position"] == row.position == row.high_water
    assert p.events == cli_trace(ROOT / "fixtures" / lesson)
    await p.comm.disconnect()


async def test_play_and_pause_on_the_json_socket(create):
    session = await create("preemption.yaml")
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    await p.next()
    await p.comm.send_json_to({"action": "play", "speed": "25"})
    await p.until(lambda m: m["type"] == "frame" and m["playing"] and m["position"] > 10)
    await p.comm.send_json_to({"action": "pause"})
    paused = await p.until(lambda m: m["type"] == "frame" and not m["playing"])
    await asyncio.sleep(0.4)
    assert not runner.is_playing(session.pk)
    row = await in_thread(Session.objects.get)(pk=session.pk)
    while len(p.events) < row.position:          # the last tick's events, if any, came before its frame
        await p.next()
    assert paused["position"] <= row.position == len(p.events)
    assert p.events == await in_thread(exported)(session)
    await p.comm.disconnect()


async def test_stepping_by_cycle_gives_every_event_once_with_a_frame_per_step():
    path = ROOT / "fixtures" / "11-preemption-reprieve.yaml"
    session = await create_from(path)
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/"))
    assert await p.comm.receive_nothing(timeout=0.2)      # nothing until the client says from where
    await p.comm.send_json_to({"from": 0})
    await p.until(lambda m: m["type"] == "frame")
    frames = 0
    while True:
        await p.comm.send_json_to({"action": "step-cycle"})
        msg = await p.until(lambda m: m["type"] in ("frame", "status") and (m["type"] == "frame" or m["title"]))
        if msg["type"] == "status":
            assert msg["title"].startswith("Nothing more happens")
            break
        frames += 1
        assert msg["position"] == len(p.events)
        assert all(isinstance(k, str) for q in msg["queues"].values() for k in q)
        assert {"clock", "inFlight", "waitingPods", "nominations"} <= set(msg)
    assert frames >= 3
    assert p.events == cli_trace(path)
    await p.comm.disconnect()


async def test_a_follower_receives_the_same_events_and_cannot_control(create):
    session = await create("preemption.yaml")
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    f = Client(await connect(f"/ws/json/w/{session.follower_token}/?from=0"))
    await p.next()
    await f.next()
    for message in ({"action": "step-cycle"}, {"action": "play", "speed": "0"}, {"action": "pause"}, {"no": "action"}):
        await f.comm.send_json_to(message)
        status = await f.until(lambda m: m["type"] == "status")
        assert status["kind"] == "refused" and "only the presenter" in status["title"]
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert row.position == 0 and row.version == 0
    await p.comm.send_json_to({"action": "run-until", "until": "30"})
    end = await p.until(lambda m: m["type"] == "frame" and m["clock"] >= 30 and p.settled(m))
    await f.until(lambda m: m["type"] == "frame" and m["position"] == end["position"])
    assert f.events == p.events and len(p.events) == end["position"] > 0
    await p.comm.disconnect()
    await f.comm.disconnect()


async def test_the_follower_path_refuses_a_presenter_token_and_other_origins(create):
    session = await create()
    for path in ("/ws/json/s/nope/", f"/ws/json/s/{session.follower_token}/", f"/ws/json/w/{session.presenter_token}/"):
        comm = WebsocketCommunicator(application, path, headers=ORIGIN)
        connected, code = await comm.connect()
        assert not connected and code == 4404
        await comm.disconnect()
    comm = WebsocketCommunicator(application, f"/ws/json/s/{session.presenter_token}/",
                                 headers=[(b"origin", b"http://evil.example"), (b"host", b"localhost")])
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()


async def test_resuming_from_a_position_after_a_disconnect_has_no_gap_and_no_duplicate(create):
    session = await create("preemption.yaml")
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    await p.next()
    await p.comm.send_json_to({"action": "step-cycle"})
    await p.until(lambda m: m["type"] == "frame" and m["position"] > 0)
    f = Client(await connect(f"/ws/json/w/{session.follower_token}/?from=0"))
    frame = await f.until(lambda m: m["type"] == "frame")
    run = frame["run"]
    kept = list(f.events)
    await f.comm.disconnect()
    for _ in range(3):                                      # the session goes on meanwhile
        await p.comm.send_json_to({"action": "step-cycle"})
    await p.until(lambda m: m["type"] == "frame" and m["position"] > len(kept) + 20)
    await asyncio.sleep(0.3)
    again = Client(await connect(f"/ws/json/w/{session.follower_token}/"))
    again.events = list(kept)
    await again.comm.send_json_to({"from": len(kept), "run": run})
    msg = await again.until(lambda m: m["type"] == "frame")
    assert [m["position"] for m in again.messages if m["type"] == "event"][0] == len(kept)
    assert again.events == await in_thread(exported)(session) and msg["position"] == len(again.events)
    assert not any(m["type"] == "rewind" for m in again.messages)
    await p.comm.disconnect()
    await again.comm.disconnect()


async def test_back_rewinds_then_nothing_until_new_events(create):
    session = await create("preemption.yaml")
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    await p.next()
    await p.comm.send_json_to({"action": "step-cycle"})
    one = await p.until(lambda m: m["type"] == "frame" and m["position"] > 0)
    await p.comm.send_json_to({"action": "step-cycle"})
    top = await p.until(lambda m: m["type"] == "frame" and m["position"] > one["position"])
    have = list(p.events)
    await p.comm.send_json_to({"action": "back"})
    rewind = await p.until(lambda m: m["type"] == "rewind")
    assert rewind["position"] < top["position"] and rewind["kept"] == len(have)
    assert p.events == have                     # travelling back keeps the recorded run
    await p.comm.send_json_to({"action": "step-event"})   # forward within what the client has
    assert await p.comm.receive_nothing(timeout=0.5)
    await p.comm.send_json_to({"action": "step-cycle"})
    await p.comm.send_json_to({"action": "step-cycle"})
    msg = await p.until(lambda m: m["type"] == "frame")
    assert msg["position"] == len(p.events) > len(have)
    assert p.events[:len(have)] == have
    await p.comm.disconnect()


async def test_a_session_with_an_injection_streams_its_events_and_a_branch_drops_the_future(create):
    session = await create()
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    await p.next()
    await p.comm.send_json_to({"action": "run-until", "until": "2"})
    await p.until(lambda m: m["type"] == "frame" and m["clock"] >= 2)
    before = len(p.events)
    await p.comm.send_json_to({"action": "jump", "position": before // 2})
    rewind = await p.until(lambda m: m["type"] == "rewind")
    assert rewind["kept"] == before
    await p.comm.send_json_to({"action": "inject", "form": "node-add", "name": "n2", "cpu": "8", "memory": "8Gi",
                               "pods": "110"})
    branch = await p.until(lambda m: m["type"] == "rewind")
    assert branch["kept"] == before // 2 == len(p.events)     # the recorded future is dropped
    await p.comm.send_json_to({"action": "run-until", "until": "2"})
    await p.until(lambda m: m["type"] == "frame" and m["clock"] >= 2 and p.settled(m))
    assert any(e["type"] == "Action" and e.get("kind") == "Node" and e.get("name") == "n2" for e in p.events)
    assert any(e["type"] == "Bound" and e.get("node") == "n2" for e in p.events)
    assert p.events == await in_thread(exported)(session)
    # a client that resumes on the old run's events is sent the run from the start
    late = Client(await connect(f"/ws/json/w/{session.follower_token}/?from={before}&run=0000"))
    first = await late.next()
    assert first["type"] == "rewind" and first["kept"] == 0
    await late.until(lambda m: m["type"] == "frame")
    assert late.events == p.events
    await p.comm.disconnect()
    await late.comm.disconnect()


async def test_a_client_far_behind_is_told_so_and_resumes(create, monkeypatch):
    monkeypatch.setattr(stream, "MAX_BATCH_EVENTS", 7)
    session = await create("preemption.yaml")
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/?from=0"))
    await p.next()
    await p.comm.send_json_to({"action": "step-cycle"})
    behind = await p.until(lambda m: m["type"] == "behind")
    assert behind["position"] == len(p.events) == 7 < behind["head"]
    assert await p.comm.receive_nothing(timeout=0.3)
    while True:
        await p.comm.send_json_to({"from": len(p.events)})
        msg = await p.until(lambda m: m["type"] in ("behind", "frame"))
        if msg["type"] == "frame":
            break
    row = await in_thread(Session.objects.get)(pk=session.pk)
    assert len(p.events) == msg["position"] == row.position
    assert p.events == await in_thread(exported)(session)
    await p.comm.disconnect()


async def test_bad_from_and_view_messages_get_a_status(create):
    session = await create()
    p = Client(await connect(f"/ws/json/s/{session.presenter_token}/"))
    await p.comm.send_json_to({"from": "x"})
    assert (await p.next())["kind"] == "invalid"
    await p.comm.send_json_to({"action": "filter", "type": "CycleEnd"})
    assert (await p.next())["kind"] == "invalid"
    await p.comm.send_to(text_data="not json")
    assert (await p.next())["kind"] == "invalid"
    await p.comm.disconnect()
