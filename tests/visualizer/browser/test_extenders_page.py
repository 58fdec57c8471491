"""A scheduler extender in a real browser (issue 26): docs/examples/extender_server.py on a
free loopback port, a Daphne server started with SCHEDULER_EXTENDERS allowing it, and
docs/examples/extender.yaml (its port replaced) in the server's library. The extender is a
column of the Filter matrix and of the score table, its calls are lines of the event log, and
after the extender stops and the server restarts, the session shows the same cells (replayed
from its record)."""
import importlib.util
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE_URL = "http://127.0.0.1:8888/scheduler"


@pytest.fixture
def extender():
    spec = importlib.util.spec_from_file_location("extender_server", ROOT / "docs/examples/extender_server.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    srv, ext = mod.serve(0)
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/scheduler"
    srv.ext = ext
    stopped = []

    def stop():
        if not stopped:
            srv.shutdown()
            srv.server_close()
            stopped.append(True)
    srv.stop = stop
    yield srv
    stop()


@pytest.fixture
def extender_server(make_server, extender, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    text = (ROOT / "docs/examples/extender.yaml").read_text(encoding="utf-8").replace(EXAMPLE_URL, extender.url)
    (library / "extender.yaml").write_text(text, encoding="utf-8")
    return make_server(SCHEDULER_EXTENDERS=extender.url, SCENARIO_FIXTURES_DIR=str(library)).start()


def check_columns(page, url):
    short = url[len("http://"):]
    head = page.locator(f'#panel-cycle [data-filter-matrix] th[data-plugin="{url}"]')
    expect(head).to_have_text(f"extender {short}")
    expect(head).to_have_attribute("title", f"scheduler extender {url}")
    expect(head.locator(".extender-mark")).to_be_visible()
    cell = page.locator(f'#panel-cycle [data-filter-node="reserved"] td[data-plugin="{url}"]')
    expect(cell).to_have_attribute("data-code", "UnschedulableAndUnresolvable")
    expect(cell).to_contain_text("UnschedulableAndUnresolvable")
    expect(page.locator(f'#panel-cycle [data-filter-node="fast"] td[data-plugin="{url}"]')).to_have_attribute(
        "data-code", "Success")
    expect(page.locator(f'#panel-cycle [data-scores] th[data-plugin="{url}"]')).to_have_text(f"extender {short}")
    expect(page.locator(f'#panel-cycle [data-scores] [data-score-node="fast"] td[data-plugin="{url}"]')).to_have_text(
        "9 → 9 → 180")
    expect(page.locator('#panel-cycle [data-scores] [data-score-node="fast"]')).to_contain_text("★ selected")


def test_the_extender_is_a_column_of_the_filter_matrix_and_the_score_table(extender_server, extender, page,
                                                                          open_session):
    s = open_session(extender_server, "extender")
    s.step("step-cycle")                    # cycle 1: web, filtered and scored by the extender too
    check_columns(page, extender.url)
    short = extender.url[len("http://"):]
    log = page.locator("#panel-log")
    expect(log).to_contain_text(re.compile(rf"extender {re.escape(short)} filter default/web: 4 nodes sent, 3 passed"))
    expect(log).to_contain_text(re.compile(rf"extender {re.escape(short)} prioritize default/web: 3 nodes sent"))

    # the extender goes away and the server restarts: the session replays its record
    url = page.url
    extender.stop()
    extender_server.stop()
    extender_server.start()
    page.goto(url)
    page.wait_for_selector('[data-connection="open"]')
    check_columns(page, extender.url)
    s.step("back")
    s.step("step-event")
    check_columns(page, extender.url)
