"""The event log panel (templates/visualizer/partials/_log.html): the latest LOG_LIMIT
events, or those of a pod, a node or a type (the log filter), each row made once and kept;
and ``summary``, an event's one-line sentence (also the node cards' "why")."""
from __future__ import annotations

from django.utils.html import format_html

from visualizer.formatting import seconds
from visualizer.panels.common import SUCCESS

LOG_LIMIT = 250


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
    if t == "ExtenderCall":
        return extender_call_summary(e)
    if t == "PluginResult":
        where = f" on {e['node']}" if e.get("node") else ""
        plugin = e["plugin"]
        if e.get("extender"):       # a scheduler extender's verdict or score: its short name
            from visualizer.templatetags.visualizer_extras import extender_label
            plugin = f"extender {extender_label(plugin)}"
        text = f"{e['point']} {plugin}{where}: {e['code']}"
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


def _latency(value) -> str:
    ms = float(value or 0) * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:,.0f} ms"


def extender_call_summary(e: dict) -> str:
    """An ExtenderCall in one line: the extender (its short name), the verb, the pod, the nodes
    sent and what came back (passed, scored, kept, bound, or the error), the latency."""
    from visualizer.templatetags.visualizer_extras import extender_label
    verb, n = e.get("verb"), e.get("nodes") or 0
    results = e.get("results") if isinstance(e.get("results"), dict) else None
    head = f"extender {extender_label(e.get('extender') or '')} {verb} {e.get('pod')}"
    plural = "" if n == 1 else "s"
    if verb == "bind":
        node = next(iter(results), None) if results else None
        sent = f" to {node}" if node else ""
    elif verb == "preempt":
        sent = f": {n} candidate{plural} sent"
    else:
        sent = f": {n} node{plural} sent"
    if e.get("error"):
        how = " (timed out)" if e.get("timedOut") else ""
        ignored = ", ignored" if e.get("ignored") else ""
        return f"{head}{sent}, failed{how}{ignored}: {e['error']} ({_latency(e.get('latency'))})"
    if verb == "filter":
        got = f", {e.get('passed', 0)} passed"
    elif verb == "prioritize":
        got = f", scored × weight {e.get('weight')}" if results is not None else ""
    elif verb == "preempt":
        got = f", {len(results or {})} kept"
    else:
        got = ": bound"
    return f"{head}{sent}{got} ({_latency(e.get('latency'))})"


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
                   "failed": e.get("code") not in (None, SUCCESS, "Skip", "Wait")   # Permit Wait: parked, not failed
                   or e.get("result") in ("Unschedulable", "Error")
                   or e["type"] in ("ActionSkipped", "BindFailed", "PluginError")
                   or (e["type"] == "ExtenderCall" and bool(e.get("error")))}
            row["html"] = _log_row_html(row)
            cache[e["seq"]] = row
        out.append(row)
    return {"rows": out, "matched": matched, "total": position, "hidden": matched - len(shown),
            "filter": f, "filtered": any(f.values())}
