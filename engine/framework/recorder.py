"""The CycleState inspector's recorder: what each extension point's plugins wrote in a cycle's
CycleState (not upstream's; off unless asked for).

``Engine.cycle_state_recorder`` is None by default. A ``CycleStateRecorder`` set there is asked
by ``schedule_one`` for each cycle it starts (``for_cycle``); for the cycles it wants it hands
back a ``CycleRecord``, which the cycle's ``CycleState`` holds (its ``recorder`` slot, None
otherwise). The framework runtime tells the record which extension point and plugin runs before
each plugin call at the cycle's points (PreFilter, Filter as a whole, PostFilter, PreScore,
Score, Reserve, Unreserve, Permit, PreBind, Bind, PostBind), so every ``CycleState.write`` and
``delete`` is attributed (point, plugin, key, value), and the whole state is snapshotted when
the point ends (the state a later point reads, rendered then: a value mutated later shows as
it was). Clones (preemption's dry run, the nominated pods' Filter pass) are new CycleStates
without a recorder: their writes are not recorded.

Nothing here changes what the engine does: the recorder only reads the values it is given, and
renders them with ``visualize``, which never raises.
"""
from __future__ import annotations

import dataclasses
import json
import reprlib

MAX_ITEMS = 50          # items of a dict / set / list / tuple shown, then "… N more"
MAX_CHARS = 4000        # a rendering's size, at most
MAX_DEPTH = 6           # nesting rendered; deeper is repr'd (bounded)
MAX_STR = 500           # one string or repr inside a structure

_repr = reprlib.Repr()
_repr.maxstring = MAX_STR
_repr.maxother = MAX_STR
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxfrozenset = _repr.maxdict = MAX_ITEMS
_repr.maxlevel = MAX_DEPTH

_SCALARS = (bool, int, float, str, type(None))


def type_name(value) -> str:
    """``module.QualName`` of a value's type (builtins without the module)."""
    t = type(value)
    mod = t.__module__
    name = getattr(t, "__qualname__", t.__name__)
    return name if mod in ("builtins", None) else f"{mod}.{name}"


def _cut(s: str, limit: int = MAX_CHARS) -> str:
    return s if len(s) <= limit else s[:limit - 1] + "…"


def _safe_repr(value) -> str:
    try:
        return _cut(_repr.repr(value), MAX_STR)
    except Exception as e:      # noqa: BLE001 - a broken __repr__ must not break the page
        return f"<{type_name(value)}: repr failed: {type(e).__name__}: {e}>"


def _fields(value):
    """(name, value) of an object's public fields: a dataclass's fields, else its __slots__
    (every class of the MRO) and __dict__; None if it has neither."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    names = []
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for s in slots:
            if s not in names and not s.startswith("_") and s != "__dict__":
                names.append(s)
    d = getattr(value, "__dict__", None)
    if isinstance(d, dict):
        names.extend(k for k in d if isinstance(k, str) and not k.startswith("_") and k not in names)
    if not names and not isinstance(d, dict):
        return None
    return [(n, getattr(value, n, None)) for n in names if hasattr(value, n)]


def _key(k) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, tuple) and all(isinstance(x, _SCALARS) for x in k):
        return "=".join("" if x is None else str(x) for x in k)     # a topology pair: zone=a
    return _safe_repr(k)


def _sorted(items):
    try:
        return sorted(items)
    except Exception:       # noqa: BLE001 - mixed types: in their own order
        return list(items)


def _short(value):
    """Cluster objects and the cycle's snapshot by name only (their fields are the cluster's,
    not the plugin's)."""
    name = type(value).__name__
    if name == "Pod" and hasattr(value, "key"):
        return f"Pod {value.key}"
    if name in ("Node", "NodeInfo") and hasattr(value, "name"):
        return f"{name} {value.name}"
    if name == "Snapshot":
        return "(the cycle's snapshot)"
    return None


def plain(value, depth: int = 0):
    """``value`` as a JSON-able structure, bounded: scalars as they are, dicts by key (a
    topology pair as ``key=value``), sets sorted, sequences in order (the first MAX_ITEMS
    items, then ``"… N more"``), objects field by field (``{"type": ..., field: ...}``) or their
    ``__visualize__()``; too deep, a bounded repr."""
    if isinstance(value, _SCALARS):
        if isinstance(value, str) and len(value) > MAX_STR:
            return value[:MAX_STR - 1] + "…"
        if isinstance(value, float) and value != value:
            return "NaN"
        return value
    if depth >= MAX_DEPTH:
        return _safe_repr(value)
    hook = getattr(type(value), "__visualize__", None)
    if hook is not None and depth > 0:
        try:
            out = hook(value)
        except Exception as e:      # noqa: BLE001
            return f"__visualize__() raised {type(e).__name__}: {e}"
        return _cut(out, MAX_STR * 2) if isinstance(out, str) else plain(out, depth + 1)
    if isinstance(value, dict):
        out = {}
        items = list(value.items())
        for k, v in items[:MAX_ITEMS]:
            out[_key(k)] = plain(v, depth + 1)
        if len(items) > MAX_ITEMS:
            out["…"] = f"{len(items) - MAX_ITEMS} more"
        return out
    if isinstance(value, (set, frozenset)):
        items = _sorted(value)
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = None
    if items is not None:
        out = [plain(v, depth + 1) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            out.append(f"… {len(items) - MAX_ITEMS} more")
        return out
    short = _short(value)
    if short is not None:
        return short
    try:
        fields = _fields(value)
    except Exception:       # noqa: BLE001
        fields = None
    if fields is None or callable(value) and not fields:
        return _safe_repr(value)
    out = {"type": type(value).__name__} if depth > 0 else {}     # the table shows the top's type
    for name, v in fields[:MAX_ITEMS]:
        out[name] = plain(v, depth + 1)
    return out


def _scalar_text(v) -> str:
    if isinstance(v, str):
        return v if v and "\n" not in v and v.strip() == v else json.dumps(v, ensure_ascii=False)
    return repr(v)


def _lines(v, indent: str, out: list) -> None:
    """``plain``'s structure as indented YAML-like lines (``key: value``, ``- item``)."""
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append(f"{indent}{k}:")
                _lines(x, indent + "  ", out)
            else:
                out.append(f"{indent}{k}: {_text(x)}")
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, (dict, list)) and x:
                start = len(out)
                _lines(x, indent + "  ", out)
                out[start] = indent + "- " + out[start][len(indent) + 2:]
            else:
                out.append(f"{indent}- {_text(x)}")
    else:
        out.append(indent + _text(v))


def _text(v) -> str:
    if isinstance(v, dict) and not v:
        return "{}"
    if isinstance(v, list) and not v:
        return "[]"
    return _scalar_text(v)


def render(structure) -> str:
    """A JSON-able structure as readable lines (YAML-like), bounded to MAX_CHARS."""
    if not isinstance(structure, (dict, list)) or not structure:
        return _cut(_text(structure))
    out: list = []
    _lines(structure, "", out)
    return _cut("\n".join(out))


def visualize(value) -> str:
    """A readable rendering of a CycleState value, at most MAX_CHARS characters; never raises.

    A value whose type defines ``__visualize__()`` is rendered by it (a str as it is, anything
    else as a JSON-able structure, rendered as YAML-like lines); an exception raised there shows
    as its text. Otherwise scalars and strings show as their repr, and dicts, sets, lists,
    tuples, dataclasses and objects with fields as a bounded structure (``plain``), rendered
    the same way (``render``)."""
    try:
        hook = getattr(type(value), "__visualize__", None)
        if hook is not None:
            try:
                out = hook(value)
            except Exception as e:      # noqa: BLE001 - a plugin's own bug
                return _cut(f"__visualize__() raised {type(e).__name__}: {e}")
            if isinstance(out, str):
                return _cut(out)
            return render(plain(out, 1))
        if isinstance(value, _SCALARS):
            return _cut(_safe_repr(value))
        return render(plain(value))
    except Exception as e:      # noqa: BLE001 - never raises
        return _cut(f"<{type_name(value)}: could not be rendered: {type(e).__name__}: {e}>")


def pairs(m: dict) -> str:
    """``{(key, value): n}`` as ``key=value: n, ...`` (for ``__visualize__`` hooks), bounded."""
    items = list(m.items())
    out = ", ".join(f"{_key(k)}: {plain(v)}" for k, v in items[:MAX_ITEMS])
    if len(items) > MAX_ITEMS:
        out += f", … {len(items) - MAX_ITEMS} more"
    return out or "(none)"


class CycleRecord:
    """One cycle's record: ``writes`` (dicts: point, plugin, op "write" or "delete", key, type,
    value) in the order they happened, and ``snapshots`` ([(point, {key: (type, rendering)})])
    taken as each extension point ends."""
    __slots__ = ("cycle", "pod", "writes", "snapshots", "_point", "_plugin", "_state")

    def __init__(self, cycle: int, pod: str):
        self.cycle = cycle
        self.pod = pod
        self.writes: list = []
        self.snapshots: list = []
        self._point = None
        self._plugin = None
        self._state = None

    def enter(self, state, point: str, plugin: str | None) -> None:
        """``plugin`` (None: the point's plugins as a whole) is about to run at ``point``; a
        change of point first snapshots the state as the previous point left it."""
        if point != self._point:
            self.end_point()
            self._point = point
        self._plugin = plugin
        self._state = state

    def end_point(self) -> None:
        if self._point is not None and self._state is not None:
            self.snapshots.append((self._point, {k: (type_name(v), visualize(v))
                                                 for k, v in list(self._state._data.items())}))
        self._point = None

    def write(self, key, value) -> None:
        self.writes.append({"point": self._point or "(outside a plugin)", "plugin": self._plugin or "",
                            "op": "write", "key": str(key), "type": type_name(value),
                            "value": visualize(value)})

    def delete(self, key) -> None:
        self.writes.append({"point": self._point or "(outside a plugin)", "plugin": self._plugin or "",
                            "op": "delete", "key": str(key), "type": "", "value": ""})


class CycleStateRecorder:
    """Set as ``Engine.cycle_state_recorder``: records the cycles ``cycles`` names (all when
    None) as ``records`` (cycle -> CycleRecord)."""

    def __init__(self, cycles=None):
        self.cycles = None if cycles is None else frozenset(cycles)
        self.records: dict = {}

    def for_cycle(self, cycle: int, pod_key: str = ""):
        if self.cycles is not None and cycle not in self.cycles:
            return None
        rec = self.records[cycle] = CycleRecord(cycle, pod_key)
        return rec

    def finish(self) -> None:
        """Snapshot the point each record was in when the recording stopped."""
        for rec in self.records.values():
            rec.end_point()
