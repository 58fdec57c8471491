"""The CycleState inspector in a real browser (issue 26): in a scenario with topology spread
constraints, the current cycle's "CycleState" disclosure loads, on opening, what PreFilter and
PreScore stored (PodTopologySpread's critical paths, the minimum first), and so does the same
cycle in the pod's history; the session's position does not move."""
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_a_pod_topology_spread_cycles_cyclestate_on_the_page_and_in_the_history(server, page, open_session):
    page.set_viewport_size({"width": 1440, "height": 900})
    s = open_session(server, "topology-spread")
    page.locator('[data-form="run-until"] input[name="until"]').fill("5")
    page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(page.locator('#panel-cycle [data-cycle-result="Scheduled"]')).to_be_visible()
    position = s.position()

    disclosure = page.locator('#panel-cycle details[data-cycle-state="1"]')
    expect(disclosure).to_have_count(1)
    disclosure.locator("summary").click()
    table = disclosure.locator("table.cycle-state-table")
    expect(table).to_be_visible()
    pts = table.locator('[data-cs-point="PreFilter"] tr[data-cs-plugin="PodTopologySpread"]')
    expect(pts).to_have_attribute("data-cs-key", "PreFilterPodTopologySpread")
    expect(pts.locator("[data-cs-value]")).to_contain_text("topology.kubernetes.io/zone: b=1 (min), a=2")
    expect(table.locator('[data-cs-point="PreFilter"] tr[data-cs-plugin="NodeResourcesFit"]')).to_have_count(1)
    expect(table.locator('[data-cs-point="PreScore"] tr[data-cs-plugin="PodTopologySpread"] [data-cs-value]')) \
        .to_contain_text("maxSkew=1 topologyKey=kubernetes.io/hostname selector=app=web")
    assert s.position() == position

    # the same cycle in the pod's history
    page.locator("#panel-cycle [data-cycle-pod]").click()
    drawer = page.locator('[data-pod-history="default/web-new"]')
    expect(drawer).to_be_visible()
    in_history = drawer.locator('details[data-cycle-state="1"]')
    in_history.locator("summary").click()
    row = in_history.locator('[data-cs-point="PreScore"] tr[data-cs-plugin="PodTopologySpread"]')
    expect(row).to_have_attribute("data-cs-key", "PreScorePodTopologySpread")
    expect(in_history.locator('[data-cs-point="PreFilter"] tr[data-cs-plugin="PodTopologySpread"] [data-cs-value]')) \
        .to_contain_text("TpPairToMatchNum")
    assert s.position() == position
