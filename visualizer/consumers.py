"""The session WebSocket: one consumer per browser tab, one channel-layer group per session.

- Connecting (or reconnecting) first gets a full snapshot: every panel of the page.
- Every change to the session is published to the group as a frame of HTML partials (one
  root element with a stable id per panel); the htmx ws extension swaps each by its id.
  Frames carry the session's version, and a consumer never sends an older frame after a
  newer one.
- Only a presenter's socket (``/ws/s/<presenter token>/``) may control the session. A
  follower's socket (``/ws/w/<follower token>/``) is refused any control, whatever it sends;
  it may only set its own event-log filter.

The work itself happens in ``visualizer.runner`` (in a worker thread, so the event loop keeps
serving other sockets); this module only routes messages.
"""
from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from visualizer import metrics, presenters, runner

VIEW_ACTIONS = {"filter"}
CONTROL_ACTIONS = {"step-event", "step-point", "step-cycle", "back", "jump", "run-until", "inject",
                   "play", "pause", "reload-plugins"}


def group_name(session_id) -> str:
    return f"session-{session_id}"


def _sync(fn):
    return sync_to_async(fn, thread_sensitive=False)


class SessionConsumer(AsyncWebsocketConsumer):
    def __init__(self, *args, role="follower", **kwargs):
        super().__init__(*args, **kwargs)
        self.role = role   # from the route: as_asgi(role="presenter") or as_asgi(role="follower")

    async def connect(self):
        self.session_id = None
        self.sent_version = -1
        self.log_filter = None
        self.shown = {}   # panel id -> hash of the HTML this socket was last sent
        token = self.scope["url_route"]["kwargs"]["token"]
        self.session_id = await _sync(runner.session_for_token)(token, self.role)
        if self.session_id is None:
            await self.close(code=4404)
            return
        self.group = group_name(self.session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        metrics.OPEN_SOCKETS.labels(self.role).inc()
        await self.send_snapshot()

    async def disconnect(self, code):
        if getattr(self, "session_id", None) is None:
            return
        metrics.OPEN_SOCKETS.labels(self.role).dec()
        await self.channel_layer.group_discard(self.group, self.channel_name)

    # ------------------------------------------------------------------ from the browser

    async def receive(self, text_data=None, bytes_data=None):
        try:
            msg = json.loads(text_data or "")
            if not isinstance(msg, dict):
                raise ValueError
        except ValueError:
            await self.send_status("error", "The message is not a JSON object")
            return
        msg.pop("HEADERS", None)
        action = msg.get("action")
        if action in VIEW_ACTIONS:
            await self.set_filter(msg)
            return
        if self.role != "presenter":
            metrics.CONTROLS_REFUSED.inc()
            await self.send_status("refused", "Refused: only the presenter controls this session",
                                   ["this is a follower link: it can watch, not control"])
            return
        if action not in CONTROL_ACTIONS:
            await self.send_status("error", f"Unknown control {action!r}")
            return
        metrics.CONTROLS.labels(action).inc()
        if action == "pause":
            await self.pause()
            return
        was_playing = runner.stop_play(self.session_id)
        go_on, reloaded = await self.reload_plugins(action)
        if not go_on:
            return
        if action == "play":
            await self.play(msg)
            if reloaded:
                await self.send_status("info", reloaded, [])
            return
        try:
            result = await _sync(runner.control)(self.session_id, msg)
        except runner.ControlError as e:
            await self.send_status("error", e.title, e.problems)
            await self.publish_now()
            return
        await self.send_status("info", result["note"] if result["note"] else
                               (reloaded or ("Paused." if was_playing else "")), [])
        await self.publish_now()

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
        raw = msg.get("speed", 2)
        try:
            speed = float(raw[0] if isinstance(raw, list) else raw)
            if speed < 0 or speed != speed:
                raise ValueError
        except (TypeError, ValueError):
            await self.send_status("error", "The speed is not valid", [f"speed: {raw!r} is not a number >= 0"])
            return
        group, layer = self.group, self.channel_layer

        async def publish(version, panels):
            await layer.group_send(group, {"type": "session.frame", "version": version, "panels": panels})

        await runner.start_play(self.session_id, speed, publish)
        await self.send_status("info", "", [])

    async def pause(self):
        runner.stop_play(self.session_id)
        # a play task may run in another server process: ask every process to stop it
        await self.channel_layer.group_send(self.group, {"type": "session.stop_play"})
        await self.publish_now()

    async def set_filter(self, msg):
        self.log_filter = {k: str(msg.get(k) or "") for k in ("pod", "node", "type")}
        if not any(self.log_filter.values()):
            self.log_filter = None
        version, panels = await _sync(runner.render_log)(self.session_id, self.log_filter)
        await self.send_panels(panels)

    # ------------------------------------------------------------------ to the browser

    async def publish_now(self):
        """Render the session once and send the frame to every socket of the session."""
        version, panels = await _sync(runner.render_frame)(self.session_id)
        await self.channel_layer.group_send(
            self.group, {"type": "session.frame", "version": version, "panels": panels})

    async def send_snapshot(self):
        version, panels = await _sync(runner.render_frame)(self.session_id, self.log_filter)
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
        if self.log_filter:
            _, own = await _sync(runner.render_log)(self.session_id, self.log_filter)
            own = dict(own)
            panels = [(pid, own.get(pid, html)) for pid, html in panels]
        await self.send_panels(panels, only_changed=True)

    async def session_stop_play(self, event):
        if runner.stop_play(self.session_id):   # this process was playing it: show it paused
            await self.publish_now()
