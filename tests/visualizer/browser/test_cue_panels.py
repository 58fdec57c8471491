"""Presentation mode brings the panel the current cue is about on screen (issue 24): lesson 11
at 1280×720, its reprieve cue (panel: preemption)."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def lesson_server(make_server):
    return make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures"),
                       SCHEDULER_PLUGINS=str(ROOT / "docs/examples/coscheduling.py")).start()


# The presenter scrolls to the foot of the stage (whichever element scrolls it: the page or a
# column), where the injection forms are.
AWAY = "(document.querySelector('[data-panel=inject]') || document.getElementById('panel-log')).scrollIntoView({block: 'end'})"


def _cue(page):
    return page.locator("[data-cue-now]")


def test_the_reprieve_cue_brings_the_preemption_panel_into_the_stage(lesson_server, page, session_page):
    page.emulate_media(reduced_motion="reduce")      # no smooth scrolling: each check is immediate
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(lesson_server.url + "/")
    page.locator('form:has(input[name="fixture"][value="11-preemption-reprieve.yaml"]) [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    page.goto(page.url + "?present=1")
    page.wait_for_selector('[data-connection="open"]', state="attached")   # hidden when presenting
    expect(page.locator("[data-session]")).to_have_class(re.compile(r"session--present"))
    s = session_page(page)
    preemption = page.locator("#panel-preemption")
    # up to the event before the reprieve cue ("The PDB goes first": a is tried back first)
    for _ in range(200):
        if s.step("step-event") >= 27:
            break
    assert s.position() == 27
    expect(_cue(page)).not_to_have_attribute("data-cue", "1")
    page.evaluate(AWAY)
    expect(preemption).not_to_be_in_viewport()
    s.step("step-event")
    expect(_cue(page)).to_have_attribute("data-cue", "1")
    expect(_cue(page)).to_have_attribute("data-cue-panel", "preemption")
    expect(preemption).to_have_class(re.compile(r"\bpanel--cued\b"))
    expect(preemption).to_be_in_viewport()
    expect(preemption.locator('[data-reprieve-step][data-victim="default/a"]')).to_be_in_viewport()
    assert page.locator(".panel--cued").count() == 1
    # the next events are of the same cue. The panel (replaced by each frame) is marked again;
    # out of view without the presenter scrolling (as when what is above it grows) it comes back
    page.evaluate(AWAY)
    s.step("step-event")
    expect(_cue(page)).to_have_attribute("data-cue", "1")
    expect(preemption).to_have_class(re.compile(r"\bpanel--cued\b"))
    expect(preemption).to_be_in_viewport()
    # once the presenter scrolls (the wheel), the page stays where they put it until the next cue
    page.mouse.move(640, 400)
    page.mouse.wheel(0, 3000)
    page.evaluate(AWAY)
    s.step("step-event")
    expect(_cue(page)).to_have_attribute("data-cue", "1")
    expect(preemption).to_have_class(re.compile(r"\bpanel--cued\b"))
    expect(preemption).not_to_be_in_viewport()
    # the cue about the nominated node n1 (panel: node:n1) marks n1's card instead
    for _ in range(200):
        if _cue(page).get_attribute("data-cue") == "6":
            break
        page.evaluate(AWAY)
        s.step("step-event")
    expect(_cue(page)).to_have_attribute("data-cue-panel", "node:n1")
    card = page.locator('#panel-nodes [data-node="n1"]')
    expect(card).to_have_class(re.compile(r"\bpanel--cued\b"))
    expect(card).to_be_in_viewport()
    expect(preemption).not_to_have_class(re.compile(r"\bpanel--cued\b"))
    # out of presentation mode nothing is marked
    page.locator('[data-toggle="present"]').click()
    s.step("step-event")
    expect(page.locator(".panel--cued")).to_have_count(0)
