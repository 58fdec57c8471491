"""The REST API (/api/, visualizer/api.py): a lesson driven to its first preemption through the API
alone reveals exactly the CLI's trace; sessions from text and from a cluster dump; the errors;
tokens (a follower reads, never controls, never sees the presenter token); the OpenAPI schema."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from visualizer import runner
from visualizer.models import Session

ROOT = Path(__file__).resolve().parents[2]
LESSON = "11-preemption-reprieve.yaml"
DUMP = ROOT / "tests" / "engine" / "importers" / "data" / "cluster-dump.yaml.gz"
PREEMPTION = ("PreemptionCandidate", "PodDeleted")


def post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def create(client, **body):
    r = post(client, "/api/sessions", body)
    assert r.status_code == 201, r.content
    return r.json()


def body_of(response) -> bytes:
    """A response's body; a streamed export's async chunks read to the end."""
    if not response.streaming:
        return response.content
    if not response.is_async:
        return b"".join(response.streaming_content)
    from asgiref.sync import async_to_sync

    async def read():
        return [chunk async for chunk in response.streaming_content]
    return b"".join(async_to_sync(read)())


def all_events(client, base, page=7):
    """Every revealed event through /events, a small page at a time (the paging is exercised)."""
    out, start = [], 0
    while start is not None:
        r = client.get(f"{base}/events", {"start": start, "limit": page})
        assert r.status_code == 200, r.content
        body = r.json()
        out += body["events"]
        start = body["next"]
    return out


@pytest.mark.django_db(transaction=True)
def test_a_lesson_driven_to_its_first_preemption_through_the_api_reveals_the_cli_trace(client):
    made = create(client, fixture=LESSON)
    pt, ft = made["presenter_token"], made["follower_token"]
    assert made["presenter_api"].endswith(f"/api/s/{pt}/") and made["follower_api"].endswith(f"/api/w/{ft}/")
    for _ in range(200):             # bounded: the lesson preempts within a few cycles
        r = post(client, f"/api/s/{pt}/control", {"action": "step-cycle"})
        assert r.status_code == 200, r.content
        found = client.get(f"/api/w/{ft}/events", {"type": "PreemptionCandidate", "limit": 1}).json()["events"]
        if found:
            break
    else:
        pytest.fail("no preemption after 200 cycles")
    head = r.json()["head"]
    assert r.json()["position"] == head
    events = all_events(client, f"/api/w/{ft}")
    assert [e["position"] for e in events] == list(range(1, head + 1))
    api_trace = [e["event"] for e in events]
    assert any(e["type"] in PREEMPTION for e in api_trace)
    cli = subprocess.run([sys.executable, "-m", "engine", "run", str(ROOT / "fixtures" / LESSON), "--trace", "-"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    cli_trace = [json.loads(line) for line in cli.stdout.splitlines() if line.strip()]
    assert len(cli_trace) > head
    assert api_trace == cli_trace[:head]
    first = next(i for i, e in enumerate(cli_trace) if e["type"] in PREEMPTION)
    assert api_trace[:first + 1] == cli_trace[:first + 1]
    # the same through the presenter's link, and the export of the trace is the same text
    assert [e["event"] for e in all_events(client, f"/api/s/{pt}", page=5000)] == api_trace
    exported = body_of(client.get(f"/api/w/{ft}/export/trace.jsonl")).decode()
    assert [json.loads(line) for line in exported.splitlines()] == api_trace
    # filters as the page's log: by pod, by node, by type
    victims = [e for e in api_trace if e["type"] == "PodDeleted"]
    by_type = client.get(f"/api/w/{ft}/events", {"type": "PreemptionCandidate"}).json()["events"]
    assert [e["event"] for e in by_type] == [e for e in api_trace if e["type"] == "PreemptionCandidate"]
    by_pod = client.get(f"/api/w/{ft}/events", {"pod": "default/urgent"}).json()["events"]
    assert by_pod and all("default/urgent" in json.dumps(e["event"]) for e in by_pod)
    by_node = client.get(f"/api/w/{ft}/events", {"node": "n1"}).json()["events"]
    assert by_node and all(e["event"].get("node") == "n1" for e in by_node)
    assert victims or by_type


@pytest.mark.django_db(transaction=True)
def test_reading_a_state_does_not_move_the_session_and_equals_the_state_shown_there(client):
    made = create(client, fixture=LESSON)
    pt, ft = made["presenter_token"], made["follower_token"]
    for _ in range(3):
        post(client, f"/api/s/{pt}/control", {"action": "step-cycle"})
    head = Session.objects.get().high_water
    shown = client.get(f"/api/w/{ft}/state").json()
    assert shown["position"] == head and shown["head"] == head
    middle = head // 2
    behind = client.get(f"/api/s/{pt}/state", {"position": middle}).json()
    assert behind["position"] == middle
    assert Session.objects.get().position == head          # the read did not move the session
    with runner.open_live(Session.objects.get().pk) as live:
        assert live.position == head
    # jump there (a control), and the page's export of the state is the same state
    r = post(client, f"/api/s/{pt}/control", {"action": "jump", "position": middle})
    assert r.status_code == 200 and r.json()["position"] == middle
    exported = json.loads(client.get(f"/api/w/{ft}/export/state.json").content)
    assert exported == behind["state"]
    assert client.get(f"/api/w/{ft}/state").json()["state"] == behind["state"]
    # the head is still readable behind it, and the state at 0 is the cluster as loaded
    assert client.get(f"/api/w/{ft}/state", {"position": head}).json()["state"] == shown["state"]
    assert client.get(f"/api/w/{ft}/state", {"position": 0}).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_run_until_in_slices_back_and_inject(client):
    pt = create(client, fixture=LESSON)["presenter_token"]
    r = post(client, f"/api/s/{pt}/control", {"action": "run-until", "until": 20})
    assert r.status_code == 200, r.content
    assert r.json()["clock"] >= 0 and r.json()["position"] > 0
    pos = r.json()["position"]
    r = post(client, f"/api/s/{pt}/control", {"action": "back"})
    assert r.status_code == 200 and r.json()["position"] < pos and r.json()["head"] == pos
    r = post(client, f"/api/s/{pt}/control", {"action": "inject", "form": "node-add", "name": "n9", "cpu": "4",
                                              "memory": "8Gi"})
    assert r.status_code == 200, r.content
    assert Session.objects.get().injections[0]["body"]["metadata"]["name"] == "n9"
    r = post(client, f"/api/s/{pt}/control", {"action": "inject", "form": "node-add", "cpu": "lots"})
    assert r.status_code == 400
    assert r.json()["problems"] and any("name" in p for p in r.json()["problems"])


@pytest.mark.django_db(transaction=True)
def test_create_from_text_and_from_a_cluster_dump(client, scenario_text):
    made = create(client, text=scenario_text("preemption.yaml"), filename="preemption.yaml")
    assert Session.objects.get(presenter_token=made["presenter_token"]).scenario_text == scenario_text("preemption.yaml")
    dump = gzip.decompress(DUMP.read_bytes()).decode()
    made = create(client, text=dump, filename="cluster-dump.yaml")
    session = Session.objects.get(presenter_token=made["presenter_token"])
    assert session.scenario_name == "cluster-dump" and made["scenario"] == "cluster-dump"
    r = post(client, f"/api/s/{made['presenter_token']}/control", {"action": "step-cycle"})
    assert r.status_code == 200 and r.json()["position"] > 0


@pytest.mark.django_db(transaction=True)
def test_errors(client):
    r = post(client, "/api/sessions", {"fixture": "no-such-lesson.yaml"})
    assert r.status_code == 404 and "no such scenario" in r.json()["problems"][0]
    r = post(client, "/api/sessions", {"text": '{"kind": "List", "items": [{"kind": "Pod"', "filename": "x.yaml"})
    assert r.status_code == 400 and r.json()["problems"]
    r = post(client, "/api/sessions", {"text": "nodes: [1, 2\n"})
    assert r.status_code == 400 and r.json()["problems"]
    r = post(client, "/api/sessions", {})
    assert r.status_code == 400
    r = post(client, "/api/sessions", {"text": "#" * (5 * 1024 * 1024 + 1)})
    assert r.status_code == 413
    r = post(client, "/api/sessions", {"text": "#" * (7 * 1024 * 1024)})     # past DATA_UPLOAD_MAX_MEMORY_SIZE
    assert r.status_code == 413 and "too large" in r.json()["problems"][0]
    r = client.post("/api/sessions", "{not json", content_type="application/json")
    assert r.status_code == 400
    assert Session.objects.count() == 0

    made = create(client, fixture=LESSON)
    pt, ft = made["presenter_token"], made["follower_token"]
    r = post(client, f"/api/w/{ft}/control", {"action": "step-event"})
    assert r.status_code == 403 and pt not in r.content.decode()
    assert post(client, f"/api/s/{ft}/control", {"action": "step-event"}).status_code == 404
    assert post(client, "/api/w/nope/control", {"action": "step-event"}).status_code == 404
    assert Session.objects.get().position == 0
    r = post(client, f"/api/s/{pt}/control", {"action": "fly"})
    assert r.status_code == 400 and r.json()["problems"] == ['unknown control "fly"']
    r = post(client, f"/api/s/{pt}/control", {"action": "jump", "position": "x"})
    assert r.status_code == 400
    r = post(client, f"/api/s/{pt}/control", {"action": "run-until", "until": -1})
    assert r.status_code == 400
    r = client.get(f"/api/w/{ft}/state", {"position": 1})
    assert r.status_code == 400 and "0 to 0" in r.json()["problems"][0]
    assert Session.objects.get().high_water == 0            # the future was not run
    assert client.get(f"/api/w/{ft}/state", {"position": -1}).status_code == 400
    assert client.get(f"/api/w/{ft}/events", {"limit": 5001}).status_code == 400
    assert client.get(f"/api/w/{ft}/export/secrets.txt").status_code in (400, 404)
    assert client.get(f"/api/w/{pt}/state").status_code == 404
    assert client.get("/api/s/nope/events").status_code == 404
    # nothing a follower reads names the presenter token
    post(client, f"/api/s/{pt}/control", {"action": "step-cycle"})
    for url in ("state", "events", "export/state.json", "export/scenario.yaml", "export/results.json",
                "export/trace.jsonl"):
        r = client.get(f"/api/w/{ft}/{url}")
        assert r.status_code == 200
        body = body_of(r)
        assert pt.encode() not in body


def test_the_openapi_schema_lists_every_endpoint(client):
    r = client.get("/api/openapi.json")
    assert r.status_code == 200 and r["Content-Type"].startswith("application/json")
    schema = json.loads(r.content)
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) == {
        "/api/sessions", "/api/s/{token}/state", "/api/w/{token}/state", "/api/s/{token}/events",
        "/api/w/{token}/events", "/api/s/{token}/control", "/api/s/{token}/export/{what}",
        "/api/w/{token}/export/{what}"}
    assert set(schema["paths"]["/api/sessions"]) == {"post"}
    assert set(schema["paths"]["/api/s/{token}/control"]) == {"post"}
    for path in schema["paths"].values():
        for op in path.values():
            assert op.get("summary") and op.get("operationId")
    # the docs page loads its scripts from this server only (no CDN), with no inline script
    page = client.get("/api/docs").content.decode()
    assert "cdn" not in page.lower() and 'src="/api/docs/static/swagger-ui-bundle.js"' in page
    assert client.get("/api/docs/static/swagger-ui-bundle.js").status_code == 200
    assert client.get("/api/docs/static/../settings.py").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_control_through_the_api_reaches_the_open_pages(client):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer
    from visualizer.consumers import group_name
    pt = create(client, fixture=LESSON)["presenter_token"]
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group_name(Session.objects.get().pk), channel)
    assert post(client, f"/api/s/{pt}/control", {"action": "step-cycle"}).status_code == 200
    frame = async_to_sync(layer.receive)(channel)
    assert frame["type"] == "session.frame" and frame["panels"]
    assert frame["version"] == Session.objects.get().version
