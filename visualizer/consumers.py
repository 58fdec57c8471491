"""The session WebSocket: one consumer per browser tab, one channel-layer group per session.

- Connecting (or reconnecting) first gets a full snapshot: every panel of the page.
- Every change to the session is published to the group as a frame of HTML partials (one
  root element with a stable id per panel); the htmx ws extension swaps each by its id.
  Frames carry the session's version, and a consumer never sends an older frame after a
  newer one.
- Only a presenter's socket (``/ws/s/<presenter token>/``) may control the session. A
  follower's socket (``/ws/w/<follower token>/``) is refused any control, whatever it sends;
  it may only set its own event-log filter and its own view (queue and Filter-matrix pages,
  the node overview's search, label filter, colour and selection: presenters.normalize_view).

The work itself happens in ``visualizer.runner`` (in a worker thread, so the event loop keeps
serving other sockets); this module only routes messages.

Hostile or broken input gets a reply, never a closed socket: a message larger than
``MAX_MESSAGE_BYTES``, not JSON, nested deeper than ``MAX_JSON_DEPTH``, or whose ``action`` is
not a string gets an "invalid" status; an unexpected error in a control gets an "error" status
(and is logged). A presenter's controls are queued (at most ``MAX_PENDING_CONTROLS`` per
socket, the rest refused with a message) and carried out one at a time in order by one task
per socket; a long run-until goes in slices, publishing a frame and yielding to the event loop
between them (see ``visualizer.runner``); ``pause`` also stops a run-until in progress.
"""
from __future__ import annotations

import asyncio
import json
import logging

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer

from visualizer import frames, metrics, presenters, runner, stream

log = logging.getLogger(__name__)

# A checkpoint a step leaves due is taken once the presenter has not sent a control for this
# long after its frame (taking one costs 0.1-0.3 s at 5,000 nodes: a click meanwhile would wait
# for it), or after the short delay once it has been put off for CHECKPOINT_MAX_WAIT_SECONDS.
CHECKPOINT_IDLE_SECONDS = 0.4
CHECKPOINT_DELAY_SECONDS = 0.05
CHECKPOINT_MAX_WAIT_SECONDS = 2.0

VIEW_ACTIONS = {"filter", "view"}
CONTROL_ACTIONS = {"step-event", "step-point", "step-cycle", "back", "jump", "run-until", "inject",
                   "play", "pause", "reload-plugins"}
MAX_MESSAGE_BYTES = 512 * 1024   # a text frame from the page (static/js/session.js checks it too;
                                 # Daphne drops anything over 1 MiB)
MAX_JSON_DEPTH = 8               # the page's messages are flat objects of form fields
MAX_PENDING_CONTROLS = 16        # controls queued on one presenter socket
# The session group's messages (every socket of the session gets each): handled without
# Channels' close_old_connections hop (SessionConsumer.dispatch)
GROUP_MESSAGES = frozenset({"session.frame", "session.status", "session.stop_play"})


class InvalidMessage(ValueError):
    pass


def parse_message(text) -> dict:
    """The JSON object a page sent, or InvalidMessage saying why not (bounded work)."""
    if text is None:
        raise InvalidMessage("The message is not text")
    if len(text) > MAX_MESSAGE_BYTES:
        raise InvalidMessage(f"The message is too large ({len(text):,} characters; at most {MAX_MESSAGE_BYTES:,})")
    try:
        msg = json.loads(text)
    except RecursionError:
        raise InvalidMessage("The message is nested too deeply") from None
    except ValueError:
        raise InvalidMessage("The message is not a JSON object") from None
    if not isinstance(msg, dict):
        raise InvalidMessage("The message is not a JSON object")
    stack = [(msg, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InvalidMessage(f"The message is nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    msg.pop("HEADERS", None)
    action = msg.get("action")
    if isinstance(action, list) and len(action) == 1:
        action = msg["action"] = action[0]
    if action is not None and not isinstance(action, str):
        raise InvalidMessage("The message's action is not a name")
    return msg


def group_name(session_id) -> str:
    return f"session-{session_id}"


def _sync(fn):
    return sync_to_async(fn, thread_sensitive=False)


async def publish_frame(session_id) -> None:
    """One frame of the session to every page and program following it (its group), as a
    socket's ``publish_now`` does: for a change made outside a socket (a what-if applied from
    the report, a control sent to the REST API)."""
    from channels.layers import get_channel_layer
    layer = get_channel_layer()
    if layer is None:
        return
    version, panels = await _sync(frames.render_frame)(session_id)
    await layer.group_send(group_name(session_id), {"type": "session.frame", "version": version, "panels": panels})


async def start_play(session_id, speed, claimed=False) -> None:
    """Play the session in this process (``runner.start_play``), each tick's frame to its group
    and an error that stops it as a status to every socket of the session: for a presenter's
    play (a socket or the REST API) and a play adopted from a process that went away."""
    from channels.layers import get_channel_layer
    layer = get_channel_layer()
    group = group_name(session_id)

    async def publish(version, panels):
        await layer.group_send(group, {"type": "session.frame", "version": version, "panels": panels})

    async def on_error(error):
        await layer.group_send(group, {"type": "session.status", "kind": "error", "title": error.title,
                                       "problems": error.problems[:20]})

    await runner.start_play(session_id, speed, publish, on_error, render=presenters.render_panels, claimed=claimed)


_adopter = None     # this process's task looking for plays to adopt (ensure_adopter)


def ensure_adopter() -> None:
    """Start this process's look-out for plays whose process went away (killed mid-play, a
    restart): every ``runner.ADOPT_INTERVAL`` seconds it claims those whose lease ran out
    (``runner.adopt_orphaned_plays``) and plays them on from the database. Started by the
    first socket a process serves; ``settings.PLAY_ADOPT`` = False turns it off."""
    from django.conf import settings
    global _adopter
    if not getattr(settings, "PLAY_ADOPT", True):
        return
    loop = asyncio.get_running_loop()
    if _adopter is not None and not _adopter.done() and _adopter.get_loop() is loop:
        return
    _adopter = loop.create_task(_adopt_loop())


async def _adopt_loop():
    while True:
        await asyncio.sleep(runner.ADOPT_INTERVAL)
        try:
            adopted = await _sync(runner.adopt_orphaned_plays)()
            for session_id, speed in adopted:
                await start_play(session_id, speed, claimed=True)
        except asyncio.CancelledError:
            raise
        except Exception:     # noqa: BLE001 - the database may be away for a moment: look again
            log.exception("looking for plays to adopt failed")


class SessionConsumer(AsyncWebsocketConsumer):
    def __init__(self, *args, role="follower", **kwargs):
        super().__init__(*args, **kwargs)
        self.role = role   # from the route: as_asgi(role="presenter") or as_asgi(role="follower")

    async def connect(self):
        self.session_id = None
        self.sent_version = -1
        self.log_filter = None
        self.view = {}
        self.shown = {}   # panel id -> hash of the HTML this socket was last sent
        self.pending = asyncio.Queue(maxsize=MAX_PENDING_CONTROLS)
        self.worker = None
        self.cancel_run = False   # set by pause: a run-until in progress stops at its next slice
        self.checkpoint_timer = None        # a due checkpoint's (checkpoint_soon)
        self.checkpoint_due_since = None
        token = self.scope["url_route"]["kwargs"]["token"]
        self.session_id = await _sync(runner.session_for_token)(token, self.role)
        if self.session_id is None:
            await self.close(code=4404)
            return
        self.group = group_name(self.session_id)
        ensure_adopter()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        metrics.OPEN_SOCKETS.labels(self.role).inc()
        await self.send_snapshot()

    async def dispatch(self, message):
        """Channels' dispatch, except that a group message skips its ``close_old_connections``,
        a hop through the one shared thread before every handler: with 1,000 sockets a frame
        queued 1,000 hops there, a quarter of a process's work per frame (bench/fanout.py,
        docs/benchmarks.md). It is not needed: this consumer reads the database only through
        ``_sync`` (worker threads of their own), never on that thread."""
        if message.get("type") in GROUP_MESSAGES:
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    async def disconnect(self, code):
        if getattr(self, "session_id", None) is None:
            return
        if self.worker is not None:
            self.worker.cancel()
        metrics.OPEN_SOCKETS.labels(self.role).dec()
        await self.channel_layer.group_discard(self.group, self.channel_name)

    # ------------------------------------------------------------------ from the browser

    async def receive(self, text_data=None, bytes_data=None):
        try:
            msg = parse_message(text_data)
        except InvalidMessage as e:
            metrics.INPUT_REFUSED.inc()
            await self.send_status("invalid", str(e), ["the page sends JSON objects such as "
                                                       '{"action": "step-event"}; this one was refused'])
            return
        await self.handle(msg)

    async def handle(self, msg):
        """One parsed message: a page's own view or filter, or a control (presenter only)."""
        action = msg.get("action")
        if action == "view":
            await self.guarded(self.set_view(msg))
            return
        if action in VIEW_ACTIONS:
            await self.guarded(self.set_filter(msg))
            return
        if self.role != "presenter":
            metrics.CONTROLS_REFUSED.inc()
            await self.send_status("refused", "Refused: only the presenter controls this session",
                                   ["this is a follower link: it can watch, not control"])
            return
        if action not in CONTROL_ACTIONS:
            await self.send_status("invalid", f"Unknown control {runner._short(action)}")
            return
        metrics.CONTROLS.labels(action).inc()
        if action == "pause":
            self.cancel_run = True
            await self.guarded(self.pause())
            return
        try:
            self.pending.put_nowait(msg)
        except asyncio.QueueFull:
            metrics.INPUT_REFUSED.inc()
            await self.send_status("refused", "Refused: too many controls are waiting",
                                   [f"{MAX_PENDING_CONTROLS} controls of this page are still to be carried out; "
                                    "wait for them (or pause) and try again"])
            return
        if self.worker is None or self.worker.done():
            self.worker = asyncio.get_running_loop().create_task(self.work())

    async def work(self):
        """Carry out the queued controls one at a time, in order."""
        while not self.pending.empty():
            msg = self.pending.get_nowait()
            await self.guarded(self.carry_out(msg))

    async def guarded(self, awaitable):
        """Run a handler; an unexpected error becomes an error status on this socket (never a
        closed socket), and the page is brought back to the session's stored state."""
        try:
            await awaitable
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("control on session %s failed", self.session_id)
            await self.send_status("error", "That did not work: an internal error",
                                   [f"{type(e).__name__}: {str(e)[:300]}",
                                    "nothing was changed; please report it with the scenario"])
            try:
                await self.publish_now()
            except Exception:   # pragma: no cover - the session itself cannot be read
                log.exception("could not publish session %s", self.session_id)

    async def carry_out(self, msg):
        action = msg["action"]
        was_playing = await _sync(runner.stop_play)(self.session_id)
        go_on, reloaded = await self.reload_plugins(action)
        if not go_on:
            return
        if action == "play":
            await self.play(msg)
            if reloaded:
                await self.send_status("info", reloaded, [])
            return
        self.cancel_run = False
        slices = 0
        try:
            while True:
                result = await _sync(runner.control)(self.session_id, msg)
                slices += 1
                if not result.get("more"):
                    break
                await self.publish_now()          # show the progress, let other sockets run
                await asyncio.sleep(0)
                if self.cancel_run:
                    result = {"note": "Paused: the run stopped before reaching its time."}
                    break
                if slices >= runner.MAX_SLICES_PER_CONTROL:
                    result = {"note": f"Stopped: this run took its whole budget of work "
                                      f"({runner.MAX_SLICES_PER_CONTROL} slices); run again to go on."}
                    break
        except runner.ControlError as e:
            await self.send_status("error", e.title, e.problems)
            await self.publish_now()
            return
        await self.send_status("info", result["note"] if result["note"] else
                               (reloaded or ("Paused." if was_playing else "")), [])
        await self.publish_now()
        if result.get("checkpoint_due"):
            self.checkpoint_soon()

    def checkpoint_soon(self) -> None:
        """Take the checkpoint a control left due after its frame went out, not before
        (runner.take_due_checkpoint; it waits for the session's lock like any control): once the
        presenter has sent no control for CHECKPOINT_IDLE_SECONDS (the next control, which leaves
        it due again, puts it off), but no later than CHECKPOINT_MAX_WAIT_SECONDS after it first
        came due."""
        session_id = self.session_id
        loop = asyncio.get_running_loop()
        if self.checkpoint_due_since is None:
            self.checkpoint_due_since = loop.time()
        waited = loop.time() - self.checkpoint_due_since
        delay = CHECKPOINT_DELAY_SECONDS if waited >= CHECKPOINT_MAX_WAIT_SECONDS else CHECKPOINT_IDLE_SECONDS

        async def take():
            self.checkpoint_timer = None
            self.checkpoint_due_since = None
            try:
                await _sync(runner.take_due_checkpoint)(session_id)
            except Exception:       # noqa: BLE001 - travelling back then replays further
                log.exception("session %s: taking a due checkpoint failed", session_id)
        if self.checkpoint_timer is not None:
            self.checkpoint_timer.cancel()
        self.checkpoint_timer = loop.call_later(delay, lambda: asyncio.ensure_future(take()))

    async def reload_plugins(self, action) -> tuple:
        """The presenter's Reload plugins button, and in development (settings.DEBUG) a reload
        before any control when a plugin file of the session changed (visualizer.changes).
        Returns (whether to go on with ``action``, the note of an automatic reload to show
        with its result)."""
        from visualizer import changes
        try:
            if action == "reload-plugins":
                note = (await _sync(changes.reload_session)(self.session_id))["note"]
            else:
                note = await _sync(changes.maybe_auto_reload)(self.session_id)
        except runner.ControlError as e:
            await self.send_status("error", e.title, e.problems)
            await self.publish_now()
            return False, ""
        if action == "reload-plugins":
            await self.send_status("info", note, [])
            await self.publish_now()
            return False, ""
        return True, note

    async def play(self, msg):
        try:
            speed = runner.parse_speed(msg.get("speed", 2))
        except runner.ControlError as e:
            await self.send_status("error", e.title, e.problems)
            return
        await start_play(self.session_id, speed)
        await self.send_status("info", "", [])

    async def pause(self):
        await _sync(runner.stop_play)(self.session_id)
        # a play task may run in another server process: ask every process to stop it
        await self.channel_layer.group_send(self.group, {"type": "session.stop_play"})
        await self.publish_now()

    async def set_filter(self, msg):
        self.log_filter = {k: str(msg.get(k) or "")[:200] for k in ("pod", "node", "type")}
        if not any(self.log_filter.values()):
            self.log_filter = None
        version, panels = await _sync(frames.render_log)(self.session_id, self.log_filter)
        await self.send_panels(panels)

    async def set_view(self, msg):
        """This page's own window onto the session: the view fields it sends replace those
        it had (a field left out keeps its value; an empty one resets it)."""
        from visualizer import presenters
        fields = {k: v for k, v in msg.items() if k != "action"}
        self.view = presenters.normalize_view({**self.view, **fields})
        version, panels = await _sync(frames.render_own)(self.session_id, None, self.view or {"default": True})
        await self.send_panels(panels)

    # ------------------------------------------------------------------ to the browser

    async def publish_now(self):
        """Render the session once and send the frame to every socket of the session, this one
        first (the presenter who clicked sees it before the group's other sockets are served;
        the group's copy then finds nothing changed here)."""
        version, panels = await _sync(frames.render_frame)(self.session_id)
        frame = {"type": "session.frame", "version": version, "panels": panels}
        await self.session_frame(frame)
        await self.channel_layer.group_send(self.group, frame)

    async def send_snapshot(self):
        version, panels = await _sync(frames.render_frame)(self.session_id, self.log_filter, self.view)
        self.sent_version = version
        await self.send_panels(panels)

    async def send_panels(self, panels, only_changed=False):
        """Send panels as one frame; with ``only_changed``, leave out those this socket
        already shows exactly (the browser swaps only what changed)."""
        if only_changed:
            panels = [(pid, html) for pid, html in panels if self.shown.get(pid) != hash(html)]
            if not panels:
                return
        for pid, html in panels:
            self.shown[pid] = hash(html)
        metrics.FRAMES_PUSHED.inc()
        await self.send(text_data="\n".join(html for _, html in panels))

    async def send_status(self, kind, title, problems=()):
        await self.send(text_data=presenters.status(kind, title, problems))

    # ------------------------------------------------------------------ from the group

    async def session_frame(self, event):
        if event["version"] < self.sent_version:
            return
        self.sent_version = event["version"]
        panels = event["panels"]
        if self.log_filter or self.view:
            _, own = await _sync(frames.render_own)(self.session_id, self.log_filter, self.view)
            own = dict(own)
            panels = [(pid, own.get(pid, html)) for pid, html in panels]
        await self.send_panels(panels, only_changed=True)

    async def session_status(self, event):
        """A status for every page of the session (e.g. playing stopped at the memory budget)."""
        await self.send_status(event["kind"], event["title"], event["problems"])
        await self.publish_now()

    async def session_stop_play(self, event):
        if runner.stop_local_play(self.session_id):   # this process was playing it: show it paused
            await self.publish_now()


class JsonStreamConsumer(SessionConsumer):
    """The machine-readable stream (``/ws/json/s/<presenter token>/``, ``/ws/json/w/<follower
    token>/``): the trace events as they are revealed and a compact summary per frame, as JSON
    (``visualizer.stream``; the messages and rules are in docs/state-and-trace.md, "The JSON stream").

    It joins the session's group as a page does and sends the same controls down the same path
    (``SessionConsumer.handle``: the presenter's queue, ``runner.control``, play and pause; a
    follower is refused); a frame of the group (a control's, a play tick's) is its cue to read
    what is new. The stream starts when the client says what it has: ``?from=N`` in the URL or
    a ``{"from": N}`` message (0: from the start)."""

    async def connect(self):
        self.started = False
        self.have = 0            # events the client holds (0 .. have-1)
        self.told = 0            # the last position a frame or rewind told it
        self.marks = None        # the run those events belong to (stream.run_marks)
        self.behind = False      # told "behind": nothing more until it asks with "from"
        self.quiet = False       # after a rewind: nothing until events beyond ``have``
        self.frame_key = None    # (version, position) of the last frame sent
        self.stream_lock = asyncio.Lock()
        await super().connect()

    async def send_snapshot(self):
        from urllib.parse import parse_qs
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        if "from" in query:
            await self.resume({"from": query["from"][0], "run": (query.get("run") or [None])[0]})

    async def handle(self, msg):
        if "from" in msg and "action" not in msg:
            await self.resume(msg)
            return
        if msg.get("action") in VIEW_ACTIONS:
            await self.send_status("invalid", "The JSON stream has no page view: filter the events yourself", [])
            return
        await super().handle(msg)

    async def resume(self, msg):
        raw = msg.get("from")
        try:
            if isinstance(raw, bool):
                raise ValueError
            have = int(raw)
            if have < 0 or have > 2**53:
                raise ValueError
        except (TypeError, ValueError):
            await self.send_status("invalid", f"from: {runner._short(raw)} is not a position (0 or more)", [])
            return
        run = msg.get("run")
        async with self.stream_lock:
            self.started, self.behind, self.quiet = True, False, False
            self.have = self.told = have
            self.frame_key = None
            # the run the client's events are of: the one it names if it is the session's now,
            # else (another run, or a run it does not name while it holds events) unknown
            self.marks = "given" if run is not None else None
            self.claimed_run = run
        await self.push()

    async def push(self):
        """Send the client what it does not have yet (see docs/state-and-trace.md, "The JSON stream")."""
        if not self.started or self.behind:
            return
        async with self.stream_lock:
            marks = self.marks
            got = await _sync(stream.read)(self.session_id, self.have, None if marks in (None, "given") else marks)
            if marks == "given" and self.claimed_run != got["run"]:
                got = await _sync(stream.read)(self.session_id, 0, None)   # unknown run: from the start
                got["kept"] = 0
            position = got["position"]
            if got["kept"] < self.have or position < self.told:
                self.have = got["kept"]
                self.told = position
                self.quiet = True
                await self.send_json({"type": "rewind", "position": position, "kept": self.have,
                                      "head": got["head"], "run": got["run"]})
            self.marks = got["marks"]
            for text in got["events"]:
                await self.send(text_data=text)
            if got["events"]:
                self.have = got["kept"] + len(got["events"])
                self.quiet = False
            if got["more"]:
                self.behind = True
                await self.send_json({"type": "behind", "position": self.have, "head": position,
                                      "run": got["run"]})
                return
            if self.quiet or got["frame"] is None:
                return
            key = (got["version"], position, got["playing"])
            if key == self.frame_key:
                return
            self.frame_key = key
            self.told = position
            await self.send_json({"type": "frame", "position": position, "head": got["head"], "run": got["run"],
                                  "playing": got["playing"], **got["frame"]})

    async def send_json(self, obj):
        await self.send(text_data=json.dumps(obj, separators=(",", ":"), ensure_ascii=False))

    async def send_status(self, kind, title, problems=()):
        if not title and not problems:
            return      # the page's "clear the status panel": nothing to say on the stream
        await self.send_json({"type": "status", "position": self.told, "kind": kind, "title": title,
                              "problems": list(problems)})

    async def send_panels(self, panels, only_changed=False):
        pass        # the HTML panels are the pages'

    async def session_frame(self, event):
        await self.push()

    async def session_status(self, event):
        """A status for every socket of the session (e.g. playing stopped at the memory budget):
        the pages' frame follows from the socket that sent it; this one reads what is new."""
        await self.send_status(event["kind"], event["title"], event["problems"])
        await self.push()
