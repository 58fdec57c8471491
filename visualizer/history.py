"""A pod's history: every scheduling cycle it had so far, from the revealed trace events only.

Each cycle is built by ``presenters.cycle_at`` (the same Filter matrix, with each cell's status
code, and the same score table, raw → normalised → weighted, as the Current cycle panel), plus
what followed it for this pod: the binding's result and the pod's next queue move.  Like every
panel, it returns plain dicts and never reads beyond the position the session shows.
"""
from __future__ import annotations

from visualizer.presenters import cycle_at, seconds

HISTORY_CYCLES = 25        # the latest cycles shown in full; earlier ones are counted
MAX_POD_KEY = 320          # namespace (63) / name (253), with room to spare


def pod_history(live, pod_key: str) -> dict:
    """The history of ``pod_key`` in the session as shown now (``found`` is False for a pod the
    revealed events never mention)."""
    st = live.stepper
    events, position = st.events, st.position
    starts = []            # indices of this pod's CycleStart / CycleSkipped
    after = {}             # cycle index -> {"bound": ..., "then": ...}
    mentioned = False
    for i in range(position):
        e = events[i]
        if e.get("pod") != pod_key and e.get("preemptor") != pod_key and e.get("victim") != pod_key \
                and not (e["type"] == "Action" and e.get("kind") == "Pod" and e.get("name") == pod_key):
            continue
        mentioned = True
        t = e["type"]
        if e.get("pod") != pod_key:
            continue
        if t in ("CycleStart", "CycleSkipped"):
            starts.append(i)
            after[i] = {"bound": None, "then": None}
        elif not starts:
            continue
        elif t == "Bound":
            after[starts[-1]]["bound"] = {"node": e["node"], "time": seconds(e["time"]), "failed": False}
        elif t == "BindFailed":
            after[starts[-1]]["bound"] = {"node": e["node"], "time": seconds(e["time"]), "failed": True,
                                          "reasons": e.get("reasons") or []}
        elif t == "QueueTransition" and e.get("to") and after[starts[-1]]["then"] is None:
            after[starts[-1]]["then"] = {"to": e["to"], "time": seconds(e["time"]),
                                         "message": e.get("message", "")}
    cycles = []
    for i in starts[-HISTORY_CYCLES:]:
        c = cycle_at(events, i, position)
        c["then"] = after[i]["then"]
        if after[i]["bound"] is not None:
            c["bound"] = after[i]["bound"]
        cycles.append(c)
    state = None
    if st.at_unit_boundary:
        info = st.state()["pods"].get(pod_key)
        if info is not None:
            state = {"phase": info.get("phase"), "node": info.get("nodeName"), "queue": info.get("queue"),
                     "attempts": info.get("attempts"), "nominated": info.get("nominatedNodeName"),
                     "plugins": info.get("unschedulablePlugins") or [], "gated": info.get("gated", False)}
    return {"pod": pod_key, "found": mentioned or state is not None, "position": position,
            "time": seconds(events[position - 1]["time"]) if position else "0",
            "cycles": cycles, "total": len(starts), "hidden": max(0, len(starts) - HISTORY_CYCLES),
            "errors": sum(len(c.get("errors") or []) for c in cycles), "state": state}
