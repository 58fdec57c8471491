"""Engine state and revealed trace events, turned into plain template context.

Templates never see engine objects: every function here returns dicts, lists, strings and
numbers. ``render_panels`` renders the session page's panels, each one root element with a
stable ``id``, so the same HTML serves the first page load and every WebSocket push (the htmx
ws extension swaps each top-level element of a frame by its id).

Every panel shows one moment, the engine as it was when it emitted the last revealed event
(``visualizer.moment``): when a step reveals only part of a unit of work (stepping by event
through a Pop, say), the queues, the pod in flight, the nodes, the nominations and the metrics
all stop at the revealed event.

This module assembles the page; each panel is built in its own module of
``visualizer.panels``, beside the partial template it fills (the table is in
visualizer/panels/__init__.py): ``panels.queues`` for _queues.html, ``panels.filter_matrix``
for _filter_matrix.html, and so on; ``panels.common`` holds what they share. The names other
modules and the tests read here are re-exported from there.
"""
from __future__ import annotations


from django.template.loader import render_to_string

from visualizer import moment
from visualizer.formatting import seconds  # noqa: F401 - used by visualizer.history through presenters
from visualizer.panels.common import (  # noqa: F401 - re-exported
    HEAT_RESOURCES, VIEW_TEXT_MAX, TraceIndex, normalize_view, quantity, trace_index, unit_state)
from visualizer.panels.cycle import current_cycle, cycle_at  # noqa: F401 - cycle_at re-exported
from visualizer.panels.filter_matrix import MATRIX_PAGE, filter_window  # noqa: F401 - MATRIX_PAGE re-exported
from visualizer.panels.header import header
from visualizer.panels.log import log, summary  # noqa: F401 - summary re-exported
from visualizer.panels.metrics import _chart, metrics  # noqa: F401 - _chart re-exported
from visualizer.panels.narrative import narrative
from visualizer.panels.nodes import NODE_CARD_LIMIT, _label_matcher, nodes  # noqa: F401 - re-exported
from visualizer.panels.preemption import preemption
from visualizer.panels.queues import queues
from visualizer.panels.targets import targets, targets_html  # noqa: F401 - targets_html re-exported
from visualizer.panels.timeline import timeline

PANELS = ("header", "timeline", "queues", "cycle", "nodes", "preemption", "log", "metrics",
          "narrative", "targets", "changes")


# ---------------------------------------------------------------------- the whole page

def context(live, log_filter=None, names=PANELS, view=None) -> dict:
    st = live.stepper
    state = unit_state(st)
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
