"""The running sessions: one live engine per session in this process (the service module).

Views and consumers stay thin and call the functions here; nothing else touches a Stepper.

A session's run is a **timeline** (``engine.timeline.Timeline``, which owns time travel: the
head, the position shown, checkpoints, branching on inject; ``LiveSession.run``): the trace
events revealed so far (``high_water`` of them, the *head*), the cluster events injected on
the way, and the position shown now. This module keeps one per live session and adds what a
web session needs around it.

Because the engine is deterministic, the database row (``models.Session``) holds only what a
replay needs; a process that has no copy of the run, or an older one (``version``), rebuilds
it (``rebuild``), so a server restart loses nothing and two processes can serve one session.

Play runs server-side as an asyncio task per session (``start_play``); each tick does the
steps that are due at the chosen speed and publishes one frame, so updates are coalesced.

Several server processes (issue 27): any process serves any session. A change (a control, a
play tick) opens the session with ``open_live(..., write=True)``: on PostgreSQL the row is
locked (``SELECT ... FOR UPDATE``) until the change is committed, so a control sent to another
process waits, then sees the new version (rebuilds its copy) and applies after it: controls
apply once and in order, never two engines racing. Playing is in the row too (``play_speed``,
``play_owner``, ``play_lease_until``): any process's pause or control clears it and the player's
next tick stops; the player renews its lease on every tick, and a process that finds a lease
run out (the player was killed) claims the play and continues it from the database
(``adopt_orphaned_plays``). On SQLite (one process) the row lock is this process's own lock.

Bounds, so that one presenter cannot starve the other sessions of the process:

- a control is validated (and an injection serialized) before it changes anything, and a
  control that fails after it changed the live session makes this process forget that copy
  (the next access rebuilds it from the database): a control happens in memory and in the
  database, or in neither;
- ``run-until`` works in slices of at most ``RUN_SLICE_SECONDS`` of engine work (``control``
  returns ``more``; the consumer publishes a frame, yields to the event loop and continues),
  at most ``MAX_SLICES_PER_CONTROL`` slices per control;
- a session's size is estimated as what the trace events it keeps take in the compact store
  (``EventLog.nbytes``, engine/tracestore.py); past ``settings.SESSION_MEMORY_BUDGET_MB`` it
  does not go further forward (``OverBudget``);
- idle live sessions are evicted from this process's memory (``evict_idle``), after
  ``settings.LIVE_SESSION_IDLE_SECONDS`` or beyond ``settings.LIVE_SESSIONS_MAX``.
"""
from __future__ import annotations

import asyncio
import datetime
import gc
import hashlib
import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import math
import os
import secrets
import socket

from engine import US, Scenario
from engine.objects import Problems
from engine.quantity import MAX_DURATION_SECONDS
from engine.scenario import parse_action
from engine.checkpoint import Checkpointer
from engine import timeline as timeline_mod
from engine.stepper import Stepper
from engine.timeline import STEP_KINDS, Timeline
from visualizer import metrics, moment
from visualizer.errors import Conflict, ControlError, OverBudget  # noqa: F401 - raised here, and re-exported
from visualizer.models import Session

log = logging.getLogger(__name__)

SPEEDS = (0.5, 1, 2, 5, 10, 25, 100)   # steps per second; 0 means as fast as possible
PUSH_INTERVAL = 0.1                     # seconds between frames while playing (at most)
TICK_BUDGET = 0.1                       # seconds of engine work per tick at full speed
MAX_RUN_AHEAD = 24 * 3600               # virtual seconds one run-until may cover (periodic
                                        # flushes make every virtual second cost some work)
RUN_SLICE_SECONDS = 0.2                 # engine work per slice of a run-until (wall time)
RUN_SLICE_UNITS = 50                    # engine units between two looks at the wall clock
MAX_SLICES_PER_CONTROL = 150            # slices one run-until may take (then it stops, saying so)
MAX_INJECTIONS = 1000                   # cluster events injected into one session
MAX_INJECTION_BYTES = 256 * 1024        # one injected manifest, as stored (JSON)
MAX_INJECTIONS_BYTES = 4 * 1024 * 1024  # all of a session's injected manifests, as stored
# Estimated memory of one kept trace event (the event dict, its strings and the list slot),
# measured with tracemalloc on the lessons: see tests/visualizer/test_limits.py.
EVENT_BYTES = 1000
# Estimated memory of one cluster object of a live session: the parsed scenario's copy and the
# engine's (about 5 KB together, measured with tracemalloc at 5,000 nodes and 10,000 pods:
# docs/limits.md), and a second engine's while one is preloaded or shown behind the head.
CLUSTER_OBJECT_BYTES = 8 * 1024
# Checkpointer options for sessions (engine/checkpoint.py); tests take one at every unit
CHECKPOINT_OPTIONS: dict = {}
# Several processes (module docstring): this process's name in a play's lease, how long a lease
# lasts without a tick renewing it, how often a process looks for plays whose player went away,
# and how long a change waits for another process's change to the same session (then Conflict).
PROCESS_ID = f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(4)}"
PLAY_LEASE_SECONDS = 3.0
ADOPT_INTERVAL = 1.0
ROW_LOCK_TIMEOUT = "15s"




@dataclass
class Injection:
    """A cluster event injected from the page: applied after ``position`` events, at ``time_us``."""

    position: int
    time_us: int
    verb: str
    body: dict

    def as_json(self) -> dict:
        return {"position": self.position, "timeUs": self.time_us, "verb": self.verb, "body": self.body}

    @classmethod
    def from_json(cls, d: dict) -> "Injection":
        return cls(int(d["position"]), int(d["timeUs"]), d["verb"], d["body"])


def _plain(value):
    """A YAML-parsed body as plain JSON values (dates become RFC 3339 strings); ControlError
    if it cannot be stored as JSON (NaN, infinity) or is too large to store."""
    def default(o):
        if isinstance(o, (datetime.datetime, datetime.date)):
            text = o.isoformat()
            return text.replace("+00:00", "Z")
        raise TypeError(f"{type(o).__name__} is not a JSON value")
    try:
        text = json.dumps(value, default=default, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        reason = ("NaN and infinity (.nan, .inf) are not values a cluster object can hold"
                  if "Out of range float" in str(e) else str(e)[:200])
        raise ControlError([f"the manifest cannot be stored: {reason}"],
                           title="The cluster event is not valid") from None
    if len(text) > MAX_INJECTION_BYTES:
        raise ControlError([f"the manifest is {len(text):,} bytes as JSON; at most {MAX_INJECTION_BYTES:,}"],
                           title="The cluster event is not valid")
    if "\\u0000" in text.replace("\\\\", ""):
        # PostgreSQL's jsonb cannot hold a NUL character (SQLite can): refused on both, alike.
        raise ControlError(["the manifest cannot be stored: it contains a NUL character (\\0), which "
                            "the database (PostgreSQL) cannot store"], title="The cluster event is not valid")
    return json.loads(text)


def parse_injection(scenario, verb, body, index):
    """The engine Action for an injected cluster event, or ControlError with every problem."""
    probs = Problems()
    if verb not in ("create", "update", "delete"):
        raise ControlError([f"inject[{index}]: {verb!r} is not one of create, update or delete"])
    action = parse_action(verb, body, f"inject[{index}].{verb}", probs, scenario.simulation.start_time)
    if probs or action is None:
        raise ControlError(probs.items or [f"inject[{index}].{verb}: is not a valid action"],
                           title="The cluster event is not valid")
    return action


def _action_of(scenario):
    """The engine action of a recorded injection (for engine.timeline)."""
    return lambda i, inj: parse_injection(scenario, inj.verb, inj.body, i)


def extender_transport(scenario, records=None):
    """How a session's engines call the scheduler extenders its scenario configures
    (engine/extender.py): a ``RecordingTransport`` over HTTP to the urlPrefixes this process's
    ``SCHEDULER_EXTENDERS`` allows, answering the calls ``records`` (the session's
    ``extender_records``) already holds from them without calling out; None when the scenario
    configures no extender (the engine then needs none). One per live session: every engine of
    its timeline (the head, those rebuilt behind it) shares it. Used only under the session's
    lock (``open_live``), so one thread at a time; a call blocks that thread for at most the
    extender's httpTimeout."""
    if not scenario.scheduler.extenders:
        return None
    from engine.extender import HTTPTransport, RecordingTransport
    return RecordingTransport(HTTPTransport(clock=time.perf_counter), records=records)


def rebuild(scenario, injections, position, clock_us=None, **kw) -> Stepper:
    """``engine.timeline.rebuild`` of a session's run (its injections parsed as the page's, the
    page's moment attached to the stepper); pass ``extender_transport=`` (the session's) for a
    scenario with extenders."""
    return timeline_mod.rebuild(scenario, injections, position, clock_us, action_of=_action_of(scenario),
                                attach=moment.attach, **kw)


# The scenario parsed last (by validate_scenario), which the session made of it reuses when it
# opens (most often the next request): a 5,000-node scenario is not parsed twice in a row.
# Nothing changes a Scenario once parsed (every rebuild of a session shares its one).
_last_parsed: tuple = (None, None)


def _text_key(text: str, source: str):
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), source


def parsed_scenario(text: str, source: str) -> Scenario:
    """``Scenario.from_text(text, source)``, the one validate_scenario just parsed if it is
    that text."""
    key, scenario = _last_parsed
    if key is not None and key == _text_key(text, source):
        return scenario
    return Scenario.from_text(text, source)


def validate_scenario(text: str, source: str = "<input>") -> Scenario:
    """Parse and check a scenario, including building its scheduler (``engine.sandbox.validate``),
    within the server's object limit (``settings.SESSION_MAX_OBJECTS``); ScenarioError lists
    every problem found."""
    from django.conf import settings
    from engine.sandbox import validate
    scenario = validate(text, source, int(settings.SESSION_MAX_OBJECTS))
    global _last_parsed
    _last_parsed = (_text_key(text, source), scenario)
    return scenario


def create_session(text: str, source: str = "") -> Session:
    """Validate a scenario and store a new session for it (nothing is stored if it is invalid).
    Text from a stranger goes through ``visualizer.uploads.prepare`` (a worker process with
    limits) first."""
    scenario = validate_scenario(text, source or "<input>")
    from visualizer.plugins import plugin_code
    return Session.objects.create(
        title=scenario.title or scenario.name, scenario_name=scenario.name,
        scenario_text=text, source=source, plugin_code=plugin_code(scenario))


def export(live, what: str) -> str:
    """One export of a live session at the position it shows (see engine/export.py)."""
    from engine.export import annotated_pods, scenario_at
    from engine.importers import dump_scenario
    engine = live.stepper.engine
    if what in ("scenario.yaml", "state.json") and not engine._loaded:
        # before the first step the page stands before the scenario's objects are loaded (the
        # engine's first unit): the export is of the cluster as loaded, as `export --until 0`
        loaded = live.loaded_at_start()
        engine = loaded.engine
        if what == "state.json":
            return json.dumps(loaded.state(), indent=2) + "\n"
    if what == "scenario.yaml":
        return dump_scenario(scenario_at(engine))
    if what == "state.json":
        return json.dumps(live.stepper.state(), indent=2) + "\n"
    if what == "trace.jsonl":
        return trace_lines(live.stepper.events, 0, live.stepper.position)
    # read once, in order: the events are expanded one at a time, never all held at once
    shown = _events_between(live.stepper.events, 0, live.stepper.position)
    return json.dumps(annotated_pods(engine, shown), indent=2) + "\n"


def _events_between(events, start, stop):
    """Events ``start`` .. ``stop - 1`` as dicts, one at a time where the store allows."""
    scan = getattr(events, "scan", None)
    return scan(start, stop) if scan is not None else iter(events[start:stop])


EXPORT_CHUNK_EVENTS = 5000      # the trace.jsonl download is written this many events at a time


def trace_lines(events, start: int, stop: int) -> str:
    """Events ``start`` to ``stop`` as JSON Lines, as ``python -m engine run --trace`` writes them."""
    return "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in _events_between(events, start, stop))


def _kept_bytes(events, retained=False) -> int:
    """What a log of events takes; ``retained``: with the earlier run a forked log shares."""
    if retained and hasattr(events, "retained_nbytes"):
        return events.retained_nbytes()
    nbytes = getattr(events, "nbytes", None)
    return nbytes() if nbytes is not None else len(events) * EVENT_BYTES


class LiveSession:
    """One session's run in this process (an ``engine.timeline.Timeline``) at the position the
    session shows, with what a web session adds: its database row, its memory budget and the
    validation of the presenter's controls."""

    def __init__(self, row: Session):
        self.id = row.pk
        self.version = row.version
        self.title = row.title
        self.scenario_text = row.scenario_text
        self.presenter_token = row.presenter_token
        self.follower_token = row.follower_token
        self.plugin_code = row.plugin_code or {}   # the plugin code it was recorded with (changes.py)
        self.baseline = row.baseline               # the last reload's record, or None
        self.scenario = parsed_scenario(row.scenario_text, row.source or "<input>")
        self.last_change = (min(row.change_start, row.position), row.position)
        self.play_speed = row.play_speed           # from the row at every open_live (any process's play)
        self.play_owner = row.play_owner
        from django.conf import settings
        # checkpoints of the head's run, for travelling back (engine/checkpoint.py): at most a
        # quarter of the session's memory budget
        checkpointer = Checkpointer(budget_bytes=int(settings.SESSION_MEMORY_BUDGET_MB * 1024 * 1024 / 4),
                                    clock=time.perf_counter, **CHECKPOINT_OPTIONS)
        # the scheduler extenders' replies so far: the rebuild below replays them, never calling out
        self.extender = extender_transport(self.scenario, row.extender_records or [])
        self._records_saved = self._records_mark()
        self.run = Timeline(self.scenario, [Injection.from_json(d) for d in row.injections], row.high_water,
                            row.head_clock_us, row.position, checkpointer=checkpointer,
                            action_of=_action_of(self.scenario), attach=moment.attach,
                            extender_transport=self.extender)

    # ------------------------------------------------------------------ the timeline's parts

    @property
    def stepper(self) -> Stepper:
        """The stepper at the position shown."""
        return self.run.shown

    @stepper.setter
    def stepper(self, st: Stepper) -> None:
        self.run.shown = st

    @property
    def head(self) -> Stepper:
        return self.run.head

    @property
    def timeline(self):
        """The recorded events (the head's)."""
        return self.run.events

    @property
    def checkpointer(self) -> Checkpointer:
        return self.run.checkpointer

    @property
    def injections(self) -> list:
        return self.run.injections

    @property
    def high_water(self) -> int:
        return self.run.high_water

    @property
    def head_clock_us(self) -> int:
        return self.run.head_clock_us

    @property
    def _preloaded(self):
        return self.run.preloaded

    # ------------------------------------------------------------------ reading

    @property
    def playing(self):
        """The speed the session plays at (in whichever process plays it), or None."""
        return self.play_speed

    @property
    def position(self) -> int:
        return self.run.position

    @property
    def at_head(self) -> bool:
        return self.run.at_head

    @property
    def finished(self) -> bool:
        return self.run.finished

    def revealed(self) -> list:
        return self.stepper.events[:self.stepper.position]

    def estimated_bytes(self) -> int:
        """The session's memory, estimated cheaply and deterministically: what the trace events
        it keeps take (the head's, and the shown engine's when that is another), as the compact
        store counts them (EventLog.nbytes), or EVENT_BYTES per event for a plain list, and
        CLUSTER_OBJECT_BYTES per cluster object."""
        kept = _kept_bytes(self.timeline, retained=True) + self.checkpointer.nbytes
        if self.stepper.events is not self.timeline:
            kept += _kept_bytes(self.stepper.events)
        return kept + self.cluster_objects * CLUSTER_OBJECT_BYTES

    @property
    def cluster_objects(self) -> int:
        """The cluster objects the session's scenario and injections can make (its size)."""
        sc = self.scenario
        return (len(sc.objects) + sum(1 for a in sc.actions if a.verb == "create")
                + sum(1 for i in self.injections if getattr(i, "verb", "") == "create"))

    def check_budget(self) -> None:
        """OverBudget if the session already uses its memory budget (then it goes no further
        forward; travelling back still works)."""
        from django.conf import settings
        budget = int(settings.SESSION_MEMORY_BUDGET_MB * 1024 * 1024)
        if self.estimated_bytes() >= budget:
            raise OverBudget(
                [f"this session keeps {self.cluster_objects:,} cluster objects and {len(self.timeline):,} trace events (about "
                 f"{self.estimated_bytes() / 1048576:.0f} MB), its memory budget is "
                 f"{settings.SESSION_MEMORY_BUDGET_MB:g} MB (SESSION_MEMORY_BUDGET_MB); travel back to "
                 "look at what happened, or start a smaller scenario"],
                title="Stopped: this session reached its memory budget")

    # ------------------------------------------------------------------ moving (engine/timeline.py)

    def loaded_at_start(self) -> Stepper:
        return self.run.loaded_at_start()

    def move_to(self, target: int) -> None:
        """Show the run after ``target`` events of the recorded timeline (time travel)."""
        self.run.move_to(target)

    def step(self, kind: str, defer_checkpoint: bool = False) -> bool:
        """One step of ``kind`` (event, point, cycle); False if nothing more happens. With
        ``defer_checkpoint`` (a presenter's single step) a checkpoint that comes due is left
        for ``take_due_checkpoint``, after the frame is out. New engine work must be within
        the memory budget."""
        if kind not in STEP_KINDS:
            raise ControlError(f"unknown step {kind!r} (one of {', '.join(STEP_KINDS)})")
        return self.run.step(kind, defer_checkpoint, before_engine_work=self.check_budget)

    def run_until(self, seconds: float, slice_seconds: float | None = None) -> bool:
        """Everything due at virtual times <= ``seconds`` happens; an earlier time than the
        one shown travels back to it on the recorded timeline. With ``slice_seconds``, stop
        after about that much engine work (wall time); returns whether ``seconds`` was reached
        (False: call again to continue)."""
        if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_DURATION_SECONDS:
            raise ControlError(f"{seconds:g}s is not a time the engine can run to (0 to {MAX_DURATION_SECONDS}s)")
        until_us = int(round(seconds * US))
        if self.run.known_before(until_us):
            self.run.travel_to_time(until_us)
            return True
        head_now = max(self.head_clock_us, self.stepper.engine.now)
        if until_us - head_now > MAX_RUN_AHEAD * US:
            raise ControlError(f"{seconds:g}s is more than {MAX_RUN_AHEAD // 3600} hours of virtual time ahead "
                               f"of the clock ({head_now / US:g}s); run in shorter spans")
        self.check_budget()
        return self.run.run_until(seconds, slice_seconds, slice_units=RUN_SLICE_UNITS, clock=time.perf_counter)

    def back(self) -> bool:
        return self.run.back()

    def prepare_injection(self, verb: str, body):
        """Validate an injection without applying it: (stored body, action, injections kept)."""
        body = _plain(body)
        kept = self.run.kept_injections()
        if len(kept) >= MAX_INJECTIONS:
            raise ControlError([f"this session already has {len(kept)} injected cluster events, the most one "
                                "session keeps; start a new session"], title="Too many cluster events")
        stored = sum(len(json.dumps(i.body)) for i in kept) + len(json.dumps(body))
        if stored > MAX_INJECTIONS_BYTES:
            raise ControlError([f"this session's injected manifests would take {stored:,} bytes; at most "
                                f"{MAX_INJECTIONS_BYTES:,} are kept per session; start a new session"],
                               title="Too many cluster events")
        action = parse_injection(self.scenario, verb, body, len(kept))
        self.check_budget()
        return body, action, kept

    def inject(self, verb: str, body, prepared=None) -> None:
        """Apply a cluster event now; behind the head, the recorded future is dropped (its
        extender replies too: the new branch calls the extenders again from here)."""
        body, action, _kept = prepared or self.prepare_injection(verb, body)
        behind = not self.at_head
        self.run.inject(action, lambda pos, at: Injection(pos, at, verb, body))
        if behind and self.extender is not None:
            self.extender.truncate(self.stepper.engine.extender_calls)

    def catch_up(self, row) -> bool:
        """Bring this copy to the row's newer version without a rebuild, when another process
        only moved the same run: ran it further with no new injection (``Timeline.extend_head``)
        or travelled along it; False when it cannot (an injection or a reload changed the run,
        or the scenario calls extenders, whose record another process extended): then the
        caller rebuilds. A rebuild replays the whole run; this, only what is new."""
        if (self.extender is not None or row.plugin_code != (self.plugin_code or {})
                or _reload_mark(row.baseline) != _reload_mark(self.baseline)
                or row.high_water < self.high_water or len(row.injections) != len(self.injections)
                or row.injections != [i.as_json() for i in self.injections]):
            return False
        if not self.run.extend_head(row.high_water, row.head_clock_us):
            return False
        self.run.move_to(row.position)
        if self.run.position != row.position:
            return False
        self.version = row.version
        self.last_change = (min(row.change_start, row.position), row.position)
        return True

    # ------------------------------------------------------------------ storing

    def persist(self, *, injections: bool = False, extra: dict | None = None) -> None:
        """Store the run's new position (and injections); ``extra``: more fields of the row to
        write with it (a play tick's lease). Conflict if the row changed meanwhile."""
        fields = {**(extra or {}),"position": self.position, "change_start": min(self.last_change[0], self.position),
                  "high_water": self.high_water,
                  "head_clock_us": self.head_clock_us, "version": self.version + 1}
        if injections:
            fields["injections"] = [i.as_json() for i in self.injections]
        mark = self._records_mark()
        if mark[0] != self._records_saved[0] or mark[1] is not self._records_saved[1]:
            fields["extender_records"] = self.extender.records
        from django.utils import timezone
        fields["updated_at"] = timezone.now()
        if not _retry_locked(lambda: Session.objects.filter(pk=self.id, version=self.version).update(**fields)):
            _forget(self.id)
            raise Conflict("the session was changed elsewhere (another server process); "
                           "the page now shows its latest state", title="Changed elsewhere")
        self.version += 1
        self._records_saved = mark

    def _records_mark(self):
        """What the extender record holds (its length and its last entry, which a new branch
        replaces): persist writes the record only when this changed."""
        records = self.extender.records if self.extender is not None else []
        return len(records), records[-1] if records else None      # the entry itself: compared by identity


def _reload_mark(baseline):
    """What tells one plugin reload of a session from another (its baseline record's time)."""
    return (baseline or {}).get("reloaded_at")


def _retry_locked(query, attempts=20, pause=0.05):
    """Run a database query, retrying while SQLite reports its table or database locked by
    another thread's write (brief under concurrent sessions; without this, a control would
    fail for nothing). PostgreSQL locks rows, not the database: a concurrent write waits for
    the other's commit instead of failing, and the version check of ``persist`` still makes
    the loser of a race a Conflict; nothing is retried there."""
    from django.db import OperationalError, connection
    for attempt in range(attempts):
        try:
            return query()
        except OperationalError as e:
            if connection.vendor != "sqlite" or "locked" not in str(e) or attempt == attempts - 1:
                raise
            time.sleep(pause)


# ---------------------------------------------------------------------- the registry

_live: dict = {}
_locks: dict = {}
_last_used: dict = {}     # session id -> time.monotonic() of its last use in this process
_registry_lock = threading.Lock()


def _lock_for(session_id) -> threading.RLock:
    with _registry_lock:
        lock = _locks.get(session_id)
        if lock is None:
            lock = _locks[session_id] = threading.RLock()
        return lock


def _settle_heap() -> None:
    """After a session is loaded: collect, then move every object there is (Django, the
    modules, the sessions' engines) out of the garbage collector's view (gc.freeze). Its full
    collections, which otherwise walk the whole heap every few thousand new long-lived objects
    (about 100 ms at 500 nodes, each ~10th frame while travelling; bench/travel.py), then look
    at newer objects only. Frozen objects are still freed when nothing refers to them; a
    session leaving memory unfreezes everything (``_release_heap``) so that what it leaves in
    reference cycles is collected as usual."""
    gc.collect()
    gc.freeze()


def _release_heap() -> None:
    gc.unfreeze()


def _forget(session_id) -> None:
    with _registry_lock:
        _live.pop(session_id, None)
        _last_used.pop(session_id, None)
    _release_heap()


def evict_idle(now: float | None = None, keep=None) -> list:
    """Forget the live sessions unused for LIVE_SESSION_IDLE_SECONDS, and the least recently
    used beyond LIVE_SESSIONS_MAX (never one playing in this process, nor ``keep``); they are
    rebuilt from the database on their next visit. Returns the ids evicted."""
    from django.conf import settings
    now = time.monotonic() if now is None else now
    idle = settings.LIVE_SESSION_IDLE_SECONDS
    evicted = []
    with _registry_lock:
        candidates = sorted((_last_used.get(sid, 0.0), sid) for sid in _live
                            if sid != keep and not is_playing(sid))
        over = max(0, len(_live) - settings.LIVE_SESSIONS_MAX)
        for used, sid in candidates:
            if over > 0 or now - used > idle:
                _live.pop(sid, None)
                _last_used.pop(sid, None)
                evicted.append(sid)
                over -= 1
    if evicted:
        metrics.EVICTIONS.inc(len(evicted))
        _release_heap()
    return evicted


def reset() -> None:
    """Forget every live session of this process (tests; a process restart does the same)."""
    with _registry_lock:
        _live.clear()
        _last_used.clear()
        for task in list(_players.values()):
            task.cancel()
        _players.clear()
        _play_tokens.clear()
    _release_heap()


def _locks_rows() -> bool:
    """Whether the database locks rows (PostgreSQL: SELECT ... FOR UPDATE); SQLite does not."""
    from django.db import connection
    return connection.features.has_select_for_update


@contextmanager
def open_live(session_id, write: bool = False):
    """The session's LiveSession, up to date with the database, locked for the caller.

    ``write``: the caller changes the session (a control, a play tick). On a database that locks
    rows, the row stays locked until the change is committed when the block ends (a change
    from another process waits for it, at most ROW_LOCK_TIMEOUT, then Conflict), and an error
    in the block rolls the change back; a failed commit makes this process forget its copy."""
    with _lock_for(session_id):
        if not (write and _locks_rows()):
            yield _up_to_date(session_id, Session.objects)
            return
        from django.db import OperationalError, connection, transaction
        body_done = False
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"SET LOCAL lock_timeout = '{ROW_LOCK_TIMEOUT}'")
                try:
                    live = _up_to_date(session_id, Session.objects.select_for_update())
                except OperationalError as e:
                    if "lock timeout" not in str(e):
                        raise
                    raise Conflict(f"the session is busy in another server process (waited {ROW_LOCK_TIMEOUT}); "
                                   "try again", title="Busy elsewhere") from None
                yield live
                body_done = True
        except BaseException:
            if body_done:      # the commit failed: this copy is ahead of the database
                _forget(session_id)
            raise


def _up_to_date(session_id, query) -> "LiveSession":
    """This process's copy of the session, rebuilt if the row has a newer version (the caller
    holds the session's lock)."""
    row = _retry_locked(lambda: query.get(pk=session_id))
    live = _live.get(session_id)
    if live is not None and live.version != row.version:
        try:
            caught_up = live.catch_up(row)
        except Exception:       # noqa: BLE001 - a copy that cannot run on is rebuilt
            log.exception("session %s: catching up with version %s failed; rebuilding", session_id, row.version)
            caught_up = False
        if caught_up:
            metrics.CATCH_UPS.inc()
        else:
            _release_heap()     # the old one's objects go
            live = None
    if live is None:
        live = LiveSession(row)
        with _registry_lock:
            _live[session_id] = live
        metrics.REBUILDS.inc()
        _settle_heap()
    live.play_speed, live.play_owner = row.play_speed, row.play_owner
    with _registry_lock:
        _last_used[session_id] = time.monotonic()
    evict_idle(keep=session_id)
    return live


def session_for_token(token: str, role: str):
    """(session id, role) for a link token, or None. ``role`` is "presenter" or "follower"."""
    field = "presenter_token" if role == "presenter" else "follower_token"
    row = Session.objects.filter(**{field: token}).only("pk").first()
    return row.pk if row is not None else None


# ---------------------------------------------------------------------- controls

def _number(msg, key, what, maximum=None):
    raw = msg.get(key)
    if isinstance(raw, list):
        raw = raw[0] if raw else None
    try:
        if isinstance(raw, (bool, dict, list)) or raw is None:
            raise TypeError
        if isinstance(raw, str) and len(raw) > 40:
            raise ValueError
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise ControlError(f"{what}: {_short(raw)} is not a number") from None
    if value != value or value < 0 or not math.isfinite(value):
        raise ControlError(f"{what}: {_short(raw)} must be a finite number, zero or more")
    if maximum is not None and value > maximum:
        raise ControlError(f"{what}: {_short(raw)} is more than {maximum:g}")
    return value


def _short(raw) -> str:
    from engine.quantity import _q
    return _q(raw)


def control(session_id, msg: dict) -> dict:
    """Carry out one control message from the presenter; returns ``{"note": str, "more": bool,
    "checkpoint_due": bool}`` (a checkpoint to take with ``take_due_checkpoint`` once the
    frame is out).

    ``msg["action"]`` is one of step-event, step-point, step-cycle, back, jump, run-until,
    inject (plus ``form`` and its fields). Play and pause are handled by ``start_play`` and
    ``stop_play`` (they need the event loop). Raises ControlError for a bad message.

    Everything is validated first; if anything fails after the live session changed, this
    process forgets it, so memory never shows what the database does not have. ``more``
    (run-until only): the time is not reached yet, send the same message again to continue.
    """
    from visualizer import injections as inject_forms  # the page's forms → manifests

    action = msg.get("action")
    if not isinstance(action, str) or action not in ("step-event", "step-point", "step-cycle", "back", "jump",
                                                     "run-until", "inject"):
        raise ControlError(f"unknown control {_short(action)}")
    with open_live(session_id, write=True) as live:
        before = live.position
        changed_injections = False
        note = ""
        more = False
        # validate first: nothing below this block may fail for a bad message
        if action == "jump":
            target = int(_number(msg, "position", "position", maximum=2**53))
        elif action == "run-until":
            until = _number(msg, "until", "run until (seconds)", maximum=MAX_DURATION_SECONDS)
        elif action == "inject":
            verb, body = inject_forms.build(msg, live)
            prepared = live.prepare_injection(verb, body)
        try:
            if action in ("step-event", "step-point", "step-cycle"):
                if not live.step(action.split("-", 1)[1], defer_checkpoint=True):
                    note = ("Nothing more happens on its own: the queues wait for a cluster event. Inject one, "
                            "or run to a later time for the periodic flushes.")
            elif action == "back":
                if not live.back():
                    note = "This is the start of the run."
            elif action == "jump":
                live.move_to(target)
            elif action == "run-until":
                more = not live.run_until(until, slice_seconds=RUN_SLICE_SECONDS)
            elif action == "inject":
                live.inject(verb, body, prepared)
                changed_injections = True
            live.last_change = (before, live.position)
            # a control pauses a play, in whichever process it runs (its next tick stops)
            live.persist(injections=changed_injections, extra=NOT_PLAYING if live.play_speed is not None else None)
            live.play_speed = None
        except BaseException:
            _forget(session_id)   # the database has the session as it was: rebuild from there
            raise
        return {"note": note, "more": more, "checkpoint_due": live.checkpointer.due}


def take_due_checkpoint(session_id) -> bool:
    """Take the head's checkpoint that a step left due (after the step's frame is sent). A
    session no longer in this process's memory has none due: it is not rebuilt for this."""
    with _registry_lock:
        if session_id not in _live:
            return False
    with open_live(session_id) as live:
        return live.checkpointer.take_due(live.head)


# ---------------------------------------------------------------------- play

_players: dict = {}       # session id -> this process's play task
_play_tokens: dict = {}   # session id -> the current play's token (a tick checks it each step)
NOT_PLAYING = {"play_speed": None, "play_owner": "", "play_lease_until": None}


def is_playing(session_id) -> bool:
    """Whether this process's play task for the session runs."""
    task = _players.get(session_id)
    return task is not None and not task.done()


def _tick_seconds(speed) -> float:
    return max(PUSH_INTERVAL, 1.0 / speed) if speed else PUSH_INTERVAL


def _lease(speed) -> dict:
    """The row's fields for this process's play at ``speed``, leased from now: the lease outlasts
    a few ticks, so only a process that stopped ticking loses it."""
    from django.utils import timezone
    seconds = max(PLAY_LEASE_SECONDS, 3 * _tick_seconds(speed))
    return {"play_speed": speed, "play_owner": PROCESS_ID,
            "play_lease_until": timezone.now() + datetime.timedelta(seconds=seconds)}


def parse_speed(raw) -> float:
    """A play's speed from a control message (point-steps per second, 0: as fast as possible),
    or ControlError."""
    try:
        speed = float(raw[0] if isinstance(raw, list) and raw else raw)
        if isinstance(raw, bool) or speed < 0 or speed != speed or speed > 1000:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ControlError([f"speed: {_short(raw)} is not a number from 0 to 1000"],
                           title="The speed is not valid") from None
    return speed


def claim_play(session_id, speed) -> None:
    """Mark the session as played by this process at ``speed`` (a presenter's play): a play in
    another process stops at its next tick (its owner is no longer itself)."""
    with open_live(session_id, write=True) as live:
        _retry_locked(lambda: Session.objects.filter(pk=session_id).update(**_lease(speed)))
        live.play_speed = speed


def stop_play(session_id) -> bool:
    """Pause the session wherever it plays: this process's task stops, and the row says paused,
    so a play task of another process stops at its next tick. True if it was playing."""
    local = stop_local_play(session_id)
    with open_live(session_id, write=True) as live:
        was = live.play_speed is not None
        if was:
            _retry_locked(lambda: Session.objects.filter(pk=session_id).update(**NOT_PLAYING))
            live.play_speed = None
    return was or local


def stop_local_play(session_id) -> bool:
    """Stop this process's play task for the session (nothing in the database); True if one ran."""
    task = _players.pop(session_id, None)
    _play_tokens.pop(session_id, None)   # a tick running in a worker thread stops stepping
    if task is None or task.done():
        return False
    task.cancel()
    return True


def _release_play(session_id) -> None:
    """A play of this process that failed: the row says paused (no other process adopts it)."""
    _retry_locked(lambda: Session.objects.filter(pk=session_id, play_owner=PROCESS_ID).update(**NOT_PLAYING))


def adopt_orphaned_plays(limit: int = 10) -> list:
    """Claim the plays whose lease ran out (the process playing them stopped ticking: killed,
    restarted, hung) for this process: ``[(session id, speed)]``, to continue with
    ``start_play(..., claimed=True)``. The claim is one conditional UPDATE, so of several
    processes looking at once exactly one gets each play."""
    from django.utils import timezone
    now = timezone.now()
    orphaned = Session.objects.filter(play_speed__isnull=False, play_lease_until__lt=now)
    adopted = []
    for pk, speed in list(orphaned.values_list("pk", "play_speed")[:limit]):
        if _retry_locked(lambda: orphaned.filter(pk=pk).update(**_lease(speed))):
            log.info("session %s: continuing its play at speed %g (the process playing it went away)", pk, speed)
            adopted.append((pk, speed))
    return adopted


def _play_tick(session_id, token, steps, budget, render):
    """Do up to ``steps`` point-steps (or as many as fit in ``budget`` seconds when steps is
    None), unless this play was stopped meanwhile (here, or in the row by another process);
    persist with the lease renewed; return (finished, version, ``render(live)``), or None when
    the play is no longer this process's."""
    over = None
    with open_live(session_id, write=True) as live:
        if live.play_speed is None or live.play_owner != PROCESS_ID or _play_tokens.get(session_id) is not token:
            return None         # paused, claimed by another process's play, or replaced by a new play here
        try:
            result = _play_steps(live, session_id, token, steps, budget, render, live.play_speed)
        except OverBudget as e:
            over = e             # what was done is persisted (see _play_steps): commit it
        except BaseException:
            _forget(session_id)
            raise
    if over is not None:
        raise over
    return result


def _play_steps(live, session_id, token, steps, budget, render, speed):
    """The steps of one play tick on a locked live session (see _play_tick)."""
    before = live.position
    started = time.perf_counter()
    done = 0
    finished = False
    while (steps is None or done < steps) and _play_tokens.get(session_id) is token:
        try:
            stepped = live.step("point")
        except OverBudget:
            live.last_change = (before, live.position)
            live.persist(extra=NOT_PLAYING)
            live.play_speed = None
            raise
        if not stepped:
            finished = True
            break
        done += 1
        if time.perf_counter() - started >= budget:
            break
    metrics.PLAY_STEPS.inc(done)
    lease = NOT_PLAYING if finished else _lease(speed)
    if done:
        live.last_change = (before, live.position)
        live.persist(extra=lease)
    else:
        _retry_locked(lambda: Session.objects.filter(pk=session_id).update(**lease))
    live.play_speed = lease["play_speed"]
    return finished, live.version, render(live)


async def start_play(session_id, speed, publish, on_error=None, *, render, claimed=False) -> None:
    """Play the session at ``speed`` point-steps per second (0: as fast as possible), calling
    ``await publish(version, render(live))`` at most every PUSH_INTERVAL (``render``: the
    caller's, e.g. ``presenters.render_panels``: the runner renders nothing itself); a
    ControlError (e.g. the memory budget) stops it and is passed to ``await on_error(error)``.
    The play is claimed in the row first (``claim_play``) unless ``claimed`` (an adopted one)."""
    from asgiref.sync import sync_to_async
    stop_local_play(session_id)
    if not claimed:
        await sync_to_async(claim_play, thread_sensitive=False)(session_id, speed)
    token = _play_tokens[session_id] = object()
    tick = _tick_seconds(speed)
    steps = max(1, round(speed * tick)) if speed else None

    async def release():
        try:
            await sync_to_async(_release_play, thread_sensitive=False)(session_id)
        except Exception:      # noqa: BLE001 - then its lease runs out and another process tries
            log.exception("session %s: could not mark its play stopped", session_id)

    async def loop():
        tick_fn = sync_to_async(_play_tick, thread_sensitive=False)
        try:
            while True:
                started = asyncio.get_running_loop().time()
                try:
                    result = await tick_fn(session_id, token, steps, TICK_BUDGET, render)
                except ControlError as e:
                    await release()
                    if on_error is not None:
                        await on_error(e)
                    break
                except Exception as e:   # a bug: say so on the page rather than stop silently
                    log.exception("play of session %s failed", session_id)
                    await release()
                    if on_error is not None:
                        await on_error(ControlError([f"{type(e).__name__}: {str(e)[:300]}"],
                                                    title="Playing stopped: internal error"))
                    break
                if result is None:       # paused or taken over elsewhere: that process publishes
                    break
                finished, version, panels = result
                await publish(version, panels)
                if finished:
                    break
                elapsed = asyncio.get_running_loop().time() - started
                await asyncio.sleep(max(0.0, tick - elapsed))
        finally:
            if _players.get(session_id) is asyncio.current_task():
                _players.pop(session_id, None)
                _play_tokens.pop(session_id, None)

    _players[session_id] = asyncio.get_running_loop().create_task(loop())


def live_count() -> int:
    return len(_live)
