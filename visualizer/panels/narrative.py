"""The narrative panel (templates/visualizer/partials/_narrative.html): the scenario's
description and its cues, each shown once reached (its ``at`` time, its ``when`` event, or
both), the latest first."""
from __future__ import annotations

import bisect

from visualizer import markdown
from visualizer.panels.common import TraceIndex


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
