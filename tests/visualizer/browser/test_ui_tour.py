"""The screenshots of docs/ui-tour.md, taken in a real browser on every run.

The test drives the lessons in fixtures/ (and one pasted example) to the moments the tour
describes, checks that the page shows what the tour says it shows there, and saves each
view as a 1280×720 PNG in docs/images/ (the files are deleted first, so every run writes
them anew). Commit the PNGs this test wrote when the page changes.
"""
import struct
import time
import zlib
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images"
WIDTH, HEIGHT = 1280, 720
SHOTS = ("library.png", "queues.png", "cycle.png", "preemption.png", "nodes-preemption.png",
         "narrative-cues.png", "log-filter.png", "follower.png", "metrics.png", "join-code.png",
         "presentation.png", "presentation-projector.png", "phone.png")
PHONE = (390, 844)
SIZES = {"phone.png": PHONE}


def png_facts(path: Path) -> dict:
    """Width, height and pixel data of a PNG (enough to tell a real screenshot from an
    empty or blank file without an imaging library)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = header[:4]
    pixels = zlib.decompress(idat)
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    assert depth == 8 and len(pixels) == height * (1 + width * channels), f"{path.name}: unexpected layout"
    return {"width": width, "height": height, "bytes": len(data), "pixels": pixels}


def scroll_to(page, selector: str) -> None:
    """Put the element at the top of the viewport (or the page's top for None)."""
    if selector is None:
        page.evaluate("window.scrollTo(0, 0)")
    else:
        page.locator(selector).first.evaluate("e => e.scrollIntoView({block: 'start'})")


def run_until(s, seconds: str) -> None:
    s.page.locator('[data-form="run-until"] input[name="until"]').fill(seconds)
    s.page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(s.page.locator("[data-clock]")).to_have_text(seconds)


def test_the_ui_tour_screenshots(make_server, page, context, browser, session_page):
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in SHOTS:
        (IMAGES / name).unlink(missing_ok=True)
    started = time.time()
    srv = make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures")).start()
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    def shot(name, selector=None, on=None):
        target = on or page
        scroll_to(target, selector)
        target.screenshot(path=str(IMAGES / name), animations="disabled")

    def start(name):
        page.goto(srv.url + "/")
        page.locator(f'[data-scenario="{name}"] [data-action="start"]').click()
        page.wait_for_url("**/s/*/")
        page.wait_for_selector('[data-connection="open"]')
        return session_page(page)

    # -- the library: every lesson's first paragraph, the upload form beside them
    page.goto(srv.url + "/")
    expect(page.locator("[data-scenario]")).to_have_count(len(list((ROOT / "fixtures").glob("*.yaml"))))
    expect(page.locator('[data-form="scenario-upload"] textarea[name="scenario"]')).to_be_in_viewport()
    expect(page.locator('[data-scenario="activeq-order"] details summary')).to_have_text("Read the full narrative")
    shot("library.png")

    # -- the queues: n2 joins at 5 s; early goes to activeQ, late to backoffQ, huge and picky stay
    s = start("move-request-node-add")
    run_until(s, "4.9")
    for _ in range(20):
        s.step("step-event")
        if all(s.pods_in(q) for q in ("activeQ", "backoffQ", "unschedulablePods")):
            break
    assert s.pods_in("activeQ") == ["default/early"]
    assert s.pods_in("backoffQ") == ["default/late"]
    assert s.pods_in("unschedulablePods") == ["default/huge", "default/picky"]
    shot("queues.png")

    # -- the event log filtered by a pod, then the same session from a follower's link
    run_until(s, "7")
    log_filter = page.locator('[data-form="log-filter"]')
    log_filter.locator('input[name="pod"]').fill("default/late")
    log_filter.locator('button[type="submit"]').click()
    expect(page.locator("[data-log-count]")).to_contain_text("matching")
    expect(page.locator('[data-log] [data-event-type="Bound"]')).to_contain_text("default/late bound to n2")
    shot("log-filter.png", ".panel-log-filter")

    follower = context.new_page()
    follower.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    follower.goto(page.locator("[data-follower-link]").get_attribute("href"))
    follower.wait_for_selector('[data-connection="open"]')
    expect(follower.locator("[data-follower-note]")).to_be_visible()
    expect(follower.locator("[data-controls]")).to_have_count(0)
    shot("follower.png", on=follower)
    follower.close()

    # -- the current cycle: a pasted scenario whose first cycle filters out n1 and scores n2, n3
    page.goto(srv.url + "/")
    page.locator('[data-form="scenario-upload"] textarea[name="scenario"]').fill(
        (ROOT / "docs" / "examples" / "events.yaml").read_text(encoding="utf-8"))
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    page.wait_for_url("**/s/*/")
    page.wait_for_selector('[data-connection="open"]')
    s = session_page(page)
    s.step("step-cycle")
    expect(page.locator('[data-filter-matrix] tr.row--fail[data-filter-node="n1"]')).to_contain_text("Insufficient cpu")
    expect(page.locator("[data-scores] tr[data-score-node]")).to_have_count(2)
    expect(page.locator("[data-selected-node]")).to_have_attribute("data-selected-node", "n2")
    shot("cycle.png", '[data-panel="cycle"]')

    # -- preemption: the dry run on n1 and n2, the reprieve steps, the pick
    s = start("preemption-reprieve")
    s.step("step-cycle")
    panel = page.locator('[data-panel="preemption"]')
    expect(panel.locator("[data-reprieve-step]")).to_have_count(4)
    expect(panel.locator('[data-reprieve-step][data-reprieved="true"]')).to_have_attribute("data-victim", "default/a")
    expect(panel.locator("[data-deciding-criterion]")).to_have_text("minNumPDBViolatingVictims")
    expect(panel.locator('th[data-candidate="n1"][data-chosen]')).to_contain_text("chosen")
    shot("preemption.png", '[data-panel="preemption"]')

    # -- the nominated pod and the terminating victims on the node cards, just after the
    #    second victim's PodDeleted
    last_row = page.locator("[data-log] .log-row").last
    for _ in range(10):
        s.step("step-event")
        if last_row.get_attribute("data-event-type") == "PodDeleted" and "default/c" in last_row.inner_text():
            break
    expect(page.locator('[data-node="n1"] [data-pod="default/c"]')).to_have_attribute("data-phase", "Terminating")
    expect(page.locator('[data-node="n1"] [data-nominated-pod="default/urgent"]')).to_be_visible()
    expect(page.locator('[data-node="n1"] [data-pod="default/b"]')).to_contain_text("3 s of grace left")
    shot("nodes-preemption.png", ".panel-cluster")
    expect(page.locator("[data-panel=narrative] [data-cue-now]")).to_contain_text("start terminating")
    expect(page.locator("[data-panel=narrative] .cues-earlier summary")).to_contain_text("Earlier cues")
    page.locator("[data-panel=narrative] .cues-earlier summary").click()
    shot("narrative-cues.png", "[data-panel=narrative]")

    # -- the join code: the follower link large, with its QR code; the presenter link is not shown
    page.locator('[data-view-options] [data-toggle="share"]').click()
    expect(page.locator("[data-follower-qr] svg")).to_be_visible()
    assert page.url.rstrip("/").rsplit("/", 1)[1] not in page.locator("body").inner_text()
    shot("join-code.png")
    page.keyboard.press("Escape")

    # -- the metrics: pods per queue over virtual time, with axes and a legend
    s = start("backoff-growth")
    run_until(s, "20")
    expect(page.locator("[data-chart] .tick--x").first).to_have_text("0 s")
    shot("metrics.png", '[data-panel="metrics"]')

    # -- a student's phone: the follower's page in one column, no sideways scrolling
    phone = browser.new_context(viewport={"width": PHONE[0], "height": PHONE[1]}, is_mobile=True, has_touch=True)
    phone_page = phone.new_page()
    phone_page.goto(page.locator("[data-follower-link]").get_attribute("href"))
    phone_page.wait_for_selector('[data-connection="open"]')
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= PHONE[0]
    shot("phone.png", on=phone_page)
    phone.close()

    # -- presentation mode: queues, the panel of the current cue and the cue above the fold
    s = start("preemption-reprieve")
    page.locator('[data-toggle="present"]').click()
    s.step("step-cycle")   # urgent's first cycle: the dry run, the reprieve, the pick
    for _ in range(2):
        s.step("step-event")
    expect(page.locator("[data-cue-now]")).to_be_in_viewport()
    # the cue is about the pick: the preemption panel's pickOneNodeForPreemption table is
    # brought into its column, outlined
    expect(page.locator("[data-cue-now]")).to_have_attribute("data-cue-panel", "preemption")
    expect(page.locator("[data-cue-now]")).to_have_attribute("data-cue-focus", "pick")
    expect(page.locator("#panel-preemption .panel--cued [data-preemption-pick]")).to_be_in_viewport()
    expect(page.locator("#panel-queues")).to_be_in_viewport()
    shot("presentation.png")
    # -- the projector theme: dark, high contrast, larger type
    page.locator('[data-view-options] [data-toggle="theme"]').click()
    expect(page.locator("html")).to_have_attribute("data-theme", "projector")
    shot("presentation-projector.png")
    page.locator('[data-view-options] [data-toggle="theme"]').click()
    expect(page.locator("html")).not_to_have_attribute("data-theme", "projector")
    page.locator('[data-toggle="present"]').click()

    for name in SHOTS:
        path = IMAGES / name
        assert path.is_file(), f"{name} was not written"
        assert path.stat().st_mtime >= started - 1
        facts = png_facts(path)
        assert (facts["width"], facts["height"]) == SIZES.get(name, (WIDTH, HEIGHT)), name
        assert facts["bytes"] > 20_000, f"{name} is suspiciously small ({facts['bytes']} bytes)"
        assert len(set(facts["pixels"][::97])) > 16, f"{name} looks blank"
