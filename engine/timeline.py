"""A run as a timeline you can travel along: the one owner of time travel.

A run is the trace events revealed so far (``high_water`` of them, the *head*), the cluster
events injected on the way, and the position shown now. The head's stepper runs the engine on;
its checkpoints (engine/checkpoint.py) and the ends of its units (``Stepper.unit_ends``) let
a position behind it be rebuilt quickly: from the latest checkpoint before it, the whole units
before the target's replayed with the trace off (``Stepper.fast_forward``), then the rest
revealed one event at a time. Stepping forward behind the head follows the recorded events
(``target``); injecting a cluster event behind the head starts a new branch: the recorded
future (its events, injections and checkpoints) is dropped. A run that has not begun loads
its scenario into a second engine (``preloaded``), which the first step takes over.

``rebuild`` replays injections the way they happened rather than with ``Stepper.replay``: an
injection made after ``run_until`` advanced the clock past units that emitted no event (a
backoff flush that moved nothing) is applied after running the clock there again, and the
head's clock is restored, so the rebuilt engine is the live one, clock included.

No Django: the visualizer's ``runner.LiveSession`` keeps a ``Timeline`` per session and adds
what a web session needs around it (the database row, the memory budget, validation of the
presenter's controls, play, eviction). The caller gives the timeline three things:
``action_of(index, injection)`` (the engine action of a recorded injection, which has
``position`` and ``time_us``), an optional ``attach(stepper)`` called on every new stepper
(the page's moment follows it), and the head's ``Checkpointer``.
"""
from __future__ import annotations

import bisect
import gc
import logging
import threading
from contextlib import contextmanager

from .quantity import US
from .stepper import GROUPED_POINTS, Stepper
from .tracenav import forward, span, time_us_at

log = logging.getLogger(__name__)

STEP_KINDS = ("event", "point", "cycle")
_CYCLE_ENDS = frozenset(("CycleEnd", "CycleSkipped"))

_gc_paused = 0
# young (gen0) objects that may pile up while pauses overlap before a pause that ends collects
PAUSED_YOUNG_LIMIT = 100_000
_gc_was_enabled = True
_gc_lock = threading.Lock()


@contextmanager
def collector_paused():
    """The cyclic garbage collector off for a bounded piece of work (restoring a checkpoint and
    replaying at most one checkpoint interval): unpickling an engine creates many objects at
    once, which triggers full collections of the whole heap (the other sessions' engines and
    traces), several times slower than the work itself (bench/travel.py). Garbage made
    meanwhile is collected afterwards as usual. Nested and concurrent uses keep it off until
    the last one ends."""
    global _gc_paused, _gc_was_enabled
    with _gc_lock:
        _gc_paused += 1
        if _gc_paused == 1:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_paused -= 1
            if _gc_paused == 0 and _gc_was_enabled:
                gc.enable()
            elif _gc_paused > 0 and _gc_was_enabled and gc.get_count()[0] > PAUSED_YOUNG_LIMIT:
                # overlapping pauses (renders in several threads) could keep the collector off
                # indefinitely: past this many young objects, collect them anyway
                gc.collect(1)


def rebuild(scenario, injections, position, clock_us=None, *, action_of, attach=None, checkpoints=None,
            timeline=None, record=None, unit_ends=None, extender_transport=None) -> Stepper:
    """The engine after ``position`` events of a run with these injections (those recorded at
    positions before ``position``), and with its clock at ``clock_us`` if that is later.

    It starts from the latest of ``checkpoints`` (a Checkpointer of the run whose events are
    ``timeline``) at or before ``position`` when there is one, else from the start; ``record``
    is a Checkpointer to take checkpoints of this stepper's run as it goes (the head's).
    ``unit_ends`` (the recorded run's ``Stepper.unit_ends``) lets the replay run the units
    before the last one with the trace off (``Stepper.fast_forward``)."""
    cp = checkpoints.latest(position) if (checkpoints is not None and timeline is not None) else None
    if cp is None:
        return _rebuild(scenario, injections, position, clock_us, None, timeline, record, unit_ends, action_of, attach,
                        extender_transport)
    with collector_paused():
        st = _rebuild(scenario, injections, position, clock_us, cp, timeline, record, unit_ends, action_of, attach,
                      extender_transport)
        # the restored engine's objects are all in the youngest generation (the collector was
        # off): one collection of the young generations now frees the replay's garbage and
        # moves them to the oldest, rather than the next frames' collections walking them once
        # per generation (0.3 s at 5,000 nodes, bench/travel.py). Not frozen: the garbage an
        # engine leaves when it is dropped later must stay collectable.
        gc.collect(1)
        return st


def _rebuild(scenario, injections, position, clock_us, cp, timeline, record, unit_ends, action_of, attach,
             extender_transport=None) -> Stepper:
    st, applied = None, 0
    if cp is not None:
        try:
            st = Stepper.resume(scenario, cp, timeline, unit_ends, extender_transport=extender_transport)
            applied = cp.injected
        except Exception:       # noqa: BLE001 - a checkpoint that does not restore: from the start
            log.exception("session checkpoint at %s did not restore; replaying from the start", cp.position)
            st = None
    if st is None:
        st = Stepper(scenario, extender_transport=extender_transport)
    if attach is not None:
        attach(st)
    if record is not None:
        record.attach(st)
    for i, inj in enumerate(injections):
        if inj.position >= position:
            break
        if i < applied:
            continue    # already in the checkpoint's engine
        if timeline is not None and record is None:
            st.fast_forward(timeline, unit_ends, inj.position)
        st.reveal_to(inj.position, inj.time_us)
        if inj.time_us > st.engine.now:
            st.advance_until(inj.time_us / US)
        st.inject(action_of(i, inj))
    # the time of the last event wanted bounds the replay: the periodic flushes due by then run
    # even where the queues fell idle (as they did when the run was taken to a later time)
    if timeline is not None and 0 < position <= len(timeline):
        bound = time_us_at(timeline, position - 1)
    else:
        bound = clock_us
    if timeline is not None and record is None:
        st.fast_forward(timeline, unit_ends, position)
    st.reveal_to(position, bound)
    if clock_us is not None and clock_us > st.engine.now and st.position == len(st.events):
        st.advance_until(clock_us / US)
    return st


class Timeline:
    """One run's timeline (see the module docstring): ``head`` (the stepper that runs on),
    ``shown`` (the stepper at the position shown: the head, or one rebuilt behind it),
    ``events`` (the head's, the recorded timeline), ``injections`` (the caller's records, in
    order, each with ``position`` and ``time_us``), ``high_water``, ``head_clock_us``,
    ``checkpointer``, and ``preloaded`` (a run not begun: its first unit, run ahead)."""

    def __init__(self, scenario, injections, high_water, head_clock_us, position, *, checkpointer,
                 action_of, attach=None, extender_transport=None):
        """``extender_transport``: how every engine of this timeline calls scheduler extenders
        (engine/extender.py; a session's RecordingTransport, so the past is replayed from its
        record)."""
        self.scenario = scenario
        self.extender_transport = extender_transport
        self.injections = list(injections)
        self.high_water = high_water
        self.head_clock_us = head_clock_us
        self.checkpointer = checkpointer
        self._action_of = action_of
        self._attach = attach
        self.head = rebuild(scenario, self.injections, high_water, head_clock_us, action_of=action_of,
                            attach=attach, record=checkpointer, extender_transport=extender_transport)
        self.events = self.head.events
        # A run that has not begun loads its scenario's objects into a second engine now (the
        # run's first unit: 0.2-0.5 s at 5,000 nodes and 10,000 pods), which the first step or
        # run takes over instead of running that unit then; until then the head is shown
        # untouched. A cluster event first drops it (the head loads then).
        self.preloaded = None
        if high_water == 0 and not self.injections and not self.head.engine._loaded:
            self.preloaded = self._preload()
        self.shown = self.head if position >= high_water else self._shown_at(position)

    # ------------------------------------------------------------------ reading

    @property
    def position(self) -> int:
        return self.shown.position

    @property
    def at_head(self) -> bool:
        return self.position >= self.high_water

    @property
    def finished(self) -> bool:
        return self.at_head and self.shown.finished

    def time_us_at(self, i: int) -> int:
        return time_us_at(self.events, i)

    # ------------------------------------------------------------------ the preloaded head

    def _preload(self) -> Stepper:
        st = Stepper(self.scenario, extender_transport=self.extender_transport)
        if self._attach is not None:
            self._attach(st)
        st._advance_unit()
        return st

    def loaded_at_start(self) -> Stepper:
        """The scenario's engine after its first unit (its objects loaded, nothing else done):
        the preloaded one when there is one, else a new one (for exports at position 0)."""
        if self.preloaded is not None:
            return self.preloaded
        st = Stepper(self.scenario, extender_transport=self.extender_transport)
        st._advance_unit()
        return st

    def take_preloaded(self) -> None:
        """Before the head's first unit: the preloaded stepper becomes the head (its first unit
        already run, none of its events revealed: what the head would be after running it)."""
        pre, self.preloaded = self.preloaded, None
        if pre is None:
            return
        head = self.head
        if self.shown is head and head.position == 0 and not head.engine._loaded and not self.injections:
            self.checkpointer.attach(pre)
            self.head = self.shown = pre
            self.events = pre.events
            head.discard()
        else:
            pre.discard()

    def drop_preloaded(self) -> None:
        if self.preloaded is not None:
            self.preloaded.discard()
            self.preloaded = None

    # ------------------------------------------------------------------ moving

    def _head_moved(self) -> None:
        st = self.shown
        self.head = st
        self.high_water = st.position
        self.head_clock_us = st.engine.now
        self.events = st.events

    def _shown_at(self, target: int) -> Stepper:
        """A stepper at ``target`` (behind the head) on the recorded timeline: from the latest
        checkpoint before it, replaying the rest."""
        return rebuild(self.scenario, self.injections, target, action_of=self._action_of, attach=self._attach,
                       checkpoints=self.checkpointer, timeline=self.events, unit_ends=self.head.unit_ends,
                       extender_transport=self.extender_transport)

    def target(self, kind: str) -> int:
        """Where one step of ``kind`` ends on the recorded timeline (behind the head)."""
        ev, p, hw = self.events, self.position, self.high_water
        if kind == "event":
            return p + 1
        if kind == "point":
            e = ev[p]
            q = span(ev, p)[1]          # a stored batch is one point's results: taken whole
            if e["type"] == "PluginResult" and e.get("point") in GROUPED_POINTS:
                key = (e["pod"], e.get("cycle"), e["point"], e.get("dryRun"))
                while q < hw:
                    f = ev[q]
                    if f["type"] != "PluginResult" or (f["pod"], f.get("cycle"), f["point"], f.get("dryRun")) != key:
                        break
                    q = span(ev, q)[1]
            return min(q, hw)
        for e in forward(ev, p, hw, quiet=False, types=_CYCLE_ENDS):   # only these are read
            return e["seq"] + 1
        return hw

    def move_to(self, target: int) -> None:
        """Show the run after ``target`` events of the recorded timeline (time travel)."""
        target = max(0, min(int(target), self.high_water))
        p = self.position
        if target == p:
            return
        if target == self.high_water:
            self._show(self.head)           # kept at the head all along
            return
        forward_clear = target > p and not any(p <= i.position < target for i in self.injections)
        cp = self.checkpointer.latest(target)
        if forward_clear and (cp is None or cp.position <= p):
            # on from here (nearer than any checkpoint), as far as that event's time; whole
            # units before the target's with the trace off
            st = self.shown
            if target > len(st.events):
                st.position = len(st.events)    # past the rest of this unit's events
                st.fast_forward(self.events, self.head.unit_ends, target)
            st.reveal_to(target, time_us_at(self.events, target - 1))
        else:
            self._show(self._shown_at(target))

    def _show(self, st: Stepper) -> None:
        """Show ``st``; a stepper behind the head that is no longer shown is freed at once."""
        old, self.shown = self.shown, st
        if old is not st and old is not self.head:
            old.discard()

    def needs_engine_work(self) -> bool:
        """Whether the next step forward at the head runs the engine (rather than revealing
        events it already computed)."""
        return self.shown.position >= len(self.shown.events)

    def step(self, kind: str, defer_checkpoint: bool = False, before_engine_work=None) -> bool:
        """One step of ``kind`` (event, point, cycle); False if nothing more happens. Behind the
        head it follows the recorded timeline. ``before_engine_work()`` is called (and may
        raise) before a step that runs the engine. With ``defer_checkpoint`` a checkpoint that
        comes due is left for ``Checkpointer.take_due``."""
        if not self.at_head:
            self.move_to(self.target(kind))
            return True
        self.take_preloaded()
        if before_engine_work is not None and self.needs_engine_work():
            before_engine_work()
        # a checkpoint coming due in one step may be taken after its frame is out: at 5,000
        # nodes taking one costs more than the step itself
        self.checkpointer.defer = defer_checkpoint
        try:
            got = self.shown.advance(kind)
        finally:
            self.checkpointer.defer = False
        if not got:
            return False
        self._head_moved()
        return True

    def known_before(self, until_us: int) -> bool:
        """Whether ``until_us`` is a time the run shown has passed, or one on the recorded
        timeline behind the head: ``run_until`` then travels back to it."""
        return until_us < self.shown.engine.now or (not self.at_head and until_us < self.head_clock_us)

    def travel_to_time(self, until_us: int) -> None:
        """Show the recorded run after every event at or before ``until_us`` (times never
        decrease along a timeline)."""
        known = bisect.bisect_right(range(self.high_water), until_us, key=lambda i: time_us_at(self.events, i))
        self.move_to(known)

    def run_until(self, seconds: float, slice_seconds: float | None = None, *, slice_units: int = 50,
                  clock=None) -> bool:
        """At the head, everything due at virtual times <= ``seconds`` happens (from behind the
        head, it first moves to the head). With ``slice_seconds``, stop after about that much
        engine work (``clock()``: wall time, checked every ``slice_units`` units); returns
        whether ``seconds`` was reached (False: call again to continue)."""
        if not self.at_head:
            self.move_to(self.high_water)
        self.take_preloaded()
        if slice_seconds is None:
            self.shown.advance_until(seconds)
        else:
            started = clock()
            while True:
                self.shown.advance_until(seconds, max_units=slice_units)
                if self.shown.run_complete or clock() - started >= slice_seconds:
                    break
        self._head_moved()
        return self.shown.run_complete

    def extend_head(self, high_water: int, clock_us: int) -> bool:
        """Run the head on to ``high_water`` events with its clock at ``clock_us``: what another
        copy of this timeline (another server process) recorded meanwhile with no injection.
        The engine is deterministic, so this reveals the same events, as ``rebuild`` would from
        the start (the same replay rule: events up to ``high_water``, the periodic flushes due
        by ``clock_us``). Returns whether the head is exactly there (else rebuild)."""
        if high_water < self.high_water or (high_water == self.high_water and clock_us == self.head_clock_us):
            return high_water == self.high_water
        self.take_preloaded()
        head = self.head
        head.reveal_to(high_water, clock_us)
        if clock_us > head.engine.now and head.position == len(head.events):
            head.advance_until(clock_us / US)
        self.high_water = head.position
        self.head_clock_us = head.engine.now
        self.events = head.events
        return (self.high_water, self.head_clock_us) == (high_water, clock_us)

    def back(self) -> bool:
        if self.position == 0:
            return False
        self.move_to(self.position - 1)
        return True

    def kept_injections(self) -> list:
        """The injections an injection now keeps (behind the head, the recorded future's go)."""
        return self.injections if self.at_head else [i for i in self.injections if i.position < self.position]

    def inject(self, action, record) -> None:
        """Apply a cluster event now; behind the head, the recorded future is dropped: the shown
        run becomes the head. ``record(position, time_us)`` makes the caller's record of it."""
        self.drop_preloaded()       # the head loads before the injection, as it would
        kept = self.kept_injections()
        self.injections = list(kept)
        self.shown.inject(action)
        pos, at, _ = self.shown.injections[-1]
        self.injections.append(record(pos, at))
        dropped = self.head if self.shown is not self.head else None
        if dropped is not None:
            # the checkpoints of the dropped future go, and the new head's run is checkpointed
            # from here on
            self.checkpointer.forget_after(pos, len(kept))
            self.checkpointer.attach(self.shown)
        self._head_moved()
        if dropped is not None:
            dropped.discard()   # its events stay, shared by the new head's log
