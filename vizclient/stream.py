"""The JSON stream of a session (``/ws/json/w/<follower token>/``, ``/ws/json/s/<presenter
token>/``; docs/state-and-trace.md, "The JSON stream"), with the sync client of ``websockets``.

    with session.stream(from_position=0) as stream:
        for message in stream:                 # event, frame, rewind, status: in order
            ...

The stream keeps what a client must keep (``position``: how many events it holds, ``run``: the
run they are of) and applies the rules for the caller: an ``event`` is checked to come at the
position held (no gap, no duplicate), a ``rewind`` drops the events beyond its ``kept``, and a
``behind`` is answered at once with ``{"from": position, "run": run}`` (the next batch of
events then follows), so the caller never sees ``behind`` nor a gap.
"""
from __future__ import annotations

import json
import time
import urllib.parse

from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.sync.client import connect

from vizclient.errors import ServerUnreachable, StreamError
from vizclient.trace import QUEUE_TRANSITION

MAX_MESSAGE_BYTES = 64 * 1024 * 1024     # a frame names every pending pod: large clusters, large frames


class Stream:
    """One connection to a session's JSON stream. Use it in a ``with`` block (or call
    ``open`` and ``close``); iterate it for the messages, or ``recv(timeout)`` one at a time.

    Attributes kept from the messages: ``position`` (the events held: events 0 to
    position-1), ``run`` (the run they are of), ``head`` (events the session has recorded),
    ``shown`` (the position the session shows, from the last frame or rewind), ``frame`` (the
    last frame message), and with ``keep_events=True`` ``events``: the events held from
    ``events_start`` (``from_position``, or an earlier ``kept`` of a rewind) on."""

    def __init__(self, client, prefix: str, token: str, *, from_position: int = 0, run: str | None = None,
                 open_timeout: float = 10.0, keep_events: bool = False):
        if prefix not in ("s", "w"):
            raise ValueError("prefix: 's' (presenter) or 'w' (follower)")
        if from_position < 0:
            raise ValueError("from_position: 0 or more")
        scheme = "wss" if client.base_url.startswith("https:") else "ws"
        base = scheme + client.base_url[client.base_url.index(":"):]
        query = {"from": from_position}
        if run is not None:
            query["run"] = run
        self.url = f"{base}/ws/json/{prefix}/{urllib.parse.quote(token, safe='')}/?{urllib.parse.urlencode(query)}"
        self.role = "presenter" if prefix == "s" else "follower"
        self.origin = client.origin
        self.loopback = client.loopback
        self.open_timeout = open_timeout
        self.position = from_position
        self.run = run
        self.head = None
        self.shown = None
        self.frame = None
        self.events = [] if keep_events else None
        self.events_start = from_position     # the position of events[0]
        self.resumed = 0            # how many times a "behind" was answered
        self._ws = None

    def __repr__(self) -> str:
        return f"<Stream {self.role} position={self.position} run={self.run}>"

    # ------------------------------------------------------------------ connection

    def open(self) -> "Stream":
        shown_url = self.url.split("?")[0]
        options = {"proxy": None} if self.loopback else {}
        try:
            # legacy=True: the connection itself (this object is the context manager)
            self._ws = connect(self.url, origin=self.origin, open_timeout=self.open_timeout,
                               max_size=MAX_MESSAGE_BYTES, legacy=True, **options)
        except InvalidStatus as e:
            status = e.response.status_code
            hint = (" (no session has this token under this prefix, or the Origin "
                    f"{self.origin} is not one of the server's allowed hosts)") if status == 403 else ""
            raise StreamError(f"the server refused the stream {shown_url}: HTTP {status}{hint}",
                              url=shown_url, status=status) from None
        except InvalidURI as e:
            raise StreamError(f"not a stream URL: {e}", url=shown_url) from None
        except InvalidHandshake as e:
            raise StreamError(f"the stream {shown_url} could not start: {e}", url=shown_url) from None
        except TimeoutError:
            raise ServerUnreachable(shown_url, f"no WebSocket handshake within {self.open_timeout:g} s") from None
        except OSError as e:
            raise ServerUnreachable(shown_url, e) from None
        return self

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def __enter__(self) -> "Stream":
        return self.open() if self._ws is None else self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ messages

    def send(self, message: dict) -> None:
        """Send one JSON message as it is (``{"from": N}``, a control)."""
        if self._ws is None:
            raise StreamError("the stream is not open", url=self.url)
        self._ws.send(json.dumps(message))

    def control(self, action: str, **fields) -> None:
        """A control on the presenter's stream (``{"action": action, **fields}``: the page's
        controls, play and pause included). Its effects come as messages; a problem as a
        ``status`` message. On a follower's stream the server answers ``refused``."""
        self.send({"action": action, **fields})

    def recv(self, timeout: float | None = None) -> dict:
        """The next message (never ``behind``: answered here). Raises TimeoutError when none
        comes within ``timeout`` seconds, StreamError when the stream is closed."""
        if self._ws is None:
            raise StreamError("the stream is not open", url=self.url)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                text = self._ws.recv(timeout=left)
            except ConnectionClosed as e:
                code = e.rcvd.code if e.rcvd is not None else None
                shown = self.url.split("?")[0]
                if code is None:
                    said = f"the connection to {shown} was lost (the server stopped or the network broke)"
                else:
                    said = (f"the server closed the stream {shown} "
                            f"({'normally' if isinstance(e, ConnectionClosedOK) else 'with an error'}, code {code}"
                            f"{': ' + e.rcvd.reason if e.rcvd.reason else ''})")
                raise StreamError(said, url=self.url, code=code) from None
            try:
                msg = json.loads(text)
            except (TypeError, ValueError):
                raise StreamError(f"the stream sent a message that is not JSON: {str(text)[:200]!r}",
                                  url=self.url) from None
            if self._apply(msg):
                return msg

    def _apply(self, msg: dict) -> bool:
        """Keep what the message says; False for a message answered here (behind)."""
        kind = msg.get("type")
        self.run = msg.get("run", self.run)
        if "head" in msg:
            self.head = msg["head"]
        if kind == "event":
            if msg["position"] != self.position:
                raise StreamError(f"an event at position {msg['position']} while holding {self.position} "
                                  "(a gap or a duplicate)", url=self.url)
            self.position += 1
            if self.events is not None:
                self.events.append(msg["event"])
        elif kind == "rewind":
            self.shown = msg["position"]
            if msg["kept"] < self.position:
                self.position = msg["kept"]
                if self.events is not None:
                    if self.position < self.events_start:      # before the first one held: none is kept
                        self.events, self.events_start = [], self.position
                    del self.events[self.position - self.events_start:]
        elif kind == "frame":
            self.shown = msg["position"]
            self.frame = msg
        elif kind == "behind":
            self.resumed += 1
            self.send({"from": self.position, **({"run": self.run} if self.run else {})})
            return False
        return True

    def __iter__(self):
        """The messages in order until the server closes the stream (a normal close ends the
        iteration; an abnormal one raises StreamError)."""
        while True:
            try:
                yield self.recv()
            except StreamError as e:
                if e.code in (1000, 1001):
                    return
                raise

    def until(self, predicate, timeout: float = 30.0) -> dict:
        """Receive until ``predicate(message)`` holds; return that message (TimeoutError after
        ``timeout`` seconds in all)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no such message within {timeout:g} s (holding {self.position} events)")
            msg = self.recv(left)
            if predicate(msg):
                return msg

    def queue_transitions(self):
        """Only the ``QueueTransition`` events (the trace's queue moves), as they are revealed.
        (After a rewind to a new branch, the events of the new run come again from its
        ``kept``: this yields those too.)"""
        for msg in self:
            if msg.get("type") == "event" and msg["event"].get("type") == QUEUE_TRANSITION:
                yield msg["event"]
