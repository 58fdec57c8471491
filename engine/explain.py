"""``python -m engine explain``: what happened to every pod that was pending at the start.

The report is read from what the engine itself emits (the trace's ``CycleEnd``,
``HostSelected``, ``Bound``, ``PodDeleted`` and ``PreemptionPick`` events, and the final state);
nothing here re-derives a scheduling decision. The FitError message is the one ``CycleEnd``
carries (``engine.framework.types.FitError.message``, upstream's ``FitError.Error()``), and
the unblocking events are the rejecting plugins' ``EventsToRegister`` as the profile's framework
reports them (``Framework.enqueue_extensions``).

The JSON document (``--json``; see docs/cli.md) is ``{"total", "counts", "until", "pods"}``,
each pod a dict with the keys of ``POD_FIELDS`` in that order.

``python -m engine run`` with neither ``--state`` nor ``--trace`` prints ``format_summary`` of
the same report over every pod of the run (``which="all"``).
"""
from __future__ import annotations

from .framework.interface import ActionType, GVK
from .trace import Trace

TOP_SCORES = 3

POD_FIELDS = ("pod", "outcome", "schedulerName", "node", "time", "attempts", "scores", "message",
              "plugins", "unblocking_events", "nominated_node", "victims", "deleted", "waiting_on")

OUTCOMES = ("bound", "binding", "pending", "deleted", "not-ours")


def format_event(ev) -> str:
    """A ClusterEvent as ``Resource/Action|Action`` (``Node/Add|Update``, ``Pod/Delete``,
    ``*/All``), the spelling of upstream's ActionType names."""
    a = ActionType(int(ev.action_type))
    if a == ActionType.All:
        names = ["All"]
    else:
        names = [n for n, f in (("Add", ActionType.Add), ("Delete", ActionType.Delete)) if a & f]
        if a & ActionType.Update == ActionType.Update:
            names.append("Update")
        else:
            names += [f.name for f in (ActionType.UpdateNodeAllocatable, ActionType.UpdateNodeLabel,
                                       ActionType.UpdateNodeTaint, ActionType.UpdateNodeCondition) if a & f]
    res = "*" if ev.resource == GVK.WildCard else ev.resource
    return f"{res}/{'|'.join(names)}"


def _top(host_selected) -> list:
    """The ``TOP_SCORES`` best totals of a HostSelected event, ``[{node, score}]``: best first;
    among equal totals the chosen node first (HostSelected's ties), then evaluation order (the
    order of ``scores``); ``[{node, score: None}]`` when there was no scoring."""
    scores = host_selected.get("scores")
    if not scores:
        return [{"node": host_selected["node"], "score": None}]
    chosen = host_selected["node"]
    top = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0] != chosen))[:TOP_SCORES]
    return [{"node": n, "score": s} for n, s in top]


def pending_at_start(scenario) -> list:
    """The pods of the scenario's objects that are not bound (no ``spec.nodeName``), in file order."""
    return [obj for kind, obj in scenario.objects if kind == "Pod" and obj is not None and not obj.node_name]


WHICH = ("start", "all")


def explain(scenario, until=None, which="start") -> dict:
    """Run ``scenario`` (to virtual microsecond ``until``, or until idle) and report on every
    pod pending at the start (``which="start"``, what ``python -m engine explain`` lists) or on
    every pod the run saw (``which="all"``, what the summary of ``python -m engine run``
    covers). Raises ScenarioError as ``Engine`` does."""
    return explain_run(scenario, until, which)[0]


class Collector:
    """A trace sink keeping, for the report, only each pod's last ``CycleEnd``, its last
    ``HostSelected``'s top totals, its ``Bound`` time, its ``PodDeleted`` event and the
    ``PreemptionPick`` it made (a large cluster's HostSelected detail is never held)."""

    def __init__(self):
        self.last_end, self.last_host, self.bound_at, self.deleted, self.picks = {}, {}, {}, {}, {}

    def __call__(self, e) -> None:
        t = e.get("type")
        if t == "CycleEnd":
            self.last_end[e["pod"]] = e
        elif t == "HostSelected":
            self.last_host[e["pod"]] = {"node": e["node"], "top": _top(e)}
        elif t == "Bound":
            self.bound_at[e["pod"]] = e["time"]
        elif t == "PodDeleted":
            self.deleted[e["pod"]] = e
        elif t == "PreemptionPick":
            self.picks[e["preemptor"]] = {"node": e.get("node"), "candidates": [
                c for c in e.get("candidates") or [] if c.get("node") == e.get("node")]}


def explain_run(scenario, until=None, which="start", extender_transport=None):
    """``(report, engine)``: ``explain``'s report and the engine after the run (for its
    ``plugin_errors()``). The trace is streamed through a ``Collector``, never kept.
    ``extender_transport``: see engine/extender.py."""
    _check_which(which)
    from .scheduler import Engine
    collector = Collector()
    trace = Trace(enabled=False)
    trace.add_sink(collector)
    engine = Engine(scenario, trace, extender_transport)
    engine.run(until)
    return build_report(scenario, engine, collector, until, which), engine


def explain_events(scenario, events, engine, until=None, which="start") -> dict:
    """The report of a run already made: ``events`` its trace (any iterable of event dicts,
    in order) and ``engine`` the engine after it (the web page's report of a session, whose
    run includes the cluster events injected on the way)."""
    collector = Collector()
    for e in events:
        collector(e)
    return build_report(scenario, engine, collector, until, which)


def _check_which(which) -> None:
    if which not in WHICH:
        raise ValueError(f"which: {which!r} is not one of {WHICH}")


def _all_pods(scenario, engine, state) -> list:
    """``(key, schedulerName)`` of every pod the run saw: the scenario's pods in file order,
    then those its actions created, in action order (those the run reached: in the final
    state or among the deleted pods), then any other pod the engine holds or deleted (a pod
    injected into a web session), by key."""
    seen: dict = {}
    live, gone = state.get("pods") or {}, state.get("deletedPods") or {}
    for kind, obj in scenario.objects:
        if kind == "Pod" and obj is not None:
            seen.setdefault(obj.key, obj.scheduler_name)
    for a in scenario.actions:
        if a.kind == "Pod" and a.verb == "create" and a.obj is not None and (a.obj.key in live or a.obj.key in gone):
            seen.setdefault(a.obj.key, a.obj.scheduler_name)
    for key in sorted(set(live) | set(gone)):
        if key not in seen:
            pod = engine.pods.get(key)
            seen[key] = pod.scheduler_name if pod is not None else None
    return list(seen.items())


def build_report(scenario, engine, collector, until=None, which="start") -> dict:
    """The report on every pod of ``scenario`` pending at the start (``which="start"``, in
    file order) or on every pod the run saw (``which="all"``: ``_all_pods``, those bound at
    the start included; a pod of another scheduler is then ``not-ours`` only while pending),
    from the engine after the run and what ``collector`` kept of its trace."""
    _check_which(which)
    last_end, last_host, bound_at = collector.last_end, collector.last_host, collector.bound_at
    deleted, picks = collector.deleted, collector.picks
    state = engine.state()
    victims_of: dict = {}
    for key, d in (state.get("deletedPods") or {}).items():
        if d.get("preemptor"):
            victims_of.setdefault(d["preemptor"], []).append(key)
    ext_cache: dict = {}

    def extensions(profile):
        if profile not in ext_cache:
            ext_cache[profile] = {name: [format_event(ev) for ev, _ in evs]
                                  for name, evs in engine.frameworks[profile].enqueue_extensions()}
        return ext_cache[profile]

    if which == "start":
        listed = [(obj.key, obj.scheduler_name) for obj in pending_at_start(scenario)]
    else:
        listed = _all_pods(scenario, engine, state)
    waiting = state.get("waitingPods") or {}
    pods = []
    for key, scheduler_name in listed:
        p = dict.fromkeys(POD_FIELDS)
        p["pod"], p["schedulerName"] = key, scheduler_name
        p["plugins"], p["unblocking_events"], p["victims"] = [], [], []
        p["scores"] = []
        st = (state.get("pods") or {}).get(key)
        end = last_end.get(key)
        p["attempts"] = 0
        if scheduler_name not in engine.frameworks and (
                which == "start" or (st is not None and st["phase"] == "Pending")):
            p["outcome"] = "not-ours"
            pods.append(p)
            continue
        if st is None:
            p["outcome"] = "deleted"
            d = (state.get("deletedPods") or {}).get(key) or {}
            p["deleted"] = {"time": d.get("deletedAt"), "reason": d.get("reason"),
                            "preemptor": d.get("preemptor")} if d else None
        elif st["phase"] == "Running":
            p["outcome"] = "bound"
        elif st["phase"] in ("Binding", "Waiting"):
            p["outcome"] = "binding"
            if st["phase"] == "Waiting":
                p["waiting_on"] = list((waiting.get(key) or {}).get("plugins") or [])
        elif st["phase"] == "Terminating":
            p["outcome"] = "deleted"
            d = deleted.get(key) or {}
            p["deleted"] = {"time": d.get("time"), "reason": d.get("reason"), "preemptor": d.get("preemptor")}
        else:
            p["outcome"] = "pending"
        if st is not None:
            p["attempts"] = st.get("attempts") or 0
            p["node"] = st.get("nodeName")
            p["nominated_node"] = st.get("nominatedNodeName") or None
        if p["outcome"] in ("bound", "deleted") and key in bound_at:
            p["time"] = bound_at[key]
        elif p["outcome"] == "binding" and end is not None:
            p["time"] = end["time"]
        host = last_host.get(key)
        if p["outcome"] in ("bound", "binding", "deleted") and host is not None and p["node"] is not None:
            p["scores"] = host["top"]
        if p["outcome"] == "pending":
            if end is not None and end.get("result") != "Scheduled":
                p["message"] = end.get("message")
                p["plugins"] = list(end.get("unschedulablePlugins") or [])
                if p["time"] is None:
                    p["time"] = end["time"]
            elif st is not None:
                p["plugins"] = list(st.get("unschedulablePlugins") or [])
            ext = extensions(scheduler_name)
            seen = []
            for name in p["plugins"]:
                for ev in ext.get(name, []):
                    if ev not in seen:
                        seen.append(ev)
            p["unblocking_events"] = seen
        victims = victims_of.get(key) or []
        if not victims and key in picks:
            pick = picks[key]
            victims = next((c.get("victims") or [] for c in pick.get("candidates") or []
                            if c.get("node") == pick.get("node")), [])
        p["victims"] = list(victims)
        pods.append(p)
    counts = {o: sum(1 for p in pods if p["outcome"] == o) for o in OUTCOMES}
    return {"total": len(pods), "counts": counts, "until": None if until is None else until / 1e6,
            "pods": pods}


def format_text(report: dict) -> str:
    """One header line with the counts, then one block per pod (pods of another scheduler
    last, in a short list of their own)."""
    c = report["counts"]
    head = (f"{report['total']} pod{'s' if report['total'] != 1 else ''} pending at the start"
            + (f" (run until {report['until']:g}s)" if report["until"] is not None else "")
            + ": " + ", ".join(f"{c[o]} {o}" for o in OUTCOMES if c[o] or o in ("bound", "pending")))
    lines = [head]
    ours = [p for p in report["pods"] if p["outcome"] != "not-ours"]
    others = [p for p in report["pods"] if p["outcome"] == "not-ours"]
    for p in ours:
        lines.append("")
        o = p["outcome"]
        if o == "bound":
            lines.append(f"{p['pod']}: bound to {p['node']} at {p['time']:g}s")
        elif o == "binding" and p.get("waiting_on") is not None:
            lines.append(f"{p['pod']}: waiting on Permit ({', '.join(p['waiting_on'])}) on {p['node']}"
                         + (f" (assumed at {p['time']:g}s, not bound yet)" if p["time"] is not None else ""))
        elif o == "binding":
            lines.append(f"{p['pod']}: binding to {p['node']} (assumed at {p['time']:g}s, not bound yet)")
        elif o == "deleted":
            d = p["deleted"] or {}
            why = f" (preempted by {d['preemptor']})" if d.get("preemptor") else ""
            when = f" at {d['time']:g}s" if d.get("time") is not None else ""
            lines.append(f"{p['pod']}: deleted{when}{why}")
        else:
            tried = f" after {p['attempts']} attempt{'s' if p['attempts'] != 1 else ''}" if p["attempts"] else \
                " (never attempted)"
            lines.append(f"{p['pod']}: still pending{tried}")
        if p["scores"] and o != "pending":
            if p["scores"][0]["score"] is None:
                lines.append(f"  why {p['scores'][0]['node']}: the only feasible node (no scoring)")
            else:
                lines.append("  top scores: " + ", ".join(f"{s['node']} {s['score']}" for s in p["scores"]))
        if p["message"]:
            lines.append(f"  {p['message']}")
        if p["plugins"]:
            lines.append(f"  rejected by: {', '.join(p['plugins'])}")
        if p["unblocking_events"]:
            lines.append(f"  would be retried on: {', '.join(p['unblocking_events'])}")
        if p["nominated_node"]:
            lines.append(f"  nominated node: {p['nominated_node']}")
        if p["victims"]:
            lines.append(f"  victims: {', '.join(p['victims'])}")
    if others:
        lines.append("")
        lines.append(f"not ours ({len(others)}):")
        for p in others:
            lines.append(f"  {p['pod']}: not ours ({p['schedulerName']})")
    return "\n".join(lines) + "\n"


SUMMARY_GROUPS = 5       # groups of pending pods shown (one per distinct FitError message)
SUMMARY_NAMES = 3        # pod names shown per group or list
SUMMARY_PREEMPTIONS = 5  # preemptions shown


def _names(keys, limit=SUMMARY_NAMES) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _plural(n, word) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _pending_reason(p) -> str:
    """What a pending pod's group is keyed on: its FitError message, or why it has none."""
    if p["message"]:
        return p["message"]
    if p["plugins"]:
        return f"not attempted: waiting for {', '.join(p['plugins'])}"
    return "not attempted yet"


def format_summary(report: dict) -> str:
    """The one-screen summary ``python -m engine run`` prints with neither ``--state`` nor
    ``--trace`` (``report`` from ``explain(..., which="all")``): at most about 30 lines
    whatever the cluster's size.

    A header with the counts; the pending pods grouped by their last attempt's FitError
    message (largest groups first, then by first appearance; at most ``SUMMARY_GROUPS``
    groups, ``SUMMARY_NAMES`` names each); the pods binding or waiting on Permit; the
    preemptions (preemptor -> node, victims; at most ``SUMMARY_PREEMPTIONS``); the pods of
    another scheduler, by schedulerName."""
    pods = report["pods"]
    c = report["counts"]
    by_run = sum(1 for p in pods if p["outcome"] == "bound" and p["time"] is not None)
    preempted = sum(1 for p in pods if p["outcome"] == "deleted" and (p["deleted"] or {}).get("preemptor"))
    parts = [f"{c['bound']} bound ({by_run} by this run)"]
    if c["binding"]:
        parts.append(f"{c['binding']} binding")
    parts.append(f"{c['pending']} pending")
    parts.append(f"{c['deleted']} deleted ({preempted} preempted)")
    parts.append(f"{c['not-ours']} not ours")
    lines = [f"{_plural(report['total'], 'pod')}"
             + (f" (run until {report['until']:g}s)" if report["until"] is not None else "")
             + ": " + ", ".join(parts)]

    pending = [p for p in pods if p["outcome"] == "pending"]
    if pending:
        groups: dict = {}
        for p in pending:
            groups.setdefault(_pending_reason(p), []).append(p["pod"])
        ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))     # stable: first appearance
        lines.append(f"pending ({len(pending)}):")
        for reason, keys in ordered[:SUMMARY_GROUPS]:
            if len(keys) == 1:
                lines.append(f"  {keys[0]}: {reason}")
            else:
                lines.append(f"  {len(keys)} pods: {reason}")
                lines.append(f"    {_names(keys)}")
        rest = ordered[SUMMARY_GROUPS:]
        if rest:
            lines.append(f"  and {len(rest)} more message{'s' if len(rest) != 1 else ''} "
                         f"({_plural(sum(len(k) for _, k in rest), 'pod')})")

    binding = [p for p in pods if p["outcome"] == "binding"]
    if binding:
        waiting = [p["pod"] for p in binding if p.get("waiting_on") is not None]
        in_flight = [p["pod"] for p in binding if p.get("waiting_on") is None]
        if waiting:
            lines.append(f"waiting on Permit ({len(waiting)}): {_names(waiting)}")
        if in_flight:
            lines.append(f"binding ({len(in_flight)}): {_names(in_flight)}")

    preemptors = [p for p in pods if p["victims"]]
    if preemptors:
        lines.append(f"preemptions ({len(preemptors)}):")
        for p in preemptors[:SUMMARY_PREEMPTIONS]:
            node = p["nominated_node"] or p["node"] or "?"
            lines.append(f"  {p['pod']} -> {node}: victims {_names(p['victims'])}")
        rest = preemptors[SUMMARY_PREEMPTIONS:]
        if rest:
            lines.append(f"  and {len(rest)} more ({_plural(sum(len(p['victims']) for p in rest), 'victim')})")

    others = [p for p in pods if p["outcome"] == "not-ours"]
    if others:
        by_sched: dict = {}
        for p in others:
            by_sched.setdefault(p["schedulerName"], []).append(p["pod"])
        lines.append(f"not ours ({len(others)}):")
        names = list(by_sched.items())
        for sched, keys in names[:SUMMARY_NAMES]:
            lines.append(f"  {sched}: {_names(keys)}")
        if len(names) > SUMMARY_NAMES:
            lines.append(f"  and {len(names) - SUMMARY_NAMES} more schedulerNames "
                         f"({_plural(sum(len(k) for _, k in names[SUMMARY_NAMES:]), 'pod')})")
    return "\n".join(lines) + "\n"
