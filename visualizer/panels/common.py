"""What the panels share, below them all: the trace index over a session's timeline, a page's
own view (queue and matrix pages, the outcome filter, the node overview's search), the pager,
resource quantities, a plugin call's result and the constants more than one panel reads.

Templates never see engine objects: every function of the panels returns dicts, lists,
strings and numbers.
"""
from __future__ import annotations

import bisect

from visualizer.events import forward, may_match_batched

QUEUES = (("activeQ", "activeQ", "pop order: priority, then queue time"),
          ("backoffQ", "podBackoffQ", "backoff expiry order"),
          ("unschedulablePods", "unschedulablePods", "waiting for a cluster event"))
PREEMPTION_TYPES = {"PreemptionIneligible", "PreemptionNodeResult", "ReprieveStart", "ReprieveFits",
                    "ReprieveStep", "PreemptionCandidate", "PreemptionDryRunStop", "PreemptionPick"}
MATRIX_ROWS = 40          # nodes shown in the Score table and in a pod history's Filter matrix
HEAT_RESOURCES = ("cpu", "memory", "pods")
OUTCOMES = ("all", "feasible", "filtered")
SUCCESS = "Success"


# ---------------------------------------------------------------------- formatting

def quantity(resource: str, amount) -> str:
    """A resource amount as Kubernetes writes it (cpu from millicores, bytes in Ki/Mi/Gi)."""
    if amount is None:
        return "0"
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= size:
                if amount % size == 0:
                    return f"{amount // size}{unit}"
                return f"{amount / size:.1f}{unit}"
        return str(amount)
    return str(amount)


# ---------------------------------------------------------------------- the trace index

_INDEXED_TYPES = frozenset(("QueueTransition", "CycleSkipped", "PodDeleted", "CycleEnd", "CycleStart")) | PREEMPTION_TYPES


class TraceIndex:
    """What the panels need from a session's whole timeline, gathered once per event.

    A frame then costs what it shows, not the length of the run: the pods-per-queue series,
    where cycles start, where preemption events are, and where each cue's ``when`` first
    matches. The index follows one timeline list (which only grows); queries take the
    position shown, so it serves the head and every point travelled back to alike.
    """

    def __init__(self, events: list, cues: list):
        self.events = events
        self.upto = 0
        self.counts = {"activeQ": 0, "backoffQ": 0, "unschedulablePods": 0}
        self.queue_points = []      # (seq, time, (activeQ, backoffQ, unschedulablePods))
        self.cycle_starts = []      # seqs of CycleStart / CycleSkipped
        self.preemptions = []       # seqs of preemption events
        self.pops = []              # seqs of the QueueTransitions that Pop a pod
        self.placements = {}        # seq of a Pop -> seq of the event that ends the pod's flight
        self._open_pop = None       # (pod, seq of its Pop) while no placement is seen
        self.cue_matches = {i: None for i, c in enumerate(cues) if "when" in c}
        self.cues = cues
        self.log_rows = {}          # seq -> the event log's row for it, HTML included

    def extend(self) -> "TraceIndex":
        events, counts = self.events, self.counts
        pending = [self.cues[i]["when"] for i, seq in self.cue_matches.items() if seq is None]
        quiet = any(may_match_batched(w) for w in pending)
        # only the types read here are expanded (a cue without a type may match any event)
        types = None if any("type" not in w for w in pending) else _INDEXED_TYPES.union(w["type"] for w in pending)
        for e in forward(events, self.upto, quiet=quiet, types=types):
            t = e["type"]
            if t == "QueueTransition":
                if e.get("from") in counts:
                    counts[e["from"]] -= 1
                if e.get("to") in counts:
                    counts[e["to"]] += 1
                self.queue_points.append((e["seq"], e["time"], (counts["activeQ"], counts["backoffQ"],
                                                               counts["unschedulablePods"])))
                if e.get("event") == "Pop":
                    self.pops.append(e["seq"])
                    self._open_pop = (e["pod"], e["seq"])
                elif e.get("from") is None:
                    self._placed(e)
            elif t in ("CycleSkipped", "PodDeleted") or (t == "CycleEnd" and e.get("result") == "Scheduled"):
                self._placed(e)
            if t in ("CycleStart", "CycleSkipped"):
                self.cycle_starts.append(e["seq"])
            elif t in PREEMPTION_TYPES:
                self.preemptions.append(e["seq"])
            for i, seq in self.cue_matches.items():
                if seq is None and all(e.get(k) == v for k, v in self.cues[i]["when"].items()):
                    self.cue_matches[i] = e["seq"]
        self.upto = len(events)
        return self

    def _placed(self, e) -> None:
        """The popped pod leaves its flight: requeued, dropped, skipped, assumed or deleted."""
        if self._open_pop is not None and self._open_pop[0] == e.get("pod"):
            self.placements[self._open_pop[1]] = e["seq"]
            self._open_pop = None

    def last_pop(self, position):
        return self._last_before(self.pops, position)

    @staticmethod
    def _last_before(seqs, position):
        i = bisect.bisect_left(seqs, position)
        return seqs[i - 1] if i else None

    def last_cycle_start(self, position):
        """The seq of the latest CycleStart/CycleSkipped among the first ``position`` events."""
        return self._last_before(self.cycle_starts, position)

    def last_preemption(self, position):
        return self._last_before(self.preemptions, position)

    def queue_series(self, position):
        return self.queue_points[:bisect.bisect_left(self.queue_points, (position,))]


def unit_state(stepper) -> dict:
    """``stepper.state()``, the engine's state after its last unit of work (SPEC.md §3), built
    once per unit: steps inside a unit (by event or point) show the same engine, and at 10,000
    pods building it is most of such a step's frame. Kept on the stepper (a rebuilt run is
    another stepper) and keyed by what every change of the engine moves: the events emitted,
    the clock and the injections applied. Nothing reading it changes it (``moment`` copies
    what it adjusts); the two position fields are the stepper's own, as ``Stepper.state``
    gives them."""
    key = (len(stepper.events), stepper.engine.now, stepper.injected)
    cached = getattr(stepper, "_unit_state", None)
    if cached is None or cached[0] != key:
        cached = stepper._unit_state = (key, stepper.engine.state())
    return {**cached[1], "revealed": stepper.position, "atUnitBoundary": stepper.at_unit_boundary}


def trace_index(live) -> TraceIndex:
    """The live session's index over its timeline (kept on the LiveSession, rebuilt when the
    timeline is another list: after a rebuild or a branch)."""
    index = getattr(live, "_trace_index", None)
    if index is None or index.events is not live.timeline:
        index = TraceIndex(live.timeline, live.scenario.cues)
        live._trace_index = index
    return index.extend()


# ---------------------------------------------------------------------- a viewer's own view

VIEW_TEXT_MAX = 200


def normalize_view(raw) -> dict:
    """A page's own view of the session (visualizer.consumers keeps one per socket), from the
    fields its forms sent: the page of each queue column, of the pods of another scheduler
    (``page-notOurs``) and of the Filter matrix, the matrix's outcome filter, the nodes panel's
    mode (``nodes``: ``cards`` or ``overview``), the node overview's search, label filter,
    colour resource and selected node. Anything else, or out of range, falls back to the default: the page shows the same
    moment to everyone, only the window onto it differs."""
    raw = raw if isinstance(raw, dict) else {}
    view = {}

    def text(key):
        value = raw.get(key)
        if isinstance(value, list):
            value = value[0] if value else ""
        return str(value or "").strip()[:VIEW_TEXT_MAX]

    def page(key):
        try:
            return max(0, min(10 ** 6, int(text(key) or 0)))
        except ValueError:
            return 0
    for name, _label, _order in QUEUES:
        if page(f"page-{name}"):
            view[f"page-{name}"] = page(f"page-{name}")
    for key in ("page-matrix", "page-notOurs"):
        if page(key):
            view[key] = page(key)
    if text("outcome") in OUTCOMES[1:]:
        view["outcome"] = text("outcome")
    if text("colour") in HEAT_RESOURCES[1:]:
        view["colour"] = text("colour")
    if text("nodes") in ("cards", "overview"):
        view["nodes"] = text("nodes")
    for key in ("find", "label", "node"):
        if text(key):
            view[key] = text(key)
    return view


def _pager(total: int, size: int, page: int) -> dict:
    pages = max(1, -(-total // size))
    page = min(page, pages - 1)
    return {"page": page, "pages": pages, "first": page * size + 1 if total else 0,
            "last": min(total, (page + 1) * size), "prev": page - 1 if page else None,
            "next": page + 1 if page + 1 < pages else None, "start": page * size, "size": size}


# ---------------------------------------------------------------------- a plugin call

def _result(e) -> dict:
    """A plugin call's result (a PluginResult, or a PluginError, whose code is Error)."""
    code = e.get("code") or "Error"
    ok = code in (SUCCESS, "Skip")
    out = {"plugin": e["plugin"], "code": code, "ok": ok, "skip": code == "Skip",
           "reasons": e.get("reasons") or [], "node": e.get("node"), "score": e.get("score"),
           "point": e.get("point"), "dry_run": bool(e.get("dryRun"))}
    err = e.get("error")
    if isinstance(err, dict):
        frames = [str(f) for f in (err.get("frames") or [])]
        out["error"] = {"type": str(err.get("type") or ""), "message": str(err.get("message") or ""),
                        "frames": frames, "traceback": traceback_frames(frames, err.get("lines")),
                        "key": f"{e.get('cycle')}-{e.get('point')}-{e.get('plugin')}-{e.get('node')}-{e.get('seq')}"}
    return out


MAX_SOURCE_LINE = 200


def traceback_frames(frames, lines=None) -> list:
    """A plugin error's frames as Python prints a traceback: ``{"frame", "file", "line",
    "function", "source"}`` from ``"file:line in function"`` and the parallel ``lines`` of the
    trace (each the frame's source line as it was when the error happened, or None; traces
    written before ``lines`` existed have none). A frame that does not parse keeps only
    ``frame``."""
    lines = lines if isinstance(lines, list) else []
    out = []
    for i, frame in enumerate(frames):
        src = lines[i] if i < len(lines) and isinstance(lines[i], str) else None
        if src is not None and len(src) > MAX_SOURCE_LINE:
            src = src[:MAX_SOURCE_LINE] + "…"
        where, sep, function = frame.rpartition(" in ")
        file, colon, lineno = where.rpartition(":") if sep else ("", "", "")
        if sep and colon and lineno.isdigit():
            out.append({"frame": frame, "file": file, "line": int(lineno), "function": function, "source": src})
        else:
            out.append({"frame": frame, "file": None, "line": None, "function": None, "source": src})
    return out
