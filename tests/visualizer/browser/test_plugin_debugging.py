"""A plugin author's loop in a real browser (issue 9): a plugin file nobody in the project
wrote, loaded by a Daphne server through SCHEDULER_PLUGINS; its column and status codes in the
Filter matrix; a call that raised, as an error cell with its traceback one click away, in a
session that keeps working; a pod's history. The last test takes the screenshots of
docs/writing-plugins.md ("Debug your plugin in the browser") and saves them in docs/images/."""
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.visualizer.plugin_sources import (SCORE_BUG, SCORE_BUG_LINE, SCORE_BUGS, ZONE_PIN_BUG_LINE, ZONES,
                                             write_plugin)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images"
SHOTS = ("plugin-library.png", "plugin-matrix.png", "plugin-error.png", "plugin-history.png")
WIDTH, HEIGHT = 1280, 720


@pytest.fixture
def author(tmp_path):
    """The plugin author's directory: their plugin and their scenario, outside the project."""
    home = tmp_path / "author"
    (home / "scenarios").mkdir(parents=True)
    plugin = write_plugin(home)
    (home / "scenarios" / "zones.yaml").write_text(ZONES, encoding="utf-8")
    return home, plugin


@pytest.fixture
def plugin_server(make_server, author):
    home, plugin = author
    srv = make_server(SCHEDULER_PLUGINS=str(plugin), SCENARIO_FIXTURES_DIR=str(home / "scenarios")).start()
    srv.plugin = plugin
    return srv


def cell(page, node, plugin="ZonePin"):
    return page.locator(f'#panel-cycle [data-filter-node="{node}"] td[data-plugin="{plugin}"]')


def test_a_loaded_plugins_column_codes_and_an_error_cell_with_its_traceback(plugin_server, page, open_session):
    page.goto(plugin_server.url + "/")
    listed = page.locator('[data-loaded-plugin="ZonePin"]')
    expect(listed.locator("[data-plugin-summary]")).to_have_text(
        "Keeps pods labelled zone=X on nodes of zone X; prefers emptier nodes.")
    expect(listed.locator("[data-plugin-points] .badge")).to_have_text(["Filter", "Score"])
    expect(listed.locator("[data-plugin-file]")).to_contain_text(str(plugin_server.plugin))

    s = open_session(plugin_server, "zone-pin")
    s.step("step-cycle")                       # cycle 1: web (zone a)
    expect(page.locator('#panel-cycle [data-filter-matrix] th[data-plugin="ZonePin"]')).to_have_text("ZonePin")
    expect(cell(page, "a-1")).to_have_attribute("data-code", "Success")
    expect(cell(page, "b-1")).to_have_attribute("data-code", "Unschedulable")
    expect(cell(page, "b-1")).to_contain_text("node is in zone b, not a")
    expect(cell(page, "a-gpu")).to_have_attribute("data-code", "UnschedulableAndUnresolvable")
    expect(cell(page, "a-gpu")).to_contain_text("UnschedulableAndUnresolvable")
    expect(cell(page, "edge-1")).to_have_count(0)          # TaintToleration rejected it first
    expect(cell(page, "edge-1", "TaintToleration")).to_have_attribute("data-code", "UnschedulableAndUnresolvable")
    expect(page.locator('#panel-cycle [data-scores] th[data-plugin="ZonePin"]')).to_be_visible()
    expect(page.locator('#panel-cycle [data-scores] [data-score-node="a-1"] td[data-plugin="ZonePin"]')).to_have_text(
        "100 → 100 → 200")
    expect(page.locator("[data-cycle-result]")).to_have_attribute("data-cycle-result", "Scheduled")

    s.step("step-cycle")                       # cycle 2: batch (zone b) reaches edge-1, and ZonePin raises
    error = cell(page, "edge-1")
    expect(error).to_have_attribute("data-code", "Error")
    expect(page.locator("[data-cycle-result]")).to_have_attribute("data-cycle-result", "Error")
    frames = error.locator("[data-error-frames]")
    expect(frames).to_be_hidden()
    error.locator("button.plugin-error-button").click()     # the traceback, one click away
    expect(frames).to_be_visible()
    # as Python prints a traceback, with the source line (issue 26)
    expect(frames).to_have_text(f'File "{plugin_server.plugin}", line {ZONE_PIN_BUG_LINE}, in filter'
                                f'zone = node_info.node.labels["topology.kubernetes.io/zone"]')
    expect(error.locator("[data-error-message]")).to_have_text("KeyError: 'topology.kubernetes.io/zone'")
    # the session keeps working: the socket stays open, the next steps come, the traceback stays open
    before = s.position()
    assert s.step("step-event") == before + 1
    expect(page.locator('[data-connection="open"]')).to_be_visible()
    expect(cell(page, "edge-1").locator("[data-error-frames]")).to_be_visible()
    page.keyboard.press("Escape")
    expect(cell(page, "edge-1").locator("[data-error-frames]")).to_be_hidden()
    s.step("step-cycle")
    expect(page.locator('[data-connection="open"]')).to_be_visible()


def test_a_pods_history_from_a_node_card_a_queue_card_and_the_log(plugin_server, page, context, open_session):
    s = open_session(plugin_server, "zone-pin")
    s.step("step-cycle")
    s.step("step-cycle")
    dock = page.locator("[data-pod-history-dock]")
    expect(dock).to_be_hidden()
    page.locator('[data-node="a-1"] [data-pod="default/web"]').click()        # a node card's pod
    history = page.locator('[data-pod-history="default/web"]')
    expect(history).to_be_visible()
    expect(history.locator("[data-history-cycle]")).to_have_count(1)
    first = history.locator('[data-history-cycle="1"]')
    expect(first.locator("[data-history-result]")).to_have_attribute("data-history-result", "Scheduled")
    expect(first.locator('[data-filter-node="a-gpu"] td[data-plugin="ZonePin"]')).to_have_attribute(
        "data-code", "UnschedulableAndUnresolvable")
    expect(first.locator('[data-scores] [data-score-node="a-1"] td[data-plugin="ZonePin"]')).to_have_text(
        "100 → 100 → 200")                                                   # raw → normalised → weighted

    # the log: a click on an event's text opens its pod's history; revealed events only
    page.locator('[data-log] [data-event-type="CycleEnd"] .log-message').last.click()
    history = page.locator('[data-pod-history="default/batch"]')
    expect(history.locator('[data-history-cycle="2"] [data-history-result]')).to_have_attribute(
        "data-history-result", "Error")
    expect(history.locator('[data-history-cycle="2"] td[data-code="Error"]')).to_have_count(1)
    # it follows the session: the failed attempt's queue move appears when revealed
    s.step("step-event")
    expect(history.locator(".history-then")).to_contain_text("to ")
    queue = page.locator("[data-queue] [data-pod='default/batch']")
    expect(queue).to_have_count(1)
    page.locator("[data-history-close]").click()
    expect(dock).to_be_hidden()
    queue.click()                                                            # a queue card
    expect(page.locator('[data-pod-history="default/batch"]')).to_be_visible()

    # a follower may read it too
    follower = context.new_page()
    follower.goto(page.locator("[data-follower-link]").get_attribute("href"))
    follower.wait_for_selector('[data-connection="open"]')
    follower.locator('[data-node="a-1"] [data-pod="default/web"]').click()
    expect(follower.locator('[data-pod-history="default/web"] [data-history-cycle="1"]')).to_be_visible()
    follower.close()


def test_two_plugin_files_a_score_error_cell_and_a_malformed_prefilter_result(make_server, author, page,
                                                                             open_session):
    home, zone_pin = author
    score_bug = write_plugin(home, "score_bug.py", SCORE_BUG)
    (home / "scenarios" / "score-bugs.yaml").write_text(SCORE_BUGS, encoding="utf-8")
    srv = make_server(SCHEDULER_PLUGINS=f"{zone_pin},{score_bug}", SCENARIO_FIXTURES_DIR=str(home / "scenarios")).start()
    page.goto(srv.url + "/")
    expect(page.locator("[data-loaded-plugin]")).to_have_count(3)      # PreBug, ScoreBug, ZonePin

    s = open_session(srv, "score-bugs")
    s.step("step-cycle")                       # web: ScoreBug raises on b-1
    error = page.locator('#panel-cycle [data-scores] [data-score-node="b-1"] td[data-plugin="ScoreBug"]')
    expect(error).to_have_attribute("data-code", "Error")
    error.locator("button.plugin-error-button").click()
    expect(error.locator("[data-error-frames]")).to_have_text(f'File "{score_bug}", line {SCORE_BUG_LINE}, in score'
                                                              'return 1 // 0, None')
    expect(error.locator("[data-error-message]")).to_have_text("ZeroDivisionError: integer division or modulo by zero")
    page.keyboard.press("Escape")

    s.step("step-cycle")                       # batch: PreBug returns a string
    prefilter = page.locator("#panel-cycle .prefilter")
    expect(prefilter).to_have_count(1)         # one line, the popover inside it
    bug = prefilter.locator('[data-plugin="PreBug"]')
    expect(bug).to_have_attribute("data-code", "Error")
    bug.locator("button.plugin-error-button").click()
    expect(bug.locator(".plugin-error-what")).to_contain_text("returned a value its extension point does not return")
    expect(bug.locator("[data-error-message]")).to_contain_text("PreFilter returned 'oops' (str)")
    expect(page.locator("[data-cycle-result]")).to_have_attribute("data-cycle-result", "Error")
    expect(page.locator('[data-connection="open"]')).to_be_visible()


def test_the_debug_your_plugin_screenshots(make_server, page, open_session):
    # a short author's path, as the page shows it in the library and the tracebacks
    home = Path(tempfile.mkdtemp(prefix="my-plugins-"))
    try:
        write_plugin(home)
        (home / "scenarios").mkdir()
        (home / "scenarios" / "zones.yaml").write_text(ZONES, encoding="utf-8")
        srv = make_server(SCHEDULER_PLUGINS=str(home / "zone_pin.py"),
                          SCENARIO_FIXTURES_DIR=str(home / "scenarios")).start()
        take_screenshots(srv, page, open_session)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def take_screenshots(plugin_server, page, open_session):
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in SHOTS:
        (IMAGES / name).unlink(missing_ok=True)
    started = time.time()
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    def shot(name, selector=None):
        if selector is None:
            page.evaluate("window.scrollTo(0, 0)")
        else:
            page.locator(selector).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(IMAGES / name), animations="disabled")

    page.goto(plugin_server.url + "/")
    expect(page.locator('[data-loaded-plugin="ZonePin"]')).to_be_visible()
    # the plugins' section itself (below its top rule) with a margin, not the viewport around it:
    # the library's column beside it is empty at that height
    plugins = page.locator("#plugins")
    plugins.evaluate("e => e.scrollIntoView({block: 'center'})")
    box, margin = plugins.bounding_box(), 12
    assert box["height"] + margin <= HEIGHT, "the plugins' section no longer fits the viewport"
    page.screenshot(path=str(IMAGES / "plugin-library.png"), animations="disabled",
                    clip={"x": max(0, box["x"] - margin), "y": box["y"] + 1,
                          "width": box["width"] + 2 * margin, "height": box["height"] - 1 + margin})

    s = open_session(plugin_server, "zone-pin")
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    s.step("step-cycle")
    expect(cell(page, "a-gpu")).to_have_attribute("data-code", "UnschedulableAndUnresolvable")
    shot("plugin-matrix.png", '[data-panel="cycle"]')

    s.step("step-cycle")
    error = cell(page, "edge-1")
    error.locator("button.plugin-error-button").click()
    expect(error.locator("[data-error-frames]")).to_be_visible()
    shot("plugin-error.png", '#panel-cycle [data-filter-matrix]')

    page.keyboard.press("Escape")
    s.step("step-event")
    page.locator('[data-node="a-1"] [data-pod="default/web"]').click()
    expect(page.locator('[data-pod-history="default/web"] [data-history-cycle="1"]')).to_be_visible()
    page.screenshot(path=str(IMAGES / "plugin-history.png"), animations="disabled")

    for name in SHOTS:
        path = IMAGES / name
        assert path.is_file() and path.stat().st_mtime >= started - 1, f"{name} was not written"
        assert path.stat().st_size > 20_000, f"{name} is suspiciously small"
