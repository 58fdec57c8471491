#!/usr/bin/env python
"""The fan-out of a session's frames (issue 27): how long followers wait for a presenter's step.

    .venv/bin/python bench/fanout.py [--followers 100,1000] [--processes 1,2] [--controls 30]
                                     [--lesson 03-backoff-max-too-low.yaml] [--json OUT]
    .venv/bin/python bench/fanout.py --followers 10 --processes 1 --controls 3     # a quick check

For each number of web processes (``--processes``) it starts a ``Stack`` (tests/stack.py: a
throw-away PostgreSQL, redis-server and N ``daphne`` processes sharing them, all on 127.0.0.1,
with DJANGO_DEBUG=0 as bench/ui.py), and for each number of followers (``--followers``):

1. creates a session of a library lesson through the REST API (``POST /api/sessions``);
2. opens F follower sockets (``/ws/w/<follower token>/``, the ``websockets`` asyncio client),
   spread round-robin over the processes, ``--batch`` at a time, each waiting for its first
   snapshot; then the presenter's socket (``/ws/s/<presenter token>/``, on the first process),
   as the presenter's page does (controls go down the socket, not through the REST API);
3. sends ``--controls`` K ``{"action": "step-event"}`` on the presenter's socket, one at a
   time: the next one only after every follower has received the frame showing the new position
   (``data-position`` of ``#panel-header``), or after ``--timeout`` seconds;
4. for each control and each follower: the time from sending the control to receiving the
   frame whose ``data-position`` is the new position (the new position is the one the
   presenter's own socket receives first after the control).

Reported per (processes, followers): p50 / p95 / max over the K controls of the **last
follower's** latency (the issue's measure: when the whole room sees the step), the same over
all K x F deliveries, the first follower's p50 (when the first socket is served), the
presenter's own frame, the frames that did not arrive within the timeout (must be 0), the
frame's size, and the CPU seconds per control of the client (this process: it runs on the same
2 cores as the servers), of the web processes, of redis-server and of PostgreSQL.
Percentiles are nearest-rank.

``--what-if no-hop|relay`` is an experiment: the web processes of that run get a
sitecustomize.py that patches them in memory (see WHAT_IFS), to size a change to the server
before anyone makes it. Results and what they mean: docs/benchmarks.md, "Fan-out (issue 27)".

Everything is on loopback; everything started is stopped at the end, on an error or Ctrl-C too.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import resource
import secrets
import signal
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from stack import Stack, available  # noqa: E402  (tests/stack.py)

MAX_FOLLOWERS = 5000          # a bound on what one run may open
HEADER = b'id="panel-header"'
POSITION = b'data-position="'
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --what-if: experiments that size a change to the server before anyone makes it. The web
# processes (only they, only for this run) get a sitecustomize.py on their PYTHONPATH that
# patches the installed channels / the consumer in memory; no file of the project is touched.
WHAT_IF_NO_HOP = '''
# channels' AsyncConsumer.dispatch awaits aclose_old_connections() before every handler: a round
# trip through asgiref's one thread-sensitive thread, per message and socket. Skipped here.
import channels.consumer


async def _no_hop():
    return None


channels.consumer.aclose_old_connections = _no_hop
'''
WHAT_IF_RELAY = '''
# One member of the session's group per process (a relay) that hands each group message to this
# process's own sockets of the session, instead of one channel-layer channel per socket.
import asyncio
import importlib.abc
import importlib.util
import logging
import sys

from channels.consumer import get_handler_name

_relays = {}


class _Relay:
    def __init__(self, layer, group):
        self.layer, self.group, self.members = layer, group, set()
        self.ready = asyncio.get_running_loop().create_task(self.start())

    async def start(self):
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(self.group, self.channel)
        self.task = asyncio.get_running_loop().create_task(self.loop())

    async def loop(self):
        while True:
            message = await self.layer.receive(self.channel)
            name = get_handler_name(message)
            for consumer in list(self.members):
                try:
                    await getattr(consumer, name)(message)
                except Exception:
                    logging.getLogger("what-if").exception("relay")


class _Layer:
    def __init__(self, layer, consumer):
        self._layer, self._consumer = layer, consumer

    async def group_add(self, group, channel):
        if group not in _relays:
            _relays[group] = _Relay(self._layer, group)
        _relays[group].members.add(self._consumer)
        await asyncio.shield(_relays[group].ready)

    async def group_discard(self, group, channel):
        if group in _relays:
            _relays[group].members.discard(self._consumer)

    def __getattr__(self, name):
        return getattr(self._layer, name)


def _patch(module):
    connect = module.SessionConsumer.connect

    async def relayed_connect(self):
        self.channel_layer = _Layer(self.channel_layer, self)
        await connect(self)
    module.SessionConsumer.connect = relayed_connect


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "visualizer.consumers":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)
        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Hook())
'''
WHAT_IFS = {"no-hop": WHAT_IF_NO_HOP, "relay": WHAT_IF_NO_HOP + WHAT_IF_RELAY}


def header_position(data: bytes) -> int | None:
    """The ``data-position`` of the header panel in a frame, or None (a status message, or a
    frame that leaves the header out)."""
    at = data.find(HEADER)
    if at < 0:
        return None
    start = data.rfind(b"<", 0, at)          # the header's own tag
    end = data.find(b">", at)
    tag = data[start:end]
    p = tag.find(POSITION)
    if p < 0:
        return None
    p += len(POSITION)
    return int(tag[p:tag.index(b'"', p)])


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summary(values):
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95), "max": max(values)}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process from /proc (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return found


def postgres_pids(stack) -> list[int]:
    try:
        master = int((stack.postgres.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError, AttributeError):
        return []
    return [master] + children_of(master)


def server_cpu(stack) -> dict:
    """CPU seconds so far of the web processes, redis-server and PostgreSQL (its backends as
    they are now)."""
    return {"web": [cpu_seconds(w.process.pid) for w in stack.web],
            "redis": cpu_seconds(stack.redis.process.pid) if stack.redis else 0.0,
            "postgres": sum(cpu_seconds(p) for p in postgres_pids(stack))}


def raise_fd_limit(sockets: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = sockets + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        if new < want:
            raise SystemExit(f"{sockets} sockets need {want} file descriptors; the hard limit is {hard}")


def post_json(url: str, body: dict) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))     # loopback: no proxy
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with opener.open(req, timeout=60) as r:
        return json.load(r)


class Socket:
    """One client socket and what it received: the first arrival time of each position."""

    def __init__(self, index: int, url: str, origin: str):
        self.index, self.url, self.origin = index, url, origin
        self.ws = None
        self.task = None
        self.got: dict[int, float] = {}
        self.position = None
        self.messages = 0
        self.bytes = 0
        self.closed = None
        self.connected_in = None

    async def open(self, bench: "Run") -> None:
        t0 = time.perf_counter()
        self.ws = await connect(self.url, origin=self.origin, proxy=None, compression=None,
                                max_size=None, ping_interval=None, open_timeout=60, close_timeout=2)
        while self.position is None:          # the snapshot (a status may come first)
            data = await asyncio.wait_for(self.ws.recv(decode=False), 60)
            self.take(data, time.perf_counter(), None)
        self.connected_in = time.perf_counter() - t0
        self.task = asyncio.get_running_loop().create_task(self.read(bench))

    def take(self, data: bytes, t: float, bench) -> None:
        self.messages += 1
        self.bytes += len(data)
        position = header_position(data)
        if position is None:
            return
        self.position = position
        if position not in self.got:
            self.got[position] = t
            if bench is not None:
                bench.arrived(self, position)

    async def read(self, bench) -> None:
        try:
            while True:
                data = await self.ws.recv(decode=False)
                self.take(data, time.perf_counter(), bench)
        except ConnectionClosed as e:
            self.closed = str(e)
            bench.socket_closed(self)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), 5)
            except (Exception, asyncio.CancelledError):   # noqa: BLE001 - closing anyway
                pass


class Run:
    """One measurement: F followers and a presenter on a session of ``stack``."""

    def __init__(self, stack, args, followers: int):
        self.stack, self.args, self.count = stack, args, followers
        self.followers: list[Socket] = []
        self.presenter: Socket | None = None
        self.target = None         # the position the current control leads to
        self.arrivals = {}         # position -> followers that got it
        self.all_in = asyncio.Event()
        self.presenter_moved = asyncio.Event()
        self.before = None         # the position before the current control
        self.closed = []

    def arrived(self, socket: Socket, position: int) -> None:
        if socket is self.presenter:
            if self.before is not None and position != self.before and self.target is None:
                self.target = position
                self.presenter_moved.set()
                if self.arrivals.get(position, 0) >= self.count:
                    self.all_in.set()
            return
        n = self.arrivals[position] = self.arrivals.get(position, 0) + 1
        if position == self.target and n >= self.count:
            self.all_in.set()

    def socket_closed(self, socket: Socket) -> None:
        self.closed.append((socket.index, socket.closed))

    async def open_all(self) -> dict:
        ws_urls, http_urls = self.stack.ws_urls, self.stack.urls
        made = post_json(f"{http_urls[0]}/api/sessions", {"fixture": self.args.lesson})
        self.token_p, self.token_w = made["presenter_token"], made["follower_token"]
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        for i in range(self.count):
            k = i % len(ws_urls)
            self.followers.append(Socket(i, f"{ws_urls[k]}/ws/w/{self.token_w}/", http_urls[k]))
        for start in range(0, self.count, self.args.batch):
            batch = self.followers[start:start + self.args.batch]
            await asyncio.gather(*(s.open(self) for s in batch))
        opened = time.perf_counter() - t0
        self.presenter = Socket(-1, f"{ws_urls[0]}/ws/s/{self.token_p}/", http_urls[0])
        await self.presenter.open(self)
        positions = {s.position for s in self.followers} | {self.presenter.position}
        if len(positions) != 1:
            raise RuntimeError(f"the sockets' snapshots show different positions: {sorted(positions)}")
        return {"openSeconds": opened, "openClientCpuSeconds": time.process_time() - cpu0,
                "connectSeconds": summary([s.connected_in for s in self.followers]),
                "snapshotBytes": self.followers[0].bytes if self.followers else 0,
                "title": made.get("title"), "startPosition": self.presenter.position}

    async def control(self) -> dict | None:
        """One step-event; None when the session did not move (the lesson is over)."""
        self.before = self.presenter.position
        self.target = None
        self.all_in.clear()
        self.presenter_moved.clear()
        t0 = time.perf_counter()
        await self.presenter.ws.send('{"action": "step-event"}')
        try:
            await asyncio.wait_for(self.presenter_moved.wait(), self.args.timeout)
        except asyncio.TimeoutError:
            return None
        remaining = self.args.timeout - (time.perf_counter() - t0)
        try:
            await asyncio.wait_for(self.all_in.wait(), max(remaining, 0.001))
        except asyncio.TimeoutError:
            pass
        target = self.target
        latencies = [s.got[target] - t0 for s in self.followers if target in s.got]
        return {"position": target, "presenter": self.presenter.got[target] - t0,
                "latencies": latencies, "missing": self.count - len(latencies)}

    async def close_all(self) -> None:
        everyone = self.followers + ([self.presenter] if self.presenter else [])
        for start in range(0, len(everyone), 200):
            await asyncio.gather(*(s.close() for s in everyone[start:start + 200]), return_exceptions=True)


async def measure(stack, args, followers: int) -> dict:
    run = Run(stack, args, followers)
    try:
        try:
            opened = await asyncio.wait_for(run.open_all(), args.open_limit)
        except asyncio.TimeoutError:
            raise RuntimeError(f"opening {followers} sockets took more than --open-limit {args.open_limit:g} s") from None
        await asyncio.sleep(args.settle)
        load = os.getloadavg()[0]
        bytes0 = sum(s.bytes for s in run.followers)
        cpu_client0, server0, t0 = time.process_time(), server_cpu(stack), time.perf_counter()
        controls = []
        for _ in range(args.controls):
            result = await run.control()
            if result is None:
                break
            controls.append(result)
            if run.closed:        # a socket went away: the rest would only wait for timeouts
                break
            if args.gap:
                await asyncio.sleep(args.gap)
        wall = time.perf_counter() - t0
        cpu_client, server1 = time.process_time() - cpu_client0, server_cpu(stack)
        received = sum(s.bytes for s in run.followers) - bytes0
    finally:
        await run.close_all()
    n = max(len(controls), 1)
    last = [max(c["latencies"]) for c in controls if c["latencies"]]
    first = [min(c["latencies"]) for c in controls if c["latencies"]]
    every = [x for c in controls for x in c["latencies"]]
    ms = lambda d: {k: (round(v * 1000, 1) if isinstance(v, float) else v) for k, v in d.items()}  # noqa: E731
    return {
        "processes": len(stack.web), "followers": followers, "controls": len(controls),
        "controlsAsked": args.controls, "lesson": args.lesson, **opened,
        "connectSeconds": ms(opened["connectSeconds"]),
        "lastFollowerMs": ms(summary(last)), "allDeliveriesMs": ms(summary(every)),
        "firstFollowerMs": ms(summary(first)),
        "presenterMs": ms(summary([c["presenter"] for c in controls])),
        "timeouts": sum(c["missing"] for c in controls), "socketsClosed": run.closed,
        "frameBytesPerFollower": round(received / n / max(followers, 1)),
        "wallSeconds": wall, "loadavg1": load,
        "cpuPerControlSeconds": {
            "client": cpu_client / n,
            "web": [(b - a) / n for a, b in zip(server0["web"], server1["web"])],
            "redis": (server1["redis"] - server0["redis"]) / n,
            "postgres": max(server1["postgres"] - server0["postgres"], 0.0) / n},
        "perControl": [{"position": c["position"], "lastMs": round(max(c["latencies"]) * 1000, 1) if c["latencies"] else None,
                        "presenterMs": round(c["presenter"] * 1000, 1), "missing": c["missing"]} for c in controls],
    }


def row(r: dict) -> str:
    last, every, cpu = r["lastFollowerMs"], r["allDeliveriesMs"], r["cpuPerControlSeconds"]
    web = " + ".join(f"{x * 1000:.0f}" for x in cpu["web"])
    return (f"| {r['processes']} | {r['followers']:,} | {r['controls']} | **{last['p50']} / {last['p95']}** / {last['max']} | "
            f"{every['p50']} / {every['p95']} / {every['max']} | {r['firstFollowerMs']['p50']} | {r['presenterMs']['p50']} | {r['timeouts']} | "
            f"{r['frameBytesPerFollower'] / 1024:.1f} | {cpu['client'] * 1000:.0f} | {web} | {cpu['redis'] * 1000:.0f} | "
            f"{cpu['postgres'] * 1000:.0f} | {r['openSeconds']:.1f} |")


HEAD = ("| processes | followers | controls | last follower p50 / p95 / max ms | all deliveries p50 / p95 / max ms | "
        "first follower p50 ms | presenter p50 ms | timeouts | KiB per frame | client CPU ms/control | web CPU ms/control | redis | postgres | "
        "open s |\n|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in s.split(",") if x.strip()]  # noqa: E731
    ap.add_argument("--followers", type=ints, default=[100, 1000], help="follower counts, e.g. 100,1000")
    ap.add_argument("--processes", type=ints, default=[1, 2], help="web process counts, e.g. 1,2")
    ap.add_argument("--controls", type=int, default=30, help="step-event controls per run (default 30)")
    ap.add_argument("--lesson", default="03-backoff-max-too-low.yaml",
                    help="library fixture (default 03-backoff-max-too-low.yaml: 525 events)")
    ap.add_argument("--batch", type=int, default=50, help="follower sockets opened at once (default 50)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds a control waits for every follower")
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between one control's last frame and the next")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds after the sockets are open, before the first control")
    ap.add_argument("--open-limit", type=float, default=300.0,
                    help="seconds allowed to open all sockets of one run (default 300)")
    ap.add_argument("--what-if", choices=sorted(WHAT_IFS),
                    help="an experiment: the web processes patched in memory (no-hop: without channels' "
                         "per-message close_old_connections hop; relay: that and one channel-layer member per "
                         "process and session handing frames to its sockets)")
    ap.add_argument("--json", help="write the results as JSON to this file")
    args = ap.parse_args(argv)
    if any(f < 1 or f > MAX_FOLLOWERS for f in args.followers):
        ap.error(f"--followers: 1 to {MAX_FOLLOWERS:,}")
    if any(p < 1 or p > 8 for p in args.processes):
        ap.error("--processes: 1 to 8")
    if not 1 <= args.controls <= 1000:
        ap.error("--controls: 1 to 1000")
    missing = available()
    if missing:
        raise SystemExit(f"cannot start the stack: {missing}")
    raise_fd_limit(max(args.followers) + 1)

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even when started with SIGINT ignored

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "visualizer", "engine", "templates"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    commit = commit or "unknown (not a git checkout)"
    results = []
    # production settings, as bench/ui.py runs its server (DEBUG off: no query log, no plugin
    # reload check before each control)
    server_env, patch_dir = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": secrets.token_urlsafe(50)}, None
    if args.what_if:
        patch_dir = tempfile.mkdtemp(prefix="fanout-what-if-")
        Path(patch_dir, "sitecustomize.py").write_text(WHAT_IFS[args.what_if])
        server_env["PYTHONPATH"] = os.pathsep.join(filter(None, [patch_dir, os.environ.get("PYTHONPATH")]))
        print(f"what-if {args.what_if}: the web processes run patched in memory (an experiment)", flush=True)
    print(f"commit {commit}{' (visualizer/engine/templates modified in the working tree)' if dirty else ''}, "
          f"{os.cpu_count()} CPUs, lesson {args.lesson}", flush=True)
    try:
        for processes in args.processes:
            with Stack(processes=processes, env=server_env) as stack:
                for followers in args.followers:
                    r = asyncio.run(measure(stack, args, followers))
                    results.append(r)
                    print(f"{processes} process(es), {followers} followers: last follower p50/p95/max "
                          f"{r['lastFollowerMs']['p50']}/{r['lastFollowerMs']['p95']}/{r['lastFollowerMs']['max']} ms, "
                          f"timeouts {r['timeouts']}, {r['controls']} controls, 1-min load {r['loadavg1']:.1f} before them",
                          flush=True)
                    if r["controls"] < args.controls:
                        print(f"  the session stopped moving after {r['controls']} controls", flush=True)
    except KeyboardInterrupt:
        print("interrupted: everything started was stopped", file=sys.stderr)
        return 130
    finally:
        if patch_dir:
            shutil.rmtree(patch_dir, ignore_errors=True)
        if args.json and results:
            Path(args.json).write_text(json.dumps({
                "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": commit,
                "workingTreeModified": bool(dirty), "whatIf": args.what_if, "command": " ".join(sys.argv), "cpus": os.cpu_count(),
                "platform": platform.platform(), "python": platform.python_version(),
                "loadavg": os.getloadavg(), "results": results}, indent=1))
    print()
    print(HEAD)
    for r in results:
        print(row(r))
    bad = sum(r["timeouts"] for r in results) + sum(len(r["socketsClosed"]) for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
