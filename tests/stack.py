"""The deployment of issue 27 on loopback, for tests and benchmarks: a throw-away PostgreSQL
(tests/pgserver.py), a throw-away redis-server, and N ``daphne visualizer.asgi:application``
processes sharing both, each on its own free port on 127.0.0.1. Nothing leaves the machine.

    with Stack(processes=2) as stack:
        stack.urls          # ["http://127.0.0.1:41231", "http://127.0.0.1:41233"]
        stack.ws_urls       # ["ws://127.0.0.1:41231", ...]
        stack.kill(0)       # SIGKILL the first web process (stack.alive(0) is then False)

Used by tests/visualizer/test_multiprocess.py and bench/fanout.py; the browser tests'
conftest takes ``free_port``, ``wait_for`` and ``RedisServer`` from here.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import pgserver  # noqa: E402  (tests/pgserver.py)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


class RedisServer:
    """A throw-away ``redis-server`` on a free loopback port (nothing saved to disk)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.port = free_port()
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is missing: `bash scripts/test.sh` installs it")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def ping():
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        wait_for(ping, f"redis-server on port {self.port}")
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


def available() -> str | None:
    """None when a Stack can start here, else what is missing."""
    if not pgserver.available():
        return "PostgreSQL's initdb/pg_ctl are not installed"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    return None


class WebProcess:
    """One ``daphne`` process on a free loopback port with the given environment."""

    def __init__(self, env: dict, log: Path):
        self.env = env
        self.log = log
        self.port = free_port()
        self.process = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait=True) -> "WebProcess":
        out = self.log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
             "visualizer.asgi:application"], cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=30.0) -> None:
        def ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne on port {self.port} exited (log: {self.log}):\n{self.tail()}")
            return urllib.request.urlopen(f"{self.url}/healthz", timeout=1).read() == b"ok"
        wait_for(ready, f"daphne on port {self.port} (log: {self.log})", timeout)

    def tail(self, n=4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.alive():
            self.process.send_signal(sig)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def sqlite_process(directory, **env) -> WebProcess:
    """One web process as ``bash scripts/run.sh`` serves the app (SQLite, the in-process channel
    layer), its database ``directory``/db.sqlite3 migrated first, started; ``env``: more
    settings (e.g. SCENARIO_FIXTURES_DIR)."""
    directory = Path(directory)
    full = {k: v for k, v in os.environ.items()
            if k not in ("REDIS_URL", "DATABASE_URL", "DATABASE_PATH", "DJANGO_SETTINGS_MODULE")}
    full.update({"DATABASE_PATH": str(directory / "db.sqlite3"), "DJANGO_SETTINGS_MODULE": "visualizer.settings",
                 "PYTHONUNBUFFERED": "1", **env})
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=full,
                   check=True, timeout=120)
    process = WebProcess(full, directory / "daphne.log")
    try:
        return process.start()
    except BaseException:
        process.stop()
        raise


class Stack:
    """PostgreSQL + redis-server + ``processes`` web processes (see the module's docstring).
    ``env``: more settings for the web processes (e.g. SCENARIO_FIXTURES_DIR)."""

    def __init__(self, processes: int = 2, env: dict | None = None, directory: str | None = None,
                 redis: bool = True):
        self.root = Path(directory or tempfile.mkdtemp(prefix="stack-"))
        self.count = processes
        self.extra = dict(env or {})
        self.use_redis = redis
        self.postgres = None
        self.redis = None
        self.web: list[WebProcess] = []

    @property
    def urls(self) -> list[str]:
        return [w.url for w in self.web]

    @property
    def ws_urls(self) -> list[str]:
        return [w.url.replace("http://", "ws://") for w in self.web]

    @property
    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("REDIS_URL", "DATABASE_URL", "DATABASE_PATH", "DJANGO_SETTINGS_MODULE")}
        env.update({"DATABASE_URL": self.postgres.url, "DJANGO_SETTINGS_MODULE": "visualizer.settings",
                    "PYTHONUNBUFFERED": "1"})
        if self.redis is not None:
            env["REDIS_URL"] = self.redis.url
        env.update(self.extra)
        return env

    def start(self) -> "Stack":
        try:
            self.postgres = pgserver.PostgresServer()      # its own directory, which it removes
            self.postgres.start()
            if self.use_redis:
                self.redis = RedisServer(self.root).start()
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT,
                           env=self.env, check=True, timeout=180)
            self.web = [WebProcess(self.env, self.root / f"web{i}.log") for i in range(self.count)]
            for w in self.web:
                w.start(wait=False)
            for w in self.web:
                w.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, index: int, sig=signal.SIGKILL) -> None:
        self.web[index].kill(sig)

    def alive(self, index: int) -> bool:
        return self.web[index].alive()

    def logs(self) -> str:
        return "\n".join(f"--- web{i} ---\n{w.tail()}" for i, w in enumerate(self.web))

    def stop(self) -> None:
        for w in self.web:
            w.stop()
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            self.postgres.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "Stack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
