"""Class mode as a phone sees it (issue 24, "Phones can join the class"): the server runs with
the environment of ``bash scripts/run.sh --class``, the pages are opened by an address of the
machine that is not loopback (the HTTP Host is that address, as on a phone in the room), and a
phone-sized browser joins through the follower link the presenter page shows.

No packet goes to that address: both browser contexts use an HTTP proxy that this test runs on
127.0.0.1 (Chromium's proxy setting, which Playwright applies to loopback too), and the proxy
sends every connection to the Daphne server on 127.0.0.1 whatever host it names. The proxy
records what it forwarded, so the test fails if the browser went around it."""
import asyncio
import os
import subprocess
import threading
import urllib.parse
from pathlib import Path

import pytest
from playwright.sync_api import expect

from visualizer import classroom

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
MADE_UP_HOST = "10.255.255.1"     # a private address no machine here has: given as CLASS_HOST
NOT_ALLOWED_HOST = "198.51.100.7"  # TEST-NET-2: neither this machine's nor CLASS_HOST
HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization"}


class ForwardingProxy:
    """An HTTP proxy on 127.0.0.1 whose every upstream is 127.0.0.1:``target_port``.

    A plain request comes in absolute form (``GET http://host:port/path HTTP/1.1``): it goes on
    in origin form with its Host header untouched, one request per connection (``Connection:
    close`` both ways). ``CONNECT host:port``, which Chromium uses for a WebSocket through a
    proxy, becomes a tunnel to the target. ``seen`` lists ``(method, target, Host header)``."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.seen = []
        self.port = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="forwarding-proxy", daemon=True)
        self._server = None

    def start(self) -> "ForwardingProxy":
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close():
            self._server.close()
            handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
            await self._server.wait_closed()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self, method=None) -> list:
        return [s for s in list(self.seen) if method is None or s[0] == method]

    async def _handle(self, reader, writer):
        upstream_writer = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head[:-4].split(b"\r\n")
            method, target, version = request_line.split(b" ", 2)
            headers = [line for line in header_lines if line]
            host = next((line.split(b":", 1)[1].strip().decode() for line in headers
                         if line.split(b":", 1)[0].strip().lower() == b"host"), "")
            self.seen.append((method.decode(), target.decode(), host))
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            if method == b"CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                await asyncio.gather(self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer))
                return
            parts = urllib.parse.urlsplit(target.decode())
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            kept = [line for line in headers if line.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
            upstream_writer.write(b"\r\n".join([b" ".join([method, path.encode(), version]), *kept,
                                                b"Connection: close", b"", b""]))
            await upstream_writer.drain()
            await asyncio.gather(self._pipe(reader, upstream_writer), self._response(upstream_reader, writer))
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            for w in (writer, upstream_writer):
                if w is not None:
                    w.close()

    async def _response(self, upstream_reader, writer):
        """The upstream's answer with ``Connection: close`` (the client may not reuse it)."""
        head = await upstream_reader.readuntil(b"\r\n\r\n")
        status, *lines = head[:-4].split(b"\r\n")
        kept = [line for line in lines if line and line.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
        writer.write(b"\r\n".join([status, *kept, b"Connection: close", b"", b""]))
        await self._pipe(upstream_reader, writer)
        writer.close()

    @staticmethod
    async def _pipe(reader, writer):
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except OSError:
            pass
        finally:
            if writer.can_write_eof():
                try:
                    writer.write_eof()
                except OSError:
                    pass


def class_mode_env() -> dict:
    """The environment ``bash scripts/run.sh --class`` gives the server (its dry run prints it)."""
    out = subprocess.run(["bash", "scripts/run.sh", "--class"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=30, env={**os.environ, "RUN_SH_DRY_RUN": "1"}).stdout
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and line.split("=", 1)[0].isupper())
    assert env.get("VISUALIZER_CLASS_MODE") == "1", out
    return env


@pytest.fixture
def lan(make_server):
    """The address a phone would use, the class-mode server and the proxy in front of it. The
    address is the one class mode puts first (visualizer.classroom.discover(), as the server
    does); a machine without one gets a made-up private address through CLASS_HOST."""
    found = classroom.discover().addresses
    env = class_mode_env()
    if not found:
        env["CLASS_HOST"] = MADE_UP_HOST
    address = found[0] if found else MADE_UP_HOST
    srv = make_server(**env).start()
    proxy = ForwardingProxy(srv.port).start()
    yield address, srv, proxy
    proxy.stop()


def _new_context(browser, proxy, **options):
    context = browser.new_context(proxy={"server": proxy.url}, **options)
    context.set_default_timeout(15_000)
    return context


def test_a_phone_joins_the_class_by_the_link_the_presenter_page_shows(lan, browser):
    address, srv, proxy = lan
    host = f"{classroom.url_host(address)}:{srv.port}"       # the Host header a phone sends
    presenter_ctx = _new_context(browser, proxy)
    phone_ctx = _new_context(browser, proxy, viewport={"width": 390, "height": 844}, device_scale_factor=2,
                             is_mobile=True, has_touch=True)
    try:
        # the presenter opens the library by the machine's address and starts a session
        presenter = presenter_ctx.new_page()
        response = presenter.goto(f"http://{host}/")
        assert response.status == 200
        presenter.locator('[data-scenario="backoff"] [data-action="start"]').click()
        presenter.wait_for_url(f"http://{host}/s/*/")
        presenter.wait_for_selector('[data-connection="open"]', state="attached")   # its WebSocket too

        # the join link and the address shown carry the machine's address, never loopback
        link = presenter.locator("[data-follower-link]")
        follower_url = link.get_attribute("href")
        assert follower_url.startswith(f"http://{host}/w/"), follower_url
        expect(link).to_have_text(follower_url)
        assert "127.0.0.1" not in follower_url and "localhost" not in follower_url
        expect(presenter.locator("[data-join-address]")).to_contain_text(address)
        expect(presenter.locator("[data-join-unreachable]")).to_have_count(0)

        # a phone follows that link and sees the presenter's steps live
        phone = phone_ctx.new_page()
        assert phone.goto(follower_url).status == 200
        phone.wait_for_selector('[data-connection="open"]', state="attached")
        expect(phone.locator("[data-follower-note]")).to_be_visible()
        expect(phone.locator('[data-action="step-event"]')).to_have_count(0)      # read-only
        version = phone.locator("#panel-header").get_attribute("data-version")
        presenter_version = presenter.locator("#panel-header").get_attribute("data-version")
        presenter.locator('[data-action="step-cycle"]').click()
        presenter.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v",
                                    arg=presenter_version)
        phone.wait_for_function("v => document.querySelector('#panel-header').dataset.version !== v", arg=version)
        position = presenter.locator("#panel-header").get_attribute("data-position")
        assert position != "0"
        expect(phone.locator("#panel-header")).to_have_attribute("data-position", position)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390

        # opened by 127.0.0.1 (as scripts/run.sh --class says to, on the machine itself), the
        # presenter page still hands out the machine's address
        presenter.goto(presenter.url.replace(f"http://{host}/", f"http://127.0.0.1:{srv.port}/"))
        presenter.wait_for_selector('[data-connection="open"]', state="attached")
        assert presenter.locator("[data-follower-link]").get_attribute("href") == follower_url

        # a host that is neither this machine's nor CLASS_HOST is refused
        refused = phone.goto(f"http://{NOT_ALLOWED_HOST}:{srv.port}/")
        assert refused.status == 400

        # every one of those went through the proxy: pages by their absolute URL with the
        # machine's address as Host, WebSockets as CONNECT tunnels to it
        gets = {(target, h) for method, target, h in proxy.requests("GET")}
        assert (f"http://{host}/", host) in gets
        assert (follower_url, host) in gets
        assert (f"http://{NOT_ALLOWED_HOST}:{srv.port}/", f"{NOT_ALLOWED_HOST}:{srv.port}") in gets
        assert any(m == "POST" and h == host for m, _, h in proxy.seen)           # starting the session
        tunnels = [target for _, target, _ in proxy.requests("CONNECT")]
        assert tunnels.count(host) >= 2, proxy.seen                               # presenter and phone
    finally:
        phone_ctx.close()
        presenter_ctx.close()
