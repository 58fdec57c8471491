"""The preemption panel (templates/visualizer/partials/_preemption.html): the latest
preemption, DefaultPreemption's PostFilter, node by node: the pods removed, the reprieve of
each victim, the candidates, the criteria that picked one, and the result."""
from __future__ import annotations

from visualizer.formatting import seconds
from visualizer.panels.common import TraceIndex, _result


def preemption(events: list, position: int, index: TraceIndex, current_cycle_number=None) -> dict | None:
    """The latest preemption (DefaultPreemption's PostFilter) within the first ``position`` events."""
    i = index.last_preemption(position)
    if i is None:
        return None
    last = events[i]
    preemptor, cycle = last["preemptor"], last.get("cycle")
    ctx = {"preemptor": preemptor, "cycle": cycle, "is_current": cycle == current_cycle_number,
           "ineligible": None, "nodes": [], "stop": None, "pick": None, "result": None}
    start = index.last_cycle_start(i + 1) or 0   # the preemption ran inside that cycle
    by_node = {}

    def node_entry(name):
        if name not in by_node:
            by_node[name] = {"node": name, "removed": [], "fits": None, "steps": [], "candidate": None,
                             "result": None}
            ctx["nodes"].append(by_node[name])
        return by_node[name]

    for e in events[start:position]:
        if e["seq"] > start and e["type"] in ("CycleStart", "CycleSkipped"):
            break
        if e.get("cycle") != cycle or e.get("preemptor", e.get("pod")) != preemptor:
            continue
        t = e["type"]
        if t == "PreemptionIneligible":
            ctx["ineligible"] = e.get("reason", "")
        elif t == "PreemptionNodeResult":
            node_entry(e["node"])["result"] = {"code": e.get("code"), "reason": e.get("reason", "")}
        elif t == "ReprieveStart":
            node_entry(e["node"])["removed"] = e.get("removed", [])
            by_node[e["node"]]["start_message"] = e.get("message", "")
        elif t == "ReprieveFits":
            node_entry(e["node"])["fits"] = {"fits": e["fits"], "plugin": e.get("plugin"),
                                             "reasons": e.get("reasons") or []}
        elif t == "ReprieveStep":
            node_entry(e["node"])["steps"].append({
                "victim": e["victim"], "reprieved": e["reprieved"], "pdb": e.get("pdbViolating", False),
                "plugin": e.get("plugin"), "reasons": e.get("reasons") or [], "message": e.get("message", ""),
                "seq": e["seq"]})
        elif t == "PreemptionCandidate":
            node_entry(e["node"])["candidate"] = {"victims": e.get("victims", []),
                                                  "pdb_violations": e.get("pdbViolations", 0)}
        elif t == "PreemptionDryRunStop":
            ctx["stop"] = e.get("reason", "")
        elif t == "PreemptionPick":
            ctx["pick"] = pick_table(e)
        elif t == "PluginResult" and e.get("point") == "PostFilter":
            ctx["result"] = _result(e)
    return ctx


# ---------------------------------------------------------------------- the pick, in real values

SHIFT = 2 ** 31   # math.MaxInt32 + 1, added to each victim's priority by minSumPriorities

# criterion -> (number, short label, direction, what the value is)
PICK_CRITERIA = {
    "minNumPDBViolatingVictims": (1, "PDB violations", "lower wins",
                                  "the number of victims whose eviction violates a PodDisruptionBudget"),
    "minHighestPriorityVictim": (2, "top victim priority", "lower wins",
                                 "the priority of the candidate's most important victim (upstream's "
                                 "victims[0]; victims that violate a PDB are listed first)"),
    "minSumPriorities": (3, "priority sum", "lower wins",
                         "the sum of the victims' priorities. Upstream adds 2147483648 (MaxInt32 + 1) to "
                         "each victim's priority before summing, so a negative priority cannot make a sum "
                         "smaller; it compares those shifted sums (plain sum + victims × 2147483648), shown "
                         "under the plain sum when the candidates have different numbers of victims"),
    "minNumPods": (4, "victims", "lower wins", "the number of victims"),
    "latestStartTime": (5, "start of top victims", "later wins",
                        "the earliest start time among the candidate's highest-priority victims "
                        "(GetEarliestPodStartTime), in virtual seconds"),
    "firstInNodeOrder": (6, "first in order", "first wins",
                         "the tie-break: the first remaining candidate in the order the dry run found them "
                         "(candidates without PDB violations first; upstream takes the first of a map's "
                         "keys, in no fixed order)"),
}


def real_value(criterion: str, value, victims: int):
    """The value a person reads for one candidate under one criterion, from the engine's score
    in a ``PreemptionPick`` event (upstream ``pickOneNodeForPreemption``,
    pkg/scheduler/framework/preemption/preemption.go, v1.28: each score function returns a
    value where higher wins, negating the counts and priorities where lower is better).

    - minNumPDBViolatingVictims: ``-NumPDBViolations`` -> the number of violations;
    - minHighestPriorityVictim: ``-PodPriority(Pods[0])`` -> that priority;
    - minSumPriorities: ``-Σ(PodPriority + MaxInt32 + 1)`` -> the plain sum of the priorities
      (the score plus ``victims × 2^31``, then negated);
    - minNumPods: ``-len(Pods)`` -> the number of victims;
    - latestStartTime: ``GetEarliestPodStartTime(victims)`` (virtual microseconds here, the
      Go code's UnixNano) -> virtual seconds (``None`` for the engine's MinInt64, no victims).
    """
    if value is None:
        return None
    if criterion == "minSumPriorities":
        return -value - victims * SHIFT
    if criterion == "latestStartTime":
        return None if value <= -(2 ** 63) else value / 10 ** 6
    return -value


def _shown(criterion: str, real) -> str:
    if real is None:
        return "—"
    if criterion == "latestStartTime":
        return f"t={seconds(real)} s"
    return str(real)


def pick_table(e: dict) -> dict:
    """A ``PreemptionPick`` event as the panel's table: one row per criterion of upstream's
    ``pickOneNodeForPreemption`` (and its last rule, the first remaining candidate), one column
    per candidate, each cell the candidate's real value under that criterion and whether it
    survived that round. The rounds are replayed from the event's own scores (higher wins,
    exactly what the engine compared), so the marks agree with ``criterion`` and ``node``."""
    criteria = list(e.get("criteria", []))
    decided_by = e["criterion"]
    candidates = e.get("candidates", [])
    names = [c["node"] for c in candidates]
    scores = {c["node"]: c.get("values", {}) for c in candidates}
    counts = {c["node"]: len(c.get("victims", [])) for c in candidates}
    columns = [{"node": c["node"], "chosen": c["node"] == e["node"], "victims": c.get("victims", []),
                "pdb_violations": c.get("pdbViolations", 0)} for c in candidates]
    compared = decided_by != "onlyCandidate"
    rows, remaining, decided = [], list(names), not compared
    sentences, ties = [], []    # the rounds in words; a run of rounds where all tie, as numbers
    for crit in criteria + ["firstInNodeOrder"]:
        number, label, direction, about = PICK_CRITERIA.get(crit, (len(rows) + 1, crit, "", ""))
        if crit == "firstInNodeOrder":
            real = {n: names.index(n) + 1 for n in names}
            shown = {n: f"#{real[n]}" for n in names}
        else:
            real = {n: real_value(crit, scores[n].get(crit), counts[n]) for n in names}
            shown = {n: _shown(crit, real[n]) for n in names}
        row = {"name": crit, "number": number, "label": label, "direction": direction, "about": about,
               "deciding": crit == decided_by, "cells": [], "status": "", "reached": not decided,
               "shifted": (crit == "minSumPriorities" and not decided
                           and len({counts[n] for n in remaining}) > 1)}
        survivors = []
        if decided:
            row["status"] = "not reached" if compared else ""
        else:
            if crit == "firstInNodeOrder":
                survivors = remaining[:1]
            else:
                score = {n: _score(scores[n].get(crit)) for n in remaining}
                best = max(score.values())
                survivors = [n for n in remaining if score[n] == best]
            losers = [n for n in remaining if n not in survivors]
            if not losers:
                row["status"] = "= tie"
                ties.append(number)
            else:
                if ties:
                    sentences.append(_ties(ties))
                    ties = []
                row["status"] = "◆ decides" if len(survivors) == 1 else "→ next"
                said = ({n: str(real[n] + counts[n] * SHIFT) for n in names} if row["shifted"] else shown)
                sentences.append(f"{number}. {label} ({direction}): {', '.join(survivors)} "
                                 f"({_unit(crit, said[survivors[0]], row['shifted'])}) "
                                 f"beat{'s' if len(survivors) == 1 else ''} "
                                 + ", ".join(f"{n} ({said[n]})" for n in losers) + ".")
            decided = len(survivors) == 1
        for n in names:
            if not row["reached"]:
                state = "idle"
            elif n in survivors:
                state = "win" if len(survivors) == 1 else "tie"
            elif n in remaining:
                state = "out"
            else:
                state = "gone"
            mark = {"win": "✓", "tie": "=" if row["status"] == "= tie" else "✓", "out": "✗"}.get(state, "")
            cell = {"node": n, "value": shown[n], "real": real[n], "state": state, "mark": mark}
            if row["shifted"] and real[n] is not None:
                cell["shifted"] = real[n] + counts[n] * SHIFT
            row["cells"].append(cell)
        if row["reached"]:
            remaining = survivors
        rows.append(row)
    return {"node": e["node"], "criterion": decided_by, "by_rule": decided_by not in criteria,
            "columns": columns, "rows": rows, "verdict": " ".join(sentences)}


def _unit(criterion: str, text: str, shifted: bool) -> str:
    """The winner's value in the verdict, with what it counts: "0 violations", "priority 10"."""
    if criterion == "minNumPDBViolatingVictims":
        return f"{text} violation{'' if text == '1' else 's'}"
    if criterion == "minHighestPriorityVictim":
        return f"priority {text}"
    if criterion == "minSumPriorities":
        return f"{'shifted sum' if shifted else 'sum'} {text}"
    if criterion == "minNumPods":
        return f"{text} victim{'' if text == '1' else 's'}"
    if criterion == "latestStartTime":
        return f"started {text}"
    return text


def _score(value):
    """An event's score for comparison (a missing one loses, as upstream's MinInt64)."""
    return value if isinstance(value, (int, float)) else float("-inf")


def _ties(numbers: list) -> str:
    if len(numbers) == 1:
        return f"Criterion {numbers[0]} ties."
    return f"Criteria {numbers[0]}–{numbers[-1]} tie."
