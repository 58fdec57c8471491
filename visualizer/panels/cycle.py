"""The current-cycle panel (templates/visualizer/partials/_cycle.html, its plugin errors in
_cycle_errors.html): the latest scheduling cycle, its extension points, the results of each
plugin call, the nominated node, the selected host, the binding and the outcome. The cycle's
Filter matrix is ``visualizer.panels.filter_matrix``'s, its score table
``visualizer.panels.score_table``'s; ``cycle_at`` also builds each cycle of a pod's history
(visualizer.history)."""
from __future__ import annotations

from visualizer.formatting import seconds
from visualizer.panels.common import TraceIndex, _result
from visualizer.panels.filter_matrix import matrix
from visualizer.panels.score_table import final_table, scoring_table

EXTENSION_POINTS = ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "NormalizeScore",
                    "Reserve", "Permit", "PreBind", "Bind", "PostBind")


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
                ctx["scores"] = final_table(e)
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
        ctx["filter"] = matrix(filter_nodes, filter_plugins, cells)
    if ctx["scores"] is None and score_nodes:
        ctx["scores"] = scoring_table(score_nodes, score_plugins, raw_scores)
    ctx["points"] = [{"name": p, "done": p in seen_points} for p in EXTENSION_POINTS]
    return ctx
