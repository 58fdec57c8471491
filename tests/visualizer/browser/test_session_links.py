"""Nobody gets stranded (issue 24), in a real browser: from the presenter's page, *see what
changed* and *Compare two configurations…* open the presenter's pages, and their "back to the
session" returns to the presenter's page with its controls (which still control the session);
from a follower's page the same links keep the follower's role, and the presenter token is
nowhere on the pages a follower reaches. The setup is test_reload_compare's (a plugin loaded
from SCHEDULER_PLUGINS, edited and reloaded, so that the page shows *see what changed*)."""
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.visualizer.browser.test_reload_compare import PLUGIN, SCENARIO, run_until

pytestmark = pytest.mark.browser


def expect_presenter(page, url, sp) -> None:
    """The presenter's page at ``url``, live, with controls that work."""
    page.wait_for_url(url)
    page.wait_for_selector('[data-connection="open"]')
    expect(page.locator("[data-session]")).to_have_attribute("data-role", "presenter")
    expect(page.locator("[data-controls]")).to_be_visible()
    expect(page.locator('[data-action="reload-plugins"]')).to_be_visible()
    before = sp.position()
    sp.step("back")                            # the controls still control the session
    assert sp.position() == before - 1
    sp.step("step-event")
    assert sp.position() == before


def expect_follower(page, url, presenter_token) -> None:
    page.wait_for_url(url)
    page.wait_for_selector('[data-connection="open"]')
    expect(page.locator("[data-session]")).to_have_attribute("data-role", "follower")
    expect(page.locator("[data-controls]")).to_have_count(0)
    assert presenter_token not in page.content()


def test_changes_and_compare_keep_the_role_and_lead_back(make_server, tmp_path, page, open_session):
    library = tmp_path / "library"
    library.mkdir()
    (library / "avoid-node.yaml").write_text(SCENARIO)
    plugin = tmp_path / "avoid_node.py"
    plugin.write_text(PLUGIN.format(node="n2"))
    srv = make_server(SCENARIO_FIXTURES_DIR=str(library), SCHEDULER_PLUGINS=str(plugin)).start()
    page.set_viewport_size({"width": 1280, "height": 720})

    sp = open_session(srv, "avoid-node")
    run_until(page, "1")
    plugin.write_text(PLUGIN.format(node="n1"))
    page.locator('[data-action="reload-plugins"]').click()
    expect(page.locator("[data-reload-summary]")).to_have_attribute("data-changed-pods", "2")
    presenter_url = page.url
    presenter_token = urlsplit(presenter_url).path.split("/")[2]
    follower_url = page.locator("[data-follower-link]").get_attribute("href")

    # -- presenter → what changed → back: the presenter's page, controls and all
    page.locator("[data-changes-link]").click()
    page.wait_for_url(presenter_url + "changes/")
    expect(page.locator('[data-changed-pod="default/web"]')).to_be_visible()
    page.locator("[data-back-to-session]").click()
    expect_presenter(page, presenter_url, sp)

    # -- presenter → compare → (run a comparison) → back
    page.locator("[data-compare-link]").click()
    page.wait_for_url(presenter_url + "compare/")
    form = page.locator('[data-form="compare"]')
    form.locator('[data-kind="disable"]').check()
    form.locator('[data-field="disable-plugin"]').select_option("AvoidNode")
    form.locator('input[name="until"]').fill("1")
    form.locator('[data-action="compare"]').click()
    page.wait_for_selector("[data-what-changed]")
    assert page.url == presenter_url + "compare/"
    page.locator("[data-back-to-session]").click()
    expect_presenter(page, presenter_url, sp)

    # -- a follower: the same links keep the follower's role and lead back to its page
    page.goto(follower_url)
    expect_follower(page, follower_url, presenter_token)
    page.locator("[data-changes-link]").click()
    page.wait_for_url(follower_url + "changes/")
    assert presenter_token not in page.content()
    page.locator("[data-back-to-session]").click()
    expect_follower(page, follower_url, presenter_token)
    page.locator("[data-compare-link]").click()
    page.wait_for_url(follower_url + "compare/")
    assert presenter_token not in page.content()
    page.locator("[data-back-to-session]").click()
    expect_follower(page, follower_url, presenter_token)
