"""Stepping through a run at any granularity: one trace event, one extension point, one
scheduling cycle, or up to a virtual time.

The Engine advances in units of work (one action, one completion, one flush, or one Pop with
its whole cycle evaluation); each unit emits zero or more trace events.  The Stepper buffers
those events and reveals them at the granularity asked for, so the same engine calls happen
whichever granularity is used and the results are identical.  ``state()`` is the engine's
state after the last unit; ``at_unit_boundary`` says whether every event of that unit has been
revealed (then the state is exactly the state at the revealed position).

Injected cluster events (``inject``) are applied at the current virtual time, after the
events already revealed, and are recorded so a run can be replayed exactly (``replay``).
"""
from __future__ import annotations

from array import array
from bisect import bisect_left

from .quantity import US
from .scheduler import Engine
from .trace import Trace
from .tracestore import EventLog, ForkedLog

_NO_BOUND = 2 ** 62      # a time bound no unit is past: step runs the next unit there is

GROUPED_POINTS = {"Filter", "Score", "NormalizeScore", "PreFilter", "PreScore", "PreEnqueue"}


class Stepper:
    def __init__(self, scenario, record=None, extender_transport=None):
        self.scenario = scenario
        self.extender_transport = extender_transport
        self.events = EventLog()        # list-like, compact (engine/tracestore.py)
        self.position = 0               # number of events revealed
        self.trace = Trace()
        self.trace.add_sink(self.events)
        self.engine = Engine(scenario, self.trace, extender_transport)
        self.injections: list = []      # [(position, virtual time, action)] in the order applied
        self.injected = 0               # injections applied to the engine since the run began
        self._unit_end = 0              # len(events) after the last unit
        self.run_complete = True        # whether the last run_until reached its time
        # len(events) after each engine unit run so far, in order (injections are not units);
        # None once units ran uncounted (advance_to_end). fast_forward reads another run's.
        self.unit_ends = array("q")
        for pos, at, action in (record or []):
            self.reveal_to(pos)
            if at > self.engine.now:
                self.engine.now = at
            self.inject(action)

    @classmethod
    def resume(cls, scenario, cp, timeline, unit_ends=None, extender_transport=None) -> "Stepper":
        """A stepper at the position of checkpoint ``cp`` (engine/checkpoint.py) of the run
        whose events are ``timeline``: its engine is the checkpoint's, its events are the
        timeline's first ``cp.position`` events (shared, not copied) and then its own. From
        there it steps as the original did. Raises CheckpointError if the checkpoint cannot
        be restored."""
        from .checkpoint import restore
        st = cls.__new__(cls)
        st.scenario = scenario
        st.events = ForkedLog(timeline, cp.position)
        st.position = cp.position
        st.trace = Trace()
        st.trace.add_sink(st.events)
        st.extender_transport = extender_transport
        st.engine = restore(cp, scenario, st.trace, extender_transport)
        st.injections = []
        st.injected = cp.injected
        st._unit_end = cp.position
        st.run_complete = True
        # the units of the run ``timeline`` belongs to (its ``unit_ends``), up to the checkpoint
        units = cp.units
        st.unit_ends = (array("q", unit_ends[:units]) if unit_ends is not None and units is not None
                        and units <= len(unit_ends) else None)
        return st

    def discard(self) -> None:
        """Free this stepper's engine at once (``Engine.discard``); its events stay valid for
        whoever shares them. The stepper cannot be used afterwards."""
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.discard()
        vars(self).clear()

    # ------------------------------------------------------------------ engine units

    def _advance_unit(self, until=None) -> bool:
        """Run one engine unit; False if the engine has nothing more (before ``until``)."""
        did = self.engine.step(until)
        self._unit_end = len(self.events)
        if did and self.unit_ends is not None:
            self.unit_ends.append(self._unit_end)
        return did

    # units fewer than this are replayed with the trace on, as any other
    FAST_FORWARD_MIN_UNITS = 2

    def fast_forward(self, timeline, unit_ends, limit: int) -> int:
        """Replay, with the trace off, the units of the recorded run whose events are
        ``timeline`` (``unit_ends``: that run's, see ``self.unit_ends``) that end before
        position ``limit``: this stepper's engine then is that run's engine after them, and
        its events are the timeline's up to there, shared. Returns the units run.

        Only at a unit boundary with every event revealed, from a point of the same run (a
        checkpoint of it, or the start) and before any injection still to apply (``limit``
        at most its position): the units are then exactly the recorded run's, each the next
        one the engine has (``step`` with no time bound runs it, as the recorded run did), and
        with the trace off an engine does what it does with the trace on (its state is the
        same: tests/engine/test_golden.py, tests/engine/test_node_table.py). The trace-off
        engine is 2-2.5 times faster (docs/benchmarks.md), and none of the events is built
        or stored again. The unit that reaches ``limit`` is left to the caller, traced."""
        mine = self.unit_ends
        if mine is None or unit_ends is None or self.trace._pending is not None:
            return 0
        u = len(mine)
        pos = len(self.events)
        # in step with the recorded run: its first u units (and its injections up to here)
        # brought it to this position
        if self.position != pos or self._unit_end != pos or u >= len(unit_ends) or \
                (u and unit_ends[u - 1] > pos) or unit_ends[u] < pos or limit > len(timeline):
            return 0
        k = bisect_left(unit_ends, limit, lo=u)
        if k - u < self.FAST_FORWARD_MIN_UNITS:
            return 0
        end = unit_ends[k - 1]
        tr = self.trace
        tr.enabled = False
        try:
            step = self.engine.step
            for _ in range(k - u):
                if not step(_NO_BOUND):     # pragma: no cover - the recorded run ran it
                    raise RuntimeError("fast_forward: the engine has no unit the recorded run had")
        finally:
            tr.enabled = True
        tr.seq = end
        old, self.events = self.events, ForkedLog(timeline, end)
        tr._sinks = [(self.events, self.events.add_batch) if s is old else (s, b) for s, b in tr._sinks]
        self.position = self._unit_end = end
        mine.extend(unit_ends[u:k])
        return k - u

    def _ensure(self, n: int, until=None) -> bool:
        """Make sure at least ``n`` events exist; False if the run ended first."""
        while len(self.events) < n:
            if not self._advance_unit(until):
                return False
        return True

    @property
    def at_unit_boundary(self) -> bool:
        return self.position == self._unit_end

    @property
    def finished(self) -> bool:
        return self.position >= len(self.events) and self.engine.next_time() is None

    @property
    def now(self) -> float:
        if self.position and self.position <= len(self.events):
            return self.events[self.position - 1]["time"]
        return 0.0

    def revealed(self) -> list:
        return self.events[:self.position]

    # ------------------------------------------------------------------ granularities

    def advance(self, kind: str) -> int:
        """One step of ``kind`` ("event", "point" or "cycle"), as ``step_<kind>``; returns how
        many events it revealed, without reading them (what a caller that only moves wants)."""
        start = self.position
        {"event": self._step_event, "point": self._step_point, "cycle": self._step_cycle}[kind]()
        return self.position - start

    def step_event(self) -> list:
        """Reveal the next trace event."""
        start = self.position
        self._step_event()
        return self.events[start:self.position]

    def step_point(self) -> list:
        """Reveal the next extension point's results (all PluginResults of one point of one
        cycle, e.g. every node's Filter results), or one other event."""
        start = self.position
        self._step_point()
        return self.events[start:self.position]

    def step_cycle(self) -> list:
        """Reveal events up to and including the next CycleEnd (or CycleSkipped)."""
        start = self.position
        self._step_cycle()
        return self.events[start:self.position]

    def _step_event(self) -> list:
        """Reveal the next trace event."""
        if not self._ensure(self.position + 1):
            return []
        self.position += 1
        return self.events[self.position - 1:self.position]

    def _step_point(self) -> None:
        first = self._step_event()
        if not first:
            return
        e = first[0]
        if e["type"] == "PluginResult" and e.get("point") in GROUPED_POINTS:
            key = (e["pod"], e.get("cycle"), e["point"], e.get("dryRun"))
            self.position = self.events.span(self.position - 1)[1]   # the rest of a stored batch
            while self._ensure(self.position + 1):
                nxt = self.events[self.position]
                if nxt["type"] != "PluginResult" or (nxt["pod"], nxt.get("cycle"), nxt["point"], nxt.get("dryRun")) != key:
                    break
                self.position = self.events.span(self.position)[1]

    def _step_cycle(self) -> None:
        events = self.events
        while self._ensure(self.position + 1):
            first, end = events.span(self.position)
            if end - first > 1:                 # a stored batch: per-node results, no CycleEnd
                self.position = end
                continue
            self.position += 1
            if events.type_at(self.position - 1) in ("CycleEnd", "CycleSkipped"):
                break

    def run_until(self, seconds: float, max_units: int | None = None) -> list:
        """Everything due at virtual times <= ``seconds`` happens and is revealed; returns the
        events revealed (``advance_until`` does the same without reading them).

        With ``max_units``, at most that many engine units run (a caller that must not run
        for long does the work in slices); ``run_complete`` then says whether the time was
        reached (only then does the clock move on to ``seconds``)."""
        start = self.position
        self.advance_until(seconds, max_units)
        return self.events[start:self.position]

    def advance_until(self, seconds: float, max_units: int | None = None) -> int:
        """``run_until`` without reading the events: returns how many were revealed."""
        start = self.position
        until = int(round(seconds * US))
        units = 0
        self.run_complete = True
        while True:
            if max_units is not None and units >= max_units:
                self.run_complete = False
                break
            if not self._advance_unit(until):
                break
            units += 1
        if self.run_complete and until > self.engine.now:
            self.engine.now = until
        self.position = len(self.events)
        self._unit_end = self.position
        return self.position - start

    def run_to_end(self) -> list:
        start = self.position
        self.advance_to_end()
        return self.events[start:self.position]

    def advance_to_end(self) -> int:
        """``run_to_end`` without reading the events: returns how many were revealed."""
        start = self.position
        self.unit_ends = None           # units uncounted from here
        self.engine.run(None)
        self.position = len(self.events)
        self._unit_end = self.position
        return self.position - start

    def reveal_to(self, position: int, until_us: int | None = None) -> None:
        """Reveal events until ``position`` events are shown (used for replay). ``until_us``
        (virtual microseconds, at least the time of the last event wanted) lets the engine
        run the periodic flushes due by then when nothing else is pending: a run taken to a
        later time went on through them, while a replay without it stops where the queues
        fell idle."""
        self._ensure(position, until_us)
        self.position = min(position, len(self.events))

    # ------------------------------------------------------------------ injection and state

    def inject(self, action) -> list:
        """Apply a cluster event now (after the revealed events' unit finishes)."""
        # finish the current unit's events first so the injection follows them
        self.position = max(self.position, self._unit_end)
        self.injections.append((self.position, self.engine.now, action))
        self.injected += 1
        self.engine.inject(action)
        self._unit_end = len(self.events)
        start = self.position
        self.position = len(self.events)
        return self.events[start:self.position]

    def state(self) -> dict:
        s = self.engine.state()
        s["revealed"] = self.position
        s["atUnitBoundary"] = self.at_unit_boundary
        return s

    @classmethod
    def replay(cls, scenario, injections, position: int, extender_transport=None) -> "Stepper":
        """Rebuild the run from the start and reveal ``position`` events: time travel."""
        st = cls(scenario, record=[(p, t, a) for p, t, a in injections if p <= position],
                 extender_transport=extender_transport)
        st.reveal_to(position)
        return st
