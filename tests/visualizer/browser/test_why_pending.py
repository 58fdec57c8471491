"""Issue 25 in a real browser: an operator uploads a ``kubectl get nodes,pods -A -o yaml`` dump
of a 40-node cluster, lands on the pending-pods report, opens the history of a pod that stays
pending (kube-scheduler's summary first; the deciding Filter column within the drawer at 1280
px, however long the node names) and applies a what-if (a node like one of theirs, with more
memory) that makes it fit."""
import re
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NODES = 40
IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
SHOTS = ("why-pending.png", "why-pending-whatif.png")     # docs/why-pending.md and ui-tour.md


def node_name(i: int) -> str:
    return f"ip-10-0-{i // 250}-{i % 250 + 11}.eu-west-1.compute.internal"


def dump() -> dict:
    """A kubectl List: 40 workers (8 CPU, 32 GiB; the last two tainted for GPUs), a running pod
    on each of the first 30, three pending pods that fit, one too large for any node's memory
    (``analytics/etl-0``, 48 GiB) and one for another scheduler."""
    items = []
    for i in range(NODES):
        name = node_name(i)
        n = {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": name, "uid": f"uid-n{i}", "resourceVersion": str(100 + i),
                          "creationTimestamp": "2026-03-01T08:00:00Z",
                          "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                     "topology.kubernetes.io/zone": f"eu-west-1{'abc'[i % 3]}",
                                     "node.kubernetes.io/instance-type": "m5.2xlarge"}},
             "spec": {"providerID": f"aws:///eu-west-1a/i-{i:08x}"},
             "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"},
                        "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "58"},
                        "conditions": [{"type": "Ready", "status": "True"}]}}
        if i >= NODES - 2:
            n["spec"]["taints"] = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
        items.append(n)

    def pod(ns, name, cpu, memory, node=None, scheduler=None):
        p = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                          "creationTimestamp": "2026-03-02T09:00:00Z"},
             "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.0",
                                      "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                      "schedulerName": scheduler or "default-scheduler", "priority": 0},
             "status": {"phase": "Pending" if node is None else "Running"}}
        if node is not None:
            p["spec"]["nodeName"] = node
        return p
    for i in range(30):
        items.append(pod("shop", f"web-{i}", "2", "8Gi", node=node_name(i)))
    for i in range(3):
        items.append(pod("shop", f"worker-{i}", "1", "4Gi"))
    items.append(pod("analytics", "etl-0", "2", "48Gi"))
    items.append(pod("batch", "volcano-job-0", "1", "1Gi", scheduler="volcano"))
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def test_an_imported_dump_answers_why_pending_and_a_what_if_makes_it_fit(server, page, tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(dump(), sort_keys=False))
    for name in SHOTS:
        (IMAGES / name).unlink(missing_ok=True)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server.url + "/")
    page.locator('[data-form="scenario-upload"] input[type="file"]').set_input_files(str(path))
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    page.wait_for_url("**/s/*/report/", timeout=60_000)

    # the report: exactly the five pods pending in the dump, each with its outcome
    rows = page.locator("[data-report-pod]")
    expect(rows).to_have_count(5)
    keys = sorted(rows.evaluate_all("els => els.map(e => e.dataset.reportPod + ' ' + e.dataset.outcome)"))
    assert keys == ["analytics/etl-0 pending", "batch/volcano-job-0 not-ours", "shop/worker-0 bound",
                    "shop/worker-1 bound", "shop/worker-2 bound"]
    etl = page.locator('[data-report-pod="analytics/etl-0"]')
    # kube-scheduler v1.28's FitError.Error(): "0/N nodes are available: " + the reasons'
    # histogram sorted as strings + "." and DefaultPreemption's message (see
    # tests/engine/test_cli_explain.py for the derivation from upstream)
    message = ("0/40 nodes are available: 2 node(s) had untolerated taint {gpu: true}, 38 Insufficient memory. "
               "preemption: 0/40 nodes are available: 2 Preemption is not helpful for scheduling, "
               "38 No preemption victims found for incoming pod..")
    expect(etl.locator("[data-fit-error]")).to_have_text(message)
    expect(page.locator('[data-report-group="not-ours"]')).to_contain_text("batch/volcano-job-0: not ours (volcano)")

    # its history: the summary first, and the deciding column inside the drawer at 1280 px
    etl.locator("[data-open-history]").click()
    drawer = page.locator("#report-history [data-pod-history]")
    expect(drawer).to_be_visible()
    first = drawer.locator("[data-history-summary]")
    expect(first).to_contain_text("0/40 nodes are available")
    box = page.locator("#report-history").bounding_box()
    summary_box = first.bounding_box()
    tables = drawer.locator("table")
    assert tables.count() >= 1
    table_box = tables.first.bounding_box()
    assert summary_box["y"] < table_box["y"], "the summary comes before the per-node table"
    # the deciding column (the plugin that rejected each node) is inside the history's box,
    # without scrolling sideways, however long the node names
    decided = drawer.locator("[data-decided-by]")
    expect(decided).to_have_count(NODES)
    plugins = decided.evaluate_all("els => els.map(e => e.dataset.decidedBy)")
    assert plugins.count("NodeResourcesFit") == NODES - 2 and plugins.count("TaintToleration") == 2
    box = page.locator("#report-history").bounding_box()
    cell = decided.first.bounding_box()
    assert box["x"] <= cell["x"] and cell["x"] + cell["width"] <= box["x"] + box["width"] + 1, (cell, box)
    page.screenshot(path=str(IMAGES / "why-pending.png"), animations="disabled")

    # the what-if: a node like one of theirs, with 64 GiB
    page.locator('[data-report-pod="analytics/etl-0"] [data-whatif-link="add-node"]').click()
    form = page.locator("[data-whatif-form]")
    expect(form).to_be_visible()
    manifest = form.locator("textarea[name=manifest]")
    text = manifest.input_value()
    assert "eu-west-1.compute.internal-whatif-1" in text and "NoSchedule" not in text
    manifest.fill(re.sub(r"memory: 31Gi", "memory: 64Gi", re.sub(r"memory: 32Gi", "memory: 64Gi", text)))
    form.locator("[data-whatif-apply]").click()
    page.wait_for_url("**/report/?applied=1*")
    etl = page.locator('[data-report-pod="analytics/etl-0"]')
    expect(etl).to_have_attribute("data-outcome", "bound")
    expect(etl.locator("[data-bound-node]")).to_contain_text("whatif-1")
    expect(page.locator("[data-now-fit]")).to_contain_text("analytics/etl-0")
    expect(page.locator("[data-count=pending]")).to_have_text("0 still pending")
    page.locator("#report-changed").scroll_into_view_if_needed()
    page.screenshot(path=str(IMAGES / "why-pending-whatif.png"), animations="disabled")

    # and the session page has the same node now
    page.locator("[data-back-to-session]").click()
    page.wait_for_url(re.compile(r".*/s/[^/]+/$"))
    expect(page.locator("[data-report-link]")).to_be_visible()
    for name in SHOTS:
        assert (IMAGES / name).stat().st_size > 20_000, name
