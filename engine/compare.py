"""Two runs of one scenario, and what changed between them.

A plugin author changes a plugin and wants to know what that changed; a teacher turns a
feature gate on and wants to show what that changed.  Both are the same question: run one
scenario (and the cluster events injected into it, if any) twice, with two versions of the
plugin code or two scheduler configurations, to the same place, and compare.

- :func:`drive` builds one run: a :class:`~engine.stepper.Stepper` over the scenario, with the
  recorded injections applied where they belong, up to a target position and virtual time.
- :func:`vary` makes scenario B from scenario A by a :class:`Variation` (toggle a feature gate,
  disable a plugin, change a score weight, replace the ``scheduler:`` section), validated like
  a scenario file.
- :func:`compare` says what changed: every pod whose outcome differs (phase, node, attempts,
  queue, nomination, rejecting plugins), the first trace event where the two runs diverge
  (ignoring ``seq``), the scheduling cycle it belongs to, and that cycle's plugin results side
  by side (Filter per node x plugin with codes, scores raw / normalised / weighted, the
  selected node).

Everything here is deterministic and pure Python (no Django): the same inputs give the same
comparison, byte for byte, which is what lets the web UI keep a comparison as the record of a
reload.  ``python -m engine compare`` is the command-line door (docs/cli.md).

Where the injections land in the other run.  An injection recorded after ``position`` trace
events at virtual time ``t`` is applied in the other run after at most ``position`` events and
never after an event later than ``t`` (then, if the clock is still before ``t``, after
everything due up to ``t``), exactly as ``visualizer.runner.rebuild`` replays it: so two runs
that agree up to an injection receive it at the same place, and runs that differ receive it
at the same virtual time.  The target of a run (its *head*) follows the same rule.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from .errors import ScenarioError
from .objects import Problems
from .quantity import US
from .scenario import KNOWN_FEATURE_GATES, Scenario, parse_action
from .stepper import Stepper

MAX_EVENTS = 500_000          # a run stops here (bounded memory); the comparison says so
MAX_TABLE_ROWS = 100          # nodes per side-by-side table (changed rows first)
POD_FIELDS = ("phase", "nodeName", "queue", "attempts", "nominatedNodeName", "unschedulablePlugins")
CYCLE_EVENT_TYPES = ("CycleStart", "CycleSkipped")


# ---------------------------------------------------------------------- one run

@dataclass
class Run:
    """One run, stopped at its head: the revealed trace and the state there."""
    label: str
    events: list                      # the revealed trace events
    state: dict                       # Engine.state() at the head (SPEC.md §3)
    clock_us: int
    truncated: bool = False           # stopped at MAX_EVENTS
    injections: list = field(default_factory=list)   # [(position, time_us, verb, body)] as applied
    stepper: Stepper | None = None

    @property
    def position(self) -> int:
        return len(self.events)

    def describe(self) -> dict:
        return {"label": self.label, "events": len(self.events), "time": self.clock_us / US,
                "truncated": self.truncated}


def _event_us(e) -> int:
    return int(round(e["time"] * US))


def _reveal_upto(st: Stepper, position, time_us, limit) -> None:
    """Reveal events until ``position`` are shown, stopping before any event later than
    ``time_us`` (None: no time bound) and at ``limit``."""
    while st.position < min(position, limit):
        if not st._ensure(st.position + 1):
            return
        if time_us is not None and _event_us(st.events[st.position]) > time_us:
            return
        st.position += 1


def _advance(st: Stepper, until_us, limit) -> bool:
    """Run engine units until everything due at <= ``until_us`` happened (None: until idle),
    revealing all their events; False if ``limit`` events stopped it first."""
    eng = st.engine
    complete = True
    while True:
        if len(st.events) >= limit:
            complete = False
            break
        if not st._advance_unit(until_us):
            break
    if complete and until_us is not None and until_us > eng.now:
        eng.now = until_us
    if complete and until_us is None:
        eng.idle_reached = True
    st.position = len(st.events)
    st._unit_end = st.position
    return complete


def _go_to(st: Stepper, position, time_us, limit) -> bool:
    """The replay rule (module docstring): at most ``position`` events, none later than
    ``time_us``, then the clock brought to ``time_us`` if every buffered event is shown."""
    _reveal_upto(st, position, time_us, limit)
    if time_us is not None and time_us > st.engine.now and st.position == len(st.events):
        return _advance(st, time_us, limit)
    return st.position < limit


def head_of(st: Stepper) -> tuple:
    """Where a run stands, as (position, time_us) for :func:`drive`: a run that has done
    everything due up to its clock (nothing buffered, nothing more due at this instant) is at
    (None, clock), so the other run goes to the same virtual time whatever number of events it
    takes; a run stopped inside an instant (stepped by event, point or cycle) is at
    (events revealed, clock)."""
    eng = st.engine
    nxt = eng.next_time()
    if st.position == len(st.events) and (nxt is None or nxt > eng.now):
        return None, eng.now
    return st.position, eng.now


def drive(scenario: Scenario, injections=(), *, position=None, time_us=None, label="",
          max_events=MAX_EVENTS, extender_transport=None) -> Run:
    """One run of ``scenario``.

    ``injections`` are ``(position, time_us, verb, body)`` as recorded by the web UI (``body``
    a manifest or reference dict; ``verb`` create, update or delete).  The run stops at its
    head: after at most ``position`` events and no event later than ``time_us``; with neither,
    once it is idle (the scenario's last action applied and nothing in flight); with only
    ``time_us``, once everything due by then happened (``python -m engine run --until``).
    ``extender_transport``: how the run calls scheduler extenders (engine/extender.py).
    """
    st = Stepper(scenario, extender_transport=extender_transport)
    applied = []
    truncated = False
    for i, (pos, at_us, verb, body) in enumerate(injections):
        if not _go_to(st, pos, at_us, max_events):
            truncated = True
            break
        probs = Problems()
        action = parse_action(verb, body, f"inject[{i}].{verb}", probs, scenario.simulation.start_time)
        if probs or action is None:
            raise ScenarioError(probs.items or [f"inject[{i}].{verb}: is not a valid action"], scenario.source)
        st.inject(action)
        p, t, _ = st.injections[-1]
        applied.append((p, t, verb, body))
    if not truncated:
        if position is None:
            truncated = not _advance(st, time_us, max_events)
        else:
            truncated = not _go_to(st, position, time_us, max_events)
    st.position = min(st.position, max_events)
    return Run(label=label, events=st.events[:st.position], state=st.engine.state(), clock_us=st.engine.now,
               truncated=truncated, injections=applied, stepper=st)


# ---------------------------------------------------------------------- variations

@dataclass
class Variation:
    """How configuration B differs from A.  ``profile`` limits ``disable`` and ``weights`` to
    one profile (its schedulerName); None means every profile."""
    gates: dict = field(default_factory=dict)          # feature gate -> bool
    disable: list = field(default_factory=list)        # plugin names
    weights: dict = field(default_factory=dict)        # score plugin -> weight (1..100)
    scheduler: dict | None = None                      # a whole new scheduler: section
    profile: str | None = None

    def describe(self) -> str:
        parts = []
        if self.scheduler is not None:
            parts.append("the scheduler: section replaced")
        for k, v in sorted(self.gates.items()):
            parts.append(f"{k}={'true' if v else 'false'}")
        for n in self.disable:
            parts.append(f"without {n}")
        for n, w in sorted(self.weights.items()):
            parts.append(f"{n} weight {w}")
        where = f" (profile {self.profile})" if self.profile and (self.disable or self.weights) else ""
        return ", ".join(parts) + where if parts else "no change"

    def is_empty(self) -> bool:
        return not (self.gates or self.disable or self.weights or self.scheduler is not None)


def _profiles(raw_sched: dict) -> list:
    profiles = raw_sched.get("profiles")
    if not profiles:
        profiles = raw_sched["profiles"] = [{}]
    return profiles


def _enabled_names(plugin_set) -> list:
    if not isinstance(plugin_set, dict):
        return []
    return [p.get("name") for p in plugin_set.get("enabled") or [] if isinstance(p, dict)]


def vary(scenario: Scenario, variation: Variation, source="configuration B") -> Scenario:
    """Scenario B: ``scenario`` with ``variation`` applied, validated (its scheduler built) like
    a scenario file.  ScenarioError lists every problem, each place prefixed ``variation``."""
    from .scheduler import Engine
    from .trace import Trace
    probs = []
    raw = copy.deepcopy(scenario.raw)
    if variation.scheduler is not None:
        if not isinstance(variation.scheduler, dict):
            probs.append(f"variation.scheduler: {type(variation.scheduler).__name__} is not a mapping "
                         f"(paste a scheduler: section)")
        else:
            raw["scheduler"] = copy.deepcopy(variation.scheduler)
    for gate, value in variation.gates.items():
        if gate not in KNOWN_FEATURE_GATES:
            probs.append(f"variation.gates.{gate}: is not a feature gate the engine models "
                         f"(known: {', '.join(KNOWN_FEATURE_GATES)})")
        elif not isinstance(value, bool):
            probs.append(f"variation.gates.{gate}: {value!r} is not true or false")
        else:
            sim = raw.setdefault("simulation", {})
            if not isinstance(sim, dict):
                probs.append("simulation: is not a mapping")
                continue
            fg = sim.get("featureGates")
            if not isinstance(fg, dict):
                fg = sim["featureGates"] = {}
            fg[gate] = value
    if variation.disable or variation.weights:
        sched = raw.get("scheduler")
        if sched is None:
            sched = raw["scheduler"] = {}
        if not isinstance(sched, dict):
            probs.append("scheduler: is not a mapping")
            sched = {}
        profiles = [p for p in _profiles(sched) if isinstance(p, dict)]
        names = [p.get("schedulerName") or "default-scheduler" for p in profiles]
        if variation.profile is not None and variation.profile not in names:
            probs.append(f"variation.profile: {variation.profile!r} is not a profile of the scenario "
                         f"(its profiles: {', '.join(names)})")
        chosen = [(n, p) for n, p in zip(names, profiles) if variation.profile in (None, n)]
        for plugin in variation.disable:
            if not isinstance(plugin, str) or not plugin:
                probs.append(f"variation.disable: {plugin!r} is not a plugin name")
                continue
            found = False
            for pname, prof in chosen:
                if plugin not in _profile_plugins(scenario, pname):
                    continue
                found = True
                plugins = prof.setdefault("plugins", {})
                for point, ps in list(plugins.items()):
                    if isinstance(ps, dict) and plugin in _enabled_names(ps):
                        ps["enabled"] = [p for p in ps["enabled"] if not (isinstance(p, dict) and p.get("name") == plugin)]
                mp = plugins.setdefault("multiPoint", {})
                if not isinstance(mp, dict):
                    continue
                disabled = mp.setdefault("disabled", [])
                if isinstance(disabled, list) and plugin not in [d.get("name") for d in disabled if isinstance(d, dict)]:
                    disabled.append({"name": plugin})
            if not found:
                probs.append(f"variation.disable: {plugin!r} is not enabled in "
                             f"{'profile ' + variation.profile if variation.profile else 'any profile'}")
        for plugin, weight in variation.weights.items():
            if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
                probs.append(f"variation.weights.{plugin}: {weight!r} is not a weight (an integer from 1 to 100)")
                continue
            found = False
            for pname, prof in chosen:
                if plugin not in _profile_plugins(scenario, pname, point="score"):
                    continue
                found = True
                plugins = prof.setdefault("plugins", {})
                target = None
                for point in ("score", "multiPoint"):
                    ps = plugins.get(point)
                    if isinstance(ps, dict) and plugin in _enabled_names(ps):
                        target = ps
                        break
                if target is None:
                    target = plugins.setdefault("multiPoint", {})
                    target.setdefault("enabled", []).append({"name": plugin, "weight": weight})
                else:
                    for p in target["enabled"]:
                        if isinstance(p, dict) and p.get("name") == plugin:
                            p["weight"] = weight
            if not found:
                probs.append(f"variation.weights.{plugin}: {plugin!r} is not a Score plugin of "
                             f"{'profile ' + variation.profile if variation.profile else 'any profile'}")
    if probs:
        raise ScenarioError(probs, source)
    try:
        out = Scenario.from_dict(raw, source)
        Engine(out, Trace(enabled=False))
    except ScenarioError as e:
        raise ScenarioError([f"variation: {p}" for p in e.problems], source) from None
    return out


def _profile_plugins(scenario: Scenario, profile_name: str, point=None) -> list:
    """The plugins a profile of the scenario runs (at ``point``, or at any point)."""
    from .scheduler import Engine
    from .trace import Trace
    cache = scenario.__dict__.setdefault("_compare_plugins", {})
    if "frameworks" not in cache:
        eng = Engine(scenario, Trace(enabled=False))
        cache["frameworks"] = {n: {p: [pl.name for pl in pls] for p, pls in f.plugins.items()}
                               for n, f in eng.frameworks.items()}
    per_point = cache["frameworks"].get(profile_name, {})
    if point is not None:
        return per_point.get(point, [])
    return sorted({n for names in per_point.values() for n in names})


def profile_plugins(scenario: Scenario) -> dict:
    """schedulerName -> {"all": [plugin names], "score": [score plugin names]} (the web form's
    choices)."""
    out = {}
    for prof in scenario.scheduler.profiles:
        out[prof.scheduler_name] = {"all": _profile_plugins(scenario, prof.scheduler_name),
                                    "score": _profile_plugins(scenario, prof.scheduler_name, "score")}
    return out


# ---------------------------------------------------------------------- one cycle's results

def cycle_of(events, index) -> tuple:
    """(cycle number, relation) of the event at ``index``: ("own") the event carries its cycle;
    ("within") it comes after that cycle's CycleStart and before its CycleEnd, or is the
    failed pod's requeueing at the instant the cycle ended; ("next") it happens between cycles,
    and the cycle given is the next one to start (where its consequences show); (None, None)
    when there is no such cycle.  An ``index`` past the end means "after the last event"."""
    if index < len(events) and events[index].get("cycle") is not None:
        return events[index]["cycle"], "own"
    e = events[index] if index < len(events) else None
    for j in range(min(index, len(events)) - 1, -1, -1):
        if events[j]["type"] not in CYCLE_EVENT_TYPES:
            continue
        start = events[j]
        if start["type"] == "CycleSkipped":
            break
        c = start.get("cycle")
        end = next((k for k in range(j + 1, min(index, len(events)))
                    if events[k]["type"] == "CycleEnd" and events[k].get("cycle") == c), None)
        if end is None or (e is not None and e.get("pod") == start.get("pod") and e["time"] == events[end]["time"]
                           and e["type"] == "QueueTransition"):
            return c, "within"
        break
    for k in range(index + 1, len(events)):
        if events[k]["type"] in CYCLE_EVENT_TYPES:
            return events[k].get("cycle"), "next"
    return None, None


def _cell(e) -> dict:
    c = {"code": e.get("code"), "reasons": list(e.get("reasons") or [])}
    if e.get("error"):
        c["error"] = e["error"]
    return c


def cycle_results(events: list, cycle) -> dict | None:
    """Everything the framework recorded in scheduling cycle ``cycle`` of a run, or None if the
    run has no such cycle: the pod, PreFilter, the Filter matrix (node -> plugin -> code and
    reasons), PostFilter, PreScore, scores (node -> plugin -> raw, normalised, weighted), the
    selected node and the outcome.  Preemption's dry-run Filter calls are left out."""
    start = next((i for i, e in enumerate(events)
                  if e["type"] in CYCLE_EVENT_TYPES and e.get("cycle") == cycle), None)
    if start is None:
        return None
    s = events[start]
    pod = s["pod"]
    out = {"cycle": cycle, "pod": pod, "time": s["time"], "attempts": s.get("attempts"),
           "skipped": s["type"] == "CycleSkipped", "reason": s.get("reason", ""),
           "prefilter": [], "filter": {"plugins": [], "nodes": [], "cells": {}},
           "postfilter": [], "prescore": [], "other": [],
           "scores": {"plugins": [], "nodes": [], "cells": {}, "totals": {}},
           "selected": None, "ties": [], "selection": "", "result": None, "message": "",
           "nominatedNode": None, "bound": None}
    fil, sco = out["filter"], out["scores"]
    for e in events[start + 1:]:
        t = e["type"]
        if t in CYCLE_EVENT_TYPES and e.get("pod") == pod and e.get("cycle") != cycle:
            break                    # the pod's next cycle: nothing after this is ours
        if e.get("pod") != pod:
            continue
        if t == "PluginResult" and e.get("cycle") == cycle and not e.get("dryRun"):
            point, plugin, node = e["point"], e["plugin"], e.get("node")
            if point == "Filter":
                if plugin not in fil["plugins"]:
                    fil["plugins"].append(plugin)
                if node not in fil["cells"]:
                    fil["nodes"].append(node)
                    fil["cells"][node] = {}
                fil["cells"][node][plugin] = _cell(e)
            elif point in ("Score", "NormalizeScore"):
                if plugin not in sco["plugins"]:
                    sco["plugins"].append(plugin)
                if node not in sco["cells"]:
                    sco["nodes"].append(node)
                    sco["cells"][node] = {}
                cell = sco["cells"][node].setdefault(plugin, {})
                if point == "Score":
                    cell["score"] = e.get("score")
                    if e.get("code") not in (None, "Success"):
                        cell.update(_cell(e))
                else:
                    cell["normalized"] = e.get("score")
                    cell["weighted"] = e.get("weightedScore")
            elif point == "PreFilter":
                out["prefilter"].append({"plugin": plugin, **_cell(e)})
            elif point == "PostFilter":
                out["postfilter"].append({"plugin": plugin, **_cell(e)})
            elif point == "PreScore":
                out["prescore"].append({"plugin": plugin, **_cell(e)})
            else:
                out["other"].append({"point": point, "plugin": plugin, "node": node, **_cell(e)})
        elif t == "HostSelected" and e.get("cycle") == cycle:
            out["selected"] = e.get("node")
            out["ties"] = list(e.get("ties") or [])
            out["selection"] = e.get("reason", "")
            out["scores"]["totals"] = dict(e.get("scores") or {})
            for node, per_plugin in (e.get("detail") or {}).items():
                if node not in sco["cells"]:
                    sco["nodes"].append(node)
                    sco["cells"][node] = {}
                for plugin, d in per_plugin.items():
                    if plugin not in sco["plugins"]:
                        sco["plugins"].append(plugin)
                    cell = sco["cells"][node].setdefault(plugin, {})
                    for k in ("score", "normalized", "weighted"):
                        if d.get(k) is not None:
                            cell[k] = d[k]
        elif t == "CycleEnd" and e.get("cycle") == cycle:
            out["result"] = e.get("result")
            out["message"] = e.get("message", "")
            out["nominatedNode"] = e.get("nominatedNode")
            if out["selected"] is None and e.get("node"):
                out["selected"] = e.get("node")
        elif t == "Bound":
            out["bound"] = {"node": e.get("node"), "time": e["time"]}
        elif t == "BindFailed":
            out["bound"] = {"node": e.get("node"), "failed": True, "reasons": list(e.get("reasons") or [])}
    return out


def _side_by_side_table(a: dict | None, b: dict | None, kind: str) -> dict:
    """One merged node x plugin table of two cycles' Filter (``kind`` "filter") or score
    ("scores") results, changed rows first, at most MAX_TABLE_ROWS rows."""
    ta = (a or {}).get(kind) or {"plugins": [], "nodes": [], "cells": {}}
    tb = (b or {}).get(kind) or {"plugins": [], "nodes": [], "cells": {}}
    plugins = list(ta["plugins"]) + [p for p in tb["plugins"] if p not in ta["plugins"]]
    nodes = list(ta["nodes"]) + [n for n in tb["nodes"] if n not in ta["cells"]]
    rows = []
    for node in nodes:
        ca, cb = ta["cells"].get(node), tb["cells"].get(node)
        cells = []
        for p in plugins:
            x = ca.get(p) if ca is not None else None
            y = cb.get(p) if cb is not None else None
            cells.append({"plugin": p, "a": x, "b": y, "changed": x != y})
        row = {"node": node, "cells": cells, "changed": any(c["changed"] for c in cells),
               "in_a": ca is not None, "in_b": cb is not None}
        if kind == "scores":
            row["total_a"] = ta.get("totals", {}).get(node)
            row["total_b"] = tb.get("totals", {}).get(node)
            row["changed"] = row["changed"] or row["total_a"] != row["total_b"]
        rows.append(row)
    ordered = [r for r in rows if r["changed"]] + [r for r in rows if not r["changed"]]
    return {"plugins": plugins, "rows": ordered[:MAX_TABLE_ROWS],
            "hidden": max(0, len(ordered) - MAX_TABLE_ROWS),
            "changed_rows": sum(1 for r in rows if r["changed"])}


def side_by_side(a: dict | None, b: dict | None) -> dict:
    """Two cycles' results (``cycle_results``) merged for display: the Filter matrix and the
    score table with each cell's A and B value and whether they differ, and each side's pod,
    selected node and outcome."""
    def summary(c):
        if c is None:
            return None
        return {k: c[k] for k in ("cycle", "pod", "time", "attempts", "skipped", "reason", "selected", "ties",
                                  "selection", "result", "message", "nominatedNode", "bound", "prefilter",
                                  "postfilter", "prescore", "other")}
    return {"a": summary(a), "b": summary(b), "filter": _side_by_side_table(a, b, "filter"),
            "scores": _side_by_side_table(a, b, "scores")}


# ---------------------------------------------------------------------- what changed

# what two runs of the same scenario may differ in without differing: the trace position, and
# a scheduler extender call's latency (measured, engine/extender.py)
SAME_EVENT_IGNORES = ("seq", "latency")


def _same(x: dict, y: dict, ignore=SAME_EVENT_IGNORES) -> bool:
    """Two trace events are the same event when every field but ``ignore`` is equal."""
    if x.keys() - set(ignore) != y.keys() - set(ignore):
        return False
    return all(x[k] == y[k] for k in x if k not in ignore)


def first_divergence(ea: list, eb: list, ignore=SAME_EVENT_IGNORES):
    """The index of the first trace event that differs between two runs (the fields in
    ``ignore`` aside), or None when the traces are the same length and agree."""
    n = min(len(ea), len(eb))
    for i in range(n):
        if not _same(ea[i], eb[i], ignore):
            return i
    return None if len(ea) == len(eb) else n


def _pod_outcome(state: dict, key: str) -> dict:
    info = state["pods"].get(key)
    if info is None:
        gone = state.get("deletedPods", {}).get(key)
        return {"phase": "Deleted" if gone else "Absent", "nodeName": None, "queue": None, "attempts": None,
                "nominatedNodeName": None, "unschedulablePlugins": []}
    return {f: info.get(f) for f in POD_FIELDS}


def changed_pods(sa: dict, sb: dict) -> list:
    """Every pod whose outcome differs between two states: [{pod, a, b, fields}] by pod key,
    ``fields`` naming what differs (of POD_FIELDS)."""
    keys = sorted(set(sa["pods"]) | set(sb["pods"]) | set(sa.get("deletedPods", {})) | set(sb.get("deletedPods", {})))
    out = []
    for key in keys:
        a, b = _pod_outcome(sa, key), _pod_outcome(sb, key)
        fields = [f for f in POD_FIELDS if a[f] != b[f]]
        if fields:
            out.append({"pod": key, "a": a, "b": b, "fields": fields})
    return out


def _divergence(a: Run, b: Run, i: int) -> dict:
    ev_a = a.events[i] if i < len(a.events) else None
    ev_b = b.events[i] if i < len(b.events) else None
    ca, rel_a = cycle_of(a.events, i)
    cb, rel_b = cycle_of(b.events, i)
    res_a = cycle_results(a.events, ca) if ca is not None else None
    res_b = cycle_results(b.events, cb) if cb is not None else None
    fields = []
    if ev_a is not None and ev_b is not None:
        fields = sorted(k for k in set(ev_a) | set(ev_b) if k not in SAME_EVENT_IGNORES and ev_a.get(k) != ev_b.get(k))
    return {"index": i, "time": min(e["time"] for e in (ev_a, ev_b) if e is not None), "a": ev_a, "b": ev_b, "fields": fields,
            "cycle_a": ca, "cycle_b": cb, "relation_a": rel_a, "relation_b": rel_b,
            "side_by_side": side_by_side(res_a, res_b) if (res_a or res_b) else None}


def compare(a: Run, b: Run) -> dict:
    """What changed from run A to run B (JSON-ready; see the module docstring).

    ``divergence`` is the first trace event that differs (``seq`` aside).  When it differs
    only in its ``message`` (the same thing happened, explained by another rule, as with a
    feature gate), ``effect`` is the first event that differs in anything else: the first
    place where something else happened."""
    i = first_divergence(a.events, b.events)
    divergence = _divergence(a, b, i) if i is not None else None
    effect = None
    if divergence is not None and divergence["fields"] == ["message"]:
        j = first_divergence(a.events, b.events, ignore=SAME_EVENT_IGNORES + ("message",))
        if j is not None:
            effect = _divergence(a, b, j)
    pods = changed_pods(a.state, b.state)
    state_keys = ("schedulingCycle", "moveRequestCycle", "time")
    run_changes = [{"field": k, "a": a.state.get(k), "b": b.state.get(k)} for k in state_keys
                   if a.state.get(k) != b.state.get(k)]
    return {"a": a.describe(), "b": b.describe(), "identical": i is None and not pods and not run_changes,
            "pods": pods, "divergence": divergence, "effect": effect, "run": run_changes}


def compare_scenarios(scenario_a: Scenario, scenario_b: Scenario, injections=(), *, position=None,
                      time_us=None, labels=("A", "B"), extender_transports=(None, None)) -> tuple:
    """Run both scenarios to the same head and compare: (comparison, run A, run B).
    ``extender_transports``: run A's and run B's (engine/extender.py)."""
    ra = drive(scenario_a, injections, position=position, time_us=time_us, label=labels[0],
               extender_transport=extender_transports[0])
    rb = drive(scenario_b, injections, position=position, time_us=time_us, label=labels[1],
               extender_transport=extender_transports[1])
    return compare(ra, rb), ra, rb


# ---------------------------------------------------------------------- as text

def _outcome_text(o: dict) -> str:
    parts = [o["phase"]]
    if o["nodeName"]:
        parts.append(f"on {o['nodeName']}")
    if o["queue"]:
        parts.append(f"in {o['queue']}")
    if o["attempts"] is not None:
        parts.append(f"attempts {o['attempts']}")
    if o["nominatedNodeName"]:
        parts.append(f"nominated {o['nominatedNodeName']}")
    if o["unschedulablePlugins"]:
        parts.append(f"rejected by {', '.join(o['unschedulablePlugins'])}")
    return ", ".join(parts)


def _code(cell) -> str:
    if cell is None:
        return "-"
    return cell.get("code") or "?"


def _score(cell) -> str:
    if cell is None:
        return "-"
    if cell.get("code") and cell["code"] != "Success":
        return cell["code"]
    return f"{cell.get('score', '-')}/{cell.get('normalized', '-')}/{cell.get('weighted', '-')}"


def event_text(e) -> str:
    if e is None:
        return "(no event: the run ends here)"
    keys = [k for k in e if k not in ("seq", "time", "type")]
    return f"{e['type']} at {e['time']:g}s: " + ", ".join(
        f"{k}={json.dumps(e[k], ensure_ascii=False)}" for k in keys)


def where_text(cycle, relation) -> str:
    if cycle is None:
        return "outside any scheduling cycle"
    if relation == "next":
        return f"between scheduling cycles (the next is cycle {cycle})"
    return f"in scheduling cycle {cycle}"


def _where(d: dict) -> str:
    a = where_text(d["cycle_a"], d.get("relation_a"))
    b = where_text(d["cycle_b"], d.get("relation_b"))
    return f", {a}" + (f" (B: {b})" if b != a else "")


def _divergence_text(d: dict, head: str) -> list:
    lines = [f"{head}: trace event {d['index']} ({d['time']:g}s)" + _where(d) + ":",
             f"  A: {event_text(d['a'])}", f"  B: {event_text(d['b'])}"]
    sbs = d["side_by_side"]
    if sbs is None:
        return lines
    for side in ("a", "b"):
        c = sbs[side]
        if c is None:
            lines.append(f"  {side.upper()}: no such cycle")
            continue
        out = c["result"] or ("skipped" if c["skipped"] else "in flight")
        lines.append(f"  {side.upper()}: cycle {c['cycle']} of {c['pod']} (attempt {c['attempts']}): {out}"
                     + (f", selected {c['selected']}" if c["selected"] else ""))
    for kind, fmt in (("filter", _code), ("scores", _score)):
        t = sbs[kind]
        if not t["rows"]:
            continue
        lines.append(f"  {'Filter (code A | B)' if kind == 'filter' else 'Score (raw/normalised/weighted A | B)'}:")
        texts = [[f"{fmt(c['a'])} | {fmt(c['b'])}" for c in r["cells"]] for r in t["rows"]]
        widths = [max([len(p)] + [len(row[j]) for row in texts]) + 2 for j, p in enumerate(t["plugins"])]
        nw = max([4] + [len(str(r["node"])) for r in t["rows"]]) + 2
        lines.append("    " + "node".ljust(nw) + "".join(p.ljust(w) for p, w in zip(t["plugins"], widths)).rstrip())
        for r, row in zip(t["rows"], texts):
            mark = "*" if r["changed"] else " "
            lines.append(f"  {mark} " + str(r["node"]).ljust(nw)
                         + "".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
        if t["hidden"]:
            lines.append(f"    ... {t['hidden']} more node(s)")
    return lines


def format_text(result: dict) -> str:
    """The comparison as plain text (``python -m engine compare``)."""
    a, b = result["a"], result["b"]
    lines = [f"A: {a['label']} ({a['events']} events, {a['time']:g}s{', stopped at the event limit' if a['truncated'] else ''})",
             f"B: {b['label']} ({b['events']} events, {b['time']:g}s{', stopped at the event limit' if b['truncated'] else ''})"]
    if result["identical"]:
        lines.append("No difference: the two runs have the same trace and the same pod outcomes.")
        return "\n".join(lines) + "\n"
    if result["pods"]:
        lines.append(f"{len(result['pods'])} pod(s) with a different outcome:")
    else:
        lines.append("Every pod ends the same way; the runs differ on the way.")
    for p in result["pods"]:
        lines.append(f"  {p['pod']}: {', '.join(p['fields'])}")
        lines.append(f"    A: {_outcome_text(p['a'])}")
        lines.append(f"    B: {_outcome_text(p['b'])}")
    for r in result["run"]:
        lines.append(f"{r['field']}: A {r['a']} / B {r['b']}")
    d = result["divergence"]
    if d is not None:
        lines.extend(_divergence_text(d, "The runs diverge"))
    if result.get("effect") is not None:
        lines.append("That difference is in the message only (the same thing happened, explained otherwise).")
        lines.extend(_divergence_text(result["effect"], "The first difference in what happened"))
    return "\n".join(lines) + "\n"
