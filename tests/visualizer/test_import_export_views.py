"""The library's upload imports what `python -m engine import` reads, with the same report;
a session exports its position as a scenario, the state, the trace and result annotations."""
import gzip
import html
import json
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from engine.importers import import_files
from visualizer import runner
from visualizer.models import Session

ROOT = Path(__file__).resolve().parents[2]
IMPORTERS = ROOT / "tests" / "engine" / "importers" / "data"


def upload(name, text):
    return SimpleUploadedFile(name, text.encode(), content_type="application/yaml")


@pytest.mark.django_db
def test_a_cluster_dump_upload_is_imported_and_the_session_shows_the_report(client):
    text = gzip.decompress((IMPORTERS / "cluster-dump.yaml.gz").read_bytes()).decode()
    response = client.post("/sessions/", {"scenario_file": upload("cluster-dump.yaml", text)})
    assert response.status_code == 302
    session = Session.objects.get()
    stored = yaml.safe_load(session.scenario_text)
    expected = import_files([("cluster-dump.yaml", text)])
    assert stored["objects"] == expected.scenario["objects"]
    assert session.scenario_name == "cluster-dump"
    page = html.unescape(client.get(response["Location"]).content.decode())
    # the narrative carries the same report: kept and dropped counts, reasons
    assert "30: phase Succeeded: the scheduler's pod informer leaves out terminal pods" in page
    assert "Not ours" in page and "batch/volcano-task-0" in page
    assert f"{expected.report.kept['Pod']} (" in page


@pytest.mark.django_db
def test_a_scheduler_perf_config_and_its_templates_upload(client):
    cfg = IMPORTERS / "scheduler_perf" / "config"
    files = [upload("performance-config.yaml", (cfg / "performance-config.yaml").read_text()),
             upload("pod-default.yaml", (cfg / "pod-default.yaml").read_text())]
    response = client.post("/sessions/", {"scenario_file": files, "test_case": "SchedulingBasic",
                                          "workload": "500Nodes"})
    assert response.status_code == 302
    assert Session.objects.get().scenario_name == "schedulingbasic-500nodes"


@pytest.mark.django_db
def test_an_import_that_fails_lists_its_problems_and_starts_nothing(client):
    files = [upload("performance-config.yaml", (IMPORTERS / "scheduler_perf/config/performance-config.yaml").read_text())]
    response = client.post("/sessions/", {"scenario_file": files, "test_case": "PreemptionBasic", "workload": "500Nodes"})
    assert response.status_code == 400 and Session.objects.count() == 0
    html = response.content.decode()
    assert html.count("data-problem") == 2
    assert "config/pod-low-priority.yaml was not given (add it to the files imported)" in html
    response = client.post("/sessions/", {"scenario": '{"kind": "List", "items": [{"kind": "Pod"'})
    assert response.status_code == 400
    # text that does not parse at all is reported as the scenario validator always did
    assert "line 1, column 42: not valid YAML" in response.content.decode()


@pytest.mark.django_db
def test_a_session_exports_its_position(client, monkeypatch):
    text = (ROOT / "docs" / "examples" / "preemption.yaml").read_text()
    client.post("/sessions/", {"scenario": text})
    session = Session.objects.get()
    with runner.open_live(session.pk) as live:
        live.run_until(3)
        live.persist()
    page = client.get(f"/s/{session.presenter_token}/").content.decode()
    assert f'href="/x/{session.follower_token}/scenario.yaml"' in page   # never the presenter token
    follower = client.get(f"/w/{session.follower_token}/").content.decode()
    assert f'href="/x/{session.follower_token}/results.json"' in follower

    sc = yaml.safe_load(client.get(f"/x/{session.follower_token}/scenario.yaml").content)
    assert sc["metadata"]["name"] == "preemption-at-3000ms"
    assert sc["simulation"]["startTime"] == "2026-01-01T00:00:03Z"
    state = json.loads(client.get(f"/x/{session.presenter_token}/state.json").content)
    assert state["time"] == 3.0
    monkeypatch.setattr(runner, "EXPORT_CHUNK_EVENTS", 7)     # several chunks, the last one short
    response = client.get(f"/x/{session.presenter_token}/trace.jsonl")
    assert response.streaming and response["Content-Type"] == "application/jsonl"
    assert response.is_async    # served by Daphne without buffering the whole body
    from asgiref.sync import async_to_sync

    async def read():
        return [chunk async for chunk in response.streaming_content]
    chunks = async_to_sync(read)()
    assert len(chunks) > 3
    trace = b"".join(chunks).decode().splitlines()
    assert len(trace) == state["revealed"] and json.loads(trace[-1])["time"] <= 3.0
    # what the engine's CLI writes with --trace, line for line, in several chunks
    from engine import Engine, Scenario, Trace
    from engine.trace import JsonLinesWriter
    import io
    buf = io.StringIO()
    t = Trace()
    t.add_sink(JsonLinesWriter(buf))
    Engine(Scenario.from_text(text, "preemption.yaml"), t).run(until=3_000_000)
    assert trace == buf.getvalue().splitlines()[:len(trace)]
    results = json.loads(client.get(f"/x/{session.presenter_token}/results.json").content)
    urgent = next(p for p in results["items"] if p["metadata"]["name"] == "urgent")
    ann = urgent["metadata"]["annotations"]
    assert json.loads(ann["kube-scheduler-simulator.sigs.k8s.io/postfilter-result"])["n3"] == {
        "DefaultPreemption": "preemption victim"}
    assert client.get(f"/x/{session.presenter_token}/other.txt").status_code == 404
    assert client.get("/x/nobody/state.json").status_code == 404


@pytest.mark.django_db
def test_deeply_nested_text_is_refused_not_a_server_error(client):
    response = client.post("/sessions/", {"scenario": "[" * 100000})
    assert response.status_code == 400 and Session.objects.count() == 0
    assert "line 1, column 101: values are nested more than 100 levels deep" in response.content.decode()


@pytest.mark.django_db
def test_an_export_at_the_start_is_the_scenario_as_loaded(client):
    """A session not yet stepped (its objects only in the preloaded engine) exports every object
    of its scenario, and the state has its pods, as after the first step (issue 22)."""
    text = (ROOT / "docs" / "examples" / "preemption.yaml").read_text()
    client.post("/sessions/", {"scenario": text})
    session = Session.objects.get()
    client.get(f"/s/{session.presenter_token}/")            # opens it: the first unit is preloaded
    given = yaml.safe_load(text)["objects"]
    sc = yaml.safe_load(client.get(f"/x/{session.follower_token}/scenario.yaml").content)
    state = json.loads(client.get(f"/x/{session.presenter_token}/state.json").content)
    exported = {(o["kind"], o["metadata"]["name"]) for o in sc["objects"]}
    wanted = {(o["kind"], o["metadata"]["name"]) for o in given}
    # every object, and besides them only the system priority classes every cluster has
    assert wanted <= exported
    assert {n for k, n in exported - wanted} == {"system-cluster-critical", "system-node-critical"}
    assert sorted(state["pods"]) == sorted(
        f"default/{o['metadata']['name']}" for o in given if o["kind"] == "Pod")
    assert state["revealed"] == 0 and state["queues"]["activeQ"] == ["default/urgent"]
    # the same as once the first unit ran (objects loaded, nothing scheduled yet)
    with runner.open_live(session.pk) as live:
        assert live.position == 0
    runner.reset()                                         # a process without the preloaded copy
    again = yaml.safe_load(client.get(f"/x/{session.follower_token}/scenario.yaml").content)
    assert again == sc
