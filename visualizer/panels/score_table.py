"""The score table (templates/visualizer/partials/_score_table.html, in the cycle panel and
in a pod's history): one row per scored node, one column per Score plugin, each cell the raw
score, the normalised score and the weighted one. While scoring goes on it shows the calls
so far (``scoring_table``); once a host is selected, HostSelected's detail (``final_table``)."""
from __future__ import annotations

from visualizer.panels.common import MATRIX_ROWS, SUCCESS, _result


def final_table(e: dict) -> dict:
    """The score table from a HostSelected event with ``detail``: the nodes ranked by total,
    the selected one and the tied ones marked (the first MATRIX_ROWS shown)."""
    plugins = list(next(iter(e["detail"].values())).keys())
    ranked = sorted(e["scores"].items(), key=lambda kv: -kv[1])
    return _shown({"plugins": plugins, "final": True, "rows": [
        {"node": n, "total": total, "selected": n == e["node"], "tied": n in (e.get("ties") or []),
         "cells": [dict(_final_score_cell(e["detail"][n].get(p)), plugin=p) for p in plugins]}
        for n, total in ranked]})


def scoring_table(nodes: list, plugins: list, raw_scores: dict) -> dict:
    """The score table while scoring goes on (``raw_scores``: (node, plugin) -> {point: the
    PluginResult of Score and of NormalizeScore}), in the order the nodes were scored."""
    return _shown({"plugins": plugins, "final": False, "rows": [
        {"node": n, "total": None, "selected": False, "tied": False,
         "cells": [dict(_score_cell(raw_scores.get((n, p), {})), plugin=p) for p in plugins]}
        for n in nodes]})


def _shown(table: dict) -> dict:
    """The table with its first MATRIX_ROWS rows, and the count of the others."""
    rows = table["rows"]
    table["hidden"] = max(0, len(rows) - MATRIX_ROWS)
    table["rows"] = rows[:MATRIX_ROWS]
    return table


def _score_cell(results: dict) -> dict:
    """A cell of the score table while scoring goes on: the Score call's result (its code, and
    its error if the call failed), then NormalizeScore's."""
    cell = {}
    code = None
    if "Score" in results:
        cell["score"] = results["Score"].get("score")
        code = results["Score"].get("code")
        if results["Score"].get("error"):
            cell["error"] = _result(results["Score"])
        elif results["Score"].get("extender") and code != SUCCESS:
            # a scheduler extender's prioritize call that failed: no score, the reason (upstream
            # ignores the error, whether or not the extender is ignorable)
            cell["failed"] = {"code": code, "reasons": results["Score"].get("reasons") or []}
    if "NormalizeScore" in results:
        cell["normalized"] = results["NormalizeScore"].get("score")
        cell["weighted"] = results["NormalizeScore"].get("weightedScore")
        if results["NormalizeScore"].get("code") not in (None, SUCCESS):
            code = results["NormalizeScore"]["code"]
        if results["NormalizeScore"].get("error"):
            cell["error"] = _result(results["NormalizeScore"])
    if code is not None:
        cell["code"] = code
    return cell


def _final_score_cell(detail) -> dict:
    """A cell of the final score table (HostSelected's detail): every call there succeeded."""
    if not detail:
        return {}
    return {"score": detail.get("score"), "normalized": detail.get("normalized"),
            "weighted": detail.get("weighted"), "code": SUCCESS}
