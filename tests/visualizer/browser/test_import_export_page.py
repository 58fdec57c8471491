"""Import and export in a real browser: a cluster dump chosen in the library's file input starts
a session (opening on its pending-pods report, then the session page) whose narrative is the
import report; the session page's export links download."""
import gzip
import json
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

DUMP = Path(__file__).resolve().parents[2] / "engine" / "importers" / "data" / "cluster-dump.yaml.gz"


def test_a_cluster_dump_upload_runs_and_the_position_exports(server, page, tmp_path):
    dump = tmp_path / "cluster-dump.yaml"
    dump.write_text(gzip.decompress(DUMP.read_bytes()).decode())
    page.goto(server.url + "/")
    page.locator('[data-form="scenario-upload"] input[type="file"]').set_input_files(str(dump))
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    # a dump with pending pods opens on its pending-pods report (docs/why-pending.md), which
    # leads on to the session page
    page.wait_for_url("**/s/*/report/", timeout=60_000)
    expect(page.locator("[data-report-pod]").first).to_be_visible()
    page.locator("[data-back-to-session]").click()
    page.wait_for_url("**/s/*/", timeout=60_000)
    expect(page.locator(".session-title")).to_contain_text("Imported from cluster-dump.yaml")
    narrative = page.locator("#panel-narrative, [data-panel=narrative]").first
    expect(narrative).to_contain_text("phase Succeeded: the scheduler's pod informer leaves out terminal pods")
    expect(narrative).to_contain_text("Not ours")
    # run it to the end in the page, then download the position
    page.locator('[data-form="run-until"] input[name="until"]').fill("60")
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(page.locator("[data-clock]")).to_have_text("60", timeout=60_000)
    links = page.locator("[data-exports] a")
    expect(links).to_have_count(4)
    page.locator("[data-exports] summary").click()        # the Export menu
    with page.expect_download() as dl:
        links.filter(has_text="state.json").click()
    state = json.loads(Path(dl.value.path()).read_text())
    assert state["queues"]["activeQ"] == [] and state["pods"]["batch/volcano-task-0"]["queue"] is None
    with page.expect_download() as dl:
        links.filter(has_text="scenario.yaml").click()
    sc = yaml.safe_load(Path(dl.value.path()).read_text())
    assert sc["kind"] == "Scenario" and sc["simulation"]["startTime"]
    assert {q["pod"] for q in sc["queue"]["pods"]} == set(state["queues"]["unschedulablePods"])
