"""A compact, list-like store of trace events: what the web UI keeps of a run.

A list of event dicts costs about 750 bytes per event, and a large cluster's run has
millions of events (thousands of per-node plugin results per scheduling cycle). ``EventLog``
keeps the same events in a few flat arrays and expands one into today's dict only when it is
read, so ``log[i]``, ``log[a:b]``, ``len(log)`` and iteration give exactly the dicts a
``list`` sink would hold (same keys, same order, same values and types; lists and dicts in
them are fresh copies).

How it is stored:

- every distinct value (a pod name, a plugin, a code, a time, a score, ``[]``) is kept once
  and referred to by a small integer; lists and dicts are kept as ``marshal`` bytes, which
  keep their exact types;
- an event emitted on its own is its key tuple's number followed by its values' numbers in
  one ``array('i')`` (``seq`` is not stored: it is the event's index);
- an ``EventBatch`` (engine/trace.py: one extension point's per-node results) keeps its shared
  fields once and one array per varying field: value numbers, or the integers themselves for
  an integer column (scores);
- a ``Deferred`` value (engine/trace.py: HostSelected's ScoreTables, reading the cycle's Score
  segment; PreemptionPick's candidates) is kept as it is and built when read;
- a ``Segment`` (engine/trace.py: e.g. a preemption dry run, kept as the columns the node
  table computed, or a cycle's Score phase) is kept as it is; when one of its events is read, the segment's events are
  stored in a small EventLog of their own (the same singles and batches, stored as above) and
  read from it, so they are the dicts the events emitted one by one would give. The last few
  expanded segments are kept (a reader stepping through one expands it once).

Events must arrive in order from seq 0 (a ``Trace`` sink: ``trace.add_sink(log)``).
"""
from __future__ import annotations

import bisect
import itertools
import marshal
import sys
import zlib
from array import array

from .trace import Cycle, Deferred, EventBatch, RepeatEach, Segment

_RAW = 0     # a column of integers, stored as they are
_IDS = 1     # a column of value numbers
_INT = {int}
_VALUE_OVERHEAD = 8 + 1 + 100   # the list slot, the boxed flag, a dict entry of the index
_COLUMN_OVERHEAD = 64 + 16      # an array object and its (kind, array) tuple
_BATCH_OVERHEAD = 56 + 8 * 7    # a _StoredBatch
_SHARED_MIN = 16   # batches shorter than this share their fields and columns (_small_parts)
_SMALL_MAX = 200_000   # distinct short columns kept for sharing (then each is kept on its own)
_EMPTY_LIST = ("empty list",)   # its key among _fixed_ids
_CHUNK = 256   # rows of a batch expanded at a time by scan / scan_back
_BIG = 512   # containers whose marshal form is longer are zlib-compressed, not shared
_STR_LIST_MIN = 16  # a list of this many strings or more: their value numbers
_SEGMENTS_EXPANDED = 4  # expanded segments kept for reading


def _nbytes(arr) -> int:
    """The bytes of an encoded column's array (a RepeatEach/Cycle over an array: its base)."""
    if arr.__class__ is RepeatEach or arr.__class__ is Cycle:
        return 48 + arr.base.itemsize * len(arr.base)
    return arr.itemsize * len(arr)


def _unbox(v, how, vals):
    if how == 1:
        return marshal.loads(v)
    if how == 2:
        return marshal.loads(zlib.decompress(v))
    if how == 4:
        return [vals[i] for i in v]     # a list of strings kept as their value numbers
    if how == 5:
        return v.value()                # any other Deferred, built when read
    return v


def _wanted(seg, batches, types) -> bool:
    """Whether a scan (``batches``, ``types``: see EventLog.scan) gives some event of ``seg``."""
    if types is None:
        return True
    if any(t in types for t in seg.single_types):
        return True
    return batches and any(t in types for t in seg.batch_types)


class _StoredBatch:
    __slots__ = ("start", "time", "type", "keys", "const", "cols", "n")

    def __init__(self, start, time, type_, keys, const, cols, n):
        self.start, self.time, self.type, self.keys = start, time, type_, keys
        self.const, self.cols, self.n = const, cols, n


class _Log:
    """What EventLog and ForkedLog share: equal to a list (or log) of the same events."""

    def __eq__(self, other) -> bool:
        if isinstance(other, (EventLog, ForkedLog, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None


class EventLog(_Log):
    """An append-only sequence of trace events, stored compactly (see the module docstring)."""

    deferred_values = True      # HostSelected's ScoreTables arrive unbuilt (Trace.emit_deferred)

    def __init__(self, start: int = 0):
        self._start = start             # the seq of the first event this log keeps (ForkedLog)
        self._vals: list = []           # value number -> value (marshal bytes for containers)
        self._boxed = bytearray()       # value number -> 1 if the value is marshal bytes
        self._str_ids: dict = {}
        self._int_ids: dict = {}
        self._other_ids: dict = {}      # (class, value) or marshal bytes -> value number
        self._schemas: list = []        # key-tuple number -> key tuple (without "seq")
        self._schema_ids: dict = {}
        self._flat = array("i")         # single events: key-tuple number, value numbers...
        self._rec_start = array("q")    # first seq of each record (a single event or a batch)
        self._rec_ref = array("q")      # >= 0: offset in _flat; < 0: ~index in _batches
        self._batches: list = []
        self._n = start
        self._col_cache = (None, None)  # (the last column list encoded, its encoding)
        self._type_slot: dict = {}      # key-tuple number -> where "type" is in its records
        self._small_consts: dict = {}   # small batches' shared fields, columns and column
        self._small_cols: dict = {}     # sets, each kept once (see _small_parts)
        self._small_colsets: dict = {}
        self._bytes = 0                 # nbytes(), kept as events arrive
        self._float_ids: dict = {}      # float (not 0.0 or nan) -> value number
        self._fixed_ids: dict = {}      # None, True, False -> value number (see append)
        self._expanded_segs: dict = {}  # id(segment) -> (segment, its events' EventLog)

    # ------------------------------------------------------------------ values

    def _new_value(self, v, table, key) -> int:
        i = len(self._vals)
        table[key] = i
        self._vals.append(v)
        self._boxed.append(0)
        self._bytes += _VALUE_OVERHEAD + sys.getsizeof(v) + (sys.getsizeof(key) if table is self._other_ids else 0)
        return i

    def _vid(self, v) -> int:
        c = v.__class__
        if c is str:
            i = self._str_ids.get(v)
            return i if i is not None else self._new_value(v, self._str_ids, v)
        if c is int:
            i = self._int_ids.get(v)
            return i if i is not None else self._new_value(v, self._int_ids, v)
        if c is list and len(v) >= _STR_LIST_MIN and v[0].__class__ is str:
            # e.g. HostSelected's ties: node names, which recur (the first time numbered here:
            # a cycle's Score segment keeps its node names unnumbered)
            try:
                ids = list(map(self._str_ids.__getitem__, v))
            except KeyError:
                ids = list(map(self._vid, v)) if all(s.__class__ is str for s in v) else None
            except TypeError:
                ids = None
            if ids is not None:
                try:
                    arr = array("H", ids)
                except OverflowError:
                    arr = array("i", ids)
                i = self._new_value(arr, {}, None)
                self._boxed[i] = 4
                self._bytes += _nbytes(arr)
                return i
        if c is list or c is dict or c is tuple:
            try:
                key = marshal.dumps(v)
            except ValueError:          # not marshallable: kept as the object itself
                return self._new_value(v, {}, None)
            if len(key) > _BIG:         # e.g. HostSelected's detail: one of a kind, compressed
                i = self._new_value(zlib.compress(key, 1), {}, None)
                self._boxed[i] = 2
                return i
            i = self._other_ids.get(key)
            if i is None:
                i = self._new_value(key, self._other_ids, key)
                self._boxed[i] = 1
            return i
        if isinstance(v, Deferred):
            i = self._new_value(v, {}, None)
            self._boxed[i] = 5
            nbytes = getattr(v, "nbytes", None)
            if nbytes is not None:
                self._bytes += nbytes()
            return i
        if c is float and v != 0.0 and v == v:  # (0.0 and -0.0 compare equal; nan never does)
            i = self._float_ids.get(v)
            return i if i is not None else self._new_value(v, self._float_ids, v)
        if c is float:
            key = (c, repr(v))          # 0.0 and -0.0 compare equal; nan never does
        else:
            try:
                key = (c, v)
                hash(key)
            except TypeError:
                return self._new_value(v, {}, None)
        i = self._other_ids.get(key)
        return i if i is not None else self._new_value(v, self._other_ids, key)

    def _value(self, i):
        return _unbox(self._vals[i], self._boxed[i], self._vals)

    def _encode_column(self, col, ints=False):
        cached_src, cached = self._col_cache
        if col is cached_src:
            return cached           # the same list again (node names of a cycle's points)
        enc = self._encode_ints(col) if ints else self._encode_values(col)
        self._col_cache = (col, enc)
        self._bytes += _COLUMN_OVERHEAD + _nbytes(enc[1])
        return enc

    # ------------------------------------------------------------------ appending (a sink)

    def __call__(self, event: dict) -> None:
        self.append(event)

    def append(self, event: dict) -> None:
        if event["seq"] != self._n:
            raise ValueError(f"EventLog: event seq {event['seq']} arrives at position {self._n}")
        keys = tuple(event)[1:]
        sid = self._schema_ids.get(keys)
        if sid is None:
            sid = self._schema_ids[keys] = len(self._schemas)
            self._schemas.append(keys)
        flat = self._flat
        self._rec_start.append(self._n)
        self._rec_ref.append(len(flat))
        # the value numbers of the usual values looked up here; _vid numbers the rest (and
        # these the first time), so a value has one number whichever way it came
        vid = self._vid
        sget, iget, fget = self._str_ids.get, self._int_ids.get, self._float_ids.get
        fixed = self._fixed_ids
        ids = [sid]
        values = iter(event.values())
        next(values)        # seq
        for v in values:
            c = v.__class__
            if c is str:
                i = sget(v)
            elif c is int:
                i = iget(v)
            elif c is float:
                i = fget(v)
            elif v is None or c is bool:
                i = fixed.get(v)
                if i is None:
                    i = fixed[v] = vid(v)
            elif c is list and not v:           # e.g. no reasons
                i = fixed.get(_EMPTY_LIST)
                if i is None:
                    i = fixed[_EMPTY_LIST] = vid(v)
            else:
                i = None
            ids.append(i if i is not None else vid(v))
        flat.extend(ids)
        self._n += 1
        self._bytes += 4 * (1 + len(keys)) + 16

    def add_batch(self, batch: EventBatch) -> None:
        if batch.start != self._n:
            raise ValueError(f"EventLog: batch seq {batch.start} arrives at position {self._n}")
        if batch.n < _SHARED_MIN:
            const, cols = self._small_parts(batch)
        else:
            ints = batch.ints
            enc = self._encode_column
            cols = {k: enc(c, k in ints) for k, c in batch.cols.items()}
            const = dict(batch.const)
            self._bytes += 104 * len(const) + 104 * len(cols)
        self._rec_start.append(self._n)
        self._rec_ref.append(~len(self._batches))
        self._batches.append(_StoredBatch(batch.start, batch.time, batch.type, batch.keys,
                                          const, cols, batch.n))
        self._n += batch.n
        self._bytes += _BATCH_OVERHEAD + 16

    def add_segment(self, seg: Segment) -> None:
        """Keep a segment unexpanded (see the module docstring)."""
        if seg.start != self._n:
            raise ValueError(f"EventLog: segment seq {seg.start} arrives at position {self._n}")
        self._rec_start.append(self._n)
        self._rec_ref.append(~len(self._batches))
        self._batches.append(seg)
        self._n += seg.n
        self._bytes += seg.nbytes() + 16 + 8

    def _expanded(self, seg: Segment) -> "EventLog":
        """The segment's events, stored as if they had arrived one by one."""
        cache = self._expanded_segs
        got = cache.get(id(seg))
        if got is not None and got[0] is seg:
            return got[1]
        log = EventLog(start=seg.start)
        for r in seg.records():
            if r.__class__ is EventBatch:
                log.add_batch(r)
            else:
                log.append(r)
        if log._n != seg.start + seg.n:
            raise RuntimeError(f"segment at {seg.start}: {log._n - seg.start} events, not {seg.n}")
        while len(cache) >= _SEGMENTS_EXPANDED:
            del cache[next(iter(cache))]
        cache[id(seg)] = (seg, log)
        return log

    def _small_parts(self, batch):
        """A small batch's shared fields and columns, kept once for all batches with the same
        ones (a preemption dry run filters one node at a time between reprieve events: tens
        of thousands of batches of a few rows, most of them alike)."""
        vid = self._vid
        ckey = (tuple(batch.const), tuple([vid(v) for v in batch.const.values()]))
        const = self._small_consts.get(ckey)
        if const is None:
            const = dict(batch.const)
            self._bytes += 104 * len(const)
            if len(self._small_consts) < _SMALL_MAX:
                self._small_consts[ckey] = const
                self._bytes += _VALUE_OVERHEAD
        small = self._encode_small
        cols = {k: small(c) for k, c in batch.cols.items()}
        # the columns' encodings are shared objects (or held by this dict): ids stay unique
        skey = tuple([(k, id(e)) for k, e in cols.items()])
        shared = self._small_colsets.get(skey)
        if shared is None:
            shared = cols
            self._bytes += 104 * len(cols)
            if len(self._small_colsets) < _SMALL_MAX:
                self._small_colsets[skey] = cols
                self._bytes += _VALUE_OVERHEAD
        return const, shared

    def _encode_ints(self, col):
        """(_RAW, the integers) of a column its emitter says holds ints only."""
        if col.__class__ is list:
            try:
                return (_RAW, array("i", col))
            except OverflowError:
                try:
                    return (_RAW, array("q", col))
                except OverflowError:
                    pass
            except TypeError:       # not ints after all: the checked path keeps each as it is
                pass
        return self._encode_values(col)

    def _encode_values(self, col):
        """A column as (_RAW, the integers) when it holds ints only, else (_IDS, its values'
        numbers); a RepeatEach or Cycle column as its base's encoding, repeated."""
        c = col.__class__
        if c is RepeatEach or c is Cycle:
            kind, base = self._encode_values(col.base)
            return (kind, c(base, col.times))
        if not col or col[0].__class__ is int:     # else it has a value that is not an int
            for code in ("i", "q"):
                try:
                    raw = array(code, col)      # fails at once on a string or a float
                except OverflowError:
                    continue
                except TypeError:
                    break
                if set(map(type, col)) <= _INT:  # bools convert too, but must stay bools
                    return (_RAW, raw)
                break
        sid = self._str_ids
        try:
            return (_IDS, array("i", map(sid.__getitem__, col)))     # strings seen before
        except (KeyError, TypeError):
            vid = self._vid
            seen = {}       # id() -> value number, for the same object repeated (e.g. [])
            ids = []
            for v in col:
                i = seen.get(id(v))
                if i is None:
                    i = vid(v)
                    if v.__class__ is not str:
                        seen[id(v)] = i
                ids.append(i)
            return (_IDS, array("i", ids))

    def _encode_small(self, col):
        """The encoding of a short column, the same object for every column with the same
        values (while the table of them stays under _SMALL_MAX entries)."""
        if col.__class__ is RepeatEach or col.__class__ is Cycle:
            col = list(col)
        enc = self._encode_values(col)
        key = (enc[0], enc[1].typecode, enc[1].tobytes())
        table = self._small_cols
        got = table.get(key)
        if got is not None:
            return got
        self._bytes += _COLUMN_OVERHEAD + enc[1].itemsize * len(enc[1])
        if len(table) < _SMALL_MAX:
            table[key] = enc
            self._bytes += _VALUE_OVERHEAD
        return enc

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return self._n

    def _single(self, seq: int, off: int) -> dict:
        flat, vals, boxed = self._flat, self._vals, self._boxed
        keys = self._schemas[flat[off]]
        d = {"seq": seq}
        j = off + 1
        for k in keys:
            i = flat[j]
            v = vals[i]
            d[k] = _unbox(v, boxed[i], vals) if boxed[i] else v
            j += 1
        return d

    def _row(self, b: _StoredBatch, r: int) -> dict:
        vals, boxed = self._vals, self._boxed
        d = {"seq": b.start + r, "time": b.time, "type": b.type}
        cols, const = b.cols, b.const
        for k in b.keys:
            c = cols.get(k)
            if c is None:
                v = const[k]
                if v.__class__ is list or v.__class__ is dict:
                    v = v.copy()
            elif c[0] == _RAW:
                v = c[1][r]
            else:
                i = c[1][r]
                v = vals[i]
                if boxed[i]:
                    v = _unbox(v, boxed[i], vals)
            d[k] = v
        return d

    def _rows(self, b: _StoredBatch, lo: int, hi: int) -> list:
        """Rows ``lo`` .. ``hi - 1`` of a batch as dicts, equal to ``_row`` of each (each
        column's slice decoded once, then one dict per row)."""
        vals, boxed = self._vals, self._boxed
        n = hi - lo
        cols, const = b.cols, b.const
        sources = []
        for k in b.keys:
            c = cols.get(k)
            if c is None:
                v = const[k]
                if v.__class__ is list or v.__class__ is dict:
                    sources.append([v.copy() for _ in range(n)])
                else:
                    sources.append(itertools.repeat(v, n))
            else:
                arr = c[1]
                part = arr[lo:hi]
                if c[0] == _RAW:
                    sources.append(part)
                elif any(map(boxed.__getitem__, part)):
                    sources.append([_unbox(vals[i], boxed[i], vals) if boxed[i] else vals[i] for i in part])
                else:
                    sources.append(list(map(vals.__getitem__, part)))
        keys = ("seq", "time", "type") + tuple(b.keys)
        start = b.start + lo
        rep = itertools.repeat
        return [dict(zip(keys, row)) for row in
                zip(range(start, start + n), rep(b.time, n), rep(b.type, n), *sources)]

    def _record_of(self, i: int) -> int:
        return bisect.bisect_right(self._rec_start, i) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            return list(self.scan(start, stop))
        n = self._n
        if i < 0:
            i += n
        if not self._start <= i < n:
            raise IndexError("EventLog index out of range")
        r = self._record_of(i)
        ref = self._rec_ref[r]
        if ref >= 0:
            return self._single(i, ref)
        b = self._batches[~ref]
        if b.__class__ is not _StoredBatch:
            return self._expanded(b)[i]
        return self._row(b, i - b.start)

    def __iter__(self):
        return self.scan(0, None)

    def _single_type(self, off: int) -> str:
        """The type of the single event stored at ``off`` in the flat array, unexpanded."""
        flat = self._flat
        sid = flat[off]
        at = self._type_slot.get(sid)
        if at is None:
            at = self._type_slot[sid] = 1 + self._schemas[sid].index("type")
        return self._vals[flat[off + at]]

    def scan(self, start: int = 0, stop: int | None = None, *, batches: bool = True, types=None):
        """The events ``start`` .. ``stop - 1`` in order, as dicts. With ``batches=False`` the
        events stored as batches (per-node PluginResults of Filter, Score and NormalizeScore)
        are left out, which makes a scan of a long run cost its other events only; with
        ``types`` (a set of event types) only events of those types are expanded and given."""
        n = self._n
        stop = n if stop is None else max(0, min(stop, n))
        start = max(self._start, start)
        if start >= stop:
            return
        r = self._record_of(start)
        rec_start, rec_ref, batches_ = self._rec_start, self._rec_ref, self._batches
        nrec = len(rec_start)
        single_type = self._single_type
        i = start
        while i < stop and r < nrec:
            ref = rec_ref[r]
            if ref >= 0:
                if types is None or single_type(ref) in types:
                    yield self._single(i, ref)
                i += 1
            else:
                b = batches_[~ref]
                end = min(b.start + b.n, stop)
                if b.__class__ is not _StoredBatch:
                    if _wanted(b, batches, types):
                        yield from self._expanded(b).scan(i, end, batches=batches, types=types)
                elif batches and (types is None or b.type in types):
                    j = i - b.start
                    stop_j = end - b.start
                    while j < stop_j:       # in chunks: a reader may stop early
                        k = min(stop_j, j + _CHUNK)
                        yield from self._rows(b, j, k)
                        j = k
                i = end
            r += 1

    def __repr__(self) -> str:
        return f"<EventLog of {self._n} events>"

    def scan_back(self, stop: int | None = None, start: int = 0, *, batches: bool = True, types=None):
        """The events ``stop - 1`` down to ``start``, newest first (see ``scan``)."""
        stop = self._n if stop is None else max(0, min(stop, self._n))
        start = max(self._start, start)
        if start >= stop:
            return
        r = self._record_of(stop - 1)
        rec_ref, batches_ = self._rec_ref, self._batches
        single_type = self._single_type
        i = stop - 1
        while i >= start and r >= 0:
            ref = rec_ref[r]
            if ref >= 0:
                if types is None or single_type(ref) in types:
                    yield self._single(i, ref)
                i -= 1
            else:
                b = batches_[~ref]
                low = max(b.start, start)
                if b.__class__ is not _StoredBatch:
                    if _wanted(b, batches, types):
                        yield from self._expanded(b).scan_back(i + 1, low, batches=batches, types=types)
                elif batches and (types is None or b.type in types):
                    j = i - b.start + 1
                    low_j = low - b.start
                    while j > low_j:
                        k = max(low_j, j - _CHUNK)
                        yield from reversed(self._rows(b, k, j))
                        j = k
                i = b.start - 1
            r -= 1

    def span(self, i: int) -> tuple:
        """(first, end) of the stored record holding event ``i``: the whole batch it is part
        of, or (i, i + 1). The events of a batch share their type, time, pod, cycle, point and
        dryRun."""
        r = self._record_of(i)
        ref = self._rec_ref[r]
        if ref >= 0:
            return i, i + 1
        b = self._batches[~ref]
        if b.__class__ is not _StoredBatch:
            return self._expanded(b).span(i)
        return b.start, b.start + b.n

    def type_at(self, i: int) -> str:
        """The ``type`` of event ``i``, without expanding it."""
        if i < 0:
            i += self._n
        r = self._record_of(i)
        ref = self._rec_ref[r]
        if ref < 0:
            b = self._batches[~ref]
            if b.__class__ is not _StoredBatch:
                return self._expanded(b).type_at(i)
            return b.type
        return self._single_type(ref)

    def nbytes(self) -> int:
        """The memory the events take, estimated as they arrive (arrays, batch headers, the
        distinct values and their index): what a session's memory budget counts."""
        return self._bytes


class ForkedLog(_Log):
    """The first ``n`` events of ``parent`` (an EventLog or ForkedLog, which only grows)
    followed by events of its own: the log of a run resumed from a checkpoint taken after
    ``n`` events of the parent's run, which shares the parent's events instead of copying
    them. It reads and appends as an EventLog does; ``nbytes`` counts its own events."""

    deferred_values = True

    def __init__(self, parent, n: int):
        while isinstance(parent, ForkedLog) and n <= parent._n0:
            parent = parent._parent
        if n > len(parent):
            raise ValueError(f"ForkedLog: the parent has {len(parent)} events, not {n}")
        self._parent, self._n0 = parent, n
        self._tail = EventLog(start=n)

    def __call__(self, event: dict) -> None:
        self._tail.append(event)

    def append(self, event: dict) -> None:
        self._tail.append(event)

    def add_batch(self, batch) -> None:
        self._tail.add_batch(batch)

    def add_segment(self, seg) -> None:
        self._tail.add_segment(seg)

    def __len__(self) -> int:
        return len(self._tail)

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            return list(self.scan(start, stop))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("ForkedLog index out of range")
        return self._parent[i] if i < self._n0 else self._tail[i]

    def __iter__(self):
        return self.scan(0, None)

    def scan(self, start: int = 0, stop: int | None = None, *, batches: bool = True, types=None):
        stop = len(self) if stop is None else min(stop, len(self))
        if start < self._n0:
            yield from self._parent.scan(start, min(stop, self._n0), batches=batches, types=types)
        if stop > self._n0:
            yield from self._tail.scan(max(start, self._n0), stop, batches=batches, types=types)

    def scan_back(self, stop: int | None = None, start: int = 0, *, batches: bool = True, types=None):
        stop = len(self) if stop is None else min(stop, len(self))
        if stop > self._n0:
            yield from self._tail.scan_back(stop, max(start, self._n0), batches=batches, types=types)
        if start < self._n0:
            yield from self._parent.scan_back(min(stop, self._n0), start, batches=batches, types=types)

    def span(self, i: int) -> tuple:
        if i < self._n0:
            first, end = self._parent.span(i)
            return first, min(end, self._n0)
        return self._tail.span(i)

    def type_at(self, i: int) -> str:
        if i < 0:
            i += len(self)
        return self._parent.type_at(i) if i < self._n0 else self._tail.type_at(i)

    def nbytes(self) -> int:
        """Its own events (the shared ones are the parent's)."""
        return self._tail.nbytes()

    def retained_nbytes(self) -> int:
        """Its own events and all of the parent's run it keeps alive."""
        parent = self._parent
        more = parent.retained_nbytes() if isinstance(parent, ForkedLog) else parent.nbytes()
        return self._tail.nbytes() + more

    def __repr__(self) -> str:
        return f"<ForkedLog of {len(self)} events, the first {self._n0} shared>"
