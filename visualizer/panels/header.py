"""The header panel (templates/visualizer/partials/_header.html): the session's title, the
virtual clock, the scheduling and move-request cycle counters, the feature gates, and where
the run is (position, head, partial unit, playing)."""
from __future__ import annotations

from visualizer.formatting import seconds


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
