"""The metrics panel (templates/visualizer/partials/_metrics.html): the scheduler's metrics at
this moment (pending pods, incoming pods, attempts, preemption, unschedulable pods by plugin)
and the chart of pending pods per queue over virtual time, laid out here as plain SVG."""
from __future__ import annotations

import math

from django.utils.html import format_html_join

from visualizer.formatting import seconds
from visualizer.panels.common import TraceIndex

CHART_POINTS = 300


def metrics(mom, position: int, index: TraceIndex) -> dict:
    m = mom["metrics"]
    names = ("activeQ", "backoffQ", "unschedulablePods")
    series = [(0.0, dict.fromkeys(names, 0))]
    points = index.queue_series(position)
    if len(points) > CHART_POINTS:   # keep the page light on long runs
        step = len(points) / CHART_POINTS
        points = [points[int(i * step)] for i in range(CHART_POINTS)] + [points[-1]]
    series += [(t, dict(zip(names, c))) for _, t, c in points]
    now = mom["time"]
    # the chart ends on what the queue columns show now (a deleted pending pod leaves its
    # queue without a QueueTransition)
    shown = {name: len(mom["queues"][name]) for name in names}
    if series[-1][0] < now:
        series.append((now, shown))
    else:
        series[-1] = (series[-1][0], shown)
    if series[-1][0] > 0:
        # over virtual time, each instant shows where its pods ended up (a pod popped and
        # requeued at one instant is no spike); all at one instant, each change counts
        collapsed = []
        for t, c in series:
            if collapsed and collapsed[-1][0] == t:
                collapsed[-1] = (t, c)
            else:
                collapsed.append((t, c))
        series = collapsed if len(collapsed) > 1 else [(0.0, collapsed[0][1]), (now, collapsed[0][1])]
    return {"pending": m["pending_pods"], "incoming": sorted(m["queue_incoming_pods_total"].items()),
            "attempts": sorted(m["schedule_attempts_total"].items()),
            "preemption_attempts": m["preemption_attempts_total"],
            "preemption_victims": m["preemption_victims_total"],
            "unschedulable": sorted(m["unschedulable_pods"].items()),
            "chart": _chart(series)}


CHART_COLOURS = {"activeQ": "#326ce5", "backoffQ": "#bf8700", "unschedulablePods": "#cf222e"}


def _nice_step(span: float, ticks: int) -> float:
    """A round tick spacing (1, 2 or 5 times a power of ten) giving at most ``ticks`` ticks."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return m * power
    return 10 * power


def _chart(series, width=480, height=190):
    """Pending pods per queue over virtual time as an SVG line chart with axes: step lines,
    integer y ticks, x ticks in virtual seconds (or, when every change happened at one
    instant, numbered changes), and one hover band per change whose tooltip gives the values.
    Everything is laid out here, so the chart is plain SVG in every frame."""
    left, right, top, bottom = 40, 12, 10, 34
    pw, ph = width - left - right, height - top - bottom
    by_time = series[-1][0] > 0
    x_max = series[-1][0] if by_time else max(1, len(series) - 1)
    peak = max(1, max(max(c.values()) for _, c in series))
    y_step = max(1, int(math.ceil(_nice_step(peak, 4))))
    y_top = y_step * math.ceil(peak / y_step)

    def x_of(i, t):
        return round(left + pw * (t if by_time else i) / x_max, 1)

    def y_of(v):
        return round(top + ph - ph * v / y_top, 1)

    lines = []
    for name in ("activeQ", "backoffQ", "unschedulablePods"):
        pts, prev_y = [], None
        for i, (t, c) in enumerate(series):
            x, y = x_of(i, t), y_of(c[name])
            if prev_y is not None:
                pts.append(f"{x},{prev_y}")
            pts.append(f"{x},{y}")
            prev_y = y
        lines.append({"name": name, "label": name, "points": " ".join(pts), "last": series[-1][1][name],
                      "colour": CHART_COLOURS[name]})
    y_ticks = [{"y": y_of(v), "label": v} for v in range(0, y_top + 1, y_step)]
    x_step = _nice_step(x_max, 6) if by_time else max(1, math.ceil(_nice_step(x_max, 6)))
    x_ticks, v = [], 0.0
    while v <= x_max + 1e-9:
        x_ticks.append({"x": round(left + pw * v / x_max, 1),
                        "label": (seconds(v) + " s") if by_time else str(int(v))})
        v = round(v + x_step, 9)
    bands = []
    for i, (t, c) in enumerate(series):
        x0 = x_of(i, t)
        x1 = x_of(i + 1, series[i + 1][0]) if i + 1 < len(series) else left + pw
        if x1 - x0 < 3 and i + 1 < len(series):
            continue   # overtaken within 3 px (the same instant, say): the next band shows the result
        title = (f"t = {seconds(t)} s" if by_time else f"change {i}") + ": " + \
            ", ".join(f"{n} {c[n]}" for n in ("activeQ", "backoffQ", "unschedulablePods"))
        bands.append((x0, top, round(max(3.0, x1 - x0), 1), ph, title, title))
    bands_html = format_html_join("", '<rect x="{}" y="{}" width="{}" height="{}" data-values="{}"><title>{}</title></rect>',
                                  bands)
    return {"width": width, "height": height, "peak": peak, "t_max": seconds(series[-1][0]), "lines": lines,
            "by_time": by_time, "left": left, "top": top, "plot_width": pw, "plot_height": ph,
            "bottom_y": top + ph, "right_x": left + pw, "y_ticks": y_ticks, "x_ticks": x_ticks, "bands": bands_html,
            "x_label": "virtual time (s)" if by_time else f"queue changes, all at {seconds(series[-1][0])} s",
            "label_y": height - 4, "label_x": left + pw / 2}
