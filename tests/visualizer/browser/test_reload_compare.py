"""Reload and compare in a real browser (visualizer.changes): a plugin file the test writes is
loaded by the server through SCHEDULER_PLUGINS, edited, reloaded with the button (the page
shows what changed), broken (the page says the reload failed and keeps the old code), edited
again and picked up by the next control in development, and finally changed while the server
is stopped (the restarted server names the code it now runs). Then the SchedulerQueueingHints
lesson is compared with the gate on. Two screenshots for docs/writing-plugins.md are saved in
docs/images/."""
import re
import hashlib
import textwrap
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images"
WIDTH, HEIGHT = 1280, 720

PLUGIN = '''"""AvoidNode: keeps pods off one node (a plugin written by the test)."""
from engine.framework import Code, Status
from engine.framework.interface import FilterPlugin


class AvoidNode(FilterPlugin):
    name = "AvoidNode"

    def filter(self, state, pod, node_info):
        if node_info.node.name == "{node}":
            return Status(Code.Unschedulable, ["AvoidNode avoids {node}"])
        return None


def new(args, handle):
    return AvoidNode()


PLUGINS = {{"AvoidNode": new}}
'''

SCENARIO = textwrap.dedent("""\
    kind: Scenario
    metadata:
      name: avoid-node
      title: A plugin that avoids a node
      description: Two pods, two nodes, and the AvoidNode plugin loaded from SCHEDULER_PLUGINS.
    scheduler:
      profiles:
        - plugins: {multiPoint: {enabled: [{name: AvoidNode}]}}
    objects:
      - {kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - {kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - kind: Pod
        metadata: {name: web}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
      - kind: Pod
        metadata: {name: api}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
    """)


def short_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:8]


def run_until(page, seconds: str) -> None:
    page.locator('[data-form="run-until"] input[name="until"]').fill(seconds)
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(page.locator("[data-clock]")).to_have_text(seconds)


def test_reload_a_changed_plugin_and_see_what_changed(make_server, tmp_path, page, open_session):
    IMAGES.mkdir(parents=True, exist_ok=True)
    (IMAGES / "reload-changes.png").unlink(missing_ok=True)
    library = tmp_path / "library"
    library.mkdir()
    (library / "avoid-node.yaml").write_text(SCENARIO)
    plugin = tmp_path / "avoid_node.py"
    plugin.write_text(PLUGIN.format(node="n2"))
    database = tmp_path / "reload.sqlite3"
    srv = make_server(database=database, SCENARIO_FIXTURES_DIR=str(library), SCHEDULER_PLUGINS=str(plugin),
                      DJANGO_DEBUG="1").start()
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    open_session(srv, "avoid-node")
    v1 = short_digest(plugin)
    expect(page.locator("[data-plugin-code]")).to_have_text(f"AvoidNode from avoid_node.py@{v1}")
    run_until(page, "1")
    expect(page.locator('[data-node="n1"] [data-pod]')).to_have_count(2)      # n2 is avoided

    # -- edit the plugin, press Reload: the session replays with the new code, the old run is kept
    plugin.write_text(PLUGIN.format(node="n1"))
    v2 = short_digest(plugin)
    page.locator('[data-action="reload-plugins"]').click()
    summary = page.locator("[data-reload-summary]")
    expect(summary).to_have_attribute("data-changed-pods", "2")
    expect(summary).to_contain_text("2 pods with a different outcome, first divergence in cycle 1")
    expect(page.locator("[data-plugin-code]")).to_have_text(f"AvoidNode from avoid_node.py@{v2}")
    expect(page.locator('[data-node="n2"] [data-pod]')).to_have_count(2)
    expect(page.locator("[data-clock]")).to_have_text("1")                    # the same place
    session_url = page.url

    page.locator("[data-changes-link]").click()
    page.wait_for_url("**/changes/")
    for pod in ("default/api", "default/web"):
        row = page.locator(f'[data-changed-pod="{pod}"]')
        expect(row.locator('[data-side="a"]')).to_contain_text("Running on n1")
        expect(row.locator('[data-side="b"]')).to_contain_text("Running on n2")
    expect(page.locator("[data-run=a]")).to_contain_text(f"recorded with AvoidNode from avoid_node.py@{v1}")
    expect(page.locator("[data-run=b]")).to_contain_text(f"reloaded: AvoidNode from avoid_node.py@{v2}")
    cell = page.locator('[data-compare-filter] [data-compare-node="n1"] td[data-plugin="AvoidNode"]')
    expect(cell.locator('[data-side="a"]')).to_have_attribute("data-code", "Success")
    expect(cell.locator('[data-side="b"]')).to_have_attribute("data-code", "Unschedulable")
    expect(cell).to_contain_text("B: AvoidNode avoids n1")
    page.locator("[data-what-changed]").screenshot(path=str(IMAGES / "reload-changes.png"), animations="disabled")
    assert (IMAGES / "reload-changes.png").stat().st_size > 10_000

    # -- a file that does not import: the reload fails, the session keeps the code it had
    page.goto(session_url)
    page.wait_for_selector('[data-connection="open"]')
    plugin.write_text("def broken(:\n")
    page.locator('[data-action="reload-plugins"]').click()
    status = page.locator('[data-status-kind="error"]')
    expect(status).to_contain_text("Reload failed: the plugin did not load")
    expect(status).to_contain_text("SyntaxError")
    expect(page.locator("[data-plugin-code]")).to_have_text(f"AvoidNode from avoid_node.py@{v2}")

    # -- in development the next control picks up a fixed file by itself
    plugin.write_text(PLUGIN.format(node="nowhere"))
    v3 = short_digest(plugin)
    page.locator('[data-action="back"]').click()
    expect(page.locator('[data-status-kind="info"]')).to_contain_text("Reloaded AvoidNode")
    expect(page.locator("[data-plugin-code]")).to_have_text(f"AvoidNode from avoid_node.py@{v3}")

    # -- a restarted server with other code says so instead of passing the new run off as the old
    srv.stop()
    plugin.write_text(PLUGIN.format(node="n2"))
    srv.start()
    page.goto(session_url)
    page.wait_for_selector('[data-connection="open"]')
    expect(page.locator("[data-code-mismatch]")).to_contain_text(
        f"This session was recorded with AvoidNode from avoid_node.py@{v3}; the server now runs "
        f"@{short_digest(plugin)}")


def test_compare_queueing_hints_on_and_off_on_a_lesson(make_server, page, open_session):
    (IMAGES / "compare-qhint.png").unlink(missing_ok=True)
    srv = make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures")).start()
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    open_session(srv, "move-request-cycle")
    page.locator("[data-compare-link]").click()
    page.wait_for_url("**/compare/")
    form = page.locator('[data-form="compare"]')
    expect(form).to_contain_text("Turn the feature gate SchedulerQueueingHints on")
    form.locator('[data-kind="gate"]').check()
    form.locator('input[name="until"]').fill("1.2")
    form.locator('[data-action="compare"]').click()
    page.wait_for_selector("[data-what-changed]")
    expect(page.locator("[data-changed-count]")).to_have_text("1")
    row = page.locator('[data-changed-pod="default/big"]')
    expect(row.locator('[data-side="a"]')).to_contain_text("in backoffQ")
    expect(row.locator('[data-side="b"]')).to_contain_text("in unschedulablePods")
    expect(page.locator("[data-divergence]")).to_contain_text("in scheduling cycle 1")
    expect(page.locator('[data-divergent-event="a"]')).to_contain_text("backoffQ")
    expect(page.locator('[data-divergent-event="b"]')).to_contain_text("unschedulablePods")
    page.locator("[data-what-changed]").screenshot(path=str(IMAGES / "compare-qhint.png"), animations="disabled")
    assert (IMAGES / "compare-qhint.png").stat().st_size > 10_000

    # a bad configuration B is refused with its problems, and nothing is run
    form = page.locator('[data-form="compare"]')
    form.locator('[data-kind="scheduler"]').check()
    form.locator('textarea[name="scheduler"]').fill("profiles:\n  - plugins: {filter: {enabled: [{name: Nope}]}}")
    form.locator('[data-action="compare"]').click()
    expect(page.locator("[data-errors] [data-problem]")).to_have_text(re.compile(
        r"^variation: scheduler\.profiles\[0\]\.plugins: 'Nope' is not a known plugin \(.*--plugins.*SCHEDULER_PLUGINS"))
    expect(page.locator("[data-what-changed]")).to_have_count(0)
