"""Accessibility (issue 24): axe-core, run in Chromium through axe-playwright-python, finds no
violation of impact "serious" or "critical" on the pages a class sees: the library, the
presenter page of a lesson mid-run, presentation mode at 1280×720, a follower on a phone
(390×844), the compare page, the what-changed page after a plugin reload, and the docs.

A failure prints each violation's rule id, impact and the nodes it was found on (axe's CSS
selectors), page by page."""
import importlib.util
import os
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("browser_conftest", Path(__file__).with_name("conftest.py"))
browser_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(browser_conftest)

BLOCKING = ("serious", "critical")

LESSON = "11-preemption-reprieve.yaml"

# the plugin and the scenario the what-changed page is made with: test_reload_compare.py's
# (reloaded with another node avoided, both pods land elsewhere)
from tests.visualizer.browser.test_reload_compare import PLUGIN, SCENARIO as AVOID_NODE  # noqa: E402


@pytest.fixture(scope="module")
def a11y_server(tmp_path_factory):
    """One server for the module: the real lessons and the avoid-node scenario in one library,
    the lessons' example plugin and the test's AvoidNode plugin loaded."""
    base = tmp_path_factory.mktemp("a11y")
    library = base / "library"
    library.mkdir()
    for lesson in (ROOT / "fixtures").glob("*.yaml"):
        os.symlink(lesson, library / lesson.name)
    (library / "avoid-node.yaml").write_text(AVOID_NODE)
    plugin = base / "avoid_node.py"
    plugin.write_text(PLUGIN.format(node="n2"))
    srv = browser_conftest.DaphneServer(
        base / "db.sqlite3", SCENARIO_FIXTURES_DIR=str(library),
        SCHEDULER_PLUGINS=f"{ROOT / 'docs/examples/coscheduling.py'},{plugin}").start()
    srv.plugin = plugin
    yield srv
    srv.stop()


def serious_violations(page) -> list:
    """axe-core's violations of impact serious or critical on the page as it is now."""
    results = Axe().run(page)
    return [v for v in results.response["violations"] if v.get("impact") in BLOCKING]


def report(where: str, violations: list) -> str:
    lines = [f"{where}: {len(violations)} serious or critical accessibility violation(s)"]
    for v in violations:
        lines.append(f"  {v['id']} ({v['impact']}): {v['help']}")
        for node in v["nodes"]:
            lines.append(f"    - {' '.join(map(str, node['target']))}")
    return "\n".join(lines)


def assert_accessible(page, where: str) -> None:
    violations = serious_violations(page)
    if violations:
        print(report(where, violations))
    assert not violations, report(where, violations)


def start(page, server, filename, query=""):
    page.goto(server.url + "/")
    page.locator(f'form:has(input[name="fixture"][value="{filename}"]) [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    if query:
        page.goto(page.url + query)
    page.wait_for_selector('[data-connection="open"]', state="attached")


def step(page, key="c", times=1):
    for _ in range(times):
        version = page.locator("#panel-header").get_attribute("data-version")
        page.keyboard.press(key)
        page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)


def test_library(a11y_server, page):
    page.goto(a11y_server.url + "/")
    expect(page.locator('[data-action="start"]').first).to_be_visible()
    assert_accessible(page, "the library")


def test_presenter_page_mid_run(a11y_server, page):
    page.set_viewport_size({"width": 1440, "height": 900})
    start(page, a11y_server, LESSON)
    step(page, "c", 3)           # into the preemption: the filter matrix and the victims are shown
    expect(page.locator("[data-cue-now]")).to_be_visible()
    assert_accessible(page, "the presenter page, lesson 11 after 3 cycles")


def test_presentation_mode_at_1280x720(a11y_server, page):
    page.set_viewport_size({"width": 1280, "height": 720})
    start(page, a11y_server, LESSON, "?present=1")
    expect(page.locator('[data-toggle="present"]')).to_have_attribute("aria-pressed", "true")
    step(page, "c", 3)
    assert_accessible(page, "presentation mode at 1280×720, lesson 11 after 3 cycles")


def test_follower_on_a_phone(a11y_server, page, browser):
    start(page, a11y_server, LESSON)
    follower_url = page.locator("[data-follower-link]").get_attribute("href")
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                is_mobile=True, has_touch=True)
    try:
        follower = phone.new_page()
        follower.set_default_timeout(15_000)
        follower.goto(follower_url)
        follower.wait_for_selector('[data-connection="open"]', state="attached")
        version = follower.locator("#panel-header").get_attribute("data-version")
        step(page, "c", 3)
        follower.wait_for_function(
            "v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
        expect(follower.locator("#panel-header")).to_have_attribute(
            "data-position", page.locator("#panel-header").get_attribute("data-position"))
        assert_accessible(follower, "a follower on a phone (390×844), lesson 11 after 3 cycles")
    finally:
        phone.close()


def test_compare_page(a11y_server, page):
    start(page, a11y_server, "07-move-request-cycle.yaml")
    page.locator("[data-compare-link]").click()
    page.wait_for_url("**/compare/")
    assert_accessible(page, "the compare page")
    form = page.locator('[data-form="compare"]')
    form.locator('[data-kind="gate"]').check()
    form.locator('input[name="until"]').fill("1.2")
    form.locator('[data-action="compare"]').click()
    page.wait_for_selector("[data-what-changed]")
    assert_accessible(page, "the compare page with its result")


def test_what_changed_page_after_a_reload(a11y_server, page):
    start(page, a11y_server, "avoid-node.yaml")
    page.locator('[data-form="run-until"] input[name="until"]').fill("1")
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(page.locator("[data-clock]")).to_have_text("1")
    a11y_server.plugin.write_text(PLUGIN.format(node="n1"))
    page.locator('[data-action="reload-plugins"]').click()
    expect(page.locator("[data-reload-summary]")).to_have_attribute("data-changed-pods", "2")
    page.locator("[data-changes-link]").click()
    page.wait_for_url("**/changes/")
    expect(page.locator('[data-changed-pod="default/web"]')).to_be_visible()
    assert_accessible(page, "the what-changed page after a plugin reload")


DOCS = ["/docs/", *(f"/docs/{p.stem}/" for p in sorted((ROOT / "docs").glob("*.md")) if p.stem != "README"),
        "/docs/examples/"]


@pytest.mark.parametrize("viewport, paths", [
    pytest.param({"width": 1280, "height": 720}, DOCS[:1], id="index-1280x720"),
    pytest.param({"width": 390, "height": 844}, DOCS, id="all-390x844")])
def test_docs(a11y_server, page, viewport, paths):
    """The docs' index beside its menu, and every page of the served docs on a phone, where
    their code blocks and wide tables scroll sideways (axe takes about 3 s a page: a wider
    window only makes fewer of them scroll)."""
    page.set_viewport_size(viewport)
    found = []
    for path in paths:
        response = page.goto(a11y_server.url + path)
        assert response.status == 200, path
        violations = serious_violations(page)
        if violations:
            found.append(report(f"the docs page {path} at {viewport['width']}×{viewport['height']}", violations))
    print("\n".join(found))
    assert not found, "\n".join(found)
