"""A pod's history in a real browser, for an operator's cluster (issue 25): 40 nodes named like
EC2's (``ip-10-0-0-N.eu-west-1.compute.internal``, four of them tainted) and a pod too big for any
of them. At 1280×720 its history drawer starts with kube-scheduler's summary, the FitError message
of the pod's last CycleEnd (computed here by running the engine), then the per-node table, in
which the column of the plugin that rejected each node stays inside the drawer however long the
node names; and opening the drawer neither collapses the queue panel nor draws anything over it
or over the narrative (checked at 1280×720 and 1440×900)."""
import pytest
from playwright.sync_api import expect

from tests.visualizer.test_history_summary import NODES, TAINTED, fit_error, node_name, scenario_text

pytestmark = pytest.mark.browser

# the panels a reader must still see beside the drawer, and whether what is drawn at a few points
# of each one's visible part belongs to it (nothing on top of it)
UNCOVERED = """([sel, clip]) => {
  const el = document.querySelector(sel);
  const r = el.getBoundingClientRect();
  const c = clip ? el.closest(clip).getBoundingClientRect() : r;
  const left = Math.max(r.left, c.left), right = Math.min(r.right, c.right);
  const top = Math.max(r.top, c.top, 0), bottom = Math.min(r.bottom, c.bottom, window.innerHeight);
  const box = {left, right, top, bottom};
  if (right - left < 10 || bottom - top < 10) { return {box, covered: ['not on screen']}; }
  const covered = [];
  for (const fx of [0.1, 0.5, 0.9]) {
    for (const fy of [0.1, 0.5, 0.9]) {
      const x = left + (right - left) * fx, y = top + (bottom - top) * fy;
      const hit = document.elementFromPoint(x, y);
      if (!hit || !el.contains(hit)) { covered.push([x, y, hit ? hit.outerHTML.slice(0, 80) : null]); }
    }
  }
  return {box, covered};
}"""


def check_layout(page, where):
    dock = page.locator("[data-pod-history-dock]").bounding_box()
    queues = page.evaluate(UNCOVERED, ["#panel-queues", None])
    story = page.evaluate(UNCOVERED, ["#panel-narrative", ".col-story"])
    for name, seen in (("queues", queues), ("narrative", story)):
        assert not seen["covered"], f"{where}: the {name} panel is covered: {seen}"
        assert seen["box"]["right"] <= dock["x"] + 0.5, f"{where}: the drawer covers the {name} panel ({seen}, {dock})"
    # the narrative and the queues do not overlap each other
    a, b = story["box"], queues["box"]
    assert a["bottom"] <= b["top"] + 0.5 or b["bottom"] <= a["top"] + 0.5 or \
        a["right"] <= b["left"] + 0.5 or b["right"] <= a["left"] + 0.5, f"{where}: {a} overlaps {b}"
    # the queue panel keeps its three queues side by side
    tops = page.locator("#panel-queues [data-queue]").evaluate_all(
        "els => els.map(e => Math.round(e.getBoundingClientRect().top))")
    assert len(tops) == 3 and len(set(tops)) == 1, f"{where}: the queues are stacked: {tops}"


def test_the_history_of_a_pending_pod_leads_with_its_fit_error_and_fits_its_drawer(make_server, tmp_path, page,
                                                                                   open_session):
    text = scenario_text()
    library = tmp_path / "library"
    library.mkdir()
    (library / "pending-huge.yaml").write_text(text, encoding="utf-8")
    end = fit_error(text, "default/huge", 1_000_000)          # the engine's own CycleEnd
    assert end["message"].startswith(f"0/{NODES} nodes are available: ") and end["result"] == "Unschedulable"
    srv = make_server(SCENARIO_FIXTURES_DIR=str(library)).start()
    page.set_viewport_size({"width": 1280, "height": 720})
    s = open_session(srv, "pending-huge")
    page.locator('[data-form="run-until"] input[name="until"]').fill("1")
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    huge = page.locator('[data-queue="unschedulablePods"] [data-pod="default/huge"]')
    expect(huge).to_be_visible()
    assert s.clock() == 1
    # the pod of another scheduler is listed as not ours, not between queues
    expect(page.locator('[data-not-ours] [data-not-ours-pod="batch/volcano-task-0"]')).to_have_count(1)
    expect(page.locator('[data-waiting-pod="batch/volcano-task-0"]')).to_have_count(0)

    huge.click()
    drawer = page.locator('[data-pod-history="default/huge"]')
    expect(drawer).to_be_visible()
    # the summary is the first thing under the drawer's heading, above every table
    summary = drawer.locator("[data-history-summary]")
    expect(summary).to_be_visible()
    assert drawer.evaluate("d => d.querySelector(':scope > header').nextElementSibling.matches('[data-history-summary]')")
    expect(summary).to_have_attribute("data-outcome", "Unschedulable")
    expect(summary.locator("[data-history-message]")).to_have_text(end["message"])
    expect(summary.locator("[data-history-plugins]")).to_have_text(", ".join(end["unschedulablePlugins"]))
    top = summary.bounding_box()
    dock = page.locator("[data-pod-history-dock]").bounding_box()
    assert dock["y"] <= top["y"] < 200 and top["y"] + top["height"] <= dock["y"] + dock["height"]
    tables = drawer.locator("table").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().top)")
    assert tables and all(top["y"] + top["height"] <= t for t in tables)

    # the deciding column: every node's rejecting plugin, inside the drawer's visible box
    decided = drawer.locator("[data-decided-by]")
    expect(decided).to_have_count(NODES)
    assert decided.evaluate_all("els => els.map(e => e.dataset.decidedBy)") == [
        "TaintToleration" if i in TAINTED else "NodeResourcesFit" for i in range(NODES)]
    wrap = drawer.locator(".table-wrap").first.bounding_box()
    right_edge = min(dock["x"] + dock["width"], wrap["x"] + wrap["width"])
    for i, box in enumerate(decided.evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; })")):
        assert dock["x"] <= box[0] and box[1] <= right_edge + 0.5, (node_name(i), box, dock, wrap)
    header = drawer.locator("th.decided-by-col").bounding_box()
    assert header["x"] + header["width"] <= right_edge + 0.5
    # the long names wrap at their dots, whole in the title
    first = drawer.locator(f'[data-filter-node="{node_name(0)}"] th.node-cell')
    expect(first).to_have_attribute("title", node_name(0))
    assert first.bounding_box()["width"] < 200

    check_layout(page, "1280×720")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.wait_for_timeout(100)
    check_layout(page, "1440×900")
    # closed, the page is as it was
    page.locator("[data-history-close]").click()
    expect(page.locator("[data-pod-history-dock]")).to_be_hidden()

    # 40 nodes: the node overview by default; Cards shows this page a card per node, and back
    mode = page.locator("[data-node-mode]")
    expect(mode).to_have_attribute("data-node-mode", "overview")
    expect(page.locator("[data-node-overview] [data-heat] i[data-n]")).to_have_count(NODES)
    mode.locator('[data-node-mode-set="cards"]').click()
    expect(page.locator("#panel-nodes .node-grid [data-node]")).to_have_count(NODES)
    expect(page.locator('[data-node-mode-set="cards"]')).to_have_attribute("aria-pressed", "true")
    s.step("step-event")                                # the page keeps its choice across frames
    expect(page.locator("#panel-nodes .node-grid [data-node]")).to_have_count(NODES)
    page.locator('[data-node-mode-set="overview"]').click()
    expect(page.locator("[data-node-overview]")).to_be_visible()
    # the choice outlives a reconnection (a restarted server)
    page.locator('[data-node-mode-set="cards"]').click()
    expect(page.locator("#panel-nodes .node-grid [data-node]")).to_have_count(NODES)
    srv.stop()
    expect(page.locator("[data-connection]")).to_have_attribute("data-connection", "closed")
    srv.start()
    expect(page.locator("[data-connection]")).to_have_attribute("data-connection", "open", timeout=30_000)
    s.step("back")                                      # a frame rendered for the new socket
    expect(page.locator('[data-node-mode-set="cards"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#panel-nodes .node-grid [data-node]")).to_have_count(NODES)
