"""A pod's history: every scheduling cycle it had so far, from the revealed trace events only.

Each cycle is built by ``panels.cycle.cycle_at`` (the same Filter matrix, with each cell's status
code, and the same score table, raw → normalised → weighted, as the Current cycle panel), plus
what followed it for this pod: the binding's result and the pod's next queue move.  Like every
panel, it returns plain dicts and never reads beyond the position the session shows.

The history leads with kube-scheduler's own summary (``summary``): the outcome of the pod's
latest cycle and, when its last revealed ``CycleEnd`` did not schedule it, that event's message
(upstream's ``FitError.Error()``: ``0/40 nodes are available: ...``) and its
``unschedulablePlugins``; for a pod of another scheduler, that it is not ours.
"""
from __future__ import annotations

import bisect

from visualizer.events import forward
from visualizer.formatting import seconds
from visualizer.panels.cycle import cycle_at

HISTORY_CYCLES = 25        # the latest cycles shown in full; earlier ones are counted
MAX_POD_KEY = 320          # namespace (63) / name (253), with room to spare


class PodIndex:
    """Where each pod's own events are in a session's timeline (its cycle starts, bindings and
    queue moves), built once and extended as the timeline grows, so a pod's history costs what
    it shows, not the length of the run (the timeline of a 2,000-node session holds millions of
    events)."""

    TYPES = frozenset(("CycleStart", "CycleSkipped", "Bound", "BindFailed", "QueueTransition", "PodDeleted"))

    def __init__(self, events: list):
        self.events = events
        self.upto = 0
        self.by_pod: dict = {}

    def extend(self) -> "PodIndex":
        events, by_pod, types = self.events, self.by_pod, self.TYPES
        end = len(events)
        for e in forward(events, self.upto, end, quiet=False, types=types):   # seq = index
            key = e.get("pod")
            if key is not None:
                by_pod.setdefault(key, []).append(e["seq"])
        self.upto = end
        return self

    def of(self, pod_key: str, position: int) -> list:
        found = self.by_pod.get(pod_key, [])
        return found[:bisect.bisect_left(found, position)]


def pod_index(live) -> PodIndex:
    index = getattr(live, "_pod_index", None)
    if index is None or index.events is not live.timeline:
        index = PodIndex(live.timeline)
        live._pod_index = index
    return index.extend()


def pod_history(live, pod_key: str) -> dict:
    """The history of ``pod_key`` in the session as shown now (``found`` is False for a pod the
    shown state and the revealed events do not know)."""
    st = live.stepper
    events, position = live.timeline, st.position   # the timeline and the shown run agree up to position
    starts = []            # indices of this pod's CycleStart / CycleSkipped
    after = {}             # cycle index -> {"bound": ..., "then": ...}
    own = pod_index(live).of(pod_key, position)
    for i in own:
        e = events[i]
        t = e["type"]
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
    info = st.state()["pods"].get(pod_key)
    pod = st.engine.pods.get(pod_key)
    scheduler = pod.scheduler_name if pod is not None else None
    state = None
    if info is not None and st.at_unit_boundary:   # mid-unit, the engine's state is ahead of the page
        state = {"phase": info.get("phase"), "node": info.get("nodeName"), "queue": info.get("queue"),
                 "attempts": info.get("attempts"), "nominated": info.get("nominatedNodeName"),
                 "plugins": info.get("unschedulablePlugins") or [], "gated": info.get("gated", False)}
    return {"pod": pod_key, "found": bool(own) or info is not None, "position": position,
            "summary": summary(cycles, scheduler, sorted(st.engine.frameworks)),
            "claims": pod_claims(st, pod_key),
            "time": seconds(events[position - 1]["time"]) if position else "0",
            "cycles": cycles, "total": len(starts), "hidden": max(0, len(starts) - HISTORY_CYCLES),
            "errors": sum(len(c.get("errors") or []) for c in cycles), "state": state}


def summary(cycles: list, scheduler: str | None, profiles: list) -> dict:
    """What kube-scheduler would say about the pod, first: ``outcome`` (``not-ours``, ``none``
    (no cycle yet), ``skipped``, ``in-cycle``, ``scheduled``, ``bound``, ``bind-failed`` or the
    failed cycle's result, ``Unschedulable`` or ``Error``), the ``cycle`` it is about, and from
    the last revealed CycleEnd that did not schedule the pod its ``message`` (the FitError
    message), ``plugins`` (its unschedulablePlugins) and ``nominated`` node."""
    out = {"outcome": "none", "cycle": None, "message": "", "plugins": [], "nominated": None,
           "scheduler": scheduler, "profiles": profiles, "failed": None}
    if scheduler is not None and scheduler not in profiles:
        out["outcome"] = "not-ours"
        return out
    if not cycles:
        return out
    last = cycles[-1]
    out["cycle"] = last
    if last["skipped"]:
        out["outcome"] = "skipped"
    elif last["end"] is None:
        out["outcome"] = "in-cycle"
    elif last["end"]["result"] == "Scheduled":
        bound = last.get("bound")
        out["outcome"] = ("bind-failed" if bound["failed"] else "bound") if bound else "scheduled"
    else:
        out["outcome"] = last["end"]["result"]
    # the latest CycleEnd revealed: if it did not schedule the pod, its FitError and plugins
    ended = next((c for c in reversed(cycles) if not c["skipped"] and c["end"] is not None), None)
    if ended is not None and ended["end"]["result"] != "Scheduled":
        out.update(message=ended["end"]["message"], plugins=list(ended["end"]["plugins"]),
                   nominated=ended["end"]["nominated_node"], failed=ended)
    return out


def pod_claims(st, pod_key: str) -> list:
    """The pod's PersistentVolumeClaims (its ``persistentVolumeClaim`` and ``ephemeral``
    volumes), each with the claim as the engine holds it: phase, volume, class and selected
    node (``None`` when the claim does not exist, or mid-unit, when the engine is ahead of the
    page)."""
    from engine.volumes import pod_claim_names
    pod = st.engine.pods.get(pod_key)
    if pod is None or not pod.volumes:
        return []
    vols = st.state().get("volumes", {}).get("persistentVolumeClaims", {}) if st.at_unit_boundary else {}
    out = []
    for v, name, ephemeral in pod_claim_names(pod):
        c = vols.get(f"{pod.namespace}/{name}")
        out.append({"volume": v.name, "claim": name, "ephemeral": ephemeral,
                    "exists": c is not None if st.at_unit_boundary else None,
                    "phase": c and c["phase"], "pv": c and c["volumeName"], "class": c and c["storageClassName"],
                    "node": c and c["selectedNode"]})
    return out
