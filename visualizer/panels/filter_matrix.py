"""The Filter matrix (templates/visualizer/partials/_filter_matrix.html, in the cycle panel
and in a pod's history): one row per node the cycle evaluated, one column per Filter plugin,
each cell a call's status code (or not run). ``matrix`` builds it from the calls
``cycle.cycle_at`` gathers; ``filter_window`` gives the current cycle's matrix its page of
rows and its outcome filter (a page's own view)."""
from __future__ import annotations

from django.utils.html import format_html
from django.utils.safestring import mark_safe

from visualizer.panels.common import MATRIX_ROWS, SUCCESS, _pager, _result

MATRIX_PAGE = 50          # rows per page of the current cycle's Filter matrix


def matrix(nodes: list, plugins: list, cells: dict) -> dict:
    """The Filter matrix of one cycle from its Filter calls (``cells``: (node, plugin) -> the
    PluginResult): every evaluated node in evaluation order, the first MATRIX_ROWS with their
    cells made (a pod's history shows those; ``filter_window`` pages through the rest)."""
    rows = []
    for n in nodes:
        calls = [cells.get((n, p)) for p in plugins]
        rows.append({"node": n, "calls": calls,
                     "passed": any(calls) and all(c is None or (c.get("code") or "Error") in (SUCCESS, "Skip")
                                                  for c in calls)})
    for row in rows[:MATRIX_ROWS]:
        _fill_cells(row)
    return {"plugins": plugins, "rows": rows[:MATRIX_ROWS], "all_rows": rows,
            "hidden": max(0, len(rows) - MATRIX_ROWS), "evaluated": len(rows),
            "feasible": sum(1 for r in rows if r["passed"])}


def _fill_cells(row: dict) -> None:
    """A Filter-matrix row's cells (_result of each call, None where the plugin did not run),
    and ``deciding``: the cell of the plugin that rejected the node (the first call that did
    not pass; the framework runs no Filter plugin after it), None for a feasible node."""
    if "cells" not in row:
        row["cells"] = [_result(c) if c is not None else None for c in row["calls"]]
        row["deciding"] = next((c for c in row["cells"] if c is not None and not c["ok"]), None)


def filter_window(cycle: dict | None, view=None) -> None:
    """The current cycle's Filter matrix shows every evaluated node: a page of MATRIX_PAGE rows
    in evaluation order, of all rows or only the feasible or only the filtered-out ones (the
    page's own view), with the counts of each."""
    if not cycle or not cycle.get("filter"):
        return
    view = view or {}
    f = cycle["filter"]
    rows = f["all_rows"]
    outcome = view.get("outcome", "all")
    if outcome == "feasible":
        rows = [r for r in rows if r["passed"]]
    elif outcome == "filtered":
        rows = [r for r in rows if not r["passed"]]
    pager = _pager(len(rows), MATRIX_PAGE, view.get("page-matrix", 0))
    window = rows[pager["start"]:pager["last"]]
    for row in window:
        _fill_cells(row)
        if "html" not in row and not any(c is not None and c.get("error") for c in row["cells"]):
            row["html"] = _matrix_row_html(row)
    f.update(rows=window, pager=pager, outcome=outcome, matched=len(rows),
             filtered_out=f["evaluated"] - f["feasible"], hidden=0, paged=True,
             outcomes=[{"name": o, "label": label, "count": count, "pressed": o == outcome}
                       for o, label, count in (("all", "all", f["evaluated"]), ("feasible", "✓ feasible", f["feasible"]),
                                               ("filtered", "✗ filtered out", f["evaluated"] - f["feasible"]))])


def _matrix_row_html(row: dict) -> str:
    """One row of the Filter matrix, as _filter_matrix.html writes it (a row with a plugin's
    error stays with the template, which includes the error's popover). Built here: a page of
    50 rows × 10 plugins through the template language costs more than the rest of the panel."""
    from visualizer.templatetags.visualizer_extras import camelbreak
    cells = []
    for cell in row["cells"]:
        if cell is None:
            cells.append('<td class="cell--none"><span title="not run (an earlier filter rejected the node)">·</span></td>')
            continue
        code = cell["code"]
        mark = "✓" if code == "Success" else ("↷" if code == "Skip" else "✗")
        reasons = (format_html('<span class="reasons">{}</span>', "; ".join(cell["reasons"]))
                   if cell.get("reasons") else "")
        cells.append(format_html('<td class="cell--{} {}" data-plugin="{}" data-code="{}"><span class="code">{} <span class="code-text">{}</span></span>{}</td>',
                                 code.lower(), "cell--pass" if cell["ok"] else "cell--fail", cell["plugin"], code,
                                 mark, camelbreak(code), reasons))
    passed = row["passed"]
    return format_html(
        '<tr data-filter-node="{}" class="{}"><th scope="row" class="node-cell">{} {}</th>{}</tr>',
        row["node"], "row--pass" if passed else "row--fail",
        mark_safe('<span class="mark mark--ok" title="feasible">✓</span>' if passed else
                  '<span class="mark mark--fail" title="filtered out">✗</span>'),
        row["node"], mark_safe("".join(cells)))
