"""The pending-pods report of a session (issue 25): ``/s/<token>/report/`` lists every pod
pending at the start with what happened to it in a run to idle, with kube-scheduler's FitError
summary, the rejecting plugins and the events that would retry it; what-ifs inject a cluster
event through the inject form's code path and the report runs again."""
import gzip
import html
import re
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from engine import Scenario
from engine.explain import explain
from tests.engine.test_cli_explain import BIG_MESSAGE, SCENARIO
from visualizer import report, runner
from visualizer.models import Session

ROOT = Path(__file__).resolve().parents[2]
DUMP = ROOT / "tests" / "engine" / "importers" / "data" / "cluster-dump.yaml.gz"


@pytest.fixture(autouse=True)
def fresh_report_cache():
    report.clear()
    yield
    report.clear()


def text_of(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def pod_block(page: str, key: str) -> str:
    """The HTML of the report's entry for ``key`` (the article or row carrying data-report-pod)."""
    m = re.search(r'<(article|tr|li)[^>]*data-report-pod="%s"[^>]*>(.*?)</\1>' % re.escape(key), page, re.S)
    assert m, f"{key} not in the report"
    return m.group(0)


@pytest.fixture
def session():
    return runner.create_session(yaml.safe_dump(SCENARIO, sort_keys=False))


@pytest.mark.django_db
def test_the_report_lists_every_pod_pending_at_the_start_with_its_outcome(client, session):
    response = client.get(f"/s/{session.presenter_token}/report/")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    expected = explain(Scenario.from_text(session.scenario_text))      # the CLI's report
    keys = set(re.findall(r'data-report-pod="([^"]+)"', page))
    assert keys == {p["pod"] for p in expected["pods"]} == {"default/web-1", "default/web-2", "default/big",
                                                             "default/theirs"}
    for p in expected["pods"]:
        assert f'data-report-pod="{p["pod"]}" data-outcome="{p["outcome"]}"' in page
    big = pod_block(page, "default/big")
    # kube-scheduler v1.28's FitError wording (tests/engine/test_cli_explain.py derives it)
    assert f'<p class="fit-error" data-fit-error>{BIG_MESSAGE}</p>' in big
    assert "TaintToleration, NodeResourcesFit" in big or "NodeResourcesFit, TaintToleration" in big
    assert "<code>Pod/Delete</code> <code>Node/Add|Update</code>" in big
    web1 = pod_block(page, "default/web-1")
    assert re.search(r"data-bound-node>n[12]<", web1)
    theirs = pod_block(page, "default/theirs")
    assert "not ours (my-scheduler)" in text_of(type("R", (), {"content": theirs.encode()}))
    summary = text_of(client.get(f"/s/{session.presenter_token}/report/"))
    assert "4 pods were pending at the start" in summary
    assert "2 bound" in summary and "1 still pending" in summary and "1 not ours" in summary


@pytest.mark.django_db
def test_a_node_like_x_what_if_makes_the_pending_pod_fit_and_is_recorded_with_the_session(client, session):
    base = f"/s/{session.presenter_token}/report/"
    form = client.get(base + "?whatif=add-node&like=n1&pod=default/big")
    assert form.status_code == 200
    manifest = re.search(r"<textarea[^>]*data-whatif-manifest>(.*?)</textarea>", form.content.decode(), re.S)
    node = yaml.safe_load(html.unescape(manifest.group(1)))
    assert node["metadata"]["name"] == "n1-whatif-1"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1-whatif-1"
    assert node["status"]["allocatable"]["cpu"] == "2"
    node["status"]["allocatable"]["cpu"] = "4"            # the operator edits the copy
    response = client.post(base, {"form": "yaml", "verb": "create", "manifest": yaml.safe_dump(node),
                                  "whatif": "add-node", "pod": "default/big"})
    assert response.status_code == 302 and response["Location"].startswith(base)
    row = Session.objects.get(pk=session.pk)
    assert [(i["verb"], i["body"]["metadata"]["name"]) for i in row.injections] == [("create", "n1-whatif-1")]
    page = html.unescape(client.get(response["Location"]).content.decode())
    big = pod_block(page, "default/big")
    assert 'data-outcome="bound"' in big and "n1-whatif-1" in big and "was pending" in big
    assert re.search(r"data-now-fit>.*default/big.*n1-whatif-1", page, re.S)
    # the session page shows the same run: its head has the injection
    with runner.open_live(session.pk) as live:
        assert "n1-whatif-1" in live.stepper.engine.nodes


@pytest.mark.django_db
def test_a_requests_what_if_is_an_update_of_the_pending_pod(client, session):
    base = f"/s/{session.presenter_token}/report/"
    form = client.get(base + "?whatif=requests&pod=default/big").content.decode()
    pod = yaml.safe_load(html.unescape(re.search(r"data-whatif-manifest>(.*?)</textarea>", form, re.S).group(1)))
    assert pod["metadata"]["name"] == "big" and "status" not in pod
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    response = client.post(base, {"form": "yaml", "verb": "update", "manifest": yaml.safe_dump(pod)})
    assert response.status_code == 302
    page = html.unescape(client.get(response["Location"]).content.decode())
    assert 'data-report-pod="default/big" data-outcome="bound"' in page


@pytest.mark.django_db
def test_a_remove_node_what_if_and_a_bad_manifest(client, session):
    base = f"/s/{session.presenter_token}/report/"
    assert 'name="name" value="n2"' in client.get(base + "?whatif=remove-node&node=n2").content.decode()
    bad = client.post(base, {"form": "yaml", "verb": "create", "manifest": "kind: Node\nmetadata: {}\n"})
    assert bad.status_code == 400
    assert "The what-if was not applied" in text_of(bad)
    assert Session.objects.get(pk=session.pk).injections == []
    response = client.post(base, {"form": "delete", "kind": "Node", "name": "n2"})
    assert response.status_code == 302
    page = html.unescape(client.get(response["Location"]).content.decode())
    # with n2 gone, web-1 and web-2 (500m each) share n1; big still fits nowhere
    assert page.count('data-outcome="bound"') == 2
    assert re.findall(r"data-bound-node>([^<]+)<", page) == ["n1", "n1"]
    assert "0/2 nodes are available" in pod_block(page, "default/big")


@pytest.mark.django_db
def test_a_follower_reads_the_report_but_cannot_change_the_session(client, session):
    base = f"/w/{session.follower_token}/report/"
    page = client.get(base + "?whatif=add-node&like=n1").content.decode()
    assert "data-report-pod" in page and "data-whatif" not in page and session.presenter_token not in page
    assert client.post(base, {"form": "delete", "kind": "Node", "name": "n2"}).status_code == 403
    assert Session.objects.get(pk=session.pk).injections == []


@pytest.mark.django_db
def test_a_pods_history_in_the_report_is_its_whole_run(client, session):
    # the session page has not moved (position 0): the report's history still shows the cycles
    response = client.get(f"/s/{session.presenter_token}/report/history/?pod=default/big", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "data-history-cycle" in page and BIG_MESSAGE.split(" preemption:")[0] in page
    assert client.get(f"/s/{session.presenter_token}/report/history/?pod=default/nope").status_code == 404


@pytest.mark.django_db
def test_a_cluster_dump_upload_opens_on_its_report(client):
    text = gzip.decompress(DUMP.read_bytes()).decode()
    response = client.post("/sessions/", {"scenario_file": SimpleUploadedFile("cluster-dump.yaml", text.encode())})
    session = Session.objects.get()
    assert response["Location"] == f"/s/{session.presenter_token}/report/"
    page = client.get(response["Location"])
    assert page.status_code == 200
    body = text_of(page)
    assert "Why pending" in body and "the import report" in body
    assert re.search(r"batch/volcano-task-0 ?: not ours \(volcano\)", body)
    assert f'href="/s/{session.presenter_token}/"' in page.content.decode()    # on to the session


HELD_OUT_SEED = 23      # a dump no other test uses


@pytest.mark.django_db
def test_a_held_out_dump_the_report_lists_exactly_its_pending_pods_as_engine_explain_does(client, tmp_path):
    import io
    import json
    from contextlib import redirect_stdout

    from engine.cli import main as cli
    from tests.engine.importers.make_dump import make_dump, to_yaml
    text = to_yaml(make_dump(HELD_OUT_SEED, more_reasons=True))
    docs = yaml.safe_load(text)
    pods = [o for o in docs["items"] if o.get("kind") == "Pod"]
    # pending in the dump, as the scheduler sees it: no node, not finished, not being deleted
    expected = {f'{p["metadata"].get("namespace", "default")}/{p["metadata"]["name"]}' for p in pods
                if not (p.get("spec") or {}).get("nodeName")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and not p["metadata"].get("deletionTimestamp")}
    assert len(expected) >= 5
    response = client.post("/sessions/", {"scenario_file": SimpleUploadedFile("held-out.yaml", text.encode())})
    assert response.status_code == 302 and response["Location"].endswith("/report/")
    page = html.unescape(client.get(response["Location"]).content.decode())
    shown = dict(re.findall(r'data-report-pod="([^"]+)" data-outcome="([^"]+)"', page))
    assert set(shown) == expected
    # the CLI on the same file: the same pods, outcomes and FitError messages
    path = tmp_path / "held-out.yaml"
    path.write_text(text)
    out = io.StringIO()
    with redirect_stdout(out):
        cli(["explain", str(path), "--json"])
    cli_report = json.loads(out.getvalue())
    assert {p["pod"]: p["outcome"] for p in cli_report["pods"]} == shown
    pending = [p for p in cli_report["pods"] if p["outcome"] == "pending"]
    assert pending, "the held-out dump keeps some pods pending"
    for p in pending:
        block = pod_block(page, p["pod"])
        if p["message"] is None:        # a gated pod (make_dump's waiting-for-quota): never tried
            assert p["attempts"] == 0 and p["plugins"] == ["SchedulingGates"]
            # kube-scheduler's own words for it (the PodScheduled condition's SchedulingGated)
            assert "data-never-attempted>Scheduling is blocked due to non-empty scheduling gates" in block
            assert 'data-whatif-link="add-node"' not in block        # no node can help it
            continue
        assert f"data-fit-error>{p['message']}</p>" in block
        assert p["message"].startswith(f"0/{sum(1 for o in docs['items'] if o.get('kind') == 'Node')} nodes are available: ")


@pytest.mark.django_db
def test_the_report_history_says_it_is_the_reports_run_and_leads_back_to_the_report(client, session):
    base = f"/s/{session.presenter_token}/report/history/?pod=default/big"
    fragment = text_of(client.get(base, HTTP_HX_REQUEST="true"))
    assert "In the report's run, until the scheduler was idle" in fragment
    assert "Updates as the session moves" not in fragment
    page = client.get(base).content.decode()
    assert f'<a href="/s/{session.presenter_token}/report/">← back to the report</a>' in page


@pytest.mark.django_db
@pytest.mark.parametrize("fields, problem", [
    ({"form": "delete", "kind": "Node", "name": "ghost"}, "name: node ghost is not in the cluster now"),
    ({"form": "delete", "kind": "Pod", "name": "a/b"}, "name: pod a/b is not in the cluster now"),
    ({"form": "delete", "name": "n1"}, "kind: '' is not Node or Pod"),
    ({"form": "yaml", "verb": "create", "manifest": "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1'}}"},
     "metadata.name: node n1 is already in the cluster"),
    ({"form": "yaml", "verb": "update", "manifest": "kind: Pod\nmetadata: {name: ghost}\nspec: {containers: [{name: c}]}"},
     "metadata.name: pod default/ghost is not in the cluster now"),
    ({"form": "yaml", "verb": "create", "manifest": "kind: Secret\nmetadata: {name: s}"},
     "kind: 'Secret': a what-if adds, removes or changes a Node or a Pod"),
])
def test_a_what_if_that_would_change_nothing_is_refused_and_not_recorded(client, session, fields, problem):
    response = client.post(f"/s/{session.presenter_token}/report/", fields)
    assert response.status_code == 400
    assert problem in text_of(response)
    assert Session.objects.get(pk=session.pk).injections == []


@pytest.mark.django_db
def test_a_bound_pods_requests_are_not_a_what_if(client, session):
    base = f"/s/{session.presenter_token}/report/"
    with runner.open_live(session.pk) as live:       # the session page shows web-1 bound
        live.run_until(5)
        live.persist()
    page = text_of(client.get(base + "?whatif=requests&pod=default/web-1"))
    assert "only a pending pod's requests can change" in page
    manifest = "kind: Pod\nmetadata: {name: web-1, namespace: default}\nspec: {containers: [{name: c}]}"
    response = client.post(base, {"form": "yaml", "verb": "update", "manifest": manifest})
    assert response.status_code == 400 and "is bound to n" in text_of(response)
    assert Session.objects.get(pk=session.pk).injections == []


@pytest.mark.django_db
def test_a_failed_what_if_keeps_its_form_and_names_the_field_plainly(client, session):
    base = f"/s/{session.presenter_token}/report/"
    manifest = "kind: Node\nmetadata: {name: n9}\nstatus: {allocatable: {memory: 12x}}"
    response = client.post(base, {"form": "yaml", "verb": "create", "manifest": manifest, "whatif": "add-node",
                                  "like": "n1", "pod": "default/big"})
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    box = re.search(r'<section class="whatif".*?</section>', page, re.S).group(0)
    assert "a node like <code>n1</code>" in box and "data-report-problems" in box
    assert "the manifest: status.allocatable.memory" in box and "inject[" not in box
    assert "<code>default/big</code> requests cpu 3." in box


@pytest.mark.django_db
def test_a_copy_of_a_copy_is_named_from_the_original_and_a_moved_pod_says_where_it_was(client, session):
    base = f"/s/{session.presenter_token}/report/"
    form = client.get(base + "?whatif=add-node&like=n1").content.decode()
    node = yaml.safe_load(html.unescape(re.search(r"data-whatif-manifest>(.*?)</textarea>", form, re.S).group(1)))
    assert client.post(base, {"form": "yaml", "verb": "create", "manifest": yaml.safe_dump(node)}).status_code == 302
    again = client.get(base + "?whatif=add-node&like=n1-whatif-1").content.decode()
    assert "name: n1-whatif-2" in again and "whatif-1-whatif" not in again
    # without n2, the pod that was on n2 is bound elsewhere: "was on n2", not a changed outcome
    assert client.post(base, {"form": "delete", "kind": "Node", "name": "n2"}).status_code == 302
    page = html.unescape(client.get(base + "?applied=1").content.decode())
    assert "data-before>was on n2</span>" in page
    assert "data-injection-new>just applied" in page
