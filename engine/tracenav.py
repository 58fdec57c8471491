"""Reading a run's trace events without expanding what the reader does not need.

A run's events are an ``engine.tracestore.EventLog`` (a plain list in some tests). Most of a
large cluster's events are per-node PluginResults of Filter, Score and NormalizeScore, stored
as batches; a reader looking for queue moves, cycles, bindings or deletions skips them whole
(``quiet=False``) instead of expanding thousands of dicts per cycle. Used by the timeline
(engine/timeline.py) and the visualizer's panels.
"""
from __future__ import annotations

from .quantity import US


def forward(events, start: int = 0, stop: int | None = None, *, quiet: bool = True, types=None):
    """Events ``start`` .. ``stop - 1``, oldest first; ``quiet=False`` may leave out batched
    per-node results (never anything else); ``types`` (a set): only events of those types,
    the others not even expanded (HostSelected's score tables are large to build)."""
    scan = getattr(events, "scan", None)
    if scan is not None:
        return scan(start, stop, batches=quiet, types=types)
    got = iter(events[start:stop])
    return got if types is None else (e for e in got if e["type"] in types)


def backward(events, stop: int, start: int = 0, *, quiet: bool = True, types=None):
    """Events ``stop - 1`` down to ``start``, newest first (see ``forward``)."""
    scan_back = getattr(events, "scan_back", None)
    if scan_back is not None:
        return scan_back(stop, start, batches=quiet, types=types)
    got = (events[i] for i in range(min(stop, len(events)) - 1, max(start, 0) - 1, -1))
    return got if types is None else (e for e in got if e["type"] in types)


def span(events, i: int) -> tuple:
    """(first, end) of the run of events stored together with event ``i`` (a batch shares its
    type, time, pod, cycle, point and dryRun); (i, i + 1) for a list."""
    sp = getattr(events, "span", None)
    return sp(i) if sp is not None else (i, i + 1)


def type_at(events, i: int) -> str:
    t = getattr(events, "type_at", None)
    return t(i) if t is not None else events[i]["type"]


def time_us_at(events, i: int) -> int:
    """The virtual time of event ``i`` in microseconds (the engine's clock unit)."""
    return int(round(events[i]["time"] * US))
