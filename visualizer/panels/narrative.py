"""The narrative panel (templates/visualizer/partials/_narrative.html): the scenario's
description and its cues, each shown once reached (its ``at`` time, its ``when`` event, or
both), the latest first. Each cue names the panel it is about (its ``panel``, else one read
from its ``when`` event: ``cue_panel``), which presentation mode brings on screen
(static/js/session.js)."""
from __future__ import annotations

import bisect

from visualizer import markdown
from visualizer.panels.common import TraceIndex


# A cue without ``panel``: the panel that shows its ``when`` event (by type; a PluginResult
# by its extension point); an ``at`` cue, or an event type not listed, is about the queues.
_PANEL_OF_TYPE = {
    "QueueTransition": "queues", "PermitWait": "queues", "PermitAllow": "queues",
    "PermitReject": "queues", "PermitTimeout": "queues",
    "CycleStart": "cycle", "CycleEnd": "cycle", "CycleSkipped": "cycle", "PluginError": "cycle",
    "FilterStopped": "filter", "NominatedNodeEvaluated": "filter", "HostSelected": "scores",
    "PreemptionIneligible": "preemption", "PreemptionNodeResult": "preemption",
    "ReprieveStart": "preemption", "ReprieveFits": "preemption", "ReprieveStep": "preemption",
    "PreemptionCandidate": "preemption", "PreemptionDryRunStop": "preemption",
    "PreemptionPick": "preemption", "Nomination": "preemption",
    "Bound": "nodes", "BindFailed": "nodes", "PodDeleted": "nodes", "PodRemoved": "nodes",
    "ActionSkipped": "log",
}
_PANEL_OF_POINT = {"PreFilter": "filter", "Filter": "filter", "PostFilter": "preemption",
                   "PreScore": "scores", "Score": "scores", "NormalizeScore": "scores"}


def cue_panel(cue: dict) -> str:
    """The panel ``cue`` is about: its own ``panel`` (engine/scenario.py CUE_PANELS, or
    ``node:<name>``), else the one that shows its ``when`` event."""
    if cue.get("panel"):
        return cue["panel"]
    when = cue.get("when") or {}
    kind = when.get("type")
    if kind == "PluginResult":
        return _PANEL_OF_POINT.get(when.get("point"), "cycle")
    if kind == "Action":
        return "nodes" if when.get("kind") == "Node" else "queues"
    return _PANEL_OF_TYPE.get(kind, "queues")


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
                         "order": reached_at, "panel": cue_panel(cue),
                         # the part of the panel: the pick table for a cue on the pick
                         "focus": "pick" if (cue.get("when") or {}).get("type") == "PreemptionPick" else ""})
    cues.sort(key=lambda c: (c["order"], c["index"]))
    if cues:
        cues[-1]["latest"] = True
    description = live.scenario.description or ""
    return {"description": markdown.render(description) if description.strip() else "", "cues": cues,
            "latest": cues[-1] if cues else None, "earlier": cues[:-1][::-1],
            "cue_total": len(live.scenario.cues)}
