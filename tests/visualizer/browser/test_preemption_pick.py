"""The pickOneNodeForPreemption table in narrow columns: in presentation mode at 1280×720 all six
criteria fit the side column, and on a phone extra candidates scroll inside the table while the
criterion column stays in place."""
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
CRITERIA = ["minNumPDBViolatingVictims", "minHighestPriorityVictim", "minSumPriorities", "minNumPods",
            "latestStartTime", "firstInNodeOrder"]


def _to_the_pick(page, session_page):
    s = session_page(page)
    for _ in range(10):
        if page.locator("[data-preemption-pick]").count():
            return
        s.step("step-cycle")
    raise AssertionError("no pick table")


@pytest.mark.parametrize("lesson, deciding, values", [
    ("11-preemption-reprieve", "minNumPDBViolatingVictims", ["0 ✓", "1 ✗"]),
    ("14-pick-fewest-victims", "minNumPods", ["2 ✗", "1 ✓"]),
])
def test_every_criterion_fits_the_presentation_column(make_server, page, session_page, lesson, deciding, values):
    srv = make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures")).start()
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(srv.url + "/")
    page.locator(f'form:has(input[name="fixture"][value="{lesson}.yaml"]) [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    page.goto(page.url + "?present=1")
    page.wait_for_selector('[data-connection="open"]', state="attached")
    _to_the_pick(page, session_page)
    table = page.locator("[data-preemption-pick]")
    rows = table.locator("tbody tr[data-criterion]")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.criterion)") == CRITERIA
    wrap = page.locator("[data-panel=preemption] .table-wrap")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the table scrolls sideways"
    row = table.locator(f'tr[data-criterion="{deciding}"]')
    expect(row.locator("th[data-deciding]")).to_contain_text("decides")
    expect(row.locator("[data-direction]")).to_have_text("lower wins")
    assert row.locator("td").evaluate_all("ts => ts.map(t => t.textContent.trim())") == values
    row.scroll_into_view_if_needed()
    expect(row).to_be_in_viewport()


def test_extra_candidates_scroll_inside_the_table_on_a_phone(server, browser, session_page):
    context = browser.new_context(viewport={"width": 320, "height": 700})
    page = context.new_page()
    try:
        page.goto(server.url + "/")
        page.locator('[data-scenario="preemption"] [data-action="start"]').click()
        page.wait_for_url("**/s/*/")
        page.wait_for_selector('[data-connection="open"]', state="attached")
        _to_the_pick(page, session_page)
        wrap = page.locator("[data-panel=preemption] .table-wrap")
        wrap.scroll_into_view_if_needed()
        assert page.evaluate("document.documentElement.scrollWidth") <= 320
        assert wrap.evaluate("e => e.scrollWidth > e.clientWidth"), "three candidates should not fit the narrowest phone, 320 px"
        criterion = page.locator('[data-preemption-pick] tr[data-criterion="minHighestPriorityVictim"] th')
        left = wrap.evaluate("e => e.getBoundingClientRect().left")
        wrap.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        chosen = page.locator('[data-preemption-pick] th[data-candidate="n3"][data-chosen]')
        expect(chosen).to_contain_text("chosen")
        assert abs(criterion.evaluate("e => e.getBoundingClientRect().left") - left) <= 1, "the criterion column moved"
        box, outer = chosen.bounding_box(), wrap.bounding_box()
        assert box["x"] + box["width"] <= outer["x"] + outer["width"] + 1
    finally:
        context.close()
