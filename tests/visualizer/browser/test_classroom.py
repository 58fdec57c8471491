"""The page a class can trust: every panel at one moment, presentation mode, phones, moving pods,
the join code and the presenter link, the chart, the served docs."""
from pathlib import Path

import pytest
from playwright.sync_api import expect

from engine import Scenario
from engine.stepper import Stepper

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
LESSONS = sorted((ROOT / "fixtures").glob("*.yaml"))

# One DOM query per step: where every pod is shown, the queue headers and the metrics.
READ_PAGE = """() => {
  const keys = sel => Array.from(document.querySelectorAll(sel));
  const out = {position: +document.querySelector('#panel-header').dataset.position,
               idle: !!document.querySelector('[data-run-state="idle"]'), queues: {}, counts: {}, metrics: {}};
  for (const q of keys('[data-queue]')) {
    out.queues[q.dataset.queue] = keys(`[data-queue="${q.dataset.queue}"] [data-pod]`).map(e => e.dataset.pod);
    out.counts[q.dataset.queue] = +q.querySelector('.count').textContent;
  }
  out.inFlight = keys('[data-in-flight-pod]').map(e => e.dataset.inFlightPod);
  out.waiting = keys('[data-waiting-pod]').map(e => e.dataset.waitingPod);
  out.onNodes = keys('[data-node] [data-pod]').map(e => e.dataset.pod);
  for (const m of keys('[data-metric]')) { out.metrics[m.dataset.metric] = +m.querySelector('strong').textContent; }
  return out;
}"""


def _pending_by_position(path):
    """For each position of the lesson's run: the pending pods of the engine's own state then
    (at the end of a unit of work, or as the position's last event was emitted), computed here
    in the test process, independently of the page."""
    st = Stepper(Scenario.from_text(path.read_text(encoding="utf-8"), path.name))
    at_event, at_unit_end, binding = {}, {}, {}

    def sink(e):
        if e["type"] == "CycleEnd" and e.get("result") == "Scheduled":
            binding[e["pod"]] = True
        elif e["type"] in ("Bound", "BindFailed"):
            binding.pop(e["pod"], None)
        # a pod whose bind completion runs is Binding (Engine.state() says Pending meanwhile)
        at_event[e["seq"]] = {k for k, v in st.engine.state()["pods"].items()
                              if v["phase"] == "Pending" and k not in binding}
    st.trace.add_sink(sink)
    advance = st._advance_unit

    def advance_unit(until=None):
        did = advance(until)
        at_unit_end[len(st.events)] = {k for k, v in st.engine.state()["pods"].items() if v["phase"] == "Pending"}
        return did
    st._advance_unit = advance_unit
    while st.step_event():
        pass
    return {p: at_unit_end.get(p, at_event.get(p - 1, set())) for p in range(1, len(st.events) + 1)}


@pytest.fixture
def lesson_server(make_server):
    return make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures")).start()


def _start(page, server, filename, query=""):
    page.goto(server.url + "/")
    page.locator(f'form:has(input[name="fixture"][value="{filename}"]) [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    if query:
        page.goto(page.url + query)
    page.wait_for_selector('[data-connection="open"]')


def test_every_lesson_stepped_by_event_shows_each_pending_pod_in_exactly_one_place(lesson_server, page):
    """Step every lesson event by event; at each position, every pending pod of the engine's
    state is shown in exactly one place (a queue, in flight, waiting), no bound pod is in a
    queue, and each queue's header count equals the metrics panel."""
    page.add_init_script("localStorage.setItem('visualizer.motion', '0')")   # frames swap at once
    checked = total = 0
    for path in LESSONS:
        expected = _pending_by_position(path)
        total += len(expected)
        _start(page, lesson_server, path.name)
        last = 0
        while True:
            version = page.locator("#panel-header").get_attribute("data-version")
            page.keyboard.press("e")
            page.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
            seen = page.evaluate(READ_PAGE)
            p = seen["position"]
            where = f"{path.name} after event {p}"
            if p == last:   # nothing more happens: the run is over
                assert p == len(expected), where
                break
            assert p == last + 1, where
            last = p
            places = [k for q in seen["queues"].values() for k in q] + seen["inFlight"] + seen["waiting"]
            assert sorted(places) == sorted(expected[p]), where
            assert len(seen["inFlight"]) <= 1, where
            assert not set(seen["onNodes"]) & set(places), where
            m = seen["metrics"]
            assert seen["counts"] == {q: len(keys) for q, keys in seen["queues"].items()}, where
            assert (seen["counts"]["activeQ"], seen["counts"]["backoffQ"], seen["counts"]["unschedulablePods"]) == \
                (m["active"], m["backoff"], m["unschedulable"] + m["gated"]), where
            checked += 1
    assert checked == total > 2000
