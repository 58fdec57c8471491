"""The session page in a real browser: stepping, playing, time travel, followers, uploads."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_start_a_fixture_and_step_until_a_pod_moves_from_active_q_to_unschedulable_pods(server, open_session):
    s = open_session(server, "too-big")
    assert re.search(r"/s/[\w-]{40,}/$", s.page.url)
    expect(s.page.locator("[data-follower-link]")).to_have_attribute("href", re.compile(r"/w/[\w-]{40,}/$"))
    # the presenter link is copied from the join overlay, never printed
    expect(s.page.locator("[data-copy-presenter-link]")).to_be_hidden()
    s.page.locator('[data-view-options] [data-toggle="share"]').click()
    expect(s.page.locator("[data-copy-presenter-link]")).to_be_visible()
    assert s.page.url.split("/s/")[1].strip("/") not in s.page.locator("body").inner_text()
    s.page.keyboard.press("Escape")
    seen_in_active = False
    for _ in range(80):
        s.step("step-event")
        if "default/big" in s.pods_in("activeQ"):
            seen_in_active = True
        if "default/big" in s.pods_in("unschedulablePods"):
            break
    else:
        pytest.fail("default/big never reached unschedulablePods")
    assert seen_in_active
    big = s.queue("unschedulablePods").locator('[data-pod="default/big"]')
    expect(big).to_contain_text("rejected by NodeResourcesFit")
    expect(big).to_contain_text("just moved")
    assert "default/big" not in s.pods_in("activeQ")
    expect(s.page.locator('[data-node="n1"] [data-pod="default/small"]')).to_be_visible()
    expect(s.page.locator("[data-cycle-result]")).to_have_attribute("data-cycle-result", "Unschedulable")


def test_play_and_pause(server, open_session):
    s = open_session(server, "preemption")
    s.page.locator('[data-form="play"] select[name="speed"]').select_option("10")
    s.click("play")
    expect(s.page.locator('[data-run-state="playing"]')).to_be_visible()
    s.wait_position(lambda p: p > 5)
    s.click("pause")
    expect(s.page.locator('[data-run-state="paused"]')).to_be_visible()
    paused_at = s.position()
    s.page.wait_for_timeout(800)
    assert s.position() == paused_at
    assert paused_at < 150   # 10 steps/s: far from the end of the run


def test_step_back_and_time_travel(server, open_session):
    s = open_session(server, "backoff")
    s.step("step-cycle")
    head = s.step("step-cycle")
    clock_at_head = s.clock()
    assert s.step("back") == head - 1
    expect(s.page.locator(".badge--travel")).to_be_visible()
    # jump through the event log: the first CycleEnd
    s.page.locator('[data-event-type="CycleEnd"] .log-jump').first.click()
    first_end = s.wait_position(lambda p: p < head - 1)
    expect(s.page.locator("[data-log] .log-row").last).to_have_attribute("data-event-type", "CycleEnd")
    assert s.page.locator("[data-log] .log-row").count() == first_end
    # forward again along the recorded timeline, to the head
    s.page.locator("#timeline-position").fill(str(head))
    s.wait_position(lambda p: p == head)
    assert s.clock() == clock_at_head
    expect(s.page.locator(".badge--travel")).to_have_count(0)


def test_keyboard_shortcuts(server, open_session):
    s = open_session(server, "too-big")
    s.page.locator("body").press("ArrowRight")
    s.wait_position(lambda p: p == 1)
    s.page.locator("body").press("c")
    after_cycle = s.wait_position(lambda p: p > 1)
    s.page.locator("body").press("ArrowLeft")
    s.wait_position(lambda p: p == after_cycle - 1)


def test_a_follower_sees_every_change_live_and_its_controls_are_refused(server, open_session, context):
    s = open_session(server, "too-big")
    follower_url = s.page.locator("[data-follower-link]").get_attribute("href")
    follower_page = context.new_page()
    follower_page.goto(follower_url)
    follower_page.wait_for_selector('[data-connection="open"]')
    f = type(s)(follower_page)
    expect(follower_page.locator('[data-action="step-event"]')).to_have_count(0)
    expect(follower_page.locator("[data-presenter-link]")).to_have_count(0)

    at = s.step("step-cycle")
    f.wait_position(lambda p: p == at)
    s.step("step-cycle")
    s.step("step-event")   # the failed pod's QueueTransition comes just after its CycleEnd
    f.wait_position(lambda p: p == s.position())
    expect(follower_page.locator('[data-queue="unschedulablePods"] [data-pod="default/big"]')).to_be_visible()

    # the follower's own controls are read-only; a forged control is refused by the server
    expect(follower_page.locator(".log-jump").first).to_be_disabled()
    follower_page.evaluate("""() => {
        const b = document.createElement('button');
        b.id = 'forged'; b.setAttribute('ws-send', ''); b.setAttribute('hx-vals', '{"action": "step-cycle"}');
        document.querySelector('[data-session]').appendChild(b);
        htmx.process(b);
    }""")
    before = s.position()
    follower_page.locator("#forged").click()
    expect(follower_page.locator('[data-status-kind="refused"]')).to_contain_text("only the presenter controls")
    follower_page.wait_for_timeout(500)
    assert s.position() == before == f.position()


def test_an_invalid_upload_shows_every_error_and_starts_nothing(server, page):
    page.goto(server.url + "/")
    page.locator('[data-form="scenario-upload"] textarea[name="scenario"]').fill(
        "kind: Scenario\n"
        "metadata: {name: Not_Valid}\n"
        "simulation: {schedulingCycleDuration: soon}\n"
        "objects:\n"
        "  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: lots}}}\n")
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    problems = page.locator("[data-errors] [data-problem]")
    expect(problems).to_have_count(3)
    expect(problems.nth(0)).to_contain_text('metadata.name: "Not_Valid" must match')
    expect(problems.nth(1)).to_contain_text('simulation.schedulingCycleDuration: "soon" is not a duration')
    expect(problems.nth(2)).to_contain_text('objects[0].status.allocatable.cpu: "lots" is not a quantity')
    assert "/s/" not in page.url
    expect(page.locator('[data-form="scenario-upload"] textarea')).to_contain_text("Not_Valid")


def test_a_pasted_scenario_starts_a_session(server, page):
    page.goto(server.url + "/")
    scenario = (Path(__file__).parents[1] / "scenarios" / "too-big.yaml").read_text()
    page.locator('[data-form="scenario-upload"] textarea[name="scenario"]').fill(scenario)
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    page.wait_for_url("**/s/*/")
    expect(page.locator(".session-title")).to_contain_text("A pod too big for the cluster")


def test_shortcuts_work_after_clicking_a_control_but_not_while_typing(server, open_session):
    s = open_session(server, "too-big")
    s.step("step-event")                      # the Step event button keeps the focus
    s.page.keyboard.press("e")
    s.wait_position(lambda p: p == 2)
    s.page.locator('[data-form="run-until"] input[name="until"]').press("e")   # typing: no step
    s.page.wait_for_timeout(300)
    assert s.position() == 2


def test_a_focused_table_keeps_its_arrow_keys_and_its_focus_across_frames(server, open_session):
    """A keyboard user scrolls a wide table with the arrow keys: while the Filter matrix has the
    focus, → and ← scroll it instead of stepping, and a frame (the presenter steps with a
    button) gives the focus back to the table's new copy."""
    s = open_session(server, "too-big")
    s.step("step-cycle")
    matrix = s.page.locator('[data-keep-scroll="matrix"]')
    matrix.focus()
    at = s.position()
    s.page.keyboard.press("ArrowRight")
    s.page.keyboard.press("ArrowLeft")
    s.page.wait_for_timeout(300)
    assert s.position() == at
    before = s.header.get_attribute("data-version")
    s.page.evaluate("document.querySelector('[data-action=\"back\"]').click()")   # a frame, focus untouched
    s.page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=before)
    assert s.page.evaluate("document.activeElement.getAttribute('data-keep-scroll')") == "matrix"
    # elsewhere the keys step as before
    s.page.evaluate("document.activeElement.blur()")
    s.page.keyboard.press("ArrowRight")
    s.wait_position(lambda p: p == at)
