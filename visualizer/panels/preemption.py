"""The preemption panel (templates/visualizer/partials/_preemption.html): the latest
preemption, DefaultPreemption's PostFilter, node by node: the pods removed, the reprieve of
each victim, the candidates, the criteria that picked one, and the result."""
from __future__ import annotations

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
            criteria = e.get("criteria", [])
            ctx["pick"] = {
                "node": e["node"], "criterion": e["criterion"], "criteria": [
                    {"name": c, "deciding": c == e["criterion"]} for c in criteria],
                "by_rule": e["criterion"] not in criteria,
                "rows": [{"node": c["node"], "chosen": c["node"] == e["node"],
                          "victims": c.get("victims", []), "pdb_violations": c.get("pdbViolations", 0),
                          "values": [{"value": c.get("values", {}).get(k), "deciding": k == e["criterion"]}
                                     for k in criteria]} for c in e.get("candidates", [])],
            }
        elif t == "PluginResult" and e.get("point") == "PostFilter":
            ctx["result"] = _result(e)
    return ctx
