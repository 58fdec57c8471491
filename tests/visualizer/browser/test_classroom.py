"""The page a class can trust: every panel at one moment, presentation mode, phones, moving pods,
the join code and the presenter link, the chart, the served docs."""
import importlib.util
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("moment_reference", ROOT / "tests/visualizer/moment_reference.py")
moment_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(moment_reference)
LESSONS = sorted((ROOT / "fixtures").glob("*.yaml"))

# Steps the run by event inside the page until nothing more happens, reading after each frame,
# in one DOM pass, where every pod is shown, the queue headers and the metrics. The loop runs
# in the browser so that a step costs one WebSocket round trip, not several Playwright calls.
STEP_THROUGH = """async (limit) => {
  const keys = sel => Array.from(document.querySelectorAll(sel));
  const header = () => document.querySelector('#panel-header');
  const read = () => {
    const out = {position: +header().dataset.position, queues: {}, counts: {}, metrics: {}};
    for (const q of keys('[data-queue]')) {
      out.queues[q.dataset.queue] = Array.from(q.querySelectorAll('[data-pod]')).map(e => e.dataset.pod);
      out.counts[q.dataset.queue] = +q.querySelector('.count').textContent;
    }
    out.inFlight = keys('[data-in-flight-pod]').map(e => e.dataset.inFlightPod);
    out.waiting = keys('[data-waiting-pod]').map(e => e.dataset.waitingPod);
    out.permit = keys('[data-permit-waiting-pod]').map(e => e.dataset.permitWaitingPod);
    out.onNodes = keys('[data-node] [data-pod]').map(e => e.dataset.pod);
    for (const m of keys('[data-metric]')) { out.metrics[m.dataset.metric] = +m.querySelector('strong').textContent; }
    return out;
  };
  const button = document.querySelector('[data-action="step-event"]');
  const seen = [];
  for (let i = 0; i < limit; i++) {
    const version = header().dataset.version;
    button.click();
    const started = performance.now();
    while (header().dataset.version === version) {
      if (performance.now() - started > 15000) { throw new Error('no frame after step ' + i); }
      await new Promise(r => setTimeout(r, 5));
    }
    const now = read();
    if (seen.length && now.position === seen[seen.length - 1].position) { break; }
    seen.push(now);
  }
  return seen;
}"""


def _pending_by_position(path):
    """For each position of the lesson's run: the pending pods of the engine's own state then
    (tests/visualizer/moment_reference.py), computed in the test process, apart from the page."""
    st, reference = moment_reference.walk(path)
    out = {}
    # read each position's reference as the page's step lands there: a unit of work without
    # events (a binding cycle waking from WaitOnPermit, allowed) runs only with the next step
    while st.step_event():
        ref = reference(st.position)
        out[st.position] = ({k for k, v in ref["pods"].items() if v["phase"] == "Pending"},
                            set(ref.get("waitingPods") or {}))
    return out


@pytest.fixture
def lesson_server(make_server):
    return make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures"),
                       SCHEDULER_PLUGINS=str(ROOT / "docs/examples/coscheduling.py")).start()


def _start(page, server, filename, query=""):
    page.goto(server.url + "/")
    page.locator(f'form:has(input[name="fixture"][value="{filename}"]) [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    if query:
        page.goto(page.url + query)
    page.wait_for_selector('[data-connection="open"]', state="attached")   # hidden on the projector


def test_every_lesson_stepped_by_event_shows_each_pending_pod_in_exactly_one_place(lesson_server, page):
    """Step every lesson event by event; at each position, every pending pod of the engine's
    state is shown in exactly one place (a queue, in flight, waiting), no bound pod is in a
    queue, and each queue's header count equals the metrics panel."""
    page.add_init_script("localStorage.setItem('visualizer.motion', '0')")   # frames swap at once
    checked = total = 0
    from tests.conftest import load_lesson_plugins, unload_lesson_plugins
    loaded = load_lesson_plugins()      # the reference runs in this process
    for path in LESSONS:
        expected = _pending_by_position(path)
        total += len(expected)
        _start(page, lesson_server, path.name)
        for p, seen in enumerate(page.evaluate(STEP_THROUGH, len(expected) + 5), start=1):
            where = f"{path.name} after event {p}"
            assert seen["position"] == p, where
            places = [k for q in seen["queues"].values() for k in q] + seen["inFlight"] + seen["waiting"]
            pending, waiting_on_permit = expected[p]
            assert sorted(places) == sorted(pending), where
            assert set(seen["permit"]) == waiting_on_permit, where
            assert len(seen["inFlight"]) <= 1, where
            assert not set(seen["onNodes"]) & set(places), where
            m = seen["metrics"]
            assert seen["counts"] == {q: len(keys) for q, keys in seen["queues"].items()}, where
            assert (seen["counts"]["activeQ"], seen["counts"]["backoffQ"], seen["counts"]["unschedulablePods"]) == \
                (m["active"], m["backoff"], m["unschedulable"] + m["gated"]), where
            checked += 1
        assert p == len(expected), f"{path.name} stopped at event {p} of {len(expected)}"
    unload_lesson_plugins(loaded)
    assert checked == total > 2000


def _box(page, selector):
    return page.locator(selector).first.bounding_box()


def test_presentation_mode_puts_queues_cycle_and_cue_above_the_fold(lesson_server, page):
    page.set_viewport_size({"width": 1280, "height": 720})
    _start(page, lesson_server, "11-preemption-reprieve.yaml")
    normal_size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('[data-session]')).fontSize)")
    page.locator('[data-toggle="present"]').click()
    expect(page.locator('[data-toggle="present"]')).to_have_attribute("aria-pressed", "true")
    for _ in range(3):
        version = page.locator("#panel-header").get_attribute("data-version")
        page.keyboard.press("c")
        page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
    expect(page.locator("[data-cue-now]")).to_be_visible()
    expect(page.locator("[data-filter-matrix], [data-panel=preemption] [data-reprieve-step]").first).to_be_visible()
    present_size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('[data-session]')).fontSize)")
    assert present_size >= normal_size * 1.1   # larger type
    # the layout at rest (each cue scrolled its panel into view: test_cue_panels.py)
    page.evaluate("window.scrollTo(0, 0); document.querySelectorAll('.col').forEach(c => c.scrollTo(0, 0))")
    queues, cycle, cue = (_box(page, s) for s in ("#panel-queues", "#panel-cycle", "[data-cue-now]"))
    for name, box in (("queues", queues), ("cycle", cycle), ("cue", cue)):
        assert box["y"] >= 0 and box["y"] + min(box["height"], 160) <= 720, (name, box)
    queue_header = _box(page, '[data-queue="unschedulablePods"] h3')
    assert queue_header["y"] + queue_header["height"] <= 720
    in_flight = _box(page, "[data-between]")
    assert in_flight["y"] + in_flight["height"] <= 720
    # side by side: the cycle beside the queues, the cue beside the stage (not at the bottom)
    assert cycle["x"] >= queues["x"] + queues["width"] - 1
    assert cue["x"] >= cycle["x"] + cycle["width"] - 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # the choice is remembered; ?present=0 leaves presentation mode
    page.reload()
    page.wait_for_selector('[data-connection="open"]', state="attached")   # hidden on the projector
    expect(page.locator("[data-session]")).to_have_class(re.compile(r"session--present"))
    page.goto(page.url.split("?")[0] + "?present=0")
    expect(page.locator('[data-toggle="present"]')).to_have_attribute("aria-pressed", "false")


def test_phone_layout_stacks_without_sideways_scrolling(lesson_server, browser):
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                                has_touch=True)
    page = phone.new_page()
    page.set_default_timeout(15_000)
    _start(page, lesson_server, "11-preemption-reprieve.yaml")
    for _ in range(2):
        version = page.locator("#panel-header").get_attribute("data-version")
        page.locator('[data-action="step-cycle"]').click()
        page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the presenter's page scrolls sideways ({width} px)"
    boxes = [_box(page, s) for s in ("#panel-narrative", "#panel-queues", "#panel-cycle", "#panel-log")]
    for box in boxes:
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert [b["y"] for b in boxes] == sorted(b["y"] for b in boxes)   # one column
    follower_url = page.locator("[data-follower-link]").get_attribute("href")
    follower = phone.new_page()
    follower.goto(follower_url)
    follower.wait_for_selector('[data-connection="open"]')
    assert follower.evaluate("document.documentElement.scrollWidth") <= 390
    expect(follower.locator(".panel-log-filter")).to_be_hidden()             # compact
    expect(follower.locator("#panel-queues")).to_be_visible()
    expect(follower.locator("[data-cue-now]")).to_be_visible()
    phone.close()


def test_pods_move_with_a_view_transition_that_can_be_turned_off(lesson_server, page):
    page.add_init_script("""
      window.__transitions = 0;
      const start = document.startViewTransition && document.startViewTransition.bind(document);
      if (start) { document.startViewTransition = cb => { window.__transitions++; return start(cb); }; }
    """)
    _start(page, lesson_server, "02-backoff-growth.yaml")
    expect(page.locator('[data-toggle="motion"]')).to_be_checked()

    def step(key):
        version = page.locator("#panel-header").get_attribute("data-version")
        page.keyboard.press(key)
        page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)

    step("c")
    assert page.evaluate("window.__transitions") >= 1
    # the pod lands with the message of its transition
    expect(page.locator("#panel-queues [data-why], #panel-nodes [data-why]").first).to_be_visible()
    names = page.evaluate("""Array.from(document.querySelectorAll('[data-pod], [data-in-flight-pod]'))
                               .map(e => getComputedStyle(e).viewTransitionName)""")
    assert names and all(n.startswith("pod-") for n in names) and len(set(names)) == len(names)
    page.locator('[data-toggle="motion"]').uncheck()
    before = page.evaluate("window.__transitions")
    step("c")
    assert page.evaluate("window.__transitions") == before
    page.reload()
    page.wait_for_selector('[data-connection="open"]')
    expect(page.locator('[data-toggle="motion"]')).not_to_be_checked()   # remembered


def test_only_a_frame_that_moves_a_pod_is_swapped_in_a_view_transition(lesson_server, page):
    page.add_init_script("""
      window.__transitions = 0;
      const start = document.startViewTransition && document.startViewTransition.bind(document);
      if (start) { document.startViewTransition = cb => { window.__transitions++; return start(cb); }; }
    """)
    _start(page, lesson_server, "02-backoff-growth.yaml")
    # where each pod is shown: its list (a queue, a node, in flight, waiting), in page order
    places = """() => Array.from(document.querySelectorAll(
        '#panel-queues [data-pod], #panel-queues [data-in-flight-pod], #panel-queues [data-waiting-pod], #panel-nodes [data-pod]'))
      .map(e => {
        const list = e.closest('[data-queue], [data-node], [data-between]');
        const where = list ? (list.dataset.queue || list.dataset.node || 'between') : '';
        const kind = e.dataset.pod ? 'pod' : e.dataset.inFlightPod ? 'flight' : 'waiting';
        return getComputedStyle(e).viewTransitionName + ' ' + kind + '@' + where;
      }).join('|')"""
    seen = set()
    for _ in range(30):
        before, transitions = page.evaluate(places), page.evaluate("window.__transitions")
        version = page.locator("#panel-header").get_attribute("data-version")
        page.keyboard.press("e")
        page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
        moved = page.evaluate(places) != before
        assert (page.evaluate("window.__transitions") > transitions) == moved
        seen.add(moved)
    assert seen == {True, False}, "steps that move pods and steps that do not"


def test_reduced_motion_turns_the_moves_off(lesson_server, browser):
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.add_init_script("""
      window.__transitions = 0;
      const start = document.startViewTransition && document.startViewTransition.bind(document);
      if (start) { document.startViewTransition = cb => { window.__transitions++; return start(cb); }; }
    """)
    _start(page, lesson_server, "02-backoff-growth.yaml")
    expect(page.locator('[data-toggle="motion"]')).not_to_be_checked()
    version = page.locator("#panel-header").get_attribute("data-version")
    page.keyboard.press("c")
    page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
    assert page.evaluate("window.__transitions") == 0
    context.close()


def test_join_code_and_copying_the_presenter_link(lesson_server, page, context):
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    _start(page, lesson_server, "01-activeq-order.yaml")
    presenter_url = page.url
    token = presenter_url.rstrip("/").rsplit("/", 1)[1]
    assert token not in page.locator("body").inner_text()
    # links that carry it lead only to the presenter's own pages (what changed, compare, the report), which
    # keep the presenter's role; none shows it
    hrefs = page.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.href)")
    assert {h.split(token, 1)[1] for h in hrefs if token in h} <= {"/changes/", "/compare/", "/report/"}
    assert [h for h in hrefs if token in h], "the compare link keeps the presenter's role"
    page.locator('[data-view-options] [data-toggle="share"]').click()
    expect(page.locator("[data-follower-qr] svg")).to_be_visible()
    page.locator("[data-copy-presenter-link]").click()
    expect(page.locator("[data-copy-result]")).to_have_text("✓ copied")
    assert page.evaluate("navigator.clipboard.readText()") == presenter_url
    # the join code, large over the page, and Escape closes it
    qr = _box(page, "[data-follower-qr] svg")
    assert qr["width"] >= 300
    page.keyboard.press("Escape")
    expect(page.locator("[data-session]")).not_to_have_class(re.compile(r"session--share"))


def test_space_plays_and_pauses_after_a_mouse_click_on_a_step_button(lesson_server, page):
    _start(page, lesson_server, "03-backoff-max-too-low.yaml")
    version = page.locator("#panel-header").get_attribute("data-version")
    page.locator('[data-action="step-event"]').click()
    page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
    page.keyboard.press(" ")
    expect(page.locator('[data-run-state="playing"]')).to_be_visible()
    page.keyboard.press(" ")
    expect(page.locator('[data-run-state="paused"]')).to_be_visible()


def test_the_chart_has_axes_ticks_and_hover_values(lesson_server, page):
    _start(page, lesson_server, "02-backoff-growth.yaml")
    page.locator('[data-form="run-until"] input[name="until"]').fill("20")
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(page.locator("[data-clock]")).to_have_text("20")
    chart = page.locator("[data-chart]")
    x_ticks = chart.locator(".tick--x").all_text_contents()
    assert len(x_ticks) >= 3 and x_ticks[0] == "0 s" and all(t.endswith(" s") for t in x_ticks)
    assert chart.locator(".tick--y").count() >= 2
    expect(chart.locator(".axis-label")).to_have_text("virtual time (s)")
    colours = {chart.locator(f".line--{q}").get_attribute("stroke") for q in ("activeQ", "backoffQ", "unschedulablePods")}
    assert len(colours) == 3
    band = chart.locator(".chart-bands rect").last
    assert re.match(r"t = [\d.]+ s: activeQ \d+, backoffQ \d+, unschedulablePods \d+$", band.get_attribute("data-values"))
    assert band.locator("title").text_content() == band.get_attribute("data-values")


def test_small_fixes(lesson_server, page):
    # a long problem wraps inside the error box
    page.goto(lesson_server.url + "/")
    page.locator('[data-form="scenario-upload"] textarea[name="scenario"]').fill(
        "kind: Scenario\nmetadata:\n  name: " + "X" * 400 + "\n")
    page.locator('[data-form="scenario-upload"] button[type="submit"]').click()
    errors = page.locator("[data-errors]")
    expect(errors).to_be_visible()
    assert errors.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    # the docs are linked from the upload form
    page.locator('[data-doc-link="scenario-format"]').click()
    expect(page.locator("[data-doc] h1").first).to_have_text("The scenario file")
    # no empty Narrative heading; the controls do not jump when the note appears
    _start(page, lesson_server, "06-move-request-node-add.yaml")
    controls = _box(page, "[data-controls]")["y"]
    version = page.locator("#panel-header").get_attribute("data-version")
    page.keyboard.press("e")
    page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
    expect(page.locator("[data-partial-unit]")).to_be_visible()
    assert _box(page, "[data-controls]")["y"] == controls
    # zero-capacity resources are not on the node cards
    rows = page.locator("[data-node] [data-resource]").evaluate_all(
        "rs => rs.map(r => r.querySelector('.numbers').textContent.trim())")
    assert rows and not any(r.startswith("0 / 0") for r in rows)
    # a 3-digit counter fits its badge
    page.evaluate("document.querySelector('[data-queue=activeQ] .count').textContent = '188'")
    assert page.locator("[data-queue=activeQ] .count").evaluate("e => e.scrollWidth <= e.clientWidth + 1")


def test_min_sum_priorities_explains_its_offset(lesson_server, page):
    _start(page, lesson_server, "13-pick-min-sum-priorities.yaml")
    for _ in range(4):
        version = page.locator("#panel-header").get_attribute("data-version")
        page.keyboard.press("c")
        page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
        if page.locator("[data-criterion-help]").count():
            break
    expect(page.locator("[data-criterion-help]")).to_have_attribute("title", re.compile(r"2147483648 \(MaxInt32 \+ 1\)"))
