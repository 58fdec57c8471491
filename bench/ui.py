#!/usr/bin/env python
"""The web UI's own benchmark: what a person at the browser waits for.

    .venv/bin/python bench/ui.py [--small-nodes 50] [--large-nodes 2000] [--large-pods 1000]
                                 [--samples 40] [--play-seconds 30] [--json OUT]
    .venv/bin/python bench/ui.py --only-scale [--scale-nodes 5000] [--scale-pods 300]
                                 [--scale-samples 30] [--json OUT]

1. **Step latency** on a small cluster (``--small-nodes``, default 50, shown as node cards
   with the nodes panel's **Cards** switch): the time from a click
   on a step control to the change of the page's DOM (the header panel replaced by the pushed
   frame), measured inside the page with ``performance.now()`` and a MutationObserver, for
   step-event, step-point and step-cycle; p50 and p95 over ``--samples`` clicks each.
2. **Play throughput** on a large cluster (``--large-nodes``, default 2000, with
   ``--large-pods`` pending pods): Play at full speed for ``--play-seconds``; trace events per
   second revealed (as the browser saw them in the frames it received), frames per second, and
   the server's memory (VmRSS now and VmHWM, its peak, from /proc) before and after.

3. **The page at scale** (``--scale-nodes``, default 5000, with ``--scale-pods`` pending
   pods, a tenth of them too big for any node): step-cycle, step-point and step-event
   ``--scale-samples`` times each; click -> the frame received by the page (the server's
   share), click -> DOM change and click -> the next animation frame
   after it (the new DOM styled, laid out and painted), p50 and p95, the number of elements in
   the page and its height in pixels after the last step, and the server's memory.
   ``--only-scale`` runs this part alone.

The server is the real thing: ``daphne visualizer.asgi:application`` in a subprocess with a
throw-away SQLite file; the browser is Debian's chromium driven by Playwright (as in the
browser tests). Sessions are started by uploading the generated scenario on the library page.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
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

MEASURE_STEP = """async (action) => {
    const before = document.querySelector('#panel-header').dataset.version;
    const root = document.querySelector('[data-session]');
    return await new Promise((resolve) => {
        const observer = new MutationObserver(() => {
            const header = document.querySelector('#panel-header');
            if (header && header.dataset.version !== before) {
                observer.disconnect();
                resolve(performance.now() - t0);
            }
        });
        observer.observe(root, {subtree: true, childList: true, attributes: true});
        const t0 = performance.now();
        document.querySelector(`[data-action="${action}"]`).click();
    });
}"""

# The same, and then the time to the next animation frame after the swap (style, layout and
# paint of the new DOM are done by then), the DOM's size and the page's height.
MEASURE_STEP_PAINTED = """async (action) => {
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
                    elements: document.getElementsByTagName('*').length,
                    height: document.documentElement.scrollHeight}), 0));
            }
        });
        observer.observe(root, {subtree: true, childList: true, attributes: true});
        const t0 = performance.now();
        document.querySelector(`[data-action="${action}"]`).click();
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small-nodes", type=int, default=50)
    ap.add_argument("--large-nodes", type=int, default=2000)
    ap.add_argument("--large-pods", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--play-seconds", type=float, default=30.0)
    ap.add_argument("--scale-nodes", type=int, default=5000)
    ap.add_argument("--scale-pods", type=int, default=300)
    ap.add_argument("--scale-samples", type=int, default=30)
    ap.add_argument("--only-scale", action="store_true", help="measure only the page at scale (part 3)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    results = {"small_nodes": args.small_nodes, "large_nodes": args.large_nodes, "large_pods": args.large_pods}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "uploads").mkdir()
        small = workdir / "uploads" / "small.yaml"
        small.write_text(yaml.safe_dump(scenario("bench-small", args.small_nodes, 150, big=5)))
        large = workdir / "uploads" / "large.yaml"
        large.write_text(yaml.safe_dump(scenario("bench-large", args.large_nodes, args.large_pods)))
        server = Server(workdir)
        results["memory_idle_mib"] = server.memory()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 720})

                if args.only_scale:
                    results["scale"] = measure_scale(page, server, workdir, args)
                    browser.close()
                    return _write(results, args)

                # 1. step latency, small cluster, as node cards (the overview is the default above
                # 12 nodes; part 3 measures it at scale)
                start_session(page, server, small)
                page.locator('[data-action="step-event"]').click()
                page.locator('[data-node-mode-set="cards"]').click()
                page.wait_for_selector("#panel-nodes .node-grid [data-node]")
                latency = {}
                for action in ("step-event", "step-point", "step-cycle"):
                    samples = [page.evaluate(MEASURE_STEP, action) for _ in range(args.samples)]
                    latency[action] = {"p50_ms": round(percentile(samples, 50), 1),
                                       "p95_ms": round(percentile(samples, 95), 1),
                                       "max_ms": round(max(samples), 1), "samples": len(samples)}
                    print(f"{action:11s} click -> DOM: p50 {latency[action]['p50_ms']:7.1f} ms   "
                          f"p95 {latency[action]['p95_ms']:7.1f} ms   ({len(samples)} clicks, "
                          f"{args.small_nodes} nodes)", flush=True)
                results["step_latency"] = latency

                # 2. play throughput, large cluster
                started = time.perf_counter()
                start_session(page, server, large)
                results["large_session_start_s"] = round(time.perf_counter() - started, 2)
                results["memory_large_loaded_mib"] = server.memory()
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
                results["play"] = {
                    "seconds": round(elapsed, 1), "events": last - first,
                    "events_per_second": round((last - first) / elapsed),
                    "frames_per_second": round(frames / elapsed, 1),
                    "reached_idle": bool(page.locator('[data-run-state="idle"]').count()),
                }
                results["memory_after_play_mib"] = server.memory()
                results["memory_rss_max_during_play_mib"] = max(rss_samples) if rss_samples else None
                p = results["play"]
                print(f"play at full speed, {args.large_nodes} nodes: {p['events_per_second']} events/s "
                      f"({p['events']} events in {p['seconds']} s, {p['frames_per_second']} frames/s"
                      f"{', reached idle' if p['reached_idle'] else ''})", flush=True)
                print(f"server memory (MiB): idle {results['memory_idle_mib']}, "
                      f"large session loaded {results['memory_large_loaded_mib']}, "
                      f"after play {results['memory_after_play_mib']}", flush=True)
                results["scale"] = measure_scale(page, server, workdir, args)
                browser.close()
        finally:
            server.stop()
    return _write(results, args)


def _write(results, args):
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return results


def measure_scale(page, server, workdir: Path, args) -> dict:
    """Part 3: step latency, DOM size and page height on a large cluster."""
    big = max(1, args.scale_pods // 10)
    # not in the server's library directory (SCENARIO_FIXTURES_DIR): the library page would
    # parse it at every visit (megabytes of YAML: tens of seconds)
    (workdir / "uploads").mkdir(exist_ok=True)
    path = workdir / "uploads" / "scale.yaml"
    # JSON is YAML, and more compact: 5,000 nodes stay well under the 5 MiB upload limit
    path.write_text(json.dumps(scenario("bench-scale", args.scale_nodes, args.scale_pods - big, big=big)))
    out = {"nodes": args.scale_nodes, "pods": args.scale_pods, "memory_before_mib": server.memory()}
    page.add_init_script(HOOK_SOCKET)
    page.set_default_timeout(600_000)   # an upload of 10,000 pods takes a while to parse
    started = time.perf_counter()
    start_session(page, server, path)
    out["session_start_s"] = round(time.perf_counter() - started, 2)
    out["memory_loaded_mib"] = server.memory()
    rss = []
    for action in ("step-cycle", "step-point", "step-event"):
        samples = []
        for _ in range(args.scale_samples):
            samples.append(page.evaluate(MEASURE_STEP_PAINTED, action))
            rss.append(server.memory()["VmRSS"])
        dom = [s["dom"] for s in samples]
        message = [s["message"] for s in samples if s["message"] is not None]
        painted = [s["painted"] for s in samples]
        out[action] = {"message_p50_ms": round(percentile(message, 50), 1) if message else None,
                       "message_p95_ms": round(percentile(message, 95), 1) if message else None,
                       "dom_p50_ms": round(percentile(dom, 50), 1), "dom_p95_ms": round(percentile(dom, 95), 1),
                       "painted_p50_ms": round(percentile(painted, 50), 1),
                       "painted_p95_ms": round(percentile(painted, 95), 1),
                       "max_ms": round(max(painted), 1), "samples": len(samples),
                       "elements": samples[-1]["elements"], "page_height_px": samples[-1]["height"],
                       # every click, in order (which of them are slow: the first, a checkpoint's)
                       "dom_ms": [round(v, 1) for v in dom], "message_ms": [round(v, 1) for v in message]}
        r = out[action]
        print(f"{args.scale_nodes} nodes {action:11s} click -> frame received p50 {r['message_p50_ms']} ms "
              f"p95 {r['message_p95_ms']} ms", flush=True)
        print(f"{args.scale_nodes} nodes {action:11s} click -> DOM p50 {r['dom_p50_ms']:7.1f} ms p95 "
              f"{r['dom_p95_ms']:7.1f} ms; -> painted p50 {r['painted_p50_ms']:7.1f} ms p95 "
              f"{r['painted_p95_ms']:7.1f} ms; {r['elements']} elements, page {r['page_height_px']} px",
              flush=True)
    out["position"] = position(page)
    out["memory_after_mib"] = server.memory()
    out["memory_rss_max_mib"] = max(rss)
    print(f"server memory (MiB): before {out['memory_before_mib']}, loaded {out['memory_loaded_mib']}, "
          f"after {out['position']} events {out['memory_after_mib']}", flush=True)
    return out


if __name__ == "__main__":
    main()
