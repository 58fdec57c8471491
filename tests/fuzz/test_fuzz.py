"""Seeded fuzzing of everything a stranger can send (issue 10, "Done when"): mutated scenarios
through the CLI's code path and through the upload view, and hostile WebSocket messages
through Channels' WebsocketCommunicator. Every input must get exit status 0 or 2 (or a page /
reply) with a clear message, never a traceback, in bounded time and memory.

The seed is ``FUZZ_SEED`` (default 2026); a failure names the seed and the case, and the input
is written to the pytest temporary directory so it can be replayed with ``python -m engine``.
"""
import asyncio
import io
import os
import random
import sys
import time
import tracemalloc
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutate  # noqa: E402

from engine.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("FUZZ_SEED", "2026"))
SOURCES = sorted((ROOT / "fixtures").glob("*.yaml")) + sorted((ROOT / "tests/visualizer/scenarios").glob("*.yaml"))
CASE_SECONDS = 10              # one input, on a busy 2-core machine
CASE_PEAK_BYTES = 256 * 2**20  # memory one input may take (tracemalloc's peak)


def inputs(rng, n):
    """n mutated scenario texts (three in four changed as data, the rest as text)."""
    texts = [p.read_text(encoding="utf-8") for p in SOURCES]
    for i in range(n):
        text = rng.choice(texts)
        if rng.random() < 0.75:
            yield i, mutate.dump(mutate.mutate_data(yaml.safe_load(text), rng))
        else:
            yield i, mutate.mutate_text(text, rng)


@pytest.fixture
def fresh_runner():
    from visualizer import frames, runner
    runner.reset()
    yield
    runner.reset()


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_mutated_scenarios_through_the_cli(tmp_path):
    rng = random.Random(SEED)
    tracemalloc.start()
    started = time.perf_counter()
    outcomes = {0: 0, 2: 0}
    try:
        for i, text in inputs(rng, 120):
            path = tmp_path / f"case-{SEED}-{i}.yaml"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            tracemalloc.reset_peak()
            t0 = time.perf_counter()
            args = ["run", str(path), "--until", rng.choice(["0", "5", "30", "1e999999999", "-1", "x"]),
                    "--state", str(tmp_path / "state.json")] if i % 2 else ["validate", str(path)]
            code, out, err = cli(*args)
            elapsed = time.perf_counter() - t0
            where = f"seed {SEED} case {i} ({path}): {' '.join(args)}"
            assert code in (0, 2), f"{where}: exit {code}\n{err[-3000:]}"
            assert "Traceback" not in err, f"{where}\n{err[-3000:]}"
            if code == 2:
                assert err.strip() and len(err) < 200_000, where
            assert elapsed < CASE_SECONDS, f"{where}: {elapsed:.1f}s"
            assert tracemalloc.get_traced_memory()[1] < CASE_PEAK_BYTES, where
            outcomes[code] += 1
            if time.perf_counter() - started > 25:
                break
    finally:
        tracemalloc.stop()
    # the mutations reach both the refusals and runs that go through
    assert outcomes[0] > 3 and outcomes[2] > 10, outcomes
    print(f"CLI fuzz: {sum(outcomes.values())} inputs, {outcomes}")


@pytest.mark.django_db
def test_mutated_scenarios_through_the_upload_view(client):
    from visualizer.models import Session
    rng = random.Random(SEED + 1)
    started = time.perf_counter()
    statuses = {}
    for i, text in inputs(rng, 60):
        t0 = time.perf_counter()
        response = client.post("/sessions/", {"scenario": text})
        elapsed = time.perf_counter() - t0
        body = response.content.decode("utf-8", "replace")
        where = f"seed {SEED + 1} case {i}"
        assert response.status_code in (302, 400, 413), f"{where}: HTTP {response.status_code}"
        assert "Traceback" not in body, where
        # the page echoes the pasted text and at most 100 problems, each bounded
        assert len(response.content) < 3 * len(text.encode()) + 400_000, f"{where}: {len(response.content)} bytes"
        assert elapsed < CASE_SECONDS, f"{where}: {elapsed:.1f}s"
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if time.perf_counter() - started > 12:
            break
    assert statuses.get(400, 0) > 5, statuses
    print(f"upload fuzz: {statuses}")
    # every stored session is one whose page opens
    for session in Session.objects.all()[:5]:
        assert client.get(f"/s/{session.presenter_token}/").status_code == 200


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_hostile_websocket_messages(fresh_runner):
    from visualizer import frames, runner
    from visualizer.asgi import application
    from visualizer.models import Session

    text = (ROOT / "tests/visualizer/scenarios/preemption.yaml").read_text(encoding="utf-8")
    session = await sync_to_async(runner.create_session, thread_sensitive=False)(text, "preemption.yaml")
    rng = random.Random(SEED + 2)
    comm = WebsocketCommunicator(application, f"/ws/s/{session.presenter_token}/",
                                 headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")])
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_from()
    started = time.perf_counter()
    for i in range(150):
        message = mutate.ws_message(rng)
        where = f"seed {SEED + 2} message {i}: {message[:300]!r}"
        t0 = time.perf_counter()
        await comm.send_to(text_data=message)
        # every message gets an answer (a status or a frame), never a closed socket
        reply = await comm.receive_from(timeout=CASE_SECONDS)
        assert "Traceback" not in reply, where
        assert time.perf_counter() - t0 < CASE_SECONDS, where
        await comm.send_json_to({"action": "pause"})
        if time.perf_counter() - started > 12:
            break
    print(f"WebSocket fuzz: {i + 1} messages")
    # drain, then the session still works and memory matches the database
    await comm.send_json_to({"action": "pause"})
    await asyncio.sleep(0.5)
    while not await comm.receive_nothing(timeout=0.3):
        await comm.receive_from()
    get = sync_to_async(Session.objects.get, thread_sensitive=False)
    before = await get(pk=session.pk)
    await comm.send_json_to({"action": "step-event"})
    deadline = time.monotonic() + CASE_SECONDS
    while time.monotonic() < deadline:
        await comm.receive_from(timeout=CASE_SECONDS)
        after = await get(pk=session.pk)
        if after.version > before.version:
            break
    assert after.version == before.version + 1
    # this process's copy and the database agree (a restart would show the same timeline)
    with_memory = await sync_to_async(frames.render_frame, thread_sensitive=False)(session.pk)
    runner.reset()
    rebuilt = await sync_to_async(frames.render_frame, thread_sensitive=False)(session.pk)
    if with_memory != rebuilt:   # name the first panel that differs, with the text around it
        import difflib
        for (name_a, html_a), (name_b, html_b) in zip(with_memory[1], rebuilt[1]):
            if (name_a, html_a) != (name_b, html_b):
                diff = "\n".join(list(difflib.unified_diff(html_a.splitlines(), html_b.splitlines(), lineterm=""))[:40])
                raise AssertionError(f"panel {name_a} differs from the rebuilt session's:\n{diff}")
    assert with_memory == rebuilt
    await comm.disconnect()
