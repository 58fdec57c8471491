"""A sharper debugging page (issue 26) in a real browser: a plugin whose factory is a lambda
lists its extension points on its library card; the gang-scheduling lesson, whose Coscheduling
plugin this server has not loaded, says so on its card and cannot be started; the error cell's
traceback shows each frame as Python prints it, with its source line; after the plugin is fixed
and reloaded, "what changed" shows the source diff and the reload time as a readable time."""
import re
import textwrap
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]

PLUGIN = '''\
"""Zoned: a plugin written by the test, with a bug on nodes without a zone."""
from engine.framework import Code, Status
from engine.framework.interface import FilterPlugin


def zone_of(labels):
    return {lookup}


class Zoned(FilterPlugin):
    """Keeps ``zone`` pods on nodes of :class:`their` zone."""
    name = "Zoned"

    def filter(self, state, pod, node_info):
        zone = zone_of(node_info.node.labels)
        if zone != "a":
            return Status(Code.Unschedulable, [f"node is in zone {{zone}}"])
        return None


PLUGINS = {{"Zoned": lambda args, handle: Zoned()}}
'''
BUGGY = PLUGIN.format(lookup='labels["zone"]')
FIXED = PLUGIN.format(lookup='labels.get("zone", "none")')

SCENARIO = textwrap.dedent("""\
    kind: Scenario
    metadata: {name: zoned, title: A plugin with a bug}
    scheduler:
      profiles:
        - plugins: {multiPoint: {enabled: [{name: Zoned}]}}
    objects:
      - {kind: Node, metadata: {name: a-1, labels: {zone: a}}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - {kind: Node, metadata: {name: edge}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - kind: Pod
        metadata: {name: web}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
    """)


def test_traceback_lines_the_reload_diff_and_a_lesson_without_its_plugin(make_server, tmp_path, page,
                                                                       open_session):
    library = tmp_path / "library"
    library.mkdir()
    (library / "zoned.yaml").write_text(SCENARIO)
    (library / "20-gang-scheduling.yaml").write_text((ROOT / "fixtures" / "20-gang-scheduling.yaml").read_text())
    plugin = tmp_path / "zoned.py"
    plugin.write_text(BUGGY)
    srv = make_server(SCENARIO_FIXTURES_DIR=str(library), SCHEDULER_PLUGINS=str(plugin)).start()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(srv.url + "/")

    # -- the plugin card: a lambda factory, built once to ask for its extension points
    card = page.locator('[data-loaded-plugin="Zoned"]')
    expect(card.locator("[data-plugin-points] .badge")).to_have_text(["Filter"])
    expect(card.locator("[data-plugin-summary]")).to_have_text("Keeps zone pods on nodes of their zone.")

    # -- the gang lesson needs Coscheduling, not loaded here: it says so and cannot start
    gang = page.locator('[data-scenario="gang-scheduling"]')
    expect(gang).to_have_attribute("data-missing-plugins", "Coscheduling")
    expect(gang.locator('[data-action="start"]')).to_be_disabled()
    expect(gang.locator("[data-needs-plugin]")).to_contain_text(
        "Needs the out-of-tree plugin Coscheduling, which this server has not loaded: it cannot be started here.")
    expect(gang.locator("[data-plugin-hint]")).to_have_text(
        "SCHEDULER_PLUGINS=docs/examples/coscheduling.py bash scripts/run.sh")
    gang.locator('[data-action="start"]').click(force=True)     # a disabled button submits nothing
    expect(page).to_have_url(srv.url + "/")
    expect(page.locator("[data-errors]")).to_have_count(0)
    expect(page.locator('[data-scenario="zoned"] [data-action="start"]')).to_be_enabled()

    # -- the error cell's traceback, as Python prints it, with the source lines
    s = open_session(srv, "zoned")
    s.step("step-cycle")
    cell = page.locator('#panel-cycle [data-filter-node="edge"] td[data-plugin="Zoned"]')
    expect(cell).to_have_attribute("data-code", "Error")
    cell.locator("button.plugin-error-button").click()
    frames = cell.locator("[data-error-frames] li")
    expect(frames).to_have_count(2)
    expect(frames.nth(0).locator(".tb-where")).to_have_text(f'File "{plugin}", line 15, in filter')
    expect(frames.nth(0).locator("[data-frame-source]")).to_have_text("zone = zone_of(node_info.node.labels)")
    expect(frames.nth(1).locator(".tb-where")).to_have_text(f'File "{plugin}", line 7, in zone_of')
    expect(frames.nth(1).locator("[data-frame-source]")).to_have_text('return labels["zone"]')
    # the source line sits under its "File ..." line, indented
    where, src = frames.nth(1).locator(".tb-where").bounding_box(), frames.nth(1).locator(".tb-source").bounding_box()
    assert src["y"] >= where["y"] + where["height"] - 1 and src["x"] > where["x"]
    page.keyboard.press("Escape")

    # -- fix the bug and reload: "what changed" shows the diff and a readable time
    plugin.write_text(FIXED)
    page.locator('[data-action="reload-plugins"]').click()
    expect(page.locator("[data-reload-summary]")).to_be_visible()
    page.locator("[data-changes-link]").click()
    page.wait_for_url("**/changes/")
    diff = page.locator('[data-source-diff="zoned.py"]')
    expect(diff.locator("[data-diff-stat]")).to_have_text("+1 −1")
    removed = diff.locator('tr[data-diff-line="del"]')
    added = diff.locator('tr[data-diff-line="add"]')
    expect(removed).to_have_count(1)
    expect(added).to_have_count(1)
    expect(removed.locator(".src")).to_have_text('    return labels["zone"]')
    expect(removed.locator(".ln").first).to_have_text("7")
    expect(added.locator(".src")).to_have_text('    return labels.get("zone", "none")')
    expect(added.locator(".ln").nth(1)).to_have_text("7")
    red = removed.evaluate("e => getComputedStyle(e).backgroundColor")
    green = added.evaluate("e => getComputedStyle(e).backgroundColor")
    assert red != green and "rgba(0, 0, 0, 0)" not in (red, green)
    when = page.locator("time[data-local-time]").first
    expect(when).to_have_attribute("data-localised", "")
    text = when.inner_text()
    assert "+00:00" not in text and re.fullmatch(r"\d\d:\d\d:\d\d .+, \d{1,2} [A-Z][a-z]{2} \d{4}", text), text
    assert re.fullmatch(r"\d\d:\d\d:\d\d UTC, \d{1,2} [A-Z][a-z]{2} \d{4}", when.get_attribute("title"))
