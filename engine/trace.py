"""The trace: every queue transition, plugin result, preemption step and binding, in order.

Each event is a dict with ``seq``, ``time`` (seconds), ``type`` and the fields of SPEC.md §5.
Sinks are attached from outside (a list, a file writer, the web runner); with no sink and
``enabled`` False the engine skips building events altogether, which is what the headless
benchmark's "trace off" mode measures.

Per-node plugin results (Filter, Score, NormalizeScore) are most of a trace: thousands per
cycle in a large cluster. The engine hands them over as an ``EventBatch`` (one extension
point of one plugin run over many nodes, or one node's Filter plugins and the next nodes'):
events of one type and one time whose fields are either the same for all of them or one
column each. A sink with an ``add_batch`` method (``engine.tracestore.EventLog``) keeps the
batch as it is; any other sink is called with each event as a dict, exactly as if the events
had been emitted one by one, so ``trace.add_sink(events.append)`` and ``JsonLinesWriter``
see the same dicts, with the same keys in the same order, as before batches existed.

HostSelected's ``scores`` and ``detail`` (node -> plugin -> scores: large in a large cluster)
are emitted unbuilt, as ``ScoreTable`` values reading the columns of the cycle's Score phase
(``emit_deferred``); only sinks declaring ``deferred_values = True`` see them so, every other
sink gets the built dicts.
"""
from __future__ import annotations

import json
from itertools import compress

from .quantity import US

_CONTAINERS = (list, dict)


class _RepeatedColumn:
    """A batch column made of ``base`` repeated ``times`` times over (RepeatEach, Cycle):
    indexable, sliceable and iterable like the list it stands for, of length
    ``len(base) * times``. ``base`` may be a list or an array (the compact store keeps a
    column's base encoded and repeated the same way)."""
    __slots__ = ("base", "times")

    def __init__(self, base, times: int):
        self.base = base
        self.times = times

    def __len__(self) -> int:
        return len(self.base) * self.times

    def __getitem__(self, i):
        if i.__class__ is slice:
            return [self._at(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("column index out of range")
        return self._at(i)

    def tolist(self) -> list:
        return list(self)


class RepeatEach(_RepeatedColumn):
    """A batch column whose value ``i`` is ``base[i // m]``: each value of ``base`` ``m`` times
    in a row (a Filter batch's node column: one row per plugin for each node)."""
    __slots__ = ()

    def _at(self, i):
        return self.base[i // self.times]

    def __iter__(self):
        m = self.times
        for v in self.base:
            for _ in range(m):
                yield v


class Cycle(_RepeatedColumn):
    """A batch column whose value ``i`` is ``base[i % len(base)]``: ``base`` ``k`` times over
    (a Filter batch's plugin column)."""
    __slots__ = ()

    def _at(self, i):
        return self.base[i % len(self.base)]

    def __iter__(self):
        base = self.base
        for _ in range(self.times):
            yield from base


class EventBatch:
    """``n`` consecutive trace events of one ``type`` at one ``time``, seqs ``start`` ..
    ``start + n - 1``. After ``seq``, ``time`` and ``type``, each event has the fields
    ``keys`` in that order; a field's value is ``cols[key][i]`` when the field has a column,
    else ``const[key]``."""

    __slots__ = ("start", "time", "type", "keys", "const", "cols", "n", "ints")

    def __init__(self, start, time, type_, keys, const, cols, n, ints=()):
        self.start = start
        self.time = time
        self.type = type_
        self.keys = keys
        self.const = const
        self.cols = cols
        self.n = n
        # the keys whose columns the emitter knows to hold ints only (no bools): a compact
        # store keeps them as integer arrays without checking each value's type
        self.ints = ints

    def event(self, i: int) -> dict:
        """The ``i``-th event of the batch as a dict (lists and dicts are fresh copies)."""
        d = {"seq": self.start + i, "time": self.time, "type": self.type}
        cols, const = self.cols, self.const
        for k in self.keys:
            c = cols.get(k)
            v = c[i] if c is not None else const[k]
            if v.__class__ in _CONTAINERS:
                v = v.copy()
            d[k] = v
        return d

    def events(self):
        for i in range(self.n):
            yield self.event(i)


class Segment:
    """``n`` consecutive trace events of any types, recorded as the columns the engine computed
    them from (e.g. a preemption dry run evaluated on the node table: engine.preemption) and
    expanded into the events only when read. ``records()`` gives them, seqs from ``start``, as
    the engine would have emitted them one by one: single event dicts and ``EventBatch``es
    (a run of Filter results between two single events is one batch, as
    ``Framework._filter_rows`` makes it). ``Trace.emit_segment`` sets ``start``, and ``time``
    (the events' time) when the segment's is None;
    ``single_types`` (the types of its single events) and ``batch_types`` (of its batches)
    let a reader that wants other types skip it unexpanded; ``nbytes()`` estimates what it
    keeps. With ``deferred`` True its single events may hold ``Deferred`` values (as
    ``Trace.emit_deferred``'s events), built for the sinks that do not declare
    ``deferred_values``."""
    __slots__ = ("start", "time", "n")
    single_types = frozenset()
    batch_types = frozenset()
    deferred = False

    def records(self):
        raise NotImplementedError

    def nbytes(self) -> int:
        return 0


class ResultRows(Segment):
    """Consecutive single ``PluginResult`` events of one pod and cycle at one time (the
    results of a point that runs each plugin once, e.g. PreFilter and PreScore:
    ``Framework._emit``), kept as one flat list of (point, plugin, node, code, reasons, score,
    dryRun) per event; ``reasons`` is ``NO_REASONS`` for none. Read, each is the dict
    ``emit("PluginResult", pod=, cycle=, point=, plugin=, node=, code=, reasons=, score=,
    dryRun=)`` gives."""
    __slots__ = ("pod", "cycle", "flat")
    single_types = frozenset(("PluginResult",))
    WIDTH = 7

    def __init__(self, pod: str, cycle, flat: list, time: float):
        self.pod, self.cycle, self.flat = pod, cycle, flat
        self.start = None
        self.time = time
        self.n = len(flat) // self.WIDTH

    def nbytes(self) -> int:
        return 150 + 8 * len(self.flat)

    def records(self):
        flat, w = self.flat, self.WIDTH
        t, pod, cycle = self.time, self.pod, self.cycle
        for i in range(self.n):
            point, plugin, node, code, reasons, score, dry_run = flat[i * w:i * w + w]
            yield {"seq": self.start + i, "time": t, "type": "PluginResult", "pod": pod, "cycle": cycle,
                   "point": point, "plugin": plugin, "node": node, "code": code, "reasons": list(reasons),
                   "score": score, "dryRun": dry_run}


NO_REASONS = ()


class Deferred:
    """A field value the engine hands over unbuilt (``Trace.emit_deferred``): ``value()``
    builds it. Only sinks that declare ``deferred_values = True`` ever see one."""
    __slots__ = ()

    def value(self):
        raise NotImplementedError


class ScoreTable(Deferred):
    """HostSelected's ``scores`` (``what="scores"``: node -> total weighted score),
    ``detail`` (``what="detail"``: node -> plugin -> ``{score, normalized, weighted}``) or
    ``ties`` (``what="ties"``: the nodes with the highest total, in evaluation order), built
    when read from the cycle's Score phase as the trace keeps it: ``scored.columns()`` (a
    ``framework.runtime.ScoreSegment``) gives the node names, in evaluation order, and a list
    of ``(plugin, raw scores, normalized scores, weight)`` in the order the plugins ran (a
    plugin without NormalizeScore has its raw scores as normalized scores); ``extra`` are more
    such columns after them (the extenders' prioritize scores: engine/extender.py).
    ``value()`` is the dict the engine used to build."""
    __slots__ = ("what", "scored", "extra")

    def __init__(self, what: str, scored, extra: list):
        self.what = what
        self.scored = scored
        self.extra = extra

    def nbytes(self) -> int:
        return 64

    def value(self) -> dict:
        nodes, plugins = self.scored.columns()
        plugins += self.extra
        if self.what != "detail":
            totals = [0] * len(nodes)
            for _name, _raw, norm, w in plugins:
                for i, s in enumerate(norm):
                    totals[i] += s * w
            if self.what == "scores":
                return dict(zip(nodes, totals))
            best = max(totals)
            return list(compress(nodes, map(best.__eq__, totals)))
        details = [{} for _ in nodes]
        for name, raw, norm, w in plugins:
            for d, r, s in zip(details, raw, norm):
                d[name] = {"score": r, "normalized": s, "weighted": s * w}
        return dict(zip(nodes, details))


def _built(event: dict) -> dict:
    """The event with its Deferred values built (what a sink without deferred_values gets)."""
    return {k: (v.value() if isinstance(v, Deferred) else v) for k, v in event.items()}


class Trace:
    __slots__ = ("enabled", "seq", "_clock", "_sinks", "cycle_context", "_pending")

    def __init__(self, clock=None, enabled: bool = True):
        self.enabled = enabled
        self.seq = 0
        self._clock = clock or (lambda: 0)
        self._sinks: list = []          # [(sink, its add_batch or None)]
        self._pending = None            # a callable handing buffered rows over (see pend)

    def add_sink(self, sink) -> None:
        """``sink(event_dict)`` is called for every event, in order; a sink that also has an
        ``add_batch(batch)`` method receives batches whole (see EventBatch)."""
        self._sinks.append((sink, getattr(sink, "add_batch", None)))
        self.enabled = True

    def now(self) -> float:
        """The time the next event will carry (seconds)."""
        return self._clock() / US

    def _next_event(self, type_: str, fields: dict) -> dict:
        if self._pending is not None:
            self.flush()
        event = {"seq": self.seq, "time": self._clock() / US, "type": type_}
        event.update(fields)
        self.seq += 1
        return event

    def emit(self, type_: str, **fields) -> None:
        if not self.enabled:
            return
        event = self._next_event(type_, fields)
        for s, _ in self._sinks:
            s(event)

    def emit_deferred(self, type_: str, **fields) -> None:
        """``emit``, where some values are ``Deferred``: a sink declaring ``deferred_values =
        True`` (``EventLog``) gets them as they are; every other sink gets the event with
        those values built (once), the same dict ``emit`` would have given it."""
        if not self.enabled:
            return
        event = self._next_event(type_, fields)
        built = None
        for s, _ in self._sinks:
            if getattr(s, "deferred_values", False):
                s(event)
                continue
            if built is None:
                built = _built(event)
            s(built)

    def emit_batch(self, type_: str, keys: tuple, const: dict, cols: dict, n: int, time=None, ints=()) -> None:
        """Emit ``n`` events at once (see EventBatch); ``time`` defaults to now; ``ints``: the
        keys of columns known to hold ints only."""
        if not self.enabled or n <= 0:
            return
        if self._pending is not None:
            self.flush()
        batch = EventBatch(self.seq, self._clock() / US if time is None else time, type_, keys,
                           const, cols, n, ints)
        self.seq += n
        for s, add_batch in self._sinks:
            if add_batch is not None:
                add_batch(batch)
            else:
                for i in range(n):
                    s(batch.event(i))

    def emit_segment(self, seg: Segment) -> None:
        """Emit ``seg.n`` events at once (see Segment): a sink with an ``add_segment`` method
        (``EventLog``) keeps the segment unexpanded; every other sink gets its events exactly
        as if they had been emitted one by one (single events as dicts, batches through its
        ``add_batch`` when it has one; Deferred values built, see Segment)."""
        if not self.enabled or seg.n <= 0:
            return
        if self._pending is not None:
            self.flush()
        seg.start = self.seq
        if seg.time is None:
            seg.time = self._clock() / US
        self.seq += seg.n
        records = built = None
        for s, add_batch in self._sinks:
            add_segment = getattr(s, "add_segment", None)
            if add_segment is not None:
                add_segment(seg)
                continue
            if records is None:
                records = list(seg.records())
            if seg.deferred and not getattr(s, "deferred_values", False):
                if built is None:
                    built = [r if r.__class__ is EventBatch else _built(r) for r in records]
                got = built
            else:
                got = records
            for r in got:
                if r.__class__ is not EventBatch:
                    s(r)
                elif add_batch is not None:
                    add_batch(r)
                else:
                    for i in range(r.n):
                        s(r.event(i))

    def pend(self, flush) -> None:
        """Someone buffers rows for a batch, or a segment: ``flush()`` (which must call
        ``emit_batch`` or ``emit_segment``) is called before the next event is emitted, and by
        ``flush`` (the engine calls it at the end of every unit of work), so the order of
        events is the order of the calls."""
        if self._pending is not None and self._pending is not flush:
            self.flush()
        self._pending = flush

    def flush(self) -> None:
        pending = self._pending
        if pending is not None:
            self._pending = None
            pending()


class JsonLinesWriter:
    """A sink writing one compact JSON object per line (keys in the order the event has them)."""

    def __init__(self, fh):
        self._fh = fh

    def __call__(self, event: dict) -> None:
        self._fh.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False))
        self._fh.write("\n")
