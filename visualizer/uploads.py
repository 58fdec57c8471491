"""Uploaded and pasted text is read in a worker process with limits (``engine/sandbox.py``).

``prepare(files, ...)`` runs ``python -m engine.sandbox`` with the server's limits
(``settings.UPLOAD_WORKER_CPU_SECONDS``, ``UPLOAD_WORKER_MEMORY_MB``,
``UPLOAD_WORKER_TIMEOUT_SECONDS``) and object limit (``SESSION_MAX_OBJECTS``), and returns the
scenario text to store (the text itself, or the import's conversion) or raises
``ScenarioError`` with the problems found; ``LimitExceeded`` (HTTP 413) when a limit tripped.

The worker is killed, and ``ClientGone`` raised, as soon as the client that asked has gone
(``disconnect_watch``: an ASGI wrapper notes the ``http.disconnect`` Django's handler receives,
in a context variable the view's thread sees) or the server is shutting down (every worker is
killed before the interpreter joins its threads), so nothing runs on for nobody.
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings

from engine import ScenarioError, sandbox

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parent.parent
POLL_SECONDS = 0.05


class LimitExceeded(ScenarioError):
    """The worker passed a limit (CPU time, memory, wall time): HTTP 413."""


class ClientGone(Exception):
    """The client went away (or the server is stopping) before the answer: nobody to answer."""


# ----------------------------------------------------------------- the client's disconnect

_disconnected: contextvars.ContextVar = contextvars.ContextVar("upload_client_disconnected", default=None)


def disconnect_watch(app):
    """ASGI middleware for HTTP: an Event, set when the client disconnects, in a context variable
    that the request's view sees (its thread gets a copy of the context)."""

    async def watched(scope, receive, send):
        if scope.get("type") != "http":
            return await app(scope, receive, send)
        gone = threading.Event()
        _disconnected.set(gone)

        async def receive_noting():
            message = await receive()
            if message.get("type") == "http.disconnect":
                gone.set()
            return message
        # The request runs as a task of its own (it sees the Event: a task copies the context),
        # shielded: when the server cancels its requests as it stops (Daphne's
        # kill_all_applications), this wrapper learns it at once and sets the Event, while
        # Django's handler would only end once the view's thread returns (its
        # ThreadSensitiveContext waits for that thread); the view then kills its worker and
        # returns within POLL_SECONDS.
        task = asyncio.ensure_future(app(scope, receive_noting, send))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            gone.set()
            task.cancel()
            try:
                await task
            except BaseException:   # noqa: BLE001 - it was cancelled; the stop goes on
                pass
            raise
    return watched


def client_gone() -> bool:
    gone = _disconnected.get()
    return gone is not None and gone.is_set()


# ----------------------------------------------------------------- the workers

_workers: set = set()
_workers_lock = threading.Lock()
_stopping = threading.Event()


def stop_all() -> None:
    """Kill every running worker (the server is stopping)."""
    _stopping.set()
    with _workers_lock:
        procs = list(_workers)
    for p in procs:
        _kill(p)


# Run before the interpreter joins the request threads at exit (threading's exit hooks run in
# reverse order of registration, and concurrent.futures registered its join earlier), so a
# view waiting on a worker returns at once rather than holding the shutdown.
_register = getattr(threading, "_register_atexit", None)
if _register is not None:
    _register(stop_all)


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def limits() -> dict:
    return {"cpu_seconds": float(settings.UPLOAD_WORKER_CPU_SECONDS),
            "memory_bytes": int(settings.UPLOAD_WORKER_MEMORY_MB * 1024 * 1024),
            "wall_seconds": float(settings.UPLOAD_WORKER_TIMEOUT_SECONDS)}


def _plugin_sources() -> list:
    """The server's plugin modules (its configuration, never the request's), for the worker."""
    from engine.plugins import loader
    return [m.source for m in loader.loaded_modules() if not m.source.startswith("entry point ")]


def prepare(files, *, test_case=None, workload=None, source: str = "") -> tuple:
    """(scenario text, imported) for uploaded or pasted ``files`` ([(name, text)]), read and
    checked in a worker process; ScenarioError / LimitExceeded / ClientGone otherwise."""
    lim = limits()
    request = {"files": [[n, t] for n, t in files], "source": source,
               "options": {"test_case": test_case, "workload": workload},
               "max_objects": int(settings.SESSION_MAX_OBJECTS),
               "plugins": _plugin_sources(), "entry_points": True, "limits": lim}
    payload = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
    del request
    env = dict(os.environ, **sandbox.WORKER_ENV)
    where = files[0][0] if len(files) == 1 else "the files"
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "engine.sandbox"], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    with _workers_lock:
        _workers.add(proc)
    out_chunks, err_chunks = [], []
    try:
        # stdin in a thread (it may be larger than the pipe), stdout/stderr read in threads, so
        # this thread can watch the client, the clock and the server
        feeders = [threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True),
                   threading.Thread(target=_drain, args=(proc.stdout, out_chunks), daemon=True),
                   threading.Thread(target=_drain, args=(proc.stderr, err_chunks, 64 * 1024), daemon=True)]
        for t in feeders:
            t.start()
        deadline = started + lim["wall_seconds"] + 2
        timed_out = False
        while proc.poll() is None:
            if client_gone() or _stopping.is_set():
                break
            if time.monotonic() > deadline:
                timed_out = True
                _kill(proc)
                break
            try:
                proc.wait(POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        if client_gone() or _stopping.is_set():
            _kill(proc)
            raise ClientGone()
        for t in feeders:
            t.join(5)
    finally:
        with _workers_lock:
            _workers.discard(proc)
        if proc.poll() is None:
            _kill(proc)
            proc.wait()
    code = proc.returncode
    if code == 0:
        try:
            answer = json.loads(b"".join(out_chunks))
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            if "problems" in answer:
                problems = answer["problems"]
                if not answer.get("imported") and len(files) == 1 and files[0][0] != "pasted text":
                    # a scenario file's problems name their places in it: and the file
                    problems = [f"{files[0][0]}: {p}" for p in problems]
                raise ScenarioError(problems, answer.get("source") or where)
            return answer["text"], bool(answer.get("imported"))
    err = b"".join(err_chunks).decode("utf-8", "replace")
    if code == sandbox.EXIT_MEMORY or "MemoryError" in err:
        raise LimitExceeded([f"{where}: reading it needs more than {settings.UPLOAD_WORKER_MEMORY_MB:g} MiB "
                             "of memory (UPLOAD_WORKER_MEMORY_MB); upload a smaller cluster"], "upload")
    if code in (sandbox.EXIT_CPU, -signal.SIGXCPU):
        raise LimitExceeded([f"{where}: reading it takes more than {lim['cpu_seconds']:g} s of CPU time "
                             "(UPLOAD_WORKER_CPU_SECONDS); upload a smaller cluster"], "upload")
    if code == sandbox.EXIT_WALL or timed_out:
        raise LimitExceeded([f"{where}: reading it takes more than {lim['wall_seconds']:g} s "
                             "(UPLOAD_WORKER_TIMEOUT_SECONDS); upload a smaller cluster"], "upload")
    if code == -signal.SIGKILL:     # the CPU limit's hard end, or the kernel out of memory
        raise LimitExceeded([f"{where}: reading it was stopped: it needs more CPU time or memory than "
                             f"allowed ({lim['cpu_seconds']:g} s, UPLOAD_WORKER_CPU_SECONDS; "
                             f"{settings.UPLOAD_WORKER_MEMORY_MB:g} MiB, UPLOAD_WORKER_MEMORY_MB)"], "upload")
    log.error("upload worker failed (exit %s): %s", code, err[-4000:])
    raise ScenarioError([f"{where}: the file could not be read: the converter failed (exit status {code}); "
                         "this is a bug, please report it with the file"], "upload")


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _drain(pipe, chunks: list, keep: int | None = None) -> None:
    """Read a pipe to its end into ``chunks`` (the last ``keep`` bytes only, if given)."""
    size = 0
    for chunk in iter(lambda: pipe.read(65536), b""):
        chunks.append(chunk)
        size += len(chunk)
        if keep is not None and size > 2 * keep:
            tail = b"".join(chunks)[-keep:]
            chunks[:] = [tail]
            size = len(tail)
    pipe.close()
