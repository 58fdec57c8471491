"""Engine state and revealed trace events, turned into plain template context.

Templates never see engine objects: every function here returns dicts, lists, strings and
numbers. ``render_panels`` renders the session page's panels, each one root element with a
stable ``id``, so the same HTML serves the first page load and every WebSocket push (the htmx
ws extension swaps each top-level element of a frame by its id).

Every panel shows one moment, the engine as it was when it emitted the last revealed event
(``visualizer.moment``): when a step reveals only part of a unit of work (stepping by event
through a Pop, say), the queues, the pod in flight, the nodes, the nominations and the metrics
all stop at the revealed event.
"""
from __future__ import annotations

import bisect
import hashlib
import math
from html import escape as html_escape

from django.template.loader import render_to_string
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe

from engine import US
from visualizer import markdown, moment
from visualizer.formatting import seconds  # noqa: F401 - used here, and by the templates through presenters
from visualizer.events import QUEUE_TRANSITION, backward, forward, may_match_batched

PANELS = ("header", "timeline", "queues", "cycle", "nodes", "preemption", "log", "metrics",
          "narrative", "targets", "changes")
QUEUES = (("activeQ", "activeQ", "pop order: priority, then queue time"),
          ("backoffQ", "podBackoffQ", "backoff expiry order"),
          ("unschedulablePods", "unschedulablePods", "waiting for a cluster event"))
EXTENSION_POINTS = ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "NormalizeScore",
                    "Reserve", "Permit", "PreBind", "Bind", "PostBind")
PREEMPTION_TYPES = {"PreemptionIneligible", "PreemptionNodeResult", "ReprieveStart", "ReprieveFits",
                    "ReprieveStep", "PreemptionCandidate", "PreemptionDryRunStop", "PreemptionPick"}
LOG_LIMIT = 250
QUEUE_PAGE = 10           # pods listed per page of a queue column (the count shows them all)
MATRIX_ROWS = 40          # nodes shown in the Score table and in a pod history's Filter matrix
MATRIX_PAGE = 50          # rows per page of the current cycle's Filter matrix
CHART_POINTS = 300
NODE_CARD_LIMIT = 60      # up to this many nodes: one card per node; above: the node overview
MATCH_LIMIT = 20          # nodes listed by a search of the node overview
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


def _resource_order(names):
    first = ["cpu", "memory", "ephemeral-storage", "pods"]
    return [n for n in first if n in names] + sorted(n for n in names if n not in first)


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
    fields its forms sent: the page of each queue column and of the Filter matrix, the matrix's
    outcome filter, the node overview's search, label filter, colour resource and selected
    node. Anything else, or out of range, falls back to the default: the page shows the same
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
    if page("page-matrix"):
        view["page-matrix"] = page("page-matrix")
    if text("outcome") in OUTCOMES[1:]:
        view["outcome"] = text("outcome")
    if text("colour") in HEAT_RESOURCES[1:]:
        view["colour"] = text("colour")
    for key in ("find", "label", "node"):
        if text(key):
            view[key] = text(key)
    return view


def _label_matcher(expr: str):
    """``key=value``, ``key!=value`` or ``key`` (has the label), as kubectl's -l writes them;
    several separated by commas must all hold. None for no filter."""
    if not expr:
        return None
    terms = []
    for term in expr.split(","):
        term = term.strip()
        if not term:
            continue
        if "!=" in term:
            k, _, v = term.partition("!=")
            terms.append((k.strip(), v.strip(), False))
        elif "=" in term:
            k, _, v = term.partition("=")
            terms.append((k.strip(), v.strip().lstrip("="), True))
        else:
            terms.append((term, None, True))

    def match(labels: dict) -> bool:
        for k, v, equal in terms:
            if v is None:
                if k not in labels:
                    return False
            elif (labels.get(k) == v) != equal:
                return False
        return True
    return match


def _pager(total: int, size: int, page: int) -> dict:
    pages = max(1, -(-total // size))
    page = min(page, pages - 1)
    return {"page": page, "pages": pages, "first": page * size + 1 if total else 0,
            "last": min(total, (page + 1) * size), "prev": page - 1 if page else None,
            "next": page + 1 if page + 1 < pages else None, "start": page * size, "size": size}


# ---------------------------------------------------------------------- header and timeline

def header(live, mom) -> dict:
    st = live.stepper
    gates = live.scenario.simulation.feature_gates
    return {
        "title": live.title,
        "scenario_name": live.scenario.name,
        "clock": seconds(mom["time"]),
        "scheduling_cycle": mom["schedulingCycle"],
        "move_request_cycle": mom["moveRequestCycle"],
        "feature_gates": [{"name": k, "on": bool(v)} for k, v in sorted(gates.items())],
        "position": st.position,
        "high_water": live.high_water,
        "at_head": live.at_head,
        "finished": live.finished,
        "partial_unit": not st.at_unit_boundary,
        "unrevealed": len(st.events) - st.position,
        "playing": live.playing,
        "version": live.version,
    }


def timeline(live) -> dict:
    return {
        "position": live.position,
        "high_water": live.high_water,
        "injections": [{"position": i.position, "time": seconds(i.time_us / US), "verb": i.verb,
                        "kind": (i.body or {}).get("kind", "")} for i in live.injections],
    }


# ---------------------------------------------------------------------- queues

_LANDING = frozenset(("CycleEnd", "Bound", "PodDeleted", "BindFailed"))


def _last_transition_messages(keys, events, position, limit=50000) -> dict:
    """The message of each pod's latest revealed QueueTransition: why it is where it is."""
    out = {}
    if not keys:
        return out
    for e in backward(events, position, position - limit, quiet=False, types=QUEUE_TRANSITION):
        if e["pod"] in keys and e["pod"] not in out:
            out[e["pod"]] = e.get("message", "")
            if len(out) == len(keys):
                break
    return out


def queues(live, mom, view=None) -> dict:
    st = live.stepper
    engine = st.engine
    q = engine.queue
    now = int(round(mom["time"] * US))
    pods = mom["pods"]
    moved = {}
    start, end = live.last_change
    if end > start:
        for e in forward(st.events, start, end, quiet=False, types=QUEUE_TRANSITION):
            moved[e["pod"]] = e.get("from")
    view = view or {}
    columns = []
    shown = mom["queues"]
    flight = mom["in_flight"]
    pagers = {name: _pager(len(shown[name]), QUEUE_PAGE, view.get(f"page-{name}", 0)) for name, _l, _o in QUEUES}
    windows = {name: shown[name][pagers[name]["start"]:pagers[name]["last"]] for name, _l, _o in QUEUES}
    why = _last_transition_messages({k for keys in windows.values() for k in keys}
                                    | ({flight["key"]} if flight else set()), st.events, st.position)
    for name, label, order in QUEUES:
        items = []
        for key in windows[name]:
            info = pods.get(key, {})
            pinfo = q.get(key)
            item = {"key": key, "priority": info.get("priority", 0), "attempts": info.get("attempts", 0),
                    "just_moved": key in moved, "moved_from": moved.get(key), "why": why.get(key, "")}
            if pinfo is not None:
                item["queue_time"] = seconds(pinfo.timestamp / US)
                if name == "backoffQ":
                    expiry = q.get_backoff_time(pinfo)
                    item["backoff_expiry"] = seconds(expiry / US)
                    item["backoff_remaining"] = seconds(max(0, expiry - now) / US)
                if name == "unschedulablePods":
                    item["parked_for"] = seconds(max(0, now - pinfo.timestamp) / US)
            if name == "unschedulablePods":
                item["plugins"] = info.get("unschedulablePlugins", [])
                item["gated"] = info.get("gated", False)
            items.append(item)
        columns.append({"name": name, "label": label, "order": order, "pods": items, "total": len(shown[name]),
                        "pager": pagers[name], "hidden": len(shown[name]) - len(items)})
    in_flight = []
    if flight is not None:
        info = pods.get(flight["key"], {})
        in_flight.append({"key": flight["key"], "cycle": flight["cycle"], "stage": flight["stage"],
                          "ended": flight["ended"], "priority": info.get("priority", 0),
                          "attempts": info.get("attempts", 0), "why": why.get(flight["key"], ""),
                          "just_moved": flight["key"] in moved})
    waiting = [{"key": w["key"], "from": w["from"], "priority": pods[w["key"]].get("priority", 0)}
               for w in mom["waiting"][:QUEUE_PAGE]]
    return {"columns": columns, "in_flight": in_flight, "waiting": waiting,
            "waiting_total": len(mom["waiting"]), "waiting_hidden": len(mom["waiting"]) - len(waiting),
            "pending": mom["metrics"]["pending_pods"], "permit": permit_waiting(mom, pods, moved)}


def permit_waiting(mom, pods, moved=()) -> list | None:
    """Pods waiting on Permit (the fourth group beside the queues), or None for a scenario
    without Permit plugins: each with its node, its pending plugins and the time left on each
    plugin's timer, and the signal if one was given."""
    waiting = mom.get("waitingPods")
    if waiting is None:
        return None
    now = mom["time"]
    out = []
    for key, w in waiting.items():
        plugins = [{"name": name, "deadline": seconds(deadline), "remaining": seconds(max(0.0, deadline - now))}
                   for name, deadline in w["plugins"].items()]
        first = min(w["plugins"].values()) if w["plugins"] else None
        out.append({"key": key, "node": w["node"], "since": seconds(w["since"]), "plugins": plugins,
                    "result": w["result"], "priority": pods.get(key, {}).get("priority", 0),
                    "remaining": seconds(max(0.0, first - now)) if first is not None else None,
                    "just_moved": key in moved})
    return out


# ---------------------------------------------------------------------- nodes

def nodes(live, mom, view=None) -> dict:
    """The cluster panel. Up to NODE_CARD_LIMIT nodes: one card per node (requested vs
    allocatable, bound, binding, terminating and nominated pods). Above: the node overview,
    one small cell per node coloured by requested/allocatable of the chosen resource, with the
    search by name, the label filter and the card of the selected node. The search and the
    label filter narrow the cards of a small cluster too."""
    view = view or {}
    engine = live.stepper.engine
    now = int(round(mom["time"] * US))
    pods_state = mom["pods"]
    nominated = mom["nominatedPods"]
    hide, restore, phases = mom["hide_on_nodes"], mom["restore_on_nodes"], mom["phase_on_nodes"]
    landed = {}   # pods that just arrived on (or changed on) a node: the event that did it
    start, end = live.last_change
    if end > start:
        for e in forward(live.stepper.events, start, min(end, live.position), quiet=False, types=_LANDING):
            if e.get("pod"):
                landed[e["pod"]] = summary(e)
    restore_by_node = {}
    for info in restore.values():
        restore_by_node.setdefault(info["node"], []).append(info)
    # The node tree's order, read without engine.cache.node_info_list(): that method caches
    # the list the engine's snapshot is rebuilt from, so calling it from outside can change a run.
    cache = engine.cache
    infos = [cache.nodes[name] for name in cache.node_tree.list()
             if cache.nodes[name].node is not None and name not in mom["hide_nodes"]]
    find = view.get("find", "")
    label = _label_matcher(view.get("label", ""))
    filtering = bool(find or label)

    def matches(ni) -> bool:
        return (not find or find in ni.node.name) and (label is None or label(ni.node.labels))

    def card(ni) -> dict:
        node = ni.node
        nominated_pods = []
        reserved = {}
        for key in nominated.get(node.name, []):
            pod = engine.pods.get(key)
            requests = pod.requests if pod is not None else {}
            for r, v in requests.items():
                reserved[r] = reserved.get(r, 0) + v
            nominated_pods.append({"key": key, "priority": pod.priority if pod else 0,
                                   "requests": _requests(requests)})
        # the node's pods at this moment: the cache's, less those not assumed yet, plus those
        # an unrevealed deletion removed
        shown = [(p.key, p.priority, p.requests) for p in ni.pods if p.key not in hide]
        shown += [(i["key"], i["priority"], i["requests"]) for i in restore_by_node.get(node.name, [])]
        requested = _requested(ni, hide, restore_by_node)
        resources = []
        allocatable = node.allocatable
        for r in _resource_order(set(allocatable) | set(requested)):
            total = allocatable.get(r, 0)
            used = len(shown) if r == "pods" else requested.get(r, 0)
            extra = len(nominated_pods) if r == "pods" else reserved.get(r, 0)
            if not total and not used and not extra:
                continue   # a resource the node does not have and nobody asks for
            resources.append({
                "name": r, "allocatable": quantity(r, total), "requested": quantity(r, used),
                "reserved": quantity(r, extra) if extra else "",
                "percent": min(100, round(100 * used / total)) if total else (100 if used else 0),
                "reserved_percent": min(100, round(100 * extra / total)) if total and extra else 0,
                "over": used > total,
            })
        bound = []
        for key, priority, requests in shown:
            info = pods_state.get(key, {})
            phase = phases.get(key) or (restore[key]["phase"] if key in restore else info.get("phase", "Running"))
            item = {"key": key, "priority": priority, "phase": phase, "requests": _requests(requests),
                    "just_moved": key in landed, "why": landed.get(key, "")}
            end = engine.terminating.get(key)
            if phase == "Terminating" and end is not None:
                item["grace_remaining"] = seconds(max(0, end - now) / US)
            wait = (mom.get("waitingPods") or {}).get(key)
            if phase == "Waiting" and wait is not None:
                if wait["plugins"]:
                    first = min(wait["plugins"].items(), key=lambda kv: kv[1])
                    item["permit_remaining"] = seconds(max(0.0, first[1] - mom["time"]))
                    item["permit_plugin"] = first[0]
                item["permit_result"] = wait["result"]
            bound.append(item)
        return {
            "name": node.name, "labels": sorted(node.labels.items()),
            "taints": [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in node.taints],
            "unschedulable": node.unschedulable, "resources": resources, "pods": bound,
            "nominated": nominated_pods,
        }

    out = {"total": len(infos), "not_started": live.position == 0 and not infos, "find": find,
           "label": view.get("label", ""), "filtering": filtering, "colour": view.get("colour", "cpu"),
           "resources": HEAT_RESOURCES, "overview": len(infos) > NODE_CARD_LIMIT, "custom": custom_objects(mom)}
    if not out["overview"]:
        picked = [ni for ni in infos if matches(ni)] if filtering else infos
        out.update(cards=[card(ni) for ni in picked], matched=len(picked), hidden=0)
        return out
    out.update(_overview(infos, out["colour"], matches if filtering else None, view.get("node"),
                         nominated, hide, restore_by_node))
    selected = cache.nodes.get(view.get("node", "")) if view.get("node") else None
    if selected is not None and selected.node is not None and selected.node.name not in mom["hide_nodes"]:
        out["selected"] = card(selected)
    elif view.get("node"):
        out["selected_missing"] = view["node"]
    out["cards"] = []
    out["hidden"] = 0
    return out


CUSTOM_FIELDS = 4   # spec fields shown per custom resource


def custom_objects(mom) -> list | None:
    """The custom resources at this moment (kind, namespace/name, a few scalar spec and status
    fields), or None for a scenario without any."""
    objs = mom.get("customObjects")
    if objs is None:
        return None
    out = []
    for type_key, by_key in objs.items():
        api, _, kind = type_key.rpartition("/")
        for key, m in by_key.items():
            fields = []
            for part in ("spec", "status"):
                body = m.get(part)
                if isinstance(body, dict):
                    for k, v in body.items():
                        if isinstance(v, (str, int, float, bool)) and len(fields) < CUSTOM_FIELDS:
                            fields.append(f"{k}: {v}" if part == "spec" else f"status.{k}: {v}")
            out.append({"kind": kind, "api_version": api, "key": key, "fields": fields})
    return out


def _requested(ni, hide, restore_by_node) -> dict:
    """The node's requested resources at the moment shown (less the pods not assumed yet,
    plus those an unrevealed deletion removed)."""
    requested = dict(ni.requested)
    for p in ni.pods:
        if p.key in hide:
            for r, v in p.requests.items():
                requested[r] = requested.get(r, 0) - v
    for i in restore_by_node.get(ni.node.name, []):
        for r, v in i["requests"].items():
            requested[r] = requested.get(r, 0) + v
    return requested


def _overview(infos, colour, matches, selected, nominated, hide, restore_by_node) -> dict:
    """The node overview's cells as one HTML string (a template loop over 5,000 nodes costs
    more than the rest of the frame): ``<i data-n="name" class="hN">`` with N the tenth of
    ``colour`` requested/allocatable (0-10; 11 over allocatable), plus ``m`` for a node the
    search or the label filter matches, ``s`` for the selected node, ``c`` cordoned and ``n``
    with nominated pods. static/js/session.js turns a hover into a title and a click into a
    selection."""
    parts = []
    matched = []
    levels = [0] * 12
    for ni in infos:
        node = ni.node
        name = node.name
        total = node.allocatable.get(colour, 0)
        if colour == "pods":
            used = sum(1 for p in ni.pods if p.key not in hide) + len(restore_by_node.get(name, ()))
        elif hide or restore_by_node:
            used = _requested(ni, hide, restore_by_node).get(colour, 0)
        else:
            used = ni.requested.get(colour, 0)
        level = (11 if used > total else min(10, (10 * used) // total)) if total else (11 if used else 0)
        levels[level] += 1
        flags = f"h{level}"
        if matches is not None and matches(ni):
            flags += " m"
            if len(matched) < MATCH_LIMIT:
                matched.append(name)
            else:
                matched.append(None)
        if name == selected:
            flags += " s"
        if node.unschedulable:
            flags += " c"
        if nominated.get(name):
            flags += " n"
        parts.append(f'<i data-n="{html_escape(name)}" class="{flags}"></i>')
    listed = [n for n in matched if n is not None]
    return {"cells": mark_safe("".join(parts)), "matched": len(matched), "match_list": listed,
            "match_hidden": len(matched) - len(listed),
            "legend": [{"level": i, "label": f"{i * 10}–{i * 10 + 9}%" if i < 10 else ("100%" if i == 10 else "over"),
                        "count": levels[i]} for i in range(12) if levels[i]]}


def _requests(requests: dict) -> str:
    return ", ".join(f"{r} {quantity(r, v)}" for r, v in sorted(requests.items()) if v)


# ---------------------------------------------------------------------- the current cycle

def current_cycle(events: list, position: int, index: TraceIndex) -> dict | None:
    """The latest scheduling cycle that started within the first ``position`` events (the
    last one read is kept: a page with its own view re-renders the same position)."""
    i = index.last_cycle_start(position)
    if i is None:
        return None
    cached = getattr(index, "_cycle", None)
    if cached is not None and cached[0] == (i, position) and cached[1]["pod"] == events[i]["pod"]:
        return cached[1]
    ctx = cycle_at(events, i, position)
    index._cycle = ((i, position), ctx)
    return ctx


def cycle_at(events: list, i: int, position: int) -> dict:
    """The scheduling cycle whose CycleStart (or CycleSkipped) is ``events[i]``, as far as the
    first ``position`` events show it: its Filter matrix (each cell with its status code), its
    scores (raw, normalised, weighted), its outcome, and the errors of out-of-tree plugins."""
    start = events[i]
    cycle, pod = start.get("cycle"), start["pod"]
    ctx = {"pod": pod, "cycle": cycle, "attempts": start.get("attempts"), "priority": start.get("priority"),
           "time": seconds(start["time"]), "skipped": start["type"] == "CycleSkipped",
           "skip_reason": start.get("reason", ""), "points": [], "prefilter": [], "filter": None,
           "scores": None, "host": None, "end": None, "nominated": None, "stopped": None,
           "postfilter": [], "bind": [], "bound": None, "errors": []}
    if ctx["skipped"]:
        return ctx
    seen_points = []
    # dicts as ordered sets (a cycle at 5,000 nodes has thousands of rows: no list lookups)
    filter_nodes, filter_plugins, cells = {}, {}, {}
    score_nodes, score_plugins, raw_scores = {}, {}, {}
    for e in events[i + 1:position]:
        t = e["type"]
        if t == "PluginResult":
            if e.get("cycle") != cycle or e.get("pod") != pod:
                continue
            if e.get("error"):
                ctx["errors"].append(_result(e))
            if e.get("dryRun"):
                continue
            point = e["point"]
            if point not in seen_points:
                seen_points.append(point)
            if point == "PreFilter":
                ctx["prefilter"].append(_result(e))
            elif point == "Filter":
                node, plugin = e["node"], e["plugin"]
                filter_nodes[node] = None
                filter_plugins[plugin] = None
                cells[(node, plugin)] = e   # made a cell (_result) only for the rows shown
            elif point in ("Score", "NormalizeScore") and e.get("node") is None:
                pass     # a failed call for no node in particular: listed with the cycle's errors
            elif point in ("Score", "NormalizeScore"):
                node, plugin = e["node"], e["plugin"]
                score_nodes[node] = None
                score_plugins[plugin] = None
                raw_scores.setdefault((node, plugin), {})[point] = e
            elif point == "PostFilter":
                ctx["postfilter"].append(_result(e))
            elif point in ("Reserve", "Permit", "PreBind", "Bind", "PostBind", "PreScore"):
                ctx["bind"].append(_result(e))
        elif t == "PluginError" and e.get("cycle") == cycle and e.get("pod") == pod:
            ctx["errors"].append(_result(e))
        elif t == "NominatedNodeEvaluated" and e.get("cycle") == cycle:
            ctx["nominated"] = {"node": e["node"], "fits": e["fits"], "message": e.get("message", "")}
        elif t == "FilterStopped" and e.get("cycle") == cycle:
            ctx["stopped"] = e.get("message", "")
        elif t == "HostSelected" and e.get("cycle") == cycle:
            ctx["host"] = {"node": e["node"], "ties": e.get("ties") or [], "reason": e.get("reason", ""),
                           "tie": len(e.get("ties") or []) > 1}
            if e.get("detail"):
                plugins = list(next(iter(e["detail"].values())).keys())
                ranked = sorted(e["scores"].items(), key=lambda kv: -kv[1])
                ctx["scores"] = {"plugins": plugins, "final": True, "rows": [
                    {"node": n, "total": total, "selected": n == e["node"], "tied": n in (e.get("ties") or []),
                     "cells": [dict(_final_score_cell(e["detail"][n].get(p)), plugin=p) for p in plugins]}
                    for n, total in ranked]}
        elif t == "CycleEnd" and e.get("cycle") == cycle:
            ctx["end"] = {"result": e["result"], "node": e.get("node"), "message": e.get("message", ""),
                          "nominated_node": e.get("nominatedNode"),
                          "plugins": e.get("unschedulablePlugins") or []}
        elif t == "Bound" and e.get("pod") == pod:
            ctx["bound"] = {"node": e["node"], "time": seconds(e["time"])}
        elif t == "BindFailed" and e.get("pod") == pod:
            ctx["bound"] = {"failed": True, "node": e["node"], "reasons": e.get("reasons", [])}
        elif t in ("CycleStart", "CycleSkipped"):
            break
    filter_nodes, filter_plugins = list(filter_nodes), list(filter_plugins)
    score_nodes, score_plugins = list(score_nodes), list(score_plugins)
    if filter_nodes:
        rows = []
        for n in filter_nodes:
            calls = [cells.get((n, p)) for p in filter_plugins]
            rows.append({"node": n, "calls": calls,
                         "passed": any(calls) and all(c is None or (c.get("code") or "Error") in (SUCCESS, "Skip")
                                                      for c in calls)})
        for row in rows[:MATRIX_ROWS]:
            _fill_cells(row)
        ctx["filter"] = {"plugins": filter_plugins, "rows": rows[:MATRIX_ROWS], "all_rows": rows,
                         "hidden": max(0, len(rows) - MATRIX_ROWS), "evaluated": len(rows),
                         "feasible": sum(1 for r in rows if r["passed"])}
    if ctx["scores"] is None and score_nodes:
        ctx["scores"] = {"plugins": score_plugins, "final": False, "rows": [
            {"node": n, "total": None, "selected": False, "tied": False,
             "cells": [dict(_score_cell(raw_scores.get((n, p), {})), plugin=p) for p in score_plugins]}
            for n in score_nodes]}
    if ctx["scores"]:
        rows = ctx["scores"]["rows"]
        ctx["scores"]["hidden"] = max(0, len(rows) - MATRIX_ROWS)
        ctx["scores"]["rows"] = rows[:MATRIX_ROWS]
    ctx["points"] = [{"name": p, "done": p in seen_points} for p in EXTENSION_POINTS]
    return ctx


def _fill_cells(row: dict) -> None:
    """A Filter-matrix row's cells (_result of each call, None where the plugin did not run)."""
    if "cells" not in row:
        row["cells"] = [_result(c) if c is not None else None for c in row["calls"]]


def filter_window(cycle: dict | None, view=None) -> None:
    """The current cycle's Filter matrix shows every evaluated node: a page of MATRIX_PAGE rows
    in evaluation order, of all rows or only the feasible or only the filtered-out ones (the
    page's own view), with the counts of each."""
    if not cycle or not cycle.get("filter"):
        return
    view = view or {}
    f = cycle["filter"]
    rows = f["all_rows"]
    outcome = view.get("outcome", "all")
    if outcome == "feasible":
        rows = [r for r in rows if r["passed"]]
    elif outcome == "filtered":
        rows = [r for r in rows if not r["passed"]]
    pager = _pager(len(rows), MATRIX_PAGE, view.get("page-matrix", 0))
    window = rows[pager["start"]:pager["last"]]
    for row in window:
        _fill_cells(row)
        if "html" not in row and not any(c is not None and c.get("error") for c in row["cells"]):
            row["html"] = _matrix_row_html(row)
    f.update(rows=window, pager=pager, outcome=outcome, matched=len(rows),
             filtered_out=f["evaluated"] - f["feasible"], hidden=0, paged=True,
             outcomes=[{"name": o, "label": label, "count": count, "pressed": o == outcome}
                       for o, label, count in (("all", "all", f["evaluated"]), ("feasible", "✓ feasible", f["feasible"]),
                                               ("filtered", "✗ filtered out", f["evaluated"] - f["feasible"]))])


def _matrix_row_html(row: dict) -> str:
    """One row of the Filter matrix, as _filter_matrix.html writes it (a row with a plugin's
    error stays with the template, which includes the error's popover). Built here: a page of
    50 rows × 10 plugins through the template language costs more than the rest of the panel."""
    from visualizer.templatetags.visualizer_extras import camelbreak
    cells = []
    for cell in row["cells"]:
        if cell is None:
            cells.append('<td class="cell--none"><span title="not run (an earlier filter rejected the node)">·</span></td>')
            continue
        code = cell["code"]
        mark = "✓" if code == "Success" else ("↷" if code == "Skip" else "✗")
        reasons = (format_html('<span class="reasons">{}</span>', "; ".join(cell["reasons"]))
                   if cell.get("reasons") else "")
        cells.append(format_html('<td class="cell--{} {}" data-plugin="{}" data-code="{}"><span class="code">{} {}</span>{}</td>',
                                 code.lower(), "cell--pass" if cell["ok"] else "cell--fail", cell["plugin"], code,
                                 mark, camelbreak(code), reasons))
    passed = row["passed"]
    return format_html(
        '<tr data-filter-node="{}" class="{}"><th scope="row" class="node-cell">{} {}</th>{}</tr>',
        row["node"], "row--pass" if passed else "row--fail",
        mark_safe('<span class="mark mark--ok" title="feasible">✓</span>' if passed else
                  '<span class="mark mark--fail" title="filtered out">✗</span>'),
        row["node"], mark_safe("".join(cells)))


def _score_cell(results: dict) -> dict:
    """A cell of the score table while scoring goes on: the Score call's result (its code, and
    its error if the call failed), then NormalizeScore's."""
    cell = {}
    code = None
    if "Score" in results:
        cell["score"] = results["Score"].get("score")
        code = results["Score"].get("code")
        if results["Score"].get("error"):
            cell["error"] = _result(results["Score"])
    if "NormalizeScore" in results:
        cell["normalized"] = results["NormalizeScore"].get("score")
        cell["weighted"] = results["NormalizeScore"].get("weightedScore")
        if results["NormalizeScore"].get("code") not in (None, SUCCESS):
            code = results["NormalizeScore"]["code"]
        if results["NormalizeScore"].get("error"):
            cell["error"] = _result(results["NormalizeScore"])
    if code is not None:
        cell["code"] = code
    return cell


def _final_score_cell(detail) -> dict:
    """A cell of the final score table (HostSelected's detail): every call there succeeded."""
    if not detail:
        return {}
    return {"score": detail.get("score"), "normalized": detail.get("normalized"),
            "weighted": detail.get("weighted"), "code": SUCCESS}


def _result(e) -> dict:
    """A plugin call's result (a PluginResult, or a PluginError, whose code is Error)."""
    code = e.get("code") or "Error"
    ok = code in (SUCCESS, "Skip")
    out = {"plugin": e["plugin"], "code": code, "ok": ok, "skip": code == "Skip",
           "reasons": e.get("reasons") or [], "node": e.get("node"), "score": e.get("score"),
           "point": e.get("point"), "dry_run": bool(e.get("dryRun"))}
    err = e.get("error")
    if isinstance(err, dict):
        out["error"] = {"type": str(err.get("type") or ""), "message": str(err.get("message") or ""),
                        "frames": [str(f) for f in (err.get("frames") or [])],
                        "key": f"{e.get('cycle')}-{e.get('point')}-{e.get('plugin')}-{e.get('node')}-{e.get('seq')}"}
    return out


# ---------------------------------------------------------------------- preemption

def preemption(events: list, position: int, index: TraceIndex, current_cycle_number=None) -> dict | None:
    """The latest preemption (DefaultPreemption's PostFilter) within the first ``position`` events."""
    i = index.last_preemption(position)
    if i is None:
        return None
    last = events[i]
    preemptor, cycle = last["preemptor"], last.get("cycle")
    ctx = {"preemptor": preemptor, "cycle": cycle, "is_current": cycle == current_cycle_number,
           "ineligible": None, "nodes": [], "stop": None, "pick": None, "result": None}
    start = index.last_cycle_start(i + 1) or 0   # the preemption ran inside that cycle
    by_node = {}

    def node_entry(name):
        if name not in by_node:
            by_node[name] = {"node": name, "removed": [], "fits": None, "steps": [], "candidate": None,
                             "result": None}
            ctx["nodes"].append(by_node[name])
        return by_node[name]

    for e in events[start:position]:
        if e["seq"] > start and e["type"] in ("CycleStart", "CycleSkipped"):
            break
        if e.get("cycle") != cycle or e.get("preemptor", e.get("pod")) != preemptor:
            continue
        t = e["type"]
        if t == "PreemptionIneligible":
            ctx["ineligible"] = e.get("reason", "")
        elif t == "PreemptionNodeResult":
            node_entry(e["node"])["result"] = {"code": e.get("code"), "reason": e.get("reason", "")}
        elif t == "ReprieveStart":
            node_entry(e["node"])["removed"] = e.get("removed", [])
            by_node[e["node"]]["start_message"] = e.get("message", "")
        elif t == "ReprieveFits":
            node_entry(e["node"])["fits"] = {"fits": e["fits"], "plugin": e.get("plugin"),
                                             "reasons": e.get("reasons") or []}
        elif t == "ReprieveStep":
            node_entry(e["node"])["steps"].append({
                "victim": e["victim"], "reprieved": e["reprieved"], "pdb": e.get("pdbViolating", False),
                "plugin": e.get("plugin"), "reasons": e.get("reasons") or [], "message": e.get("message", ""),
                "seq": e["seq"]})
        elif t == "PreemptionCandidate":
            node_entry(e["node"])["candidate"] = {"victims": e.get("victims", []),
                                                  "pdb_violations": e.get("pdbViolations", 0)}
        elif t == "PreemptionDryRunStop":
            ctx["stop"] = e.get("reason", "")
        elif t == "PreemptionPick":
            criteria = e.get("criteria", [])
            ctx["pick"] = {
                "node": e["node"], "criterion": e["criterion"], "criteria": [
                    {"name": c, "deciding": c == e["criterion"]} for c in criteria],
                "by_rule": e["criterion"] not in criteria,
                "rows": [{"node": c["node"], "chosen": c["node"] == e["node"],
                          "victims": c.get("victims", []), "pdb_violations": c.get("pdbViolations", 0),
                          "values": [{"value": c.get("values", {}).get(k), "deciding": k == e["criterion"]}
                                     for k in criteria]} for c in e.get("candidates", [])],
            }
        elif t == "PluginResult" and e.get("point") == "PostFilter":
            ctx["result"] = _result(e)
    return ctx


# ---------------------------------------------------------------------- the event log

def summary(e: dict) -> str:
    """The event's ``message``, or a sentence made from its fields."""
    t = e["type"]
    if t == "PermitReject":
        by = f"{e['plugin']} rejects" if e.get("plugin") else "rejected:"
        return f"{by} waiting {e['pod']} on {e['node']}: {e.get('message', '')}"
    if t == "PermitTimeout":
        return f"{e['pod']} on {e['node']}: {e.get('message', '')}"
    if e.get("message"):
        return e["message"]
    if t == "PluginResult":
        where = f" on {e['node']}" if e.get("node") else ""
        text = f"{e['point']} {e['plugin']}{where}: {e['code']}"
        if e.get("reasons"):
            text += " (" + "; ".join(e["reasons"]) + ")"
        if e.get("score") is not None:
            text += f", score {e['score']}"
            if e.get("weightedScore") is not None:
                text += f" × weight {e.get('weight')} = {e['weightedScore']}"
        return text + (" [dry run]" if e.get("dryRun") else "")
    if t == "PluginError":
        err = e.get("error") or {}
        where = f" on {e['node']}" if e.get("node") else ""
        frames = err.get("frames") or []
        at = f" at {frames[-1].split(' in ')[0]}" if frames else ""
        return f"{e.get('point')} {e.get('plugin')}{where} failed: {err.get('type')}: {err.get('message')}{at}"
    if t == "Action":
        return f"{e['action']} {e['kind']} {e['name']} ({e.get('place', '')})"
    if t == "ActionSkipped":
        return f"{e['action']} {e['kind']} {e['name']} skipped: {e.get('reason', '')}"
    if t == "CycleStart":
        nominated = f", nominated to {e['nominatedNode']}" if e.get("nominatedNode") else ""
        return f"cycle {e['cycle']} starts for {e['pod']} (attempt {e.get('attempts')}, priority {e.get('priority')}{nominated})"
    if t == "CycleEnd":
        return f"cycle {e['cycle']} ends: {e['result']}" + (f" on {e['node']}" if e.get("node") else "")
    if t == "HostSelected":
        return f"{e['node']} selected: {e.get('reason', '')}"
    if t == "Nomination":
        return f"{e['pod']} nominated to {e['node']}" if e.get("node") else f"{e['pod']}: nomination cleared"
    if t == "Bound":
        return f"{e['pod']} bound to {e['node']}"
    if t == "PermitWait":
        return f"{e['pod']} waits on Permit ({e['plugin']}, up to {seconds(e['timeout'])} s) on {e['node']}"
    if t == "PermitAllow":
        return f"{e['plugin']} allows waiting {e['pod']} on {e['node']}"
    if t == "BindFailed":
        return f"binding {e['pod']} to {e['node']} failed: " + "; ".join(e.get("reasons") or [])
    if t == "PodDeleted":
        by = f" by {e['preemptor']}" if e.get("preemptor") else ""
        return f"{e['pod']} deleted ({e.get('reason')}{by}), grace period {e.get('gracePeriodSeconds', 0)}s"
    if t == "ReprieveFits":
        if e.get("fits"):
            return f"{e['preemptor']} fits on {e['node']} without the lower-priority pods"
        return f"{e['preemptor']} does not fit on {e['node']} even without them: {e.get('plugin')} " + \
            "; ".join(e.get("reasons") or [])
    if t == "PreemptionCandidate":
        return f"candidate {e['node']}: victims {', '.join(e.get('victims', []))} " \
               f"({e.get('pdbViolations', 0)} PDB violation(s))"
    if t == "PreemptionPick":
        return f"preemption picks {e['node']} (decided by {e['criterion']})"
    for key in ("reason",):
        if e.get(key):
            return str(e[key])
    return ""


def _subjects(e) -> tuple[set, set]:
    pods, nodes = set(), set()
    for key in ("pod", "preemptor", "victim"):
        if e.get(key):
            pods.add(e[key])
    for key in ("victims", "removed"):
        pods.update(e.get(key) or [])
    if e.get("node"):
        nodes.add(e["node"])
    if e["type"] in ("Action", "ActionSkipped"):
        (pods if e.get("kind") == "Pod" else nodes if e.get("kind") == "Node" else set()).add(e.get("name"))
    return pods, nodes


def _log_row_html(row: dict) -> str:
    """One row of the event log (rendered once per event and kept: a frame joins the rows)."""
    failed = row["failed"]
    pod = row["pods"][0] if row["pods"] else None
    # a click on the message opens the pod's history (static/js/pod-history.js)
    history = (format_html(' data-history-pod="{}" title="Click: the history of {}"', pod, pod) if pod else "")
    return format_html(
        '<li class="log-row{}" data-event-seq="{}" data-event-type="{}"><button type="button" class="log-jump" '
        'data-control data-jump="{}">#{} · {} s</button><span class="log-type">{}{}</span>'
        '<span class="log-message"{}>{}</span></li>',
        " log-row--failed" if failed else "", row["seq"], row["type"], row["position"], row["seq"], row["time"],
        "✗ " if failed else "", row["type"], history, row["message"])


def log(events: list, position: int, log_filter=None, row_cache=None) -> dict:
    f = {k: (v or "").strip() for k, v in (log_filter or {}).items() if k in ("pod", "node", "type")}
    if any(f.values()):
        rows = []
        for e in events[:position]:
            pods, nodes = _subjects(e)
            if f.get("pod") and f["pod"] not in pods:
                continue
            if f.get("node") and f["node"] not in nodes:
                continue
            if f.get("type") and e["type"] != f["type"]:
                continue
            rows.append(e)
        matched = len(rows)
    else:
        rows = events[max(0, position - LOG_LIMIT):position]
        matched = position
    shown = rows[-LOG_LIMIT:]
    out = []
    cache = row_cache if row_cache is not None else {}
    for e in shown:
        row = cache.get(e["seq"])
        if row is None or row["event"] != e:
            pods, nodes = _subjects(e)
            row = {"seq": e["seq"], "position": e["seq"] + 1, "time": seconds(e["time"]), "type": e["type"],
                   "pods": sorted(pods), "nodes": sorted(nodes), "message": summary(e), "event": e,
                   "failed": e.get("code") not in (None, SUCCESS, "Skip")
                   or e.get("result") in ("Unschedulable", "Error")
                   or e["type"] in ("ActionSkipped", "BindFailed", "PluginError")}
            row["html"] = _log_row_html(row)
            cache[e["seq"]] = row
        out.append(row)
    return {"rows": out, "matched": matched, "total": position, "hidden": matched - len(shown),
            "filter": f, "filtered": any(f.values())}


# ---------------------------------------------------------------------- metrics

def metrics(mom, position: int, index: TraceIndex) -> dict:
    m = mom["metrics"]
    names = ("activeQ", "backoffQ", "unschedulablePods")
    series = [(0.0, dict.fromkeys(names, 0))]
    points = index.queue_series(position)
    if len(points) > CHART_POINTS:   # keep the page light on long runs
        step = len(points) / CHART_POINTS
        points = [points[int(i * step)] for i in range(CHART_POINTS)] + [points[-1]]
    series += [(t, dict(zip(names, c))) for _, t, c in points]
    now = mom["time"]
    # the chart ends on what the queue columns show now (a deleted pending pod leaves its
    # queue without a QueueTransition)
    shown = {name: len(mom["queues"][name]) for name in names}
    if series[-1][0] < now:
        series.append((now, shown))
    else:
        series[-1] = (series[-1][0], shown)
    if series[-1][0] > 0:
        # over virtual time, each instant shows where its pods ended up (a pod popped and
        # requeued at one instant is no spike); all at one instant, each change counts
        collapsed = []
        for t, c in series:
            if collapsed and collapsed[-1][0] == t:
                collapsed[-1] = (t, c)
            else:
                collapsed.append((t, c))
        series = collapsed if len(collapsed) > 1 else [(0.0, collapsed[0][1]), (now, collapsed[0][1])]
    return {"pending": m["pending_pods"], "incoming": sorted(m["queue_incoming_pods_total"].items()),
            "attempts": sorted(m["schedule_attempts_total"].items()),
            "preemption_attempts": m["preemption_attempts_total"],
            "preemption_victims": m["preemption_victims_total"],
            "unschedulable": sorted(m["unschedulable_pods"].items()),
            "chart": _chart(series)}


CHART_COLOURS = {"activeQ": "#326ce5", "backoffQ": "#bf8700", "unschedulablePods": "#cf222e"}


def _nice_step(span: float, ticks: int) -> float:
    """A round tick spacing (1, 2 or 5 times a power of ten) giving at most ``ticks`` ticks."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


def _chart(series, width=480, height=190):
    """Pending pods per queue over virtual time as an SVG line chart with axes: step lines,
    integer y ticks, x ticks in virtual seconds (or, when every change happened at one
    instant, numbered changes), and one hover band per change whose tooltip gives the values.
    Everything is laid out here, so the chart is plain SVG in every frame."""
    left, right, top, bottom = 40, 12, 10, 34
    pw, ph = width - left - right, height - top - bottom
    by_time = series[-1][0] > 0
    x_max = series[-1][0] if by_time else max(1, len(series) - 1)
    peak = max(1, max(max(c.values()) for _, c in series))
    y_step = max(1, int(math.ceil(_nice_step(peak, 4))))
    y_top = y_step * math.ceil(peak / y_step)

    def x_of(i, t):
        return round(left + pw * (t if by_time else i) / x_max, 1)

    def y_of(v):
        return round(top + ph - ph * v / y_top, 1)

    lines = []
    for name in ("activeQ", "backoffQ", "unschedulablePods"):
        pts, prev_y = [], None
        for i, (t, c) in enumerate(series):
            x, y = x_of(i, t), y_of(c[name])
            if prev_y is not None:
                pts.append(f"{x},{prev_y}")
            pts.append(f"{x},{y}")
            prev_y = y
        lines.append({"name": name, "label": name, "points": " ".join(pts), "last": series[-1][1][name],
                      "colour": CHART_COLOURS[name]})
    y_ticks = [{"y": y_of(v), "label": v} for v in range(0, y_top + 1, y_step)]
    x_step = _nice_step(x_max, 6) if by_time else max(1, math.ceil(_nice_step(x_max, 6)))
    x_ticks, v = [], 0.0
    while v <= x_max + 1e-9:
        x_ticks.append({"x": round(left + pw * v / x_max, 1),
                        "label": (seconds(v) + " s") if by_time else str(int(v))})
        v = round(v + x_step, 9)
    bands = []
    for i, (t, c) in enumerate(series):
        x0 = x_of(i, t)
        x1 = x_of(i + 1, series[i + 1][0]) if i + 1 < len(series) else left + pw
        if x1 - x0 < 3 and i + 1 < len(series):
            continue   # overtaken within 3 px (the same instant, say): the next band shows the result
        title = (f"t = {seconds(t)} s" if by_time else f"change {i}") + ": " + \
            ", ".join(f"{n} {c[n]}" for n in ("activeQ", "backoffQ", "unschedulablePods"))
        bands.append((x0, top, round(max(3.0, x1 - x0), 1), ph, title, title))
    bands_html = format_html_join("", '<rect x="{}" y="{}" width="{}" height="{}" data-values="{}"><title>{}</title></rect>',
                                  bands)
    return {"width": width, "height": height, "peak": peak, "t_max": seconds(series[-1][0]), "lines": lines,
            "by_time": by_time, "left": left, "top": top, "plot_width": pw, "plot_height": ph,
            "bottom_y": top + ph, "right_x": left + pw, "y_ticks": y_ticks, "x_ticks": x_ticks, "bands": bands_html,
            "x_label": "virtual time (s)" if by_time else f"queue changes, all at {seconds(series[-1][0])} s",
            "label_y": height - 4, "label_x": left + pw / 2}


# ---------------------------------------------------------------------- narrative and cues

def narrative(live, mom, events: list, position: int, index: TraceIndex) -> dict:
    cues = []
    now = mom["time"]
    for i, cue in enumerate(live.scenario.cues):
        at_pos = when_pos = None
        if "at" in cue and cue["at"] <= now:
            at_pos = bisect.bisect_left(events, cue["at"], hi=position, key=lambda e: e["time"])
        if "when" in cue:
            seq = index.cue_matches.get(i)
            when_pos = seq if seq is not None and seq < position else None
        if "at" in cue and "when" in cue:
            reached_at = max(at_pos, when_pos) if at_pos is not None and when_pos is not None else None
        else:
            reached_at = at_pos if "at" in cue else when_pos
        if reached_at is not None:
            cues.append({"index": i, "title": cue.get("title") or "", "text": markdown.render(cue["text"]),
                         "order": reached_at})
    cues.sort(key=lambda c: (c["order"], c["index"]))
    if cues:
        cues[-1]["latest"] = True
    description = live.scenario.description or ""
    return {"description": markdown.render(description) if description.strip() else "", "cues": cues,
            "latest": cues[-1] if cues else None, "earlier": cues[:-1][::-1],
            "cue_total": len(live.scenario.cues)}


def targets(live, mom) -> dict:
    """What the injection, log-filter and node-search fields offer: the names of the pods and
    nodes there are at this moment. The frame carries only their version (``data-targets``);
    the page asks for the names themselves (``targets_html``, at /s|w/<token>/targets/) when
    one of those fields is focused: 10,000 pods and 5,000 nodes are 546 KB of options, which a
    frame would carry whenever a pod comes or goes, to every page of the session."""
    engine = live.stepper.engine
    pods, nodes = sorted(mom["pods"]), sorted(engine.nodes)
    key = (len(pods), len(nodes), hash(tuple(pods)), hash(tuple(nodes)))
    cached = getattr(live, "_targets", None)
    if cached is None or cached[0] != key:
        digest = hashlib.blake2b(digest_size=8)
        for name in pods:
            digest.update(name.encode("utf-8", "surrogatepass") + b"\n")
        digest.update(b"\0")
        for name in nodes:
            digest.update(name.encode("utf-8", "surrogatepass") + b"\n")
        cached = live._targets = (key, digest.hexdigest(), pods, nodes)
    return {"version": cached[1]}


def targets_html(live, version=None) -> tuple:
    """(version, the two datalists' HTML) of the names ``targets`` gave last, or of the
    session as it is now if that was another version."""
    cached = getattr(live, "_targets", None)
    if cached is None or cached[1] != version:
        st = live.stepper
        targets(live, moment.moment(st, st.state(), trace_index(live)))
        cached = live._targets
    option = '<option value="{}"></option>'.format
    html = ('<datalist id="pod-keys">' + "".join(option(escape(k)) for k in cached[2]) + "</datalist>"
            '<datalist id="node-names">' + "".join(option(escape(n)) for n in cached[3]) + "</datalist>")
    return cached[1], html


# ---------------------------------------------------------------------- the whole page

def context(live, log_filter=None, names=PANELS, view=None) -> dict:
    st = live.stepper
    state = st.state()
    events, position = st.events, st.position
    index = trace_index(live)
    mom = moment.moment(st, state, index)
    ctx = {"session_id": live.id, "version": live.version}
    if "header" in names:
        ctx["header"] = header(live, mom)
    if "timeline" in names:
        ctx["timeline"] = timeline(live)
    if "queues" in names:
        ctx["queues"] = queues(live, mom, view)
    cycle = current_cycle(events, position, index) if ("cycle" in names or "preemption" in names) else None
    if "cycle" in names:
        filter_window(cycle, view)
        ctx["cycle"] = cycle
    if "nodes" in names:
        ctx["nodes"] = nodes(live, mom, view)
    if "preemption" in names:
        ctx["preemption"] = preemption(events, position, index, cycle["cycle"] if cycle else None)
    if "log" in names:
        ctx["log"] = log(events, position, log_filter, row_cache=index.log_rows)
    if "metrics" in names:
        ctx["metrics"] = metrics(mom, position, index)
    if "narrative" in names:
        ctx["narrative"] = narrative(live, mom, events, position, index)
    if "targets" in names:
        ctx["targets"] = targets(live, mom)
    if "changes" in names:   # reload and compare (visualizer.changes)
        from visualizer import changes
        ctx["changes"] = changes.context(live)
    return ctx


VIEW_PANELS = ("queues", "nodes", "cycle")   # the panels a page's own view changes


def render_panels(live, names=PANELS, log_filter=None, view=None) -> list:
    """[(panel id, html)] for the named panels, each an element with that id."""
    ctx = context(live, log_filter=log_filter, names=names, view=view)
    return [(f"panel-{name}", render_to_string(f"visualizer/partials/_{name}.html", ctx)) for name in names]


def status(kind: str, title: str, problems=()) -> str:
    """The per-connection status panel (an error, a refusal or a note)."""
    status = {"kind": kind, "title": title, "problems": list(problems)} if title else None
    return render_to_string("visualizer/partials/_status.html", {"status": status})
