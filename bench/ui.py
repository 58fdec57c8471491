#!/usr/bin/env python
"""The web UI's own benchmark: what a person at the browser waits for.

    .venv/bin/python bench/ui.py [--part PART ...] [--json OUT] [options of each part]

Each ``--part`` runs alone (``--part lesson --part travel``: those two; none: all of them, in
this order); the figures go to ``--json``. Every click is timed inside the page, from the click
to the change of the page's DOM (the header panel replaced by the pushed frame, seen with
``performance.now()`` and a MutationObserver); the server's CPU time during the click (the sum
of its threads' run time from /proc/PID/task/*/schedstat: the step, the frame's rendering and
its sending, less sensitive to the machine's load than the wall time) is given beside it.

1. ``lesson``: **a lesson's steps** (issue 28: step -> DOM p95 < 50 ms). Each ``--lesson``
   (default ``11-preemption-reprieve`` and ``09-interpod-affinity``, from fixtures/) is
   uploaded and step-event, step-point and step-cycle are clicked ``--samples`` times each;
   at the end of the lesson the page travels back to its start (not timed) and goes on.
2. ``small``: step latency on a generated small cluster (``--small-nodes``, default 50, shown
   as node cards with the nodes panel's **Cards** switch), step-event, step-point, step-cycle.
3. ``play``: play throughput on a large cluster (``--large-nodes``, default 2000, with
   ``--large-pods`` pending pods): Play at full speed for ``--play-seconds``; trace events per
   second revealed (as the browser saw them in the frames it received), frames per second, and
   the server's memory (VmRSS now and VmHWM, its peak, from /proc) before and after.
4. ``scale``: **the page at scale** (``--scale-nodes``, default 5000, with ``--scale-pods``
   pending pods, a tenth of them too big for any node): step-cycle, step-point and step-event
   ``--scale-samples`` times each from the session's start; click -> the frame received by the
   page, click -> DOM change and click -> the next animation frame after it (the new DOM
   styled, laid out and painted), p50 and p95, the number of elements in the page and its
   height in pixels after the last step, and the server's memory. ``--only-scale`` is
   ``--part scale``.
5. ``travel``: **time travel at 5,000 nodes / 10,000 pods** (issue 28: p95 < 200 ms, and
   steps p95 < 150 ms): the scale scenario with ``--travel-pods`` pods is run to
   ``--travel-until`` seconds of virtual time with the page's Run form; then the page jumps to
   ``--travel-samples`` positions drawn with a seeded generator through its own timeline
   (the range input set and changed, as when it is dragged and let go), each click -> DOM; then
   step-cycle, step-point and step-event ``--scale-samples`` times each from the last position
   (behind the head: the stored trace is revealed), and a step back.
6. ``import``: **opening a 5,000-node import with affinity** (issue 28: < 5 s): the
   scheduler_perf workload ``--import-test-case`` / ``--import-workload`` (default
   SchedulingPodAffinity / 5000Nodes) of ``--perf-config`` is imported with ``python -m engine
   import`` (not timed), then uploaded on the library page: the time from the click on the
   upload button to the session page usable (its socket open and the first frame in), and the
   first step-cycle after it (``--import-json``: its data uploaded as JSON instead).

The server is the real thing: ``daphne visualizer.asgi:application`` in a subprocess with a
throw-away SQLite file; the browser is Debian's chromium driven by Playwright (as in the
browser tests). Sessions are started by uploading the scenario on the library page.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]

# A click -> the header replaced (DOM), then the next animation frame after the swap (style,
# layout and paint of the new DOM are done by then), the DOM's size and the page's height.
# ``what``: a control's data-action, or {position: N} to travel there with the timeline (its
# range input set and changed, as when it is dragged and let go).
MEASURE_CLICK = """async (what) => {
    const before = document.querySelector('#panel-header').dataset.version;
    const root = document.querySelector('[data-session]');
    window.__frameAt = null;
    return await new Promise((resolve) => {
        const observer = new MutationObserver(() => {
            const header = document.querySelector('#panel-header');
            if (header && header.dataset.version !== before) {
                observer.disconnect();
                const dom = performance.now() - t0;
                const message = window.__frameAt === null ? null : window.__frameAt - t0;
                requestAnimationFrame(() => setTimeout(() => resolve({
                    message: message, dom: dom, painted: performance.now() - t0,
                    position: Number(header.dataset.position),
                    elements: document.getElementsByTagName('*').length,
                    height: document.documentElement.scrollHeight}), 0));
            }
        });
        observer.observe(root, {subtree: true, childList: true, attributes: true});
        const t0 = performance.now();
        if (typeof what === 'string') {
            document.querySelector(`[data-action="${what}"]`).click();
        } else {
            const input = document.querySelector('[data-form="jump"] input[name="position"]');
            input.value = String(what.position);
            input.dispatchEvent(new Event('change', {bubbles: true}));
        }
    });
}"""

# When the frame's text arrived on the page's WebSocket (before the page swaps it in).
HOOK_SOCKET = """(() => {
    const Original = window.WebSocket;
    window.__frameAt = null;
    window.WebSocket = function (...args) {
        const socket = new Original(...args);
        socket.addEventListener('message', (ev) => {
            if (window.__frameAt === null && String(ev.data).indexOf('id="panel-header"') !== -1) {
                window.__frameAt = performance.now();
            }
        });
        return socket;
    };
    window.WebSocket.prototype = Original.prototype;
    Object.assign(window.WebSocket, Original);
})();"""

# The page's "Animate moves" option off (static/js/session.js keeps it in localStorage).
STILL = "window.localStorage.setItem('visualizer.motion', '0');"

COUNT_FRAMES = """() => {
    window.__frames = 0;
    document.querySelector('[data-session]').addEventListener('htmx:wsAfterMessage', () => { window.__frames += 1; });
}"""


def node(name, zone, cpu="4", memory="32Gi"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name, cpu, memory="1Gi", priority=0):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"priority": priority,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def scenario(name, nodes, pods, big=0):
    objects = [node(f"n{i:04d}", f"zone-{i % 3}") for i in range(nodes)]
    objects += [pod(f"p{i:04d}", "500m") for i in range(pods)]
    objects += [pod(f"big{i}", "16") for i in range(big)]   # fit nowhere: unschedulablePods
    return {"kind": "Scenario",
            "metadata": {"name": name, "title": f"Benchmark: {nodes} nodes, {pods + big} pods"},
            "simulation": {"schedulingCycleDuration": "10ms", "bindDuration": "100ms"},
            "objects": objects}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, workdir: Path):
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        self.env.update(DATABASE_PATH=str(workdir / "bench.sqlite3"), DJANGO_DEBUG="0",
                        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
                        SCENARIO_FIXTURES_DIR=str(workdir), DJANGO_SETTINGS_MODULE="visualizer.settings")
        self.log = (workdir / "daphne.log").open("wb")
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=self.env,
                       check=True)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "visualizer.asgi:application"],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                if urllib.request.urlopen(f"{self.url}/healthz", timeout=1).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def memory(self) -> dict:
        """VmRSS and VmHWM of the server process, in MiB."""
        figures = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                figures[key] = round(int(value.split()[0]) / 1024, 1)
        return figures

    def cpu_ms(self) -> float:
        """The server's CPU time so far, in ms: the sum of its threads' run time (ns) from
        /proc/PID/task/*/schedstat (the steps run in the event loop's worker threads)."""
        total = 0
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass   # a thread that ended
        return total / 1e6

    def cpu_total_s(self) -> float:
        """The server's CPU time so far, in s, with its ended threads and the upload workers it
        waited for (utime, stime, cutime, cstime of /proc/PID/stat; in clock ticks)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def start_session(page, server, path: Path):
    page.goto(server.url + "/")
    page.set_input_files('[data-form="scenario-upload"] input[name="scenario_file"]', str(path))
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    page.wait_for_url("**/s/*/", timeout=120_000)
    page.wait_for_selector('[data-connection="open"]', timeout=60_000)


def percentile(values, p):
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def position(page) -> int:
    return int(page.locator("#panel-header").get_attribute("data-position"))


def click(page, server, what, args) -> dict:
    """One click (a control's data-action, or {"position": N}: a travel with the timeline),
    timed in the page (MEASURE_CLICK) and with the server's CPU time during it; ``--pause-ms``
    before it."""
    if args.pause_ms:
        page.wait_for_timeout(args.pause_ms)
    cpu = server.cpu_ms()
    sample = page.evaluate(MEASURE_CLICK, what)
    # the server's share is done when the frame is out; a due checkpoint is taken later (its
    # CPU lands in the next click's figure, as it delays that click)
    sample["server_cpu"] = server.cpu_ms() - cpu
    return sample


def summary(samples, label) -> dict:
    """p50 / p95 / max of each figure of ``samples``, and every click's DOM time in order."""
    out = {"samples": len(samples)}
    for key in ("message", "dom", "painted", "server_cpu"):
        values = [s[key] for s in samples if s.get(key) is not None]
        if values:
            out[f"{key}_p50_ms"] = round(percentile(values, 50), 1)
            out[f"{key}_p95_ms"] = round(percentile(values, 95), 1)
            out[f"{key}_max_ms"] = round(max(values), 1)
    out["elements"] = samples[-1]["elements"]
    out["page_height_px"] = samples[-1]["height"]
    # every click, in order (which of them are slow: the first, a checkpoint's)
    out["dom_ms"] = [round(s["dom"], 1) for s in samples]
    out["message_ms"] = [None if s["message"] is None else round(s["message"], 1) for s in samples]
    # the page's share: the frame's arrival on the socket -> the DOM changed
    page_share = [s["dom"] - s["message"] for s in samples if s["message"] is not None]
    if page_share:
        out["page_share_p50_ms"] = round(percentile(page_share, 50), 1)
        out["page_share_p95_ms"] = round(percentile(page_share, 95), 1)
    out["server_cpu_ms"] = [round(s["server_cpu"], 1) for s in samples]
    print(f"{label:34s} click -> DOM p50 {out['dom_p50_ms']:7.1f} ms  p95 {out['dom_p95_ms']:7.1f} ms  "
          f"(frame in p50 {out.get('message_p50_ms')} p95 {out.get('message_p95_ms')}; painted p95 "
          f"{out['painted_p95_ms']}; frame in -> DOM p50 {out.get('page_share_p50_ms')} p95 "
          f"{out.get('page_share_p95_ms')}; server CPU p50 {out['server_cpu_p50_ms']} p95 {out['server_cpu_p95_ms']} ms; "
          f"{len(samples)} clicks)", flush=True)
    return out


PARTS = ("lesson", "small", "play", "scale", "travel", "import")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", action="append", choices=PARTS, help="run this part (repeatable; default: all)")
    ap.add_argument("--lesson", action="append", help="a lesson of fixtures/ (file name without .yaml; repeatable)")
    ap.add_argument("--small-nodes", type=int, default=50)
    ap.add_argument("--large-nodes", type=int, default=2000)
    ap.add_argument("--large-pods", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=40, help="clicks of each control (lesson, small)")
    ap.add_argument("--play-seconds", type=float, default=30.0)
    ap.add_argument("--scale-nodes", type=int, default=5000)
    ap.add_argument("--scale-pods", type=int, default=300)
    ap.add_argument("--scale-samples", type=int, default=30, help="clicks of each control (scale, travel)")
    ap.add_argument("--travel-pods", type=int, default=10000)
    ap.add_argument("--travel-until", type=float, default=60.0, help="virtual seconds run before travelling")
    ap.add_argument("--travel-samples", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--perf-config", default="/tmp/k8s/test/integration/scheduler_perf/config/performance-config.yaml")
    ap.add_argument("--import-test-case", default="SchedulingPodAffinity")
    ap.add_argument("--import-workload", default="5000Nodes")
    ap.add_argument("--import-json", action="store_true",
                    help="upload the imported scenario's data as JSON (what reading it as JSON would give)")
    ap.add_argument("--pause-ms", type=int, default=0,
                    help="wait this long before each timed click (a person's pace: a View Transition's "
                         "animation, 0.45 s, is over by the next click)")
    ap.add_argument("--still", action="store_true",
                    help="the page's Animate moves option off (frames swapped as they come, no View Transition)")
    ap.add_argument("--only-scale", action="store_true", help="the same as --part scale")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    parts = args.part or (["scale"] if args.only_scale else list(PARTS))
    args.lesson = args.lesson or ["11-preemption-reprieve", "09-interpod-affinity"]

    from playwright.sync_api import sync_playwright

    results = {"parts": parts, "still": args.still, "pause_ms": args.pause_ms, "loadavg_before": Path("/proc/loadavg").read_text().split()[:3]}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "uploads").mkdir()
        server = Server(workdir)
        results["memory_idle_mib"] = server.memory()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                for part in PARTS:
                    if part in parts:
                        # a page of its own for each part (the socket hook of the later ones)
                        page = browser.new_page(viewport={"width": 1280, "height": 720})
                        page.add_init_script(HOOK_SOCKET)
                        if args.still:
                            page.add_init_script(STILL)
                        page.set_default_timeout(600_000)   # an upload of 10,000 pods takes a while
                        results[part] = globals()[f"measure_{part}"](page, server, workdir, args)
                        page.close()
                browser.close()
        finally:
            server.stop()
    results["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average before {' '.join(results['loadavg_before'])}, after {' '.join(results['loadavg_after'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return results


def measure_lesson(page, server, workdir: Path, args) -> dict:
    """Part 1: each lesson's steps, from its start; at its end, back to the start (not timed)."""
    out = {}
    for name in args.lesson:
        start_session(page, server, ROOT / "fixtures" / f"{name}.yaml")
        lesson = {}
        for action in ("step-event", "step-point", "step-cycle"):
            samples = []
            while len(samples) < args.samples:
                if page.locator('[data-run-state="idle"]').count():
                    click(page, server, {"position": 0}, args)
                samples.append(click(page, server, action, args))
            lesson[action] = summary(samples, f"{name} {action}")
        out[name] = lesson
    return out


def measure_small(page, server, workdir: Path, args) -> dict:
    """Part 2: step latency on a small generated cluster, as node cards (the overview is the
    default above 12 nodes; part 4 measures it at scale)."""
    path = workdir / "uploads" / "small.yaml"
    path.write_text(yaml.safe_dump(scenario("bench-small", args.small_nodes, 150, big=5)))
    start_session(page, server, path)
    page.locator('[data-action="step-event"]').click()
    page.locator('[data-node-mode-set="cards"]').click()
    page.wait_for_selector("#panel-nodes .node-grid [data-node]")
    out = {"nodes": args.small_nodes}
    for action in ("step-event", "step-point", "step-cycle"):
        out[action] = summary([click(page, server, action, args) for _ in range(args.samples)],
                              f"{args.small_nodes} nodes {action}")
    return out


def measure_play(page, server, workdir: Path, args) -> dict:
    """Part 3: play at full speed on a large cluster."""
    path = workdir / "uploads" / "large.yaml"
    path.write_text(yaml.safe_dump(scenario("bench-large", args.large_nodes, args.large_pods)))
    out = {"nodes": args.large_nodes, "pods": args.large_pods}
    started = time.perf_counter()
    start_session(page, server, path)
    out["session_start_s"] = round(time.perf_counter() - started, 2)
    out["memory_loaded_mib"] = server.memory()
    page.evaluate(COUNT_FRAMES)
    page.locator('[data-form="play"] select[name="speed"]').select_option("0")
    first = position(page)
    t0 = time.perf_counter()
    page.locator('[data-action="play"]').click()
    rss_samples = []
    while time.perf_counter() - t0 < args.play_seconds:
        page.wait_for_timeout(1000)
        rss_samples.append(server.memory()["VmRSS"])
        if page.locator('[data-run-state="idle"]').count():
            break
    elapsed = time.perf_counter() - t0
    last = position(page)
    frames = page.evaluate("() => window.__frames")
    page.locator('[data-action="pause"]').click()
    out.update(seconds=round(elapsed, 1), events=last - first, events_per_second=round((last - first) / elapsed),
               frames_per_second=round(frames / elapsed, 1),
               reached_idle=bool(page.locator('[data-run-state="idle"]').count()),
               memory_after_mib=server.memory(), memory_rss_max_during_play_mib=max(rss_samples, default=None))
    print(f"play at full speed, {args.large_nodes} nodes: {out['events_per_second']} events/s "
          f"({out['events']} events in {out['seconds']} s, {out['frames_per_second']} frames/s"
          f"{', reached idle' if out['reached_idle'] else ''}); server memory (MiB): loaded "
          f"{out['memory_loaded_mib']}, after play {out['memory_after_mib']}", flush=True)
    return out


def scale_session(page, server, workdir: Path, nodes: int, pods: int) -> dict:
    """Start a session of ``nodes`` nodes and ``pods`` pending pods, a tenth of them too big for
    any node; its start time and the server's memory."""
    big = max(1, pods // 10)
    # not in the server's library directory (SCENARIO_FIXTURES_DIR): the library page would
    # parse it at every visit (megabytes of YAML: tens of seconds)
    path = workdir / "uploads" / f"scale-{nodes}-{pods}.yaml"
    # JSON is YAML, and more compact: 5,000 nodes stay well under the 5 MiB upload limit
    path.write_text(json.dumps(scenario("bench-scale", nodes, pods - big, big=big)))
    out = {"nodes": nodes, "pods": pods, "memory_before_mib": server.memory()}
    started = time.perf_counter()
    start_session(page, server, path)
    out["session_start_s"] = round(time.perf_counter() - started, 2)
    out["memory_loaded_mib"] = server.memory()
    return out


def measure_scale(page, server, workdir: Path, args) -> dict:
    """Part 4: step latency, DOM size and page height on a large cluster, from its start."""
    out = scale_session(page, server, workdir, args.scale_nodes, args.scale_pods)
    rss = []
    for action in ("step-cycle", "step-point", "step-event"):
        samples = []
        for _ in range(args.scale_samples):
            samples.append(click(page, server, action, args))
            rss.append(server.memory()["VmRSS"])
        out[action] = summary(samples, f"{args.scale_nodes} nodes {action}")
    out["position"] = position(page)
    out["memory_after_mib"] = server.memory()
    out["memory_rss_max_mib"] = max(rss)
    print(f"server memory (MiB): before {out['memory_before_mib']}, loaded {out['memory_loaded_mib']}, "
          f"after {out['position']} events {out['memory_after_mib']}", flush=True)
    return out


def measure_travel(page, server, workdir: Path, args) -> dict:
    """Part 5: a session of the scale scenario run to ``--travel-until`` with the Run form,
    then jumps to random positions with the timeline, then steps from the last one."""
    import random
    out = scale_session(page, server, workdir, args.scale_nodes, args.travel_pods)
    started, cpu = time.perf_counter(), server.cpu_total_s()
    page.fill('[data-form="run-until"] input[name="until"]', f"{args.travel_until:g}")
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    # the run publishes a frame after each slice; it is over when the status says so
    page.wait_for_function(
        "(until) => Number(document.querySelector('[data-clock]').textContent) >= until"
        " || document.querySelector('[data-run-state=\"idle\"]')", arg=args.travel_until, timeout=600_000)
    page.wait_for_timeout(500)
    head = position(page)
    out["run"] = {"until_s": args.travel_until, "events": head, "wall_s": round(time.perf_counter() - started, 1),
                  "server_cpu_s": round(server.cpu_total_s() - cpu, 1), "memory_mib": server.memory()}
    print(f"run to {args.travel_until:g} s: {head:,} events in {out['run']['wall_s']} s "
          f"(server CPU {out['run']['server_cpu_s']} s), server memory {out['run']['memory_mib']}", flush=True)
    rng = random.Random(args.seed)
    samples = []
    for _ in range(args.travel_samples):
        target = rng.randrange(0, head)
        sample = click(page, server, {"position": target}, args)
        assert sample["position"] == target, (sample["position"], target)
        samples.append(sample)
    out["jump"] = summary(samples, f"{args.scale_nodes} nodes jump")
    for action in ("step-cycle", "step-point", "step-event", "back"):
        out[action] = summary([click(page, server, action, args) for _ in range(args.scale_samples)],
                              f"{args.scale_nodes} nodes {action} (travelled)")
    out["memory_after_mib"] = server.memory()
    return out


def measure_import(page, server, workdir: Path, args) -> dict:
    """Part 6: a scheduler_perf workload imported with ``python -m engine import``, uploaded:
    the click on the upload button -> the session page usable (socket open, first frame in)."""
    path = workdir / "uploads" / f"{args.import_test_case}-{args.import_workload}.yaml"
    subprocess.run([sys.executable, "-m", "engine", "import", "--test-case", args.import_test_case,
                    "--workload", args.import_workload, "-o", str(path), args.perf_config],
                   cwd=ROOT, check=True, capture_output=True)
    if args.import_json:
        path = path.rename(path.with_suffix(".json"))
        path.write_text(json.dumps(yaml.load(path.read_text(), Loader=yaml.CSafeLoader)))
    out = {"test_case": args.import_test_case, "workload": args.import_workload, "json": args.import_json,
           "bytes": path.stat().st_size, "memory_before_mib": server.memory()}
    page.goto(server.url + "/")
    page.set_input_files('[data-form="scenario-upload"] input[name="scenario_file"]', str(path))
    cpu = server.cpu_total_s()
    t0 = time.perf_counter()
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    page.wait_for_url("**/s/*/")
    loaded = time.perf_counter() - t0
    page.wait_for_selector('[data-connection="open"]')
    page.wait_for_selector("#panel-header[data-version]")
    page.wait_for_selector("#panel-nodes")
    out.update(page_loaded_s=round(loaded, 2), usable_s=round(time.perf_counter() - t0, 2),
               server_cpu_s=round(server.cpu_total_s() - cpu, 2), memory_loaded_mib=server.memory())
    out["first step-cycle"] = summary([click(page, server, "step-cycle", args)], "imported: first step-cycle")
    print(f"{args.import_test_case}/{args.import_workload} ({out['bytes'] / 2**20:.1f} MiB): upload -> page "
          f"{out['page_loaded_s']} s, -> usable {out['usable_s']} s (server CPU {out['server_cpu_s']} s); memory "
          f"{out['memory_loaded_mib']}", flush=True)
    return out


if __name__ == "__main__":
    main()
