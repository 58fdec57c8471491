"""In a real browser: injected cluster events, the preemption panel, and the servers behind
the page (a restart resumes a session; two Daphne processes share one through Redis)."""
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_injecting_a_node_unblocks_a_pending_pod(server, open_session):
    s = open_session(server, "too-big")
    s.page.locator('[data-form="run-until"] input[name="until"]').fill("1")
    s.page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(s.queue("unschedulablePods").locator('[data-pod="default/big"]')).to_be_visible()
    assert s.clock() == 1

    form = s.page.locator('[data-form="inject-node-add"]')
    form.locator('input[name="name"]').fill("n2")
    form.locator('input[name="cpu"]').fill("8")
    form.locator('button[type="submit"]').click()
    expect(s.page.locator('[data-node="n2"]')).to_be_visible()
    expect(s.queue("activeQ").locator('[data-pod="default/big"]')).to_be_visible()
    expect(s.page.locator("[data-injection]")).to_contain_text("create Node after event")

    s.step("step-cycle")
    s.step("step-cycle")
    expect(s.page.locator('[data-node="n2"] [data-pod="default/big"]')).to_be_visible()
    assert s.pods_in("unschedulablePods") == []


def test_an_invalid_injection_shows_its_problems(server, open_session):
    s = open_session(server, "too-big")
    s.step("step-event")
    s.page.locator('[data-form="inject-pod-add"]').evaluate("f => f.closest('details').open = true")
    s.page.locator('[data-form="inject-pod-add"] textarea').fill(
        "metadata: {name: Bad_Name}\nspec: {containers: [{name: c, resources: {requests: {cpu: 12x}}}]}")
    s.page.locator('[data-form="inject-pod-add"] button[type="submit"]').click()
    status = s.page.locator('[data-status-kind="error"]')
    expect(status.locator("[data-problem]")).to_have_count(2)
    expect(status).to_contain_text("inject[0].create.metadata.name")
    expect(status).to_contain_text('"12x" is not a quantity')


def test_the_preemption_panel_shows_candidates_the_pick_and_a_reprieve(server, open_session):
    s = open_session(server, "preemption")
    panel = s.page.locator('[data-panel="preemption"]')
    # step by extension point until the first reprieve step appears, then to the end of the cycle
    for _ in range(60):
        s.step("step-point")
        if panel.locator("[data-reprieve-step]").count():
            break
    first = panel.locator("[data-reprieve-step]").first
    expect(first).to_have_attribute("data-victim", "default/a")
    expect(first).to_have_attribute("data-reprieved", "true")
    expect(first).to_contain_text("reprieved")
    s.step("step-cycle")
    expect(panel.locator('[data-reprieve-step][data-reprieved="true"]')).to_have_count(3)
    expect(panel.locator('[data-reprieve-step][data-reprieved="false"]')).to_have_count(4)
    expect(panel.locator("[data-deciding-criterion]")).to_have_text("minHighestPriorityVictim")
    expect(panel.locator("th[data-deciding]")).to_contain_text("decides")
    expect(panel.locator('th[data-candidate="n3"][data-chosen]')).to_contain_text("chosen")
    s.step("step-event")   # urgent goes back to a queue ...
    s.step("step-event")   # ... and is nominated to n3
    expect(s.page.locator('[data-node="n3"] [data-nominated-pod="default/urgent"]')).to_be_visible()


def test_a_restarted_server_resumes_the_session_where_it_was(make_server, page, session_page):
    srv = make_server().start()
    page.goto(srv.url + "/")
    page.locator('[data-scenario="backoff"] [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    page.wait_for_selector('[data-connection="open"]')
    s = session_page(page)
    s.step("step-cycle")
    s.page.locator('[data-form="run-until"] input[name="until"]').fill("2")
    s.page.locator('[data-form="run-until"] button[type="submit"]').click()
    expect(s.page.locator("[data-clock]")).to_have_text("2")
    s.step("step-event")
    at, clock = s.position(), s.clock()
    queues = {q: s.pods_in(q) for q in ("activeQ", "backoffQ", "unschedulablePods")}

    srv.stop()
    expect(page.locator('[data-connection="closed"]')).to_be_visible()
    srv.start()   # same port, same database: the open page reconnects by itself
    expect(page.locator('[data-connection="open"]')).to_be_visible(timeout=20_000)
    page.reload()
    page.wait_for_selector('[data-connection="open"]')
    assert (s.position(), s.clock()) == (at, clock)
    assert {q: s.pods_in(q) for q in queues} == queues
    assert s.step("step-event") == at + 1


def test_two_daphne_processes_behind_redis_share_a_session(make_server, redis_server, page, context, session_page):
    database = make_server().database   # one SQLite file for both processes
    a = make_server(database=database, REDIS_URL=redis_server.url).start()
    b = make_server(database=database, REDIS_URL=redis_server.url).start()
    page.goto(a.url + "/")
    page.locator('[data-scenario="too-big"] [data-action="start"]').click()
    page.wait_for_url("**/s/*/")
    page.wait_for_selector('[data-connection="open"]')
    presenter = session_page(page)
    follower_path = page.locator("[data-follower-link]").get_attribute("href").split("/", 3)[3]

    other = context.new_page()
    other.goto(f"{b.url}/{follower_path}")   # the follower is served by the other process
    other.wait_for_selector('[data-connection="open"]')
    follower = session_page(other)

    for _ in range(3):
        at = presenter.step("step-cycle")
        follower.wait_position(lambda p, at=at: p == at)
    presenter.step("step-event")
    follower.wait_position(lambda p: p == presenter.position())
    expect(other.locator('[data-queue="unschedulablePods"] [data-pod="default/big"]')).to_be_visible()
    # the play loop runs in process A; its frames reach the follower on process B
    presenter.click("play")
    expect(other.locator('[data-run-state="playing"], [data-run-state="idle"]')).to_be_visible()
    presenter.click("pause")
    expect(other.locator('[data-run-state="paused"], [data-run-state="idle"]')).to_be_visible()
    follower.wait_position(lambda p: p == presenter.position())
