"""Checkpoints of a run: the engine's whole state at a unit boundary, as bytes, so travelling
back to any position restores the latest checkpoint before it and replays from there instead
of from the start (a Stepper built by ``Stepper.resume``).

A checkpoint is the engine pickled with cloudpickle, which also keeps the closures and
lambdas the engine and its plugins hold (bound to the copies, not to the original engine),
then compressed. The trace and the scenario are left out: the restored engine gets the new
stepper's trace, and shares the scenario, which is never changed by a run. Only this
process's own objects are ever pickled and unpickled; nothing read from outside.

Pods and nodes (``objects.Pod``, ``objects.Node``) are not copied: the engine never changes
one in place (a change is a new object, ``Pod.copy``), so a checkpoint keeps references to the
ones it holds (``Checkpoint.shared``) and a restored engine shares them with the run it came
from. That makes a checkpoint of a 5,000-node, 11,000-pod engine about three times faster to
take and four times faster to restore. A plugin must therefore treat the pods and nodes it is
given as read-only (as upstream's plugins treat the informer cache's objects).

An engine that cannot be pickled (an out-of-tree plugin holding a lock, a file, a generator)
raises ``CheckpointError``; the caller then replays from the start, as without checkpoints.
"""
from __future__ import annotations

import dataclasses
import io
import pickle
import zlib
from dataclasses import dataclass

import cloudpickle

from .objects import Node, Pod
from .trace import Trace


class CheckpointError(Exception):
    pass


@dataclass(frozen=True)
class Checkpoint:
    position: int           # events emitted (and revealed) when it was taken: a unit's end
    injected: int           # cluster events injected into the run before it was taken
    now: int                # the engine's clock then (virtual microseconds)
    data: bytes             # the engine, pickled and compressed
    seconds: float          # how long taking it took (by the caller's clock; 0 without one)
    shared: tuple = ()      # the pods and nodes the engine held, by reference
    units: int | None = None    # engine units run before it (Stepper.unit_ends), if counted

    @property
    def nbytes(self) -> int:
        return len(self.data) + 100 + 8 * len(self.shared)


class _Pickler(cloudpickle.Pickler):
    def __init__(self, fh, engine):
        super().__init__(fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._trace, self._scenario = engine.trace, engine.scenario
        # the extenders' transport is the caller's (a live connection, a record): left out,
        # and the restored engine gets the one its caller gives
        self._transport = getattr(engine, "extender_transport", None)
        self.shared: list = []      # pods and nodes, kept by reference (see the module docstring)
        self._shared_ids: dict = {}

    def persistent_id(self, obj):
        c = obj.__class__
        if c is Pod or c is Node:
            i = self._shared_ids.get(id(obj))
            if i is None:
                i = self._shared_ids[id(obj)] = len(self.shared)
                self.shared.append(obj)
            return i
        if obj is self._trace:
            return "trace"
        if obj is self._scenario:
            return "scenario"
        if obj is self._transport and obj is not None:
            return "extender_transport"
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, trace, scenario, shared=(), extender_transport=None):
        super().__init__(fh)
        if extender_transport is None:
            from .extender import NoTransport
            extender_transport = NoTransport()
        self._objs = {"trace": trace, "scenario": scenario, "extender_transport": extender_transport}
        self._shared = shared

    def persistent_load(self, pid):
        if pid.__class__ is int:
            return self._shared[pid]
        return self._objs[pid]


def take(engine, position: int, injected: int = 0, clock=None) -> Checkpoint:
    """The engine's state now, after ``position`` events and ``injected`` injections (call it
    at a unit boundary, with no trace rows pending). ``clock`` (e.g. ``time.perf_counter``,
    passed in by the caller: the engine never reads the wall clock itself) times it."""
    started = clock() if clock else 0.0
    buf = io.BytesIO()
    pickler = _Pickler(buf, engine)
    try:
        pickler.dump(engine)
    except Exception as e:      # noqa: BLE001 - anything a plugin's state can raise
        raise CheckpointError(f"the engine cannot be checkpointed: {type(e).__name__}: {e}") from None
    data = zlib.compress(buf.getvalue(), 1)
    return Checkpoint(position, injected, engine.now, data, (clock() - started) if clock else 0.0,
                      tuple(pickler.shared))


def restore(cp: Checkpoint, scenario, trace: Trace, extender_transport=None):
    """A new engine in the checkpoint's state, emitting into ``trace`` (whose ``seq`` is set
    to the checkpoint's position), calling extenders through ``extender_transport`` (see
    engine/extender.py; without one, extender calls fail)."""
    trace.seq = cp.position
    engine = _Unpickler(io.BytesIO(zlib.decompress(cp.data)), trace, scenario, cp.shared,
                        extender_transport).load()
    trace._clock = engine._trace_clock
    return engine


class Checkpointer:
    """Takes checkpoints of a stepper's run as its engine advances, and finds the one to
    resume from.

    A checkpoint is taken at the end of a unit of work once at least ``min_events`` events
    were emitted since the last one and the engine worked at least ``1 / overhead`` times as
    long as taking the last one took (so checkpoints cost at most about ``overhead`` of the
    run's time; ``overhead=0`` drops this condition). Past ``budget_bytes`` every other checkpoint is dropped and ``min_events``
    doubles, so a long run keeps checkpoints spread over all of it in bounded memory. Where
    they fall depends on timing, never what a run does.

    ``clock`` is a function returning seconds (the visualizer passes ``time.perf_counter``);
    the engine package never reads the wall clock itself. Without one the overhead condition
    is not applied and checkpoints fall every ``min_events`` events.
    """

    def __init__(self, *, min_events: int = 20_000, overhead: float = 0.2,
                 budget_bytes: int = 64 * 1024 * 1024, clock=None):
        self.clock = clock
        self.min_events = min_events
        self.overhead = overhead
        self.budget_bytes = budget_bytes
        self.checkpoints: list = []     # ascending positions
        self.failed = None              # why the engine cannot be checkpointed, once known
        self._work = 0.0                # engine seconds since the last checkpoint
        # with ``defer`` set, a checkpoint that comes due is only noted (``due``) and taken by
        # ``take_due`` later: the visualizer defers them out of a single step's response time
        self.defer = False
        self.due = False
        self._due_at = None
        self._last_cost = 0.0
        self._last_position = 0

    @property
    def nbytes(self) -> int:
        return sum(cp.nbytes for cp in self.checkpoints)

    def attach(self, stepper) -> None:
        """Take checkpoints as ``stepper``'s engine advances (its run is the one kept)."""
        advance = stepper._advance_unit
        self._last_position = self.checkpoints[-1].position if self.checkpoints else 0

        clock = self.clock

        def advance_unit(until=None):
            before = len(stepper.events)
            started = clock() if clock else 0.0
            did = advance(until)
            if clock:
                self._work += clock() - started
            if did:
                self._after_unit(stepper, before)
            return did
        stepper._advance_unit = advance_unit

    def _after_unit(self, st, before: int) -> None:
        pos = len(st.events)
        if pos == before:
            # a unit that emitted nothing (a periodic flush with nothing to move) changed the
            # clock and the timers: a replay to ``pos`` stops before it, so the engine now is
            # not the engine at ``pos``, and a checkpoint noted as due no longer is either
            self.due = False
            return
        if self.failed is not None or pos - self._last_position < self.min_events:
            return
        if self.clock and self.overhead and self._work * self.overhead < self._last_cost:
            return
        if self.defer:
            self.due = True         # taken by take_due, when the caller has time
            self._due_at = (pos, st.engine.now)
            return
        self._take(st)

    def take_due(self, st) -> bool:
        """Take the checkpoint that came due while ``defer`` was set, if ``st``'s engine is
        still exactly as it was then (no unit, injection or clock move since: a checkpoint
        filed under a position must be the engine a replay to it reaches). Returns whether one
        was taken."""
        if not self.due or self.defer or self.failed is not None:
            return False
        self.due = False
        if (len(st.events), st.engine.now) != self._due_at:
            return False            # the engine went on since (e.g. a run moved its clock)
        return self._take(st)

    def _take(self, st) -> bool:
        pos = len(st.events)
        self.due = False
        try:
            cp = take(st.engine, pos, st.injected, self.clock)
        except CheckpointError as e:
            self.failed = str(e)
            return False
        ends = st.unit_ends
        cp = dataclasses.replace(cp, units=len(ends) if ends is not None else None)
        self.checkpoints.append(cp)
        self._work, self._last_cost, self._last_position = 0.0, cp.seconds, pos
        while self.nbytes > self.budget_bytes and len(self.checkpoints) > 1:
            self.checkpoints = self.checkpoints[1::2]
            self.min_events *= 2
        return True

    def latest(self, position: int, injected: int | None = None):
        """The latest checkpoint at or before ``position`` (taken after at most ``injected``
        injections), or None."""
        for cp in reversed(self.checkpoints):
            if cp.position <= position and (injected is None or cp.injected <= injected):
                return cp
        return None

    def forget_after(self, position: int, injected: int) -> None:
        """The run branched at ``position`` with ``injected`` injections kept: later
        checkpoints belong to the dropped future."""
        self.checkpoints = [cp for cp in self.checkpoints if cp.position <= position and cp.injected <= injected]
        self._last_position = self.checkpoints[-1].position if self.checkpoints else 0
