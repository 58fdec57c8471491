"""The REST API under ``/api/`` (docs/api.md), with the standard library's urllib.

    client = Client("http://127.0.0.1:8000")
    session = client.create_session(fixture="11-preemption-reprieve.yaml")
    session.step_cycle()                       # {"position": 54, "head": 54, ...}
    for event in session.iter_events(type="PodDeleted"):
        print(event["pod"], event["preemptor"])
"""
from __future__ import annotations

import ipaddress
import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from vizclient.errors import ApiError, ClientError, ServerUnreachable

DEFAULT_URL = "http://127.0.0.1:8000"
EXPORTS = ("scenario.yaml", "state.json", "trace.jsonl", "results.json")
MAX_PAGE = 5000       # the API's largest page of /events


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_link(link: str):
    """``(role, token, base_url)`` of a session link, a link of its API or stream, or a bare
    token: role is ``"presenter"`` for ``.../s/<token>/``, ``"follower"`` for
    ``.../w/<token>/`` (also under ``/api/`` and ``/ws/json/``), None for a bare token;
    base_url is the server the link names (``http://host:port``), None for a bare token or a
    path."""
    text = link.strip()
    parsed = urllib.parse.urlsplit(text)
    base = None
    if parsed.scheme and parsed.netloc:
        scheme = {"ws": "http", "wss": "https"}.get(parsed.scheme, parsed.scheme)
        base = f"{scheme}://{parsed.netloc}"
        path = parsed.path
    elif "/" in text:
        path = parsed.path
    else:
        return None, text, None
    parts = [p for p in path.split("/") if p]
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("s", "w"):
            return ("presenter" if parts[i] == "s" else "follower"), parts[i + 1], base
    raise ValueError(f"{link!r} is not a session link (…/s/<token>/ or …/w/<token>/) nor a token")


class Client:
    """A visualizer server: ``Client("http://127.0.0.1:8000")`` (the address ``bash
    scripts/run.sh`` serves). ``timeout``: seconds to wait for one answer (a long run-until
    or a rebuild of a large session may take a while)."""

    def __init__(self, base_url: str = DEFAULT_URL, *, timeout: float = 120.0):
        base = base_url.strip().rstrip("/")
        if "://" not in base:
            base = "http://" + base
        parsed = urllib.parse.urlsplit(base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"{base_url!r} is not a server URL such as {DEFAULT_URL}")
        self.base_url = base
        self.api_url = base + "/api"
        self.origin = f"{parsed.scheme}://{parsed.netloc}"      # the Origin the stream sends
        self.loopback = _is_loopback(parsed.hostname or "")
        self.timeout = timeout
        # a server on this machine is reached directly, whatever proxy the environment names
        handlers = [urllib.request.ProxyHandler({})] if self.loopback else []
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    # ------------------------------------------------------------------ HTTP

    def request(self, method: str, path: str, body=None, *, query=None, raw: bool = False):
        """One call of the API: ``path`` under ``/api`` (``"/sessions"``), ``body`` sent as
        JSON, ``query`` a dict (None values left out). Returns the parsed JSON, or the text
        with ``raw``. Raises ApiError for an error answer, ServerUnreachable when no answer."""
        url = self.api_url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._opener.open(req, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as e:
            raise self._error(e, method, url) from None
        except urllib.error.URLError as e:
            raise ServerUnreachable(url, e.reason) from None
        except (socket.timeout, TimeoutError) as e:
            raise ServerUnreachable(url, f"no answer within {self.timeout:g} s ({e})") from None
        except (ConnectionError, OSError) as e:
            raise ServerUnreachable(url, e) from None
        text = payload.decode("utf-8", "replace")
        if raw:
            return text
        try:
            return json.loads(text)
        except ValueError:
            raise ClientError(f"{method} {url}: the answer is not JSON: {text[:200]!r}") from None

    @staticmethod
    def _error(e: urllib.error.HTTPError, method: str, url: str) -> ApiError:
        try:
            text = e.read().decode("utf-8", "replace")
        except Exception:      # noqa: BLE001 - the status alone still says what happened
            text = ""
        finally:
            e.close()
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("title"), str):
            problems = body.get("problems")
            problems = [str(p) for p in problems] if isinstance(problems, list) else []
            return ApiError(e.code, body["title"], problems, method=method, url=url)
        return ApiError(e.code, str(e.reason or f"HTTP {e.code}"), [text.strip()[:300]] if text.strip() else [],
                        method=method, url=url)

    # ------------------------------------------------------------------ sessions

    def create_session(self, fixture: str | None = None, *, text: str | None = None,
                       filename: str | None = None, test_case: str | None = None,
                       workload: str | None = None) -> "Session":
        """A new session (``POST /api/sessions``): from the library (``fixture="11-...yaml"``)
        or from ``text`` (a scenario, or anything ``python -m engine import`` reads, with its
        ``filename``; ``test_case`` and ``workload`` pick from a scheduler_perf config)."""
        body = {"fixture": fixture, "text": text, "filename": filename, "test_case": test_case,
                "workload": workload}
        made = self.request("POST", "/sessions", {k: v for k, v in body.items() if v is not None})
        return Session(self, presenter_token=made["presenter_token"], follower_token=made["follower_token"],
                       info=made)

    def session(self, presenter_token: str | None = None, *, follower_token: str | None = None) -> "Session":
        """A session known by its token(s) alone (nothing is asked of the server)."""
        return Session(self, presenter_token=presenter_token, follower_token=follower_token)

    def follow(self, follower: str) -> "Session":
        """A follower's session, read-only: a follower token or a follower link
        (``http://host/w/<token>/``, or its ``/api/w/`` or ``/ws/json/w/`` link)."""
        role, token, _ = parse_link(follower)
        if role == "presenter":
            raise ValueError("that is a presenter link: use client.open(link) or client.session(presenter_token=...)")
        return Session(self, follower_token=token)

    def open(self, link: str) -> "Session":
        """The session of a presenter or follower link (``.../s/<token>/``, ``.../w/<token>/``)."""
        role, token, _ = parse_link(link)
        if role is None:
            raise ValueError("a bare token does not say whose it is: use client.session(presenter_token=...) "
                             "or client.follow(token)")
        return self.session(token) if role == "presenter" else self.follow(token)


class Session:
    """One session of the server, known by its presenter token (read and control), its follower
    token (read only), or both. ``info`` is what ``POST /api/sessions`` answered (title,
    scenario, both tokens and links), empty for a session opened from a token."""

    def __init__(self, client: Client, *, presenter_token: str | None = None, follower_token: str | None = None,
                 info: dict | None = None):
        if not presenter_token and not follower_token:
            raise ValueError("a session needs its presenter token or its follower token")
        self.client = client
        self.presenter_token = presenter_token
        self.follower_token = follower_token
        self.info = dict(info or {})

    def __repr__(self) -> str:
        return f"<Session {self.info.get('scenario') or ''} ({self.role}) on {self.client.base_url}>"

    @property
    def role(self) -> str:
        """``"presenter"`` when this session may control (it holds the presenter token)."""
        return "presenter" if self.presenter_token else "follower"

    @property
    def title(self) -> str | None:
        return self.info.get("title")

    @property
    def scenario(self) -> str | None:
        return self.info.get("scenario")

    @property
    def presenter_url(self) -> str | None:
        return self.info.get("presenter_url")

    @property
    def follower_url(self) -> str | None:
        return self.info.get("follower_url")

    def _read_path(self) -> str:
        # reading needs no more than the follower's link: use it when known
        if self.follower_token:
            return f"/w/{urllib.parse.quote(self.follower_token, safe='')}"
        return f"/s/{urllib.parse.quote(self.presenter_token, safe='')}"

    # ------------------------------------------------------------------ controls (presenter)

    def control(self, action: str, **fields) -> dict:
        """One control (``POST /api/s/<token>/control``): ``{"action": action, **fields}``.
        Returns where the session now is: ``position``, ``head``, ``clock``, ``finished``,
        ``note``, ``slices``. An invalid control is an ApiError (400); a session opened with
        the follower token alone sends it to ``/api/w/<token>/control``, which is refused
        (ApiError 403)."""
        if self.presenter_token:
            path = f"/s/{urllib.parse.quote(self.presenter_token, safe='')}/control"
        else:
            path = f"/w/{urllib.parse.quote(self.follower_token, safe='')}/control"
        return self.client.request("POST", path, {"action": action, **fields})

    def step_event(self) -> dict:
        return self.control("step-event")

    def step_point(self) -> dict:
        return self.control("step-point")

    def step_cycle(self) -> dict:
        return self.control("step-cycle")

    def back(self) -> dict:
        return self.control("back")

    def jump(self, position: int) -> dict:
        return self.control("jump", position=position)

    def run_until(self, seconds: float) -> dict:
        """Run to ``seconds`` of virtual time (in slices, at most the page's budget of work:
        then ``note`` says to run again)."""
        return self.control("run-until", until=seconds)

    def inject(self, form: str, **fields) -> dict:
        """A cluster event, as the page's *Inject* forms: ``inject("node-add", name="n9",
        cpu="4", memory="8Gi")``, ``inject("delete", kind="Pod", name="default/a")``,
        ``inject("yaml", verb="create", manifest=text)`` (docs/api.md)."""
        return self.control("inject", form=form, **fields)

    def play(self, speed: float = 2) -> dict:
        """``{"action": "play", "speed": speed}`` (point-steps per second; 0: as fast as
        possible): the server plays on after its answer, as for the page's Play, until the end,
        a pause or another control; the stream shows its frames."""
        return self.control("play", speed=speed)

    def pause(self) -> dict:
        """``{"action": "pause"}``: stops a play."""
        return self.control("pause")

    # ------------------------------------------------------------------ reading

    def state(self, position: int | None = None) -> dict:
        """``{"position", "head", "state"}``: the engine's state JSON after ``position``
        events (default: the position the session shows); never beyond the head."""
        return self.client.request("GET", self._read_path() + "/state", query={"position": position})

    def events(self, start: int = 0, limit: int = 1000, *, pod: str | None = None, node: str | None = None,
               type: str | None = None) -> dict:
        """One page of the recorded trace events, as the API answers it: ``{"start", "head",
        "shown", "next", "events": [{"position", "event"}, ...]}`` (``next``: the start of the
        next page, None at the end)."""
        return self.client.request("GET", self._read_path() + "/events",
                                   query={"start": start, "limit": limit, "pod": pod, "node": node, "type": type})

    def iter_events(self, start: int = 0, *, pod: str | None = None, node: str | None = None,
                    type: str | None = None, page: int = MAX_PAGE):
        """Every recorded event from ``start`` on (those matching the filters), following
        ``next`` page after page: the trace events themselves (the CLI's ``--trace`` lines;
        an event's position is its ``seq + 1``). Events recorded while it pages are included
        up to the head it reads last."""
        at = start
        while at is not None:
            body = self.events(at, page, pod=pod, node=node, type=type)
            for item in body["events"]:
                yield item["event"]
            nxt = body.get("next")
            if nxt is not None and nxt <= at:
                raise ClientError(f"the events' next page ({nxt}) does not move past {at}")
            at = nxt

    def export(self, what: str) -> str:
        """One of the page's exports at the position shown, as text: ``scenario.yaml``,
        ``state.json``, ``trace.jsonl`` or ``results.json``."""
        if what not in EXPORTS:
            raise ValueError(f"export {what!r}: one of {', '.join(EXPORTS)}")
        return self.client.request("GET", f"{self._read_path()}/export/{what}", raw=True)

    # ------------------------------------------------------------------ the JSON stream

    def stream(self, from_position: int = 0, *, run: str | None = None, presenter: bool = False, **options):
        """The session's JSON stream (``/ws/json/w/<token>/?from=N``; with ``presenter=True``
        the presenter's, which also takes controls): a ``vizclient.Stream``, to use in a
        ``with`` block and iterate. ``options`` go to ``Stream`` (``open_timeout``)."""
        from vizclient.stream import Stream
        if presenter or not self.follower_token:
            if not self.presenter_token:
                raise ValueError("the presenter's stream needs the presenter token")
            prefix, token = "s", self.presenter_token
        else:
            prefix, token = "w", self.follower_token
        return Stream(self.client, prefix, token, from_position=from_position, run=run, **options)
