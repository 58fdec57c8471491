"""The page at 5,000 nodes in a real browser: the node overview (one cell per node) with its
search, label filter and selected node's card; queue columns and the Filter matrix in pages
with their counts; a pod's details; the follower's page showing the same cluster.

Writes docs/images/large-cluster.png (docs/ui-tour.md)."""
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
NODES = 5000
PODS = 40


def scenario() -> dict:
    objects = []
    for i in range(NODES):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": f"n{i:04d}", "labels": {"topology.kubernetes.io/zone": f"zone-{i % 3}"}},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}}
        if i % 10 == 7:   # one node in ten is tainted: the Filter matrix has rows that fail
            node["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        objects.append(node)
    objects += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:03d}"},
                 "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}
                for i in range(PODS)]
    return {"kind": "Scenario", "metadata": {"name": "large-cluster", "title": "5,000 nodes"}, "objects": objects}


def test_the_page_at_5000_nodes(server, page, browser, tmp_path, session_page):
    path = tmp_path / "large.yaml"
    path.write_text(json.dumps(scenario()))   # JSON is YAML
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(server.url + "/")
    page.locator('[data-form="scenario-upload"] input[type="file"]').set_input_files(str(path))
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    page.wait_for_url("**/s/*/", timeout=120_000)
    page.wait_for_selector('[data-connection="open"]', timeout=60_000)
    s = session_page(page)
    token = page.url.rstrip("/").rsplit("/", 1)[1]

    s.step("step-cycle")
    # the overview: one cell per node, no node cards
    heat = page.locator("[data-heat]")
    expect(heat).to_be_visible()
    assert heat.locator("i[data-n]").count() == NODES
    assert page.locator("#panel-nodes article.node").count() == 0
    # a cycle scheduled one pod: its node's cell is not empty any more
    cycle_node = page.locator("[data-cycle-result]").inner_text().split(" on ")[1].split(":")[0].strip()
    assert heat.locator(f'i[data-n="{cycle_node}"]').get_attribute("class").split()[0] != "h0"

    # the queues: a page of 10 pods with the count of all, and the next page
    active = s.queue("activeQ")
    assert active.locator("[data-pod]").count() == 10
    total = int(active.locator(".count").inner_text())
    assert total == PODS - 1
    expect(active.locator("[data-pager-range]")).to_have_text(f"1–10 of {total}")
    active.get_by_label("next activeQ page").click()
    expect(active.locator("[data-pager-range]")).to_have_text(f"11–20 of {total}")
    assert s.pods_in("activeQ")[0] == "default/p011"

    # the Filter matrix: every evaluated node, by page, filtered by outcome
    tools = page.locator("[data-matrix-tools]")
    evaluated = int(tools.locator('[data-outcome="all"]').inner_text().split()[-1])
    failed = int(tools.locator('[data-outcome="filtered"]').inner_text().split()[-1])
    assert evaluated >= 100 and failed > 0
    assert page.locator("[data-filter-node]").count() == min(50, evaluated)
    tools.locator('[data-outcome="filtered"]').click()
    expect(page.locator('[data-matrix-tools] [data-outcome="filtered"]')).to_have_attribute("aria-pressed", "true")
    rows = page.locator("[data-filter-node]")
    assert rows.count() == min(50, failed)
    assert page.locator("[data-filter-node].row--pass").count() == 0
    assert rows.first.locator('[data-plugin="TaintToleration"]').get_attribute("data-code") == "UnschedulableAndUnresolvable"

    # the names the search and injection fields offer are not in the frames: focusing such a
    # field fetches them
    assert page.locator("#node-names option").count() == 0 and page.locator("#pod-keys option").count() == 0
    # find a node by name: it is outlined in the overview and its card opens
    # (part of a name lists the matches; a whole name selects the node)
    page.locator("[data-node-find]").fill("n432")
    page.locator("[data-node-find]").press("Enter")
    expect(page.locator("#node-names option")).to_have_count(NODES)
    expect(page.locator("#pod-keys option")).to_have_count(PODS)
    expect(page.locator("[data-node-matches]")).to_have_text("10")
    expect(heat.locator('i[data-n="n4321"]')).to_have_class("h0 m")
    expect(heat.locator("i.m")).to_have_count(10)
    page.locator('[data-select-node="n4321"]').click()
    card = page.locator('[data-node-detail] [data-node="n4321"]')
    expect(card).to_be_visible()
    expect(card).to_contain_text("topology.kubernetes.io/zone=zone-1")   # 4321 % 3
    expect(heat.locator('i[data-n="n4321"]')).to_have_class("h0 m s")
    # the overview scrolled to the node selected, and stays there across a step
    box, cell = heat.bounding_box(), heat.locator("i.s").bounding_box()
    assert box["y"] <= cell["y"] and cell["y"] + cell["height"] <= box["y"] + box["height"], (box, cell)
    scrolled = heat.evaluate("e => e.scrollTop")
    assert scrolled > 0
    s.step("step-event")
    assert heat.evaluate("e => e.scrollTop") == scrolled
    page.locator("#panel-nodes").screenshot(path=str(ROOT / "docs" / "images" / "large-cluster.png"),
                                            animations="disabled")
    page.locator("[data-node-find]").fill("n0042")
    page.locator("[data-node-find]").press("Enter")
    expect(page.locator('[data-node-detail] [data-node="n0042"]')).to_be_visible()
    expect(page.locator("[data-node-matches]")).to_have_text("1")
    # the label filter narrows the overview
    page.locator("[data-node-find]").fill("")
    page.locator('[data-form="node-view"] input[name="label"]').fill("topology.kubernetes.io/zone=zone-1")
    page.locator('[data-form="node-view"] input[name="label"]').press("Enter")
    expect(page.locator("[data-node-matches]")).to_have_text(str(len(range(1, NODES, 3))))
    # the page stays short: pages of queues and matrix rows, a scrolling overview
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < 6000, height
    # click the node the cycle chose: its card lists the pod; click the pod for its details
    heat.locator(f'i[data-n="{cycle_node}"]').click()
    pod = page.locator(f'[data-node-detail] [data-node="{cycle_node}"] [data-pod="default/p000"]')
    expect(pod).to_be_visible()
    pod.click()
    history = page.locator("[data-pod-history-dock]")
    expect(history).to_be_visible()
    expect(history).to_contain_text("default/p000")
    expect(history).to_contain_text(f"Scheduled on {cycle_node}")

    # the selection stays across steps
    s.step("step-cycle")
    expect(page.locator(f'[data-node-detail] [data-node="{cycle_node}"]')).to_be_visible()
    # the presenter token is in the page's own URL and socket address, never in what it shows
    assert token not in page.locator("body").inner_text()
    assert not any(token in html for html in page.locator("[id^=panel-]").evaluate_all("els => els.map(e => e.outerHTML)"))


    # a follower sees the same cluster (its own view starts from the default)
    follower = browser.new_page()
    follower.goto(page.locator("[data-follower-link]").get_attribute("href"))
    follower.wait_for_selector('[data-connection="open"]', timeout=60_000)
    expect(follower.locator("#panel-header")).to_have_attribute("data-position", str(s.position()))
    cells = follower.locator("[data-heat] i[data-n]")
    assert cells.count() == NODES
    assert follower.locator(f'[data-heat] i[data-n="{cycle_node}"]').get_attribute("class") == \
        heat.locator(f'i[data-n="{cycle_node}"]').get_attribute("class").replace(" m", "").replace(" s", "")
    assert token not in follower.content()
    follower.close()
