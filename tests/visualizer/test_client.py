"""vizclient (the Python client of the REST API and the JSON stream) and its two examples, against
a real ``daphne`` subprocess on a free loopback port with its own SQLite file and the real
lesson library (fixtures/): what they print is the CLI's trace (``python -m engine run
FIXTURE --trace``); errors carry the API's title and problems; a follower cannot control."""
import json
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import vizclient
from vizclient import ApiError, Client, ServerUnreachable, StreamError, format_queue_transition

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from stack import free_port, sqlite_process  # noqa: E402  (tests/stack.py)

FIXTURES = ROOT / "fixtures"
EXAMPLES = ROOT / "docs" / "examples"
PREEMPTION_LESSON = "11-preemption-reprieve.yaml"
FOLLOW_LESSON = "02-backoff-growth.yaml"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = sqlite_process(tmp_path_factory.mktemp("client"), SCENARIO_FIXTURES_DIR=str(FIXTURES))
    yield srv
    srv.stop()


@pytest.fixture
def client(server):
    return Client(server.url, timeout=60)


def cli_trace(scenario: Path, tmp_path: Path) -> list:
    """The CLI's trace of a whole run: ``python -m engine run SCENARIO --trace out.jsonl``."""
    out = tmp_path / f"{scenario.stem}.jsonl"
    subprocess.run([sys.executable, "-m", "engine", "run", str(scenario), "--trace", str(out)], cwd=ROOT,
                   capture_output=True, check=True, timeout=120)
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


class Lines:
    """A subprocess's stdout and stderr read by threads, line by line, with timeouts."""

    def __init__(self, process):
        self.process = process
        self.out, self.err = queue.Queue(), queue.Queue()
        for stream, q in ((process.stdout, self.out), (process.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, q), daemon=True).start()

    @staticmethod
    def _pump(stream, q):
        for line in stream:
            q.put(line.rstrip("\n"))
        q.put(None)

    def take(self, q, n, timeout):
        got, deadline = [], time.monotonic() + timeout
        while len(got) < n:
            try:
                line = q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{len(got)} of {n} lines within {timeout} s: {got}") from None
            if line is None:
                raise AssertionError(f"the process ended after {got}; stderr: {self.rest(self.err)}")
            got.append(line)
        return got

    @staticmethod
    def rest(q):
        lines = []
        while True:
            try:
                line = q.get_nowait()
            except queue.Empty:
                return lines
            if line is not None:
                lines.append(line)


def run_example(name, *args, timeout=120):
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------ the examples

def test_the_first_preemption_example_names_the_victims_of_the_cli_trace(server, tmp_path):
    done = run_example("client_first_preemption.py", server.url)
    assert done.returncode == 0, done.stderr
    printed = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)

    trace = cli_trace(FIXTURES / PREEMPTION_LESSON, tmp_path)
    at = next(i for i, e in enumerate(trace) if e["type"] == "PreemptionPick")
    pick = trace[at]
    # the cycle's writes come at its end, before any other cycle starts
    end = next((i for i in range(at + 1, len(trace)) if trace[i]["type"] == "CycleStart"), len(trace))
    cycle = trace[at + 1:end]
    victims = [e["pod"] for e in cycle if e["type"] == "PodDeleted" and e["reason"] == "Preempted"
               and e["preemptor"] == pick["preemptor"]]
    nominated = [e["node"] for e in cycle if e["type"] == "Nomination" and e["pod"] == pick["preemptor"]]
    chosen = next(c for c in pick["candidates"] if c["node"] == pick["node"])
    assert victims and sorted(victims) == sorted(chosen["victims"]) and nominated == [pick["node"]]

    assert printed["preemptor"] == pick["preemptor"]
    assert printed["nominated node"] == nominated[0]
    assert printed["victims"].split(", ") == victims
    assert printed["session"].startswith(server.url + "/s/")


def test_the_follow_example_prints_the_queue_transitions_of_the_cli_trace_in_order(client, tmp_path):
    session = client.create_session(fixture=FOLLOW_LESSON)
    follower = subprocess.Popen([sys.executable, str(EXAMPLES / "client_follow.py"), session.follower_url],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = Lines(follower)
    try:
        assert lines.take(lines.err, 1, 20)[0].startswith("# following ws://")
        answers, failed = [], []

        def drive():          # the presenter, in another thread, through the client
            try:
                for step in (session.step_cycle, session.step_cycle, session.step_event, session.step_event,
                             session.back, session.back, session.step_event, session.step_point,
                             lambda: session.run_until(4), session.step_cycle):
                    answers.append(step())
                    time.sleep(0.05)
            except Exception as e:      # noqa: BLE001 - reported by the test below
                failed.append(e)
        presenter = threading.Thread(target=drive)
        presenter.start()
        presenter.join(60)
        assert not presenter.is_alive() and not failed, failed
        head = answers[-1]["head"]
        assert answers[-1]["position"] == head and not answers[-1]["finished"]

        trace = cli_trace(FIXTURES / FOLLOW_LESSON, tmp_path)
        assert len(trace) > head
        expected = [format_queue_transition(e) for e in trace[:head] if e["type"] == "QueueTransition"]
        assert len(expected) >= 8
        assert lines.take(lines.out, len(expected), 30) == expected
        time.sleep(0.5)
        assert lines.rest(lines.out) == []            # nothing more, nothing twice
    finally:
        follower.send_signal(signal.SIGINT)
        try:
            follower.wait(timeout=15)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0
    assert not any("Traceback" in line for line in lines.rest(lines.err))


def test_the_follow_example_stops_when_the_server_does(tmp_path):
    own = sqlite_process(tmp_path, SCENARIO_FIXTURES_DIR=str(FIXTURES))
    try:
        session = Client(own.url).create_session(fixture=FOLLOW_LESSON)
        session.step_cycle()
        follower = subprocess.Popen([sys.executable, str(EXAMPLES / "client_follow.py"),
                                     session.follower_token, own.url],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = Lines(follower)
        assert lines.take(lines.out, 2, 20) == ["     0.0s default/big: - -> activeQ (PodAdd)",
                                                "     0.0s default/big: activeQ -> - (Pop)"]
    finally:
        own.stop()
    try:
        follower.wait(timeout=20)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    err = lines.rest(lines.err)
    # the server ends the stream: a normal close, or a connection lost (daphne drops it)
    assert follower.returncode in (0, 1), err
    assert err and ("the server closed the stream" in err[-1] or "was lost" in err[-1]), err
    assert not any("Traceback" in line for line in err), err


# ------------------------------------------------------------------ the client

def raw(method, url, body=None):
    """The API's answer read without the client: (status, parsed JSON body)."""
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_a_bad_control_is_an_api_error_with_the_apis_title_and_problems(client, server):
    session = client.create_session(fixture=PREEMPTION_LESSON)
    for fields, status in (({"action": "fly"}, 400), ({"action": "jump", "position": -3}, 400),
                           ({"action": "run-until"}, 400), ({"action": "inject", "form": "nope"}, 400)):
        with pytest.raises(ApiError) as caught:
            session.control(**fields)
        code, body = raw("POST", f"{server.url}/api/s/{session.presenter_token}/control", fields)
        assert (caught.value.status, caught.value.title, caught.value.problems) == (code, body["title"],
                                                                                    body["problems"])
        assert code == status and body["problems"]
        assert body["title"] in str(caught.value) and caught.value.url.endswith("/control")
    with pytest.raises(ApiError) as caught:
        session.control("fly")
    assert caught.value.title == "That did not work" and caught.value.problems == ['unknown control "fly"']
    with pytest.raises(ApiError) as caught:
        client.create_session(fixture="no-such-lesson.yaml")
    assert caught.value.status == 404 and "no such scenario" in caught.value.problems[0]
    with pytest.raises(ApiError) as caught:
        client.create_session(text="kind: Scenario\nobjects: [", filename="broken.yaml")
    assert caught.value.status == 400 and caught.value.title == "The scenario is not valid"
    with pytest.raises(ApiError) as caught:
        session.state(position=10 ** 6)
    assert caught.value.status == 400 and caught.value.title == "No such position"
    assert session.state()["position"] == 0           # nothing moved


def test_a_follower_session_reads_but_cannot_control(client):
    session = client.create_session(fixture=PREEMPTION_LESSON)
    session.step_cycle()
    for follower in (client.follow(session.follower_token), client.follow(session.follower_url),
                     client.open(session.info["follower_api"])):
        assert follower.role == "follower" and follower.presenter_token is None
        with pytest.raises(ApiError) as caught:
            follower.step_cycle()
        assert caught.value.status == 403 and caught.value.title == "Forbidden"
        assert caught.value.problems == ["a follower's link cannot control the session"]
        assert follower.state()["position"] == 54
    # a follower's stream refuses controls too, with a status
    with client.follow(session.follower_token).stream() as stream:
        stream.until(lambda m: m["type"] == "frame", timeout=10)
        stream.control("step-cycle")
        status = stream.until(lambda m: m["type"] == "status", timeout=10)
        assert status["kind"] == "refused"
    assert session.state()["position"] == 54
    # a presenter token used as a follower's is unknown there
    with pytest.raises(ApiError) as caught:
        client.follow(session.presenter_token).state()
    assert caught.value.status == 404


def test_reading_events_state_and_exports_is_the_cli_trace(client, tmp_path):
    session = client.create_session(fixture=PREEMPTION_LESSON)
    for _ in range(2):
        answer = session.step_cycle()
    head = answer["head"]
    trace = cli_trace(FIXTURES / PREEMPTION_LESSON, tmp_path)
    paged = list(session.iter_events(page=7))
    assert paged == trace[:head] == list(client.session(session.presenter_token).iter_events())
    assert list(session.iter_events(start=50, page=3)) == trace[50:head]
    assert list(session.iter_events(type="PodDeleted", page=1)) == [e for e in trace[:head]
                                                                    if e["type"] == "PodDeleted"]
    page = session.events(0, 5)
    assert [e["position"] for e in page["events"]] == [1, 2, 3, 4, 5] and page["next"] == 5
    assert [json.loads(line) for line in session.export("trace.jsonl").splitlines()] == trace[:head]
    assert json.loads(session.export("state.json")) == session.state()["state"]
    assert session.state(position=3)["position"] == 3 and session.state()["position"] == head
    with pytest.raises(ValueError):
        session.export("secrets.txt")


def many_pods(nodes=12, pods=100) -> str:
    lines = ["kind: Scenario", "metadata: {name: many-pods, title: Many pods}", "objects:"]
    for i in range(nodes):
        lines += ["  - apiVersion: v1", "    kind: Node", f"    metadata: {{name: n{i}}}",
                  '    status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}']
    for i in range(pods):
        lines += ["  - apiVersion: v1", "    kind: Pod", f"    metadata: {{name: p{i}}}", "    spec:",
                  "      containers: [{name: c, image: busybox, resources: {requests: {cpu: 500m}}}]"]
    return "\n".join(lines) + "\n"


def test_the_stream_answers_behind_itself_and_holds_every_event_in_order(client, tmp_path):
    text = many_pods()
    (tmp_path / "many.yaml").write_text(text)
    trace = cli_trace(tmp_path / "many.yaml", tmp_path)
    assert len(trace) > 2 * 5000                 # more than the stream sends at once, twice over
    session = client.create_session(text=text, filename="many.yaml")
    with session.stream(keep_events=True) as stream:
        first = stream.recv(timeout=10)
        assert first["type"] == "frame" and first["position"] == 0
        answer = session.run_until(10)
        for _ in range(20):                      # bounded: a run-until may stop at its budget of work
            if answer["finished"]:
                break
            answer = session.run_until(10)
        assert answer["finished"]
        seen = []
        last = stream.until(lambda m: seen.append(m["type"]) or
                            (m["type"] == "frame" and m["position"] == answer["head"]), timeout=60)
        assert "behind" not in seen and stream.resumed >= 2
        assert stream.events == trace[:answer["head"]] and stream.position == last["position"] == len(trace)
        assert stream.run == last["run"] and stream.head == len(trace)
        # travelling back: a rewind that keeps everything, then silence
        session.jump(10)
        rewind = stream.until(lambda m: m["type"] != "status", timeout=10)
        assert rewind["type"] == "rewind" and rewind["kept"] == len(trace) and stream.position == len(trace)
        with pytest.raises(TimeoutError):
            stream.recv(timeout=0.5)


def test_queue_transitions_from_a_later_position(client, tmp_path):
    session = client.create_session(fixture=FOLLOW_LESSON)
    answer = session.run_until(4)
    trace = cli_trace(FIXTURES / FOLLOW_LESSON, tmp_path)
    expected = [e for e in trace[20:answer["head"]] if e["type"] == "QueueTransition"]
    got = []
    with session.stream(from_position=20) as stream:
        transitions = stream.queue_transitions()
        while len(got) < len(expected):
            got.append(next(transitions))
        assert stream.position <= answer["head"]
    assert got == expected


def test_unreachable_servers_and_unknown_tokens_say_what_was_tried(client):
    nobody = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerUnreachable) as caught:
        Client(nobody).create_session(fixture=PREEMPTION_LESSON)
    assert f"{nobody}/api/sessions" in str(caught.value) and isinstance(caught.value, ConnectionError)
    with pytest.raises(ServerUnreachable) as caught:
        Client(nobody).follow("abc").stream().open()
    assert nobody.replace("http", "ws") + "/ws/json/w/abc/" in str(caught.value)
    with pytest.raises(StreamError) as caught:
        with client.follow("no-such-token").stream():
            pass
    assert caught.value.status == 403
    with pytest.raises(ApiError) as caught:
        client.follow("no-such-token").events()
    assert caught.value.status == 404 and caught.value.title == "Not found"


def test_links_and_tokens():
    assert vizclient.parse_link("http://h:8000/w/T0k-_/") == ("follower", "T0k-_", "http://h:8000")
    assert vizclient.parse_link("https://h/api/s/abc/") == ("presenter", "abc", "https://h")
    assert vizclient.parse_link("ws://h:1/ws/json/w/abc/?from=3") == ("follower", "abc", "http://h:1")
    assert vizclient.parse_link("/w/abc/") == ("follower", "abc", None)
    assert vizclient.parse_link(" abc ") == (None, "abc", None)
    with pytest.raises(ValueError):
        vizclient.parse_link("http://h:8000/library/")
    c = Client("127.0.0.1:9/")
    assert c.base_url == "http://127.0.0.1:9" and c.origin == "http://127.0.0.1:9"
    with pytest.raises(ValueError):
        c.follow("http://h/s/abc/")
    with pytest.raises(ValueError):
        c.open("abc")
    assert c.open("http://h/s/abc/").role == "presenter"


def test_a_new_branch_and_a_resume_on_another_run_leave_the_stream_holding_the_sessions_events(client):
    session = client.create_session(fixture=PREEMPTION_LESSON)
    with session.stream(keep_events=True) as stream:
        stream.recv(timeout=10)
        session.step_cycle()
        answer = session.step_cycle()
        stream.until(lambda m: m["type"] == "frame" and m["position"] == answer["head"], timeout=20)
        old_run, held = stream.run, stream.position
        session.jump(10)
        stream.until(lambda m: m["type"] == "rewind", timeout=10)
        # a node injected in the past: the recorded future is dropped, a new run follows
        answer = session.inject("node-add", name="n9", cpu="16", memory="32Gi")
        rewind = stream.until(lambda m: m["type"] == "rewind", timeout=10)
        assert rewind["kept"] <= answer["position"] < held and stream.position == rewind["kept"] == len(stream.events)
        stream.until(lambda m: m["type"] == "frame" and m["position"] == answer["position"], timeout=20)
        assert stream.run != old_run
        now = list(session.iter_events())
        assert stream.events == now[:answer["position"]]
    # a client that held events of the old run resumes: told to drop them all, then sent everything
    with session.stream(from_position=held, run=old_run, keep_events=True) as late:
        rewind = late.until(lambda m: m["type"] != "status", timeout=10)
        assert rewind["type"] == "rewind" and rewind["kept"] == 0 and late.events_start == 0
        late.until(lambda m: m["type"] == "frame", timeout=20)
        assert late.events == now[:answer["position"]] and late.run == stream.run


def test_the_presenters_stream_takes_controls(client):
    session = client.create_session(fixture=PREEMPTION_LESSON)
    with session.stream(presenter=True, keep_events=True) as stream:
        assert stream.role == "presenter" and "/ws/json/s/" in stream.url
        stream.recv(timeout=10)
        stream.control("step-cycle")
        frame = stream.until(lambda m: m["type"] == "frame", timeout=20)
        assert frame["position"] == 54 == stream.position == len(stream.events)
        stream.control("jump", position="nowhere")
        status = stream.until(lambda m: m["type"] == "status" and m["kind"] == "error", timeout=10)
        assert status["problems"]
    assert stream.events == list(session.iter_events())
