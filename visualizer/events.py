"""Reading a session's events without expanding what a panel does not need (the readers live
in engine/tracenav.py, which the timeline uses too; the panels' own pieces are here).

A session's timeline is an ``engine.tracestore.EventLog`` (a plain list in some tests). Most
of a large cluster's events are per-node PluginResults of Filter, Score and NormalizeScore,
stored as batches; the panels that look for queue moves, cycles, bindings or deletions skip
them whole (``quiet=False``) instead of expanding thousands of dicts per cycle.
"""
from __future__ import annotations

from engine.tracenav import backward, forward, span, time_us_at, type_at  # noqa: F401 - re-exported

#: the points whose per-node results an EventLog may keep as batches
BATCHED_POINTS = frozenset(("Filter", "Score", "NormalizeScore"))


#: the one type the queue panels and the moment look for
QUEUE_TRANSITION = frozenset(("QueueTransition",))


def may_match_batched(when: dict) -> bool:
    """Whether a cue's ``when`` could match a batched per-node result."""
    t = when.get("type")
    if t is not None and t != "PluginResult":
        return False
    p = when.get("point")
    return p is None or p in BATCHED_POINTS
