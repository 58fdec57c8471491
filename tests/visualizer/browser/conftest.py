"""Browser tests: Playwright drives Debian's chromium against real Daphne servers.

Each server is the ``daphne`` command in a subprocess, exactly as users run the app, with its
own SQLite file: so a test can stop and restart it (a restart must lose nothing) or run two
of them behind one Redis. Nothing here touches the test process's database, and the tests
are sorted after every other test (tests/conftest.py), as sync Playwright requires.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stack import RedisServer, WebProcess  # noqa: E402  (tests/stack.py)

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "tests" / "visualizer" / "scenarios"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `bash scripts/test.sh` installs Debian's chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


class DaphneServer(WebProcess):
    """``daphne visualizer.asgi:application`` on a free loopback port (kept across a restart),
    with its own SQLite file (``tests/stack.py``'s WebProcess), migrated on its first start."""

    def __init__(self, database: Path, **env):
        self.database = database
        # its own SQLite file: a DATABASE_URL of the environment (the suite's PostgreSQL pass) stays out
        full = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
        # env may override any of these (SCENARIO_FIXTURES_DIR: the library's directory)
        full.update({"DATABASE_PATH": str(database), "SCENARIO_FIXTURES_DIR": str(SCENARIOS),
                     "DJANGO_SETTINGS_MODULE": "visualizer.settings", "PYTHONUNBUFFERED": "1", **env})
        super().__init__(full, database.with_suffix(".log"))

    def start(self) -> "DaphneServer":
        if not self.database.exists():
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT,
                           env=self.env, check=True, timeout=120)
        super().start()
        return self


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """One Daphne server shared by the browser tests that need nothing special."""
    srv = DaphneServer(tmp_path_factory.mktemp("daphne") / "db.sqlite3").start()
    yield srv
    srv.stop()


@pytest.fixture
def make_server(tmp_path):
    """Servers of the test's own (stopped at the end): make_server(database=..., **env), e.g.
    make_server(SCENARIO_FIXTURES_DIR=str(ROOT / "fixtures")) for the real lesson library."""
    made = []

    def make(database=None, **env):
        srv = DaphneServer(database or tmp_path / f"db{len(made)}.sqlite3", **env)
        made.append(srv)
        return srv
    yield make
    for srv in made:
        srv.stop()


@pytest.fixture
def redis_server(tmp_path):
    srv = RedisServer(tmp_path).start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _timeouts(page):
    page.set_default_timeout(15_000)
    yield


class SessionPage:
    """Reading and driving the session page through its stable hooks."""

    def __init__(self, page):
        self.page = page

    @property
    def header(self):
        return self.page.locator("#panel-header")

    def position(self) -> int:
        return int(self.header.get_attribute("data-position"))

    def clock(self) -> float:
        return float(self.page.locator("[data-clock]").inner_text())

    def click(self, action: str) -> None:
        self.page.locator(f'[data-action="{action}"]').click()

    def wait_position(self, predicate, timeout=15.0) -> int:
        """Wait until predicate(position) holds; returns that position."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.position()
            if predicate(at):
                return at
            if time.monotonic() > deadline:
                raise AssertionError(f"position stayed at {at}")
            self.page.wait_for_timeout(50)

    def step(self, action: str) -> int:
        """Click a step control and wait for the frame it causes."""
        before = self.header.get_attribute("data-version")
        self.click(action)
        self.page.wait_for_function(
            "v => document.querySelector('#panel-header').dataset.version !== v", arg=before)
        return self.position()

    def queue(self, name: str):
        return self.page.locator(f'[data-queue="{name}"]')

    def pods_in(self, name: str) -> list:
        return self.queue(name).locator("[data-pod]").evaluate_all("els => els.map(e => e.dataset.pod)")


@pytest.fixture
def open_session(page):
    """open_session(server, "too-big"): start a library fixture from the library page and
    return the presenter's SessionPage once its socket is live."""
    def open_session(server, name):
        page.goto(server.url + "/")
        page.locator(f'[data-scenario="{name}"] [data-action="start"]').click()
        page.wait_for_url("**/s/*/")
        page.wait_for_selector('[data-connection="open"]')
        return SessionPage(page)
    return open_session


@pytest.fixture
def session_page():
    return SessionPage
