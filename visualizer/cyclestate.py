"""The CycleState inspector's page side: what each extension point's plugins stored in one
scheduling cycle's CycleState, for the cycle panel and a pod's history (issue 26).

Nothing of it is in the trace. The engine is deterministic, so the cycle is computed again on
demand: the session's run is rebuilt (engine.timeline.rebuild, from a checkpoint of the live
session taken at or before the cycle's CycleStart, replaying the rest) with the engine's
CycleState recorder on (engine/framework/recorder.py) for that one cycle, and run as far as the
page has revealed of the cycle: its CycleEnd, and its binding's end (PreBind, Bind) when that
is revealed too. The live session's shown position never moves; the rebuilt stepper is
discarded. An extension point whose results are not revealed yet is left out, and a cycle
whose CycleStart is not revealed is refused (never the future). Results are kept per
(session, cycle, how far) in a small LRU.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict

from engine import timeline as timeline_mod
from engine.framework.recorder import CycleStateRecorder
from visualizer import runner
from visualizer.events import forward
from visualizer.panels.common import trace_index

#: events replayed past the cycle's CycleStart at most (the cycle and its binding)
MAX_EVENTS = 200_000
CACHE_SIZE = 32
POINTS = ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Unreserve", "Permit",
          "PreBind", "Bind", "PostBind")
_ENDS = frozenset(("CycleEnd",))
_BIND_ENDS = frozenset(("Bound", "BindFailed"))

_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()


class NotShown(LookupError):
    """No such cycle on the page yet (not revealed, or never)."""


def _find_start(events, starts: list, cycle: int):
    """The index of the CycleStart / CycleSkipped of ``cycle`` among ``starts`` (their seqs,
    in order; cycle numbers grow with them), or None."""
    lo, hi = 0, len(starts)
    while lo < hi:
        mid = (lo + hi) // 2
        c = events[starts[mid]].get("cycle")
        if c is None or c < cycle:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(starts) and events[starts[lo]].get("cycle") == cycle:
        return starts[lo]
    return None


class _Before:
    """A Checkpointer's ``latest`` no later than ``limit``: the rebuild starts before the cycle."""

    def __init__(self, checkpoints, limit: int):
        self.checkpoints, self.limit = checkpoints, limit

    def latest(self, position: int, injected=None):
        return self.checkpoints.latest(min(position, self.limit))


def _extent(events, i: int, start: dict, position: int) -> dict:
    """How far the page shows cycle ``start`` (events[i]): the points with results revealed,
    where its CycleEnd and its binding's end are (if revealed), and where to replay to."""
    cycle, pod = start.get("cycle"), start["pod"]
    limit = min(position, i + 1 + MAX_EVENTS)
    points, end, bind_end = set(), None, None
    for e in forward(events, i + 1, limit, quiet=True,
                     types=frozenset(("PluginResult", "CycleEnd", "CycleStart", "CycleSkipped"))):
        t = e["type"]
        if t == "PluginResult":
            if e.get("cycle") == cycle and e.get("pod") == pod and not e.get("dryRun"):
                points.add("Score" if e["point"] == "NormalizeScore" else e["point"])
        elif t == "CycleEnd" and e.get("cycle") == cycle:
            end = e
            break
        elif e.get("cycle") != cycle:
            break       # the next cycle began: this one's end is not revealed
    if end is not None:
        points.add("Unreserve")     # run before CycleEnd when Reserve or Permit failed
        if end.get("result") == "Scheduled":
            for e in forward(events, end["seq"] + 1, limit, quiet=False,
                             types=frozenset(("PluginResult", "Bound", "BindFailed"))):
                if e["type"] == "PluginResult":
                    if e.get("cycle") == cycle and e.get("pod") == pod:
                        points.add(e["point"])
                elif e.get("pod") == pod:
                    bind_end = e
                    points.update(("PreBind", "Bind", "PostBind", "Unreserve"))
                    break
    last = bind_end or end
    stop = last["seq"] + 1 if last is not None else position
    truncated = last is None and position > limit
    return {"points": points, "end": end, "bind_end": bind_end, "stop": min(stop, limit),
            "truncated": truncated}


def _record(live, i: int, cycle: int, stop: int):
    """The cycle's CycleRecord, replaying the session's run to ``stop`` with the recorder on."""
    rec = CycleStateRecorder(cycles=[cycle])

    def attach(st):
        st.engine.cycle_state_recorder = rec

    run = live.run
    st = timeline_mod.rebuild(
        live.scenario, live.injections, stop, action_of=runner._action_of(live.scenario), attach=attach,
        checkpoints=_Before(live.checkpointer, i), timeline=live.timeline,
        unit_ends=getattr(live.head, "unit_ends", None),
        extender_transport=getattr(run, "extender_transport", None))
    try:
        rec.finish()
        return rec.records.get(cycle)
    finally:
        st.discard()


def _cached_record(live, i: int, cycle: int, stop: int):
    inj = tuple(json.dumps(x.as_json(), sort_keys=True, default=str)
                for x in live.injections if x.position < stop)
    key = (live.id, live.version, cycle, i, stop, inj)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    record = _record(live, i, cycle, stop)
    with _cache_lock:
        _cache[key] = record
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return record


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _short_type(t: str) -> str:
    return t.rsplit(".", 1)[-1]


def _entry(key, type_, value, op="write") -> dict:
    return {"key": key, "type": _short_type(type_), "full_type": type_, "value": value, "op": op,
            "block": "\n" in value}


def cycle_state(live, cycle: int) -> dict:
    """The CycleState of ``cycle`` as the page shows it now: per extension point (in order), its
    plugins' writes and deletes, and the whole state as the point left it when that changed.
    Raises NotShown for a cycle the page has not revealed."""
    events, position = live.timeline, live.position
    i = _find_start(events, trace_index(live).cycle_starts, cycle)
    if i is None or i >= position:
        raise NotShown(f"cycle {cycle} is not shown yet")
    start = events[i]
    ctx = {"cycle": cycle, "pod": start["pod"], "skipped": start["type"] == "CycleSkipped", "points": [],
           "note": "", "in_progress": False}
    if ctx["skipped"]:
        return ctx
    ext = _extent(events, i, start, position)
    ctx["in_progress"] = ext["end"] is None
    if ext["truncated"]:
        ctx["note"] = (f"This cycle did not end within {MAX_EVENTS:,} events of its start: what it "
                       f"stored up to there is shown.")
    record = _cached_record(live, i, cycle, ext["stop"])
    if record is None:      # pragma: no cover - the replay is the recorded run
        ctx["note"] = "The replay did not reach this cycle."
        return ctx
    shown = ext["points"]
    by_point: dict = {}
    for w in record.writes:
        if w["point"] not in shown:
            continue
        plugins = by_point.setdefault(w["point"], {})
        plugins.setdefault(w["plugin"] or "(the point's plugins)", []).append(
            _entry(w["key"], w["type"], w["value"], w["op"]))
    snaps = {}
    for point, snap in record.snapshots:
        snaps[point] = snap     # a point entered twice (Reserve after Unreserve): the last
    previous = None
    for point in POINTS:
        if point not in shown or (point not in by_point and point not in snaps):
            continue
        snap = snaps.get(point)
        changed = snap is not None and snap != previous
        ctx["points"].append({
            "name": point,
            "plugins": [{"plugin": p, "entries": es} for p, es in by_point.get(point, {}).items()],
            "state": [_entry(k, t, v) for k, (t, v) in snap.items()] if changed else None,
        })
        if snap is not None:
            previous = snap
    ctx["empty"] = not any(p["plugins"] for p in ctx["points"])
    return ctx


# ---------------------------------------------------------------------- the view

MAX_CYCLE = 2 ** 62


def view(request, session, role: str):
    """``GET /s/<token>/cyclestate/?cycle=N`` (and ``/w/<token>/...``: it only reads): the
    CycleState of cycle N as an htmx fragment (templates/visualizer/partials/_cycle_state.html).
    A cycle not revealed yet is a 404 (for htmx a 200 fragment saying so: htmx swaps 2xx only)."""
    from django.shortcuts import render
    from engine.errors import EngineError

    raw = request.GET.get("cycle", "")
    ctx = {"role": role}
    raw = raw.strip() if isinstance(raw, str) else ""
    cycle = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 20 else None
    if cycle is None or cycle > MAX_CYCLE:
        ctx["problem"] = "Name a cycle: ?cycle=N"
        status = 400
    else:
        try:
            with runner.open_live(session.pk) as live:
                ctx["cs"] = cycle_state(live, cycle)
            status = 200
        except NotShown:
            ctx["problem"] = f"No cycle {cycle} on the page yet."
            status = 404
        except EngineError as e:
            ctx["problem"] = f"This session cannot be rebuilt here: {e}"
            status = 503
    return render(request, "visualizer/partials/_cycle_state.html", ctx,
                  status=200 if request.htmx else status)
