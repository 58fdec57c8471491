"""The JSON stream of a session (``/ws/json/s/<presenter token>/``, ``/ws/json/w/<follower
token>/``): the trace events as they are revealed, in the public trace format, and a compact
summary per frame. The messages and the rules are in docs/state-and-trace.md ("The JSON stream").

Positions: the event at position ``i`` is the run's ``i``-th event (0-based; its ``seq``); a
frame's position is the number of events revealed (the page's position); a client that "has
N" holds events 0 .. N-1.

``read`` is the one function that opens the live session (in a worker thread); the consumer
(``visualizer.consumers.JsonStreamConsumer``) keeps, per socket, how many events the client has
(``have``), the last position it told it and the run it was on, and sends what ``read`` returns.
"""
from __future__ import annotations

import hashlib
import json

from visualizer import moment, runner
from visualizer.panels.common import trace_index, unit_state

MAX_BATCH_EVENTS = 5000      # events sent for one frame (or one resume) before "behind"


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def run_marks(live) -> tuple:
    """What makes the recorded run what it is, besides the scenario: the last plugin reload
    (a reload replays the run with new code) and each injection (its position and a digest).
    Two runs with the same marks have the same events; see ``branch_point``."""
    epoch = (live.baseline or {}).get("reloaded_at") if isinstance(live.baseline, dict) else None
    marks = tuple((i.position, hashlib.sha256(_dumps(i.as_json()).encode()).hexdigest()[:16])
                  for i in live.injections)
    return epoch, marks


def run_id(marks) -> str:
    return hashlib.sha256(_dumps([marks[0], list(marks[1])]).encode()).hexdigest()[:16]


def branch_point(old, new) -> int | None:
    """The first position where the run ``old`` (its marks) and the run ``new`` may differ, or
    None if they are the same run. Before the first injection that differs, both runs replayed
    the same scenario with the same injections: their events are the same (the engine is
    deterministic); a plugin reload may change any event."""
    if old == new:
        return None
    if old[0] != new[0]:
        return 0
    a, b = old[1], new[1]
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    ends = ([a[k][0]] if k < len(a) else []) + ([b[k][0]] if k < len(b) else [])
    return min(ends) if ends else None


_summaries: dict = {}     # session id -> ((version, position), summary): one per frame, shared by its sockets


def summary(live) -> dict:
    """The compact state of the moment shown (visualizer.moment, as the page's panels); made
    once per frame of the session however many sockets read it (the caller holds the session's
    lock)."""
    key = (live.version, live.position, id(live))
    cached = _summaries.get(live.id)
    if cached is not None and cached[0] == key:
        return cached[1]
    made = _summary(live)
    if len(_summaries) >= 256:
        _summaries.clear()      # sessions come and go: keep the cache small
    _summaries[live.id] = (key, made)
    return made


def _summary(live) -> dict:
    st = live.stepper
    mom = moment.moment(st, unit_state(st), trace_index(live))
    flight = mom["in_flight"]
    return {
        "clock": mom["time"],
        "queues": {name: list(mom["queues"].get(name, [])) for name in moment.QUEUE_NAMES},
        "inFlight": None if flight is None else {"pod": flight["key"], "cycle": flight["cycle"],
                                                 "stage": flight["stage"]},
        "waitingPods": mom["waitingPods"] or {},
        "nominations": mom["nominatedPods"],
    }


def read(session_id, have: int, marks, limit: int | None = None) -> dict:
    """What a client holding ``have`` events of the run ``marks`` (None: trust it) needs now:

    ``{"position", "head", "run", "marks", "kept", "events", "more", "frame"}``: ``kept`` is how
    many of its events are still the run's (less than ``have`` after a branch); ``events`` the
    messages of the events from ``kept`` to at most ``limit`` of them (already JSON);
    ``more`` whether revealed events remain beyond those; ``frame`` the summary (a dict)."""
    limit = MAX_BATCH_EVENTS if limit is None else limit
    with runner.open_live(session_id) as live:
        position = live.position
        now = run_marks(live)
        kept = have
        if marks is not None:
            at = branch_point(marks, now)
            if at is not None:
                kept = min(kept, at)
        kept = max(0, min(kept, len(live.timeline)))
        stop = min(position, kept + limit) if position > kept else kept
        events = [_dumps({"type": "event", "position": i, "event": e})
                  for i, e in enumerate(runner._events_between(live.stepper.events, kept, stop), start=kept)]
        frame = summary(live) if stop >= position else None
        return {"position": position, "head": live.high_water, "run": run_id(now), "marks": now,
                "version": live.version, "kept": kept, "events": events, "more": stop < position,
                "playing": live.playing is not None, "frame": frame}
