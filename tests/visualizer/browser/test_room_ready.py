"""Issue 24's "Done when" for the room: every lesson, cue by cue, in presentation mode on a
1280×720 projector (the panel each cue is about is on screen, nothing overflows its panel);
every lesson, event by event, on a follower's 390×844 phone (the page never scrolls sideways);
the compact top bar, the join overlay and the Play/Pause state."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
LESSONS = sorted((ROOT / "fixtures").glob("*.yaml"))


# how a lesson is started from the library: test_classroom.py's
from tests.visualizer.browser.test_classroom import _start  # noqa: E402


@pytest.fixture
def lesson_server(make_server):
    return make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures"),
                       SCHEDULER_PLUGINS=str(ROOT / "docs/examples/coscheduling.py")).start()


# Steps the presenter's page by event until nothing more happens; after each frame calls
# window.__afterStep(position) if the page defines it (awaited), and returns the positions.
STEP_ALL = """async ([limit]) => {
  const header = () => document.querySelector('#panel-header');
  const button = document.querySelector('[data-action="step-event"]');
  const positions = [];
  for (let i = 0; i < limit; i++) {
    const version = header().dataset.version;
    button.click();
    const started = performance.now();
    while (header().dataset.version === version) {
      if (performance.now() - started > 15000) { throw new Error('no frame after step ' + i); }
      await new Promise(r => setTimeout(r, 5));
    }
    const at = +header().dataset.position;
    if (positions.length && at === positions[positions.length - 1]) { break; }
    positions.push(at);
    if (window.__afterStep) { await window.__afterStep(at); }
  }
  return positions;
}"""

# In presentation mode, after each step whose current cue is new: wait for the page to bring
# the cue's panel on screen (two animation frames; motion is off, so no smooth scrolling),
# then record where the cued element is and every element that sticks out of its panel.
CUE_CHECK = """() => {
  window.__cues = [];
  let last = null;
  const frames = n => new Promise(r => { const f = k => k ? requestAnimationFrame(() => f(k - 1)) : r(); f(n); });
  // an element clipped by a scroll container inside the panel (a wide table's wrapper, the log,
  // the node overview) is fine: the container scrolls; what matters is what the panel shows
  const clippedInside = (el, panel) => {
    for (let p = el.parentElement; p && p !== panel; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (/(auto|scroll|hidden)/.test(s.overflowX)) { return true; }
    }
    return false;
  };
  window.__afterStep = async (at) => {
    const cue = document.querySelector('[data-cue-now]');
    const key = cue ? cue.dataset.cue + '|' + (cue.dataset.cuePanel || '') : null;
    if (!cue || key === last) { return; }
    last = key;
    await frames(3);
    const cued = document.querySelector('.panel--cued');
    const vh = window.innerHeight, vw = window.innerWidth;
    const rect = cued ? cued.getBoundingClientRect() : null;
    const overflows = [];
    for (const panel of document.querySelectorAll('.session-grid .panel')) {
      if (!panel.offsetParent && getComputedStyle(panel).position !== 'fixed') { continue; }   // hidden
      const box = panel.getBoundingClientRect();
      if (panel.scrollWidth > panel.clientWidth + 1) {
        overflows.push({panel: panel.id || panel.className, scrollWidth: panel.scrollWidth, clientWidth: panel.clientWidth});
      }
      for (const el of panel.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        if (!r.width || r.right <= box.right + 1 || clippedInside(el, panel)) { continue; }
        overflows.push({panel: panel.id || panel.className, element: el.tagName + '.' + el.className, text: (el.textContent || '').slice(0, 40), right: r.right, panelRight: box.right});
        break;
      }
    }
    const revealed = Array.from(document.querySelectorAll('[data-panel=narrative] [data-cue]')).map(e => +e.dataset.cue);
    window.__cues.push({position: at, cue: +cue.dataset.cue, panel: cue.dataset.cuePanel || null, revealed,
      focus: cue.dataset.cueFocus || null, pick: !!(cued && cued.querySelector('[data-preemption-pick]')),
      cued: cued ? (cued.id || cued.dataset.node || cued.className) : null,
      rect: rect && {top: rect.top, bottom: rect.bottom, left: rect.left, right: rect.right, height: rect.height},
      viewport: [vw, vh], pageWidth: document.documentElement.scrollWidth, overflows});
  };
}"""


# On the follower's phone, after every frame: the page's width (a sideways scroll is a page
# wider than the screen) and the widest element that sticks out.
WIDTH_WATCH = """() => {
  window.__wide = [];
  window.__frames = 0;
  document.addEventListener('htmx:wsAfterMessage', () => {
    requestAnimationFrame(() => {
      window.__frames++;
      const at = +document.querySelector('#panel-header').dataset.position;
      // screen.width, not innerWidth: a phone's browser widens its layout viewport to a page
      // that is too wide (and zooms out), so innerWidth would grow with the page
      const width = document.documentElement.scrollWidth;
      if (width > screen.width) {
        let widest = null;
        for (const el of document.querySelectorAll('body *')) {
          const r = el.getBoundingClientRect();
          if (r.right > screen.width + 1 && (!widest || r.right > widest.right)) {
            widest = {element: el.tagName + '.' + el.className + (el.id ? '#' + el.id : ''), right: r.right};
          }
        }
        window.__wide.push({position: at, width, widest});
      }
    });
  });
}"""


@pytest.mark.parametrize("lesson", [p.name for p in LESSONS], ids=[p.stem[:2] for p in LESSONS])
def test_every_lesson_on_the_projector_and_on_a_followers_phone(lesson_server, browser, lesson):
    """One pass per lesson, event by event: the presenter's page in presentation mode at
    1280×720 checks each new cue (its panel on screen, nothing sticking out of a panel), and a
    follower's 390×844 phone, following live, checks after every frame that it does not scroll
    sideways."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.add_init_script("try { localStorage.setItem('visualizer.motion', '0'); } catch (e) {}")
    _start(page, lesson_server, lesson, "?present=1")
    expect(page.locator("[data-session]")).to_have_class(re.compile(r"session--present"))
    follower_url = page.locator("[data-follower-link]").get_attribute("href")
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                is_mobile=True, has_touch=True)
    follower = phone.new_page()
    follower.set_default_timeout(15_000)
    follower.goto(follower_url)
    follower.wait_for_selector('[data-connection="open"]')
    follower.evaluate(WIDTH_WATCH)
    assert follower.evaluate("document.documentElement.scrollWidth") <= 390
    page.evaluate(CUE_CHECK)

    positions = page.evaluate(STEP_ALL, [3000])

    # -- the projector: every cue of the lesson was reached ("cue N of M" at the end) and checked
    cues = page.evaluate("window.__cues")
    assert cues, f"{lesson}: no cue was shown"
    total = int(re.search(r"of (\d+)", page.locator("[data-cue-now] .cue-label").inner_text()).group(1))
    # a cue due at the same event as a later one (a time cue at 300 s when nothing happens
    # until 330 s) is revealed by the same step, as an earlier cue: stepping by event cannot
    # make it current on its own
    revealed, together = set(), set()
    for c in cues:
        together |= set(c["revealed"]) - revealed - {c["cue"]}
        revealed |= set(c["revealed"])
    assert revealed == set(range(total)), (lesson, sorted(revealed), total)
    assert {c["cue"] for c in cues} | together == set(range(total))
    problems = []
    for c in cues:
        vw, vh = c["viewport"]
        if c["panel"] is None or c["cued"] is None:
            problems.append(("no panel named or marked", c))
            continue
        r = c["rect"]
        # on screen: it starts inside the viewport, and ends inside it unless it is taller
        # than the stage (then its top is at the top of its column)
        on_screen = 0 <= r["top"] < vh - 40 and r["left"] >= 0 and r["right"] <= vw + 1 and (
            r["bottom"] <= vh + 1 or r["top"] <= 160)
        if not on_screen:
            problems.append(("cued panel off screen", c))
        if c["focus"] == "pick" and not c["pick"]:
            problems.append(("a cue on the pick, but the pick table is not the element brought on screen", c))
        if c["overflows"]:
            problems.append(("overflow", c))
        if c["pageWidth"] > vw:
            problems.append(("page scrolls sideways", c))
    assert not problems, f"{lesson}: " + "\n".join(repr(p) for p in problems)

    # -- the phone followed every step and never scrolled sideways
    assert len(positions) > 3
    follower.wait_for_function("p => +document.querySelector('#panel-header').dataset.position === p", arg=positions[-1])
    follower.wait_for_timeout(100)
    frames = follower.evaluate("window.__frames")
    assert frames >= len(positions) // 2, (frames, len(positions))
    wide = follower.evaluate("window.__wide")
    assert not wide, f"{lesson}: the follower's phone scrolls sideways at " + "; ".join(map(repr, wide[:5]))
    phone.close()
    context.close()


def test_the_top_bar_is_compact_and_play_pause_show_which_is_on(lesson_server, page):
    page.set_viewport_size({"width": 1440, "height": 900})
    _start(page, lesson_server, "11-preemption-reprieve.yaml")
    stage = page.locator(".session-grid").bounding_box()
    assert stage["y"] <= 200, f"the stage starts at {stage['y']} px"
    for panel in ("#panel-queues", "#panel-cycle", "[data-panel=narrative]"):
        assert page.locator(panel).bounding_box()["y"] < 900 * 0.4, panel
    play, pause = page.locator('[data-action="play"]'), page.locator('[data-action="pause"]')

    def colours(el):
        return el.evaluate("e => getComputedStyle(e).backgroundColor")
    page.mouse.move(0, 0)
    paused = (colours(play), colours(pause))
    page.locator('[data-form="play"] select[name="speed"]').select_option("1")
    play.click()
    expect(page.locator('[data-run-state="playing"]')).to_be_visible()
    page.mouse.move(0, 0)
    playing = (colours(play), colours(pause))
    # only one of the two looks like the action in force: Play while paused, Pause while playing
    assert paused[0] != playing[0] and paused[1] != playing[1], (paused, playing)
    assert playing[0] == page.evaluate("getComputedStyle(document.querySelector('#panel-queues')).backgroundColor")
    pause.click()
    expect(page.locator('[data-run-state="paused"]')).to_be_visible()
    page.mouse.move(0, 0)          # no hover on either
    assert (colours(play), colours(pause)) == paused
    # icons are inline SVG, not font glyphs
    assert page.locator('[data-controls] svg.icon').count() >= 6
    # the exports are a menu
    links = page.locator("[data-exports] a")
    expect(links.first).to_be_hidden()
    page.locator("[data-exports] summary").click()
    expect(links).to_have_count(4)
    expect(links.first).to_be_visible()


def test_the_join_overlay_fills_the_screen_with_the_qr_and_the_short_link(lesson_server, page):
    page.set_viewport_size({"width": 1440, "height": 900})
    _start(page, lesson_server, "01-activeq-order.yaml")
    expect(page.locator("[data-follower-qr] svg")).to_be_hidden()       # folded away until asked for
    page.locator('[data-view-options] [data-toggle="share"]').click()
    qr = page.locator("[data-follower-qr] svg").bounding_box()
    assert qr["height"] >= 0.6 * 900 and qr["width"] == pytest.approx(qr["height"], abs=1), qr
    link = page.locator("[data-join-short] a")
    size = link.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert size >= 40, f"the short link is {size} px"
    text = link.inner_text()
    assert re.fullmatch(r"127\.0\.0\.1:\d+/j/[\w-]{8}/", text), text
    # the short link leads to the follower's page
    follower = page.context.new_page()
    follower.goto(link.get_attribute("href"))
    expect(follower.locator("[data-session]")).to_have_attribute("data-role", "follower")
    follower.close()
