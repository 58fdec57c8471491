"""Scheduler extenders in web sessions (issue 26): one recording transport per live session,
its record persisted with the session, the past replayed from it (time travel, a restart,
another process) without calling out, a refused URL refused before any session exists, a
slow extender an error cell. Loopback only: docs/examples/extender_server.py, or a tiny
http.server, in a thread on a free port of 127.0.0.1."""
import importlib.util
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from visualizer import runner
from visualizer.models import Session

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_URL = "http://127.0.0.1:8888/scheduler"


def _example_module():
    spec = importlib.util.spec_from_file_location("extender_server", ROOT / "docs/examples/extender_server.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def extender(monkeypatch):
    """The example extender on a free loopback port, allowed by SCHEDULER_EXTENDERS; its calls
    counted per verb (``calls``); ``stop()`` shuts it down (later calls are refused)."""
    mod = _example_module()
    srv, ext = mod.serve(0)
    calls = []
    for verb in ("filter", "prioritize", "preempt", "bind"):
        inner = getattr(ext, verb)
        setattr(ext, verb, (lambda inner, verb: lambda args: (calls.append(verb), inner(args))[1])(inner, verb))
    url = f"http://127.0.0.1:{srv.server_address[1]}/scheduler"
    monkeypatch.setenv("SCHEDULER_EXTENDERS", url)
    stopped = []

    def stop():
        if not stopped:
            srv.shutdown()
            srv.server_close()
            stopped.append(True)

    class Handle:
        pass
    h = Handle()
    h.url, h.calls, h.ext, h.stop = url, calls, ext, stop
    h.text = (ROOT / "docs/examples/extender.yaml").read_text(encoding="utf-8").replace(EXAMPLE_URL, url)
    yield h
    stop()


def control(session_id, action, **fields):
    return runner.control(session_id, {"action": action, **fields})


def step_to_end(session_id, kind="step-cycle", limit=200):
    for _ in range(limit):
        if control(session_id, kind)["note"]:
            return
    raise AssertionError("the run did not end")


def matrix_and_scores(client, token) -> str:
    """The Filter matrix and score table of the page (the current cycle's)."""
    page = client.get(f"/s/{token}/").content.decode()
    parts = re.findall(r'<table class="matrix[^"]*" data-(?:filter-matrix|scores)>.*?</table>', page, re.S)
    return "\n".join(parts)


def test_a_session_calls_out_once_per_call_and_persists_every_reply(extender):
    s = runner.create_session(extender.text, "extender.yaml")
    assert extender.calls == []                     # validating calls no extender
    step_to_end(s.pk)
    # web: filter, prioritize, bind; trainer: filter (one node left: no scoring), bind
    assert extender.calls == ["filter", "prioritize", "bind", "filter", "bind"]
    row = Session.objects.get(pk=s.pk)
    assert [(r["call"], r["verb"], r["status"]) for r in row.extender_records] == [
        (0, "filter", 200), (1, "prioritize", 200), (2, "bind", 200), (3, "filter", 200), (4, "bind", 200)]
    with runner.open_live(s.pk) as live:
        pods = live.stepper.state()["pods"]
    assert pods["default/web"]["nodeName"] == "fast" and pods["default/trainer"]["nodeName"] == "gpu"


def test_a_restart_and_time_travel_replay_from_the_record_without_calling_out(extender, client):
    s = runner.create_session(extender.text, "extender.yaml")
    token = s.presenter_token
    # stop inside web's cycle, once its scores are shown
    for _ in range(100):
        control(s.pk, "step-point")
        with runner.open_live(s.pk) as live:
            if any(e["type"] == "HostSelected" for e in live.revealed()):
                break
    before = matrix_and_scores(client, token)
    assert f'data-plugin="{extender.url}"' in before
    made = list(extender.calls)
    assert made == ["filter", "prioritize"]
    extender.stop()                                 # from here on, any call out would fail
    runner.reset()                                  # a restart: rebuilt from the database
    runner._last_parsed = (None, None)              # (the scenario parsed again too)
    assert matrix_and_scores(client, token) == before
    # back to the start and forward again: replayed, same cells
    with runner.open_live(s.pk) as live:
        shown = live.position
    control(s.pk, "jump", position=0)
    control(s.pk, "jump", position=shown)
    assert matrix_and_scores(client, token) == before
    for _ in range(5):
        control(s.pk, "back")
    for _ in range(5):
        control(s.pk, "step-event")
    assert matrix_and_scores(client, token) == before
    assert extender.calls == made
    assert "Error" not in before


def test_the_calls_beyond_the_record_go_out_and_a_new_branch_drops_the_recorded_future(extender):
    s = runner.create_session(extender.text, "extender.yaml")
    step_to_end(s.pk)
    assert len(extender.calls) == 5
    runner.reset()
    # travel back to before trainer's cycle and inject a node: the recorded future goes
    with runner.open_live(s.pk) as live:
        events = live.timeline[:live.high_water]
    start = next(e["seq"] for e in events if e["type"] == "CycleStart" and e["pod"] == "default/trainer")
    control(s.pk, "jump", position=start)
    assert len(extender.calls) == 5                # travelling: no call
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu2", "labels": {"extender.example.com/gpu": "true"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "2"}}}
    old = Session.objects.get(pk=s.pk).extender_records
    with runner.open_live(s.pk) as live:
        live.inject("create", node)
        made = live.stepper.engine.extender_calls       # the calls of the kept branch
        live.persist(injections=True)
    row = Session.objects.get(pk=s.pk)
    assert 0 < made < 5
    assert row.extender_records == old[:made]           # the rest was the dropped future's
    assert len(extender.calls) == 5
    step_to_end(s.pk)
    new = extender.calls[5:]
    assert new and new[-1] == "bind"                    # the new branch's calls went out
    row = Session.objects.get(pk=s.pk)
    assert [r["verb"] for r in row.extender_records] == [r["verb"] for r in old[:made]] + new
    with runner.open_live(s.pk) as live:
        assert live.stepper.state()["pods"]["default/trainer"]["nodeName"] in ("gpu", "gpu2")


def test_an_upload_naming_an_extender_the_server_does_not_allow_is_refused(client, extender):
    text = extender.text.replace(extender.url, "http://127.0.0.1:9/elsewhere")
    response = client.post("/sessions/", {"scenario": text})
    assert response.status_code == 400
    html = response.content.decode()
    assert "SCHEDULER_EXTENDERS" in html and "http://127.0.0.1:9/elsewhere" in html
    assert Session.objects.count() == 0
    assert extender.calls == []
    # the allowed one starts (the upload worker only validates: no call)
    response = client.post("/sessions/", {"scenario": extender.text})
    assert response.status_code == 302
    assert extender.calls == []


@pytest.fixture
def slow_extender(monkeypatch):
    """An extender whose filter never answers in time (it waits until the test ends)."""
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            release.wait(10)
            try:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"{}")
            except OSError:
                pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/slow"
    monkeypatch.setenv("SCHEDULER_EXTENDERS", url)
    yield url
    release.set()
    srv.shutdown()
    srv.server_close()


def test_a_slow_extender_costs_its_timeout_and_shows_as_an_error_cell(slow_extender, client):
    import time
    text = f"""kind: Scenario
metadata: {{name: slow-extender}}
scheduler:
  extenders:
    - {{urlPrefix: "{slow_extender}", filterVerb: filter, httpTimeout: 300ms}}
objects:
  - {{apiVersion: v1, kind: Node, metadata: {{name: n1}}, status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}}}
  - {{apiVersion: v1, kind: Pod, metadata: {{name: web}}, spec: {{containers: [{{name: c, image: x}}]}}}}
"""
    s = runner.create_session(text, "")
    started = time.monotonic()
    control(s.pk, "step-cycle")
    control(s.pk, "step-cycle")
    assert time.monotonic() - started < 3
    page = client.get(f"/s/{s.presenter_token}/").content.decode()
    cell = re.search(rf'<td class="cell--error[^"]*"[^>]*data-plugin="{re.escape(slow_extender)}"', page)
    assert cell, "the extender's Filter call shows as an Error cell"
    assert "Client.Timeout exceeded" in page
    row = Session.objects.get(pk=s.pk)
    assert row.extender_records[0]["timedOut"] is True
    # the session goes on (the pod is requeued after the cycle's error)
    control(s.pk, "run-until", until=30)
    with runner.open_live(s.pk) as live:
        assert live.position > 0


def test_the_filter_matrix_and_the_score_table_show_the_extender_as_a_column(extender, client):
    s = runner.create_session(extender.text, "extender.yaml")
    for _ in range(100):
        control(s.pk, "step-point")
        with runner.open_live(s.pk) as live:
            if any(e["type"] == "HostSelected" for e in live.revealed()):
                break
    tables = matrix_and_scores(client, s.presenter_token)
    short = extender.url[len("http://"):]
    heads = re.findall(r'<th scope="col" class="plugin-col plugin-col--extender" data-plugin="([^"]+)" data-extender '
                       r'title="scheduler extender [^"]+"><span><span class="extender-mark">extender</span> ([^<]+)</span></th>',
                       tables)
    assert heads == [(extender.url, short), (extender.url, short)]      # the matrix's and the scores'
    # the extender's verdict on the `never` pool's node, and its weighted score on fast
    assert re.search(rf'<td class="cell--unschedulableandunresolvable cell--fail" data-plugin="{re.escape(extender.url)}"',
                     tables)
    scores = tables[tables.index("data-scores"):]
    fast = scores[scores.index('data-score-node="fast"'):]
    fast = fast[:fast.index("</tr>")]
    assert re.search(rf'data-plugin="{re.escape(extender.url)}">9 → 9 → <strong>180</strong>', fast)


@pytest.fixture
def failing_prioritize(monkeypatch):
    """An extender whose filter keeps every node and whose prioritize answers 500."""
    import json

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if self.path.endswith("/filter"):
                body, code = json.dumps({"NodeNames": args["NodeNames"]}).encode(), 200   # nodeCacheCapable
            else:
                body, code = b"broken", 500
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/faulty"
    monkeypatch.setenv("SCHEDULER_EXTENDERS", url)
    yield url
    srv.shutdown()
    srv.server_close()


def test_a_failed_prioritize_call_is_an_error_cell_in_the_score_table(failing_prioritize, client):
    node = '{{apiVersion: v1, kind: Node, metadata: {{name: {}}}, status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}}}'
    text = f"""kind: Scenario
metadata: {{name: faulty-extender}}
scheduler:
  extenders:
    - {{urlPrefix: "{failing_prioritize}", filterVerb: filter, prioritizeVerb: prioritize, weight: 1, nodeCacheCapable: true}}
objects:
  - {node.format("n1")}
  - {node.format("n2")}
  - {{apiVersion: v1, kind: Pod, metadata: {{name: web}}, spec: {{containers: [{{name: c, image: x}}]}}}}
"""
    s = runner.create_session(text, "")
    for _ in range(300):        # up to the extender's last Score result, before HostSelected
        control(s.pk, "step-event")
        with runner.open_live(s.pk) as live:
            nxt = live.timeline[live.position] if live.position < len(live.timeline) else None
            done = [e for e in live.revealed() if e["type"] == "PluginResult" and e.get("extender")
                    and e["point"] == "Score"]
        if len(done) == 2 and (nxt is None or nxt["type"] != "PluginResult"):
            break
    tables = matrix_and_scores(client, s.presenter_token)
    scores = tables[tables.index("data-scores"):]
    cells = re.findall(rf'<td data-code="Skip" data-plugin="{re.escape(failing_prioritize)}" class="cell--error">'
                       r'<span class="code"[^>]*>⚠ Error</span><span class="reasons">([^<]+)</span>', scores)
    assert len(cells) == 2 and "code 500" in cells[0]
    step_to_end(s.pk)
    with runner.open_live(s.pk) as live:
        assert live.stepper.state()["pods"]["default/web"]["nodeName"] in ("n1", "n2")


def test_the_event_log_reads_each_extender_call_in_one_line(extender, client):
    from visualizer.panels.log import summary
    s = runner.create_session(extender.text, "extender.yaml")
    step_to_end(s.pk)
    with runner.open_live(s.pk) as live:
        calls = [e for e in live.revealed() if e["type"] == "ExtenderCall"]
    short = extender.url[len("http://"):]
    lines = [re.sub(r"\(\d[\d.,]* ms\)$", "(… ms)", summary(e)) for e in calls]
    assert lines == [
        f"extender {short} filter default/web: 4 nodes sent, 3 passed (… ms)",
        f"extender {short} prioritize default/web: 3 nodes sent, scored × weight 2 (… ms)",
        f"extender {short} bind default/web to fast: bound (… ms)",
        f"extender {short} filter default/trainer: 2 nodes sent, 1 passed (… ms)",
        f"extender {short} bind default/trainer to gpu: bound (… ms)",
    ]
    page = client.get(f"/s/{s.presenter_token}/").content.decode()
    assert f"extender {short} bind default/trainer to gpu: bound" in page
    verdict = next(e for e in live.revealed() if e["type"] == "PluginResult" and e.get("extender")
                   and e.get("node") == "reserved")
    assert summary(verdict) == (f"Filter extender {short} on reserved: UnschedulableAndUnresolvable "
                                f"(extender: the node's pool takes no pods)")


def test_a_failed_call_reads_as_failed_in_the_log():
    from visualizer.panels.log import log, summary
    e = {"type": "ExtenderCall", "seq": 7, "time": 0, "pod": "default/web", "cycle": 1, "call": 0,
         "extender": "http://127.0.0.1:9/x", "verb": "filter", "url": "http://127.0.0.1:9/x/filter", "nodes": 2,
         "status": None, "timedOut": True, "ignored": True, "latency": 0.3, "results": None,
         "error": 'Post "http://127.0.0.1:9/x/filter": context deadline exceeded'}
    assert summary(e) == ('extender 127.0.0.1:9/x filter default/web: 2 nodes sent, failed (timed out), ignored: '
                          'Post "http://127.0.0.1:9/x/filter": context deadline exceeded (300 ms)')
    assert log([e], 1)["rows"][0]["failed"]


def test_a_session_whose_extender_the_server_no_longer_allows_says_so(extender, client, monkeypatch):
    s = runner.create_session(extender.text, "extender.yaml")
    step_to_end(s.pk)
    runner.reset()
    runner._last_parsed = (None, None)
    monkeypatch.setenv("SCHEDULER_EXTENDERS", "http://127.0.0.1:9/other")     # restarted with another list
    response = client.get(f"/s/{s.presenter_token}/")
    assert response.status_code == 503
    assert "is not an extender this process may call" in response.content.decode()
    assert extender.calls == ["filter", "prioritize", "bind", "filter", "bind"]
