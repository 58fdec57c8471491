"""Lesson 20 in the browser: pods waiting on Permit in their own column and on their node
cards (with the time left), their release at the timeout, the quorum when a node joins; the
PodGroup listed under the cluster; a custom resource injected from the YAML form. Also takes
docs/images/permit-waiting.png for docs/ui-tour.md."""
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images"


def run_until(s, seconds: str) -> None:
    s.page.locator('[data-form="run-until"] input[name="until"]').fill(seconds)
    s.page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(s.page.locator("[data-clock]")).to_have_text(seconds)


def waiting(s) -> list:
    return s.page.locator("[data-waiting-on-permit] [data-permit-waiting-pod]").evaluate_all(
        "els => els.map(e => [e.dataset.permitWaitingPod, e.dataset.nodeName])")


def test_the_gang_waits_times_out_and_binds_together(make_server, page, open_session):
    srv = make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures"),
                      SCHEDULER_PLUGINS=str(ROOT / "docs/examples/coscheduling.py")).start()
    page.set_viewport_size({"width": 1280, "height": 720})
    s = open_session(srv, "gang-scheduling")
    run_until(s, "5")
    assert waiting(s) == [["default/train-0", "n1"], ["default/train-1", "n2"]]
    column = page.locator("[data-waiting-on-permit]")
    expect(column.locator('[data-permit-waiting-pod="default/train-0"] [data-permit-plugin="Coscheduling"]')) \
        .to_contain_text("5 s left (times out at 10 s)")
    card = page.locator('[data-node="n1"] [data-pod="default/train-0"]')
    expect(card).to_have_attribute("data-phase", "Waiting")
    expect(card.locator("[data-permit-remaining]")).to_have_text("5")
    assert s.pods_in("unschedulablePods") == ["default/train-2"]
    expect(page.locator('[data-custom-object="PodGroup/default/train"]')).to_contain_text("minMember: 3")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.locator("#panel-queues").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(IMAGES / "permit-waiting.png"), animations="disabled")

    # the timers fire at 10 s: the nodes are given back and the next members wait in turn
    run_until(s, "10")
    assert waiting(s) == [["default/train-0", "n2"], ["default/train-2", "n1"]]
    expect(page.locator('[data-log] [data-event-type="PermitTimeout"]').first).to_contain_text(
        "rejected due to timeout after waiting 10s at plugin Coscheduling")
    expect(page.locator('[data-node="n1"] [data-pod="default/train-2"]')).to_have_attribute("data-phase", "Waiting")

    # n3 joins at 25 s: the quorum is reached and the three bind together
    run_until(s, "25")
    assert waiting(s) == []
    expect(column).to_contain_text("no pod waiting")
    for pod, node in (("train-0", "n3"), ("train-1", "n1"), ("train-2", "n2")):
        expect(page.locator(f'[data-node="{node}"] [data-pod="default/{pod}"]')).to_have_attribute("data-phase", "Running")

    # a presenter injects an update of the PodGroup (validated like an action), then deletes it
    form = page.locator('[data-form="inject-yaml"]')
    form.evaluate("f => f.closest('details').open = true")
    form.locator('select[name="verb"]').select_option("update")
    form.locator("textarea").fill("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                                  "metadata: {name: train}\nspec: {minMember: 5}")
    form.locator('button[type="submit"]').click()
    expect(page.locator('[data-custom-object="PodGroup/default/train"]')).to_contain_text("minMember: 5")
    form.locator("textarea").fill("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: Bad_Name}")
    form.locator('button[type="submit"]').click()
    expect(page.locator('[data-status-kind="error"]')).to_contain_text("inject[1].update.metadata.name")
    form.locator('select[name="verb"]').select_option("delete")
    form.locator("textarea").fill("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: train}")
    form.locator('button[type="submit"]').click()
    expect(page.locator("[data-custom-objects]")).to_contain_text("none now")
