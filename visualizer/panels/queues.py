"""The queues panel (templates/visualizer/partials/_queues.html): activeQ, podBackoffQ and
unschedulablePods a page at a time, each pod with why it is there; the pod in flight; the
pods not yet in a queue; the pods waiting on Permit (the fourth group beside the queues); and
the pending pods of another scheduler ("not ours": their ``spec.schedulerName`` is none of the
scenario's profiles, so kube-scheduler never queues them), a page at a time under the rest."""
from __future__ import annotations

from engine import US
from visualizer.events import QUEUE_TRANSITION, backward, forward
from visualizer.formatting import seconds
from visualizer.panels.common import QUEUES, _pager

QUEUE_PAGE = 10           # pods listed per page of a queue column (the count shows them all)


def _last_transition_messages(keys, events, position, limit=50000) -> dict:
    """The message of each pod's latest revealed QueueTransition: why it is where it is."""
    out = {}
    if not keys:
        return out
    for e in backward(events, position, position - limit, quiet=False, types=QUEUE_TRANSITION):
        if e["pod"] in keys and e["pod"] not in out:
            out[e["pod"]] = e.get("message", "")
            if len(out) == len(keys):
                break
    return out


def queues(live, mom, view=None) -> dict:
    st = live.stepper
    engine = st.engine
    q = engine.queue
    now = int(round(mom["time"] * US))
    pods = mom["pods"]
    moved = {}
    start, end = live.last_change
    if end > start:
        for e in forward(st.events, start, end, quiet=False, types=QUEUE_TRANSITION):
            moved[e["pod"]] = e.get("from")
    view = view or {}
    columns = []
    shown = mom["queues"]
    flight = mom["in_flight"]
    pagers = {name: _pager(len(shown[name]), QUEUE_PAGE, view.get(f"page-{name}", 0)) for name, _l, _o in QUEUES}
    windows = {name: shown[name][pagers[name]["start"]:pagers[name]["last"]] for name, _l, _o in QUEUES}
    why = _last_transition_messages({k for keys in windows.values() for k in keys}
                                    | ({flight["key"]} if flight else set()), st.events, st.position)
    for name, label, order in QUEUES:
        items = []
        for key in windows[name]:
            info = pods.get(key, {})
            pinfo = q.get(key)
            item = {"key": key, "priority": info.get("priority", 0), "attempts": info.get("attempts", 0),
                    "just_moved": key in moved, "moved_from": moved.get(key), "why": why.get(key, "")}
            if pinfo is not None:
                item["queue_time"] = seconds(pinfo.timestamp / US)
                if name == "backoffQ":
                    expiry = q.get_backoff_time(pinfo)
                    item["backoff_expiry"] = seconds(expiry / US)
                    item["backoff_remaining"] = seconds(max(0, expiry - now) / US)
                if name == "unschedulablePods":
                    item["parked_for"] = seconds(max(0, now - pinfo.timestamp) / US)
            if name == "unschedulablePods":
                item["plugins"] = info.get("unschedulablePlugins", [])
                item["gated"] = info.get("gated", False)
            items.append(item)
        columns.append({"name": name, "label": label, "order": order, "pods": items, "total": len(shown[name]),
                        "pager": pagers[name], "hidden": len(shown[name]) - len(items)})
    in_flight = []
    if flight is not None:
        info = pods.get(flight["key"], {})
        in_flight.append({"key": flight["key"], "cycle": flight["cycle"], "stage": flight["stage"],
                          "ended": flight["ended"], "priority": info.get("priority", 0),
                          "attempts": info.get("attempts", 0), "why": why.get(flight["key"], ""),
                          "just_moved": flight["key"] in moved})
    waiting = [{"key": w["key"], "from": w["from"], "priority": pods[w["key"]].get("priority", 0)}
               for w in mom["waiting"][:QUEUE_PAGE]]
    return {"columns": columns, "in_flight": in_flight, "waiting": waiting,
            "waiting_total": len(mom["waiting"]), "waiting_hidden": len(mom["waiting"]) - len(waiting),
            "pending": mom["metrics"]["pending_pods"], "permit": permit_waiting(mom, pods, moved),
            "not_ours": not_ours(live, mom, view)}


def not_ours(live, mom, view) -> dict:
    """The pending pods of another scheduler, a page of QUEUE_PAGE at a time (the page's own
    view, ``page-notOurs``): each with its ``schedulerName``, and the scenario's profiles."""
    everyone = mom.get("not_ours") or []
    pager = _pager(len(everyone), QUEUE_PAGE, view.get("page-notOurs", 0))
    return {"pods": [{"key": p["key"], "scheduler": p["schedulerName"]}
                     for p in everyone[pager["start"]:pager["last"]]],
            "total": len(everyone), "pager": pager, "profiles": sorted(live.stepper.engine.frameworks)}


def permit_waiting(mom, pods, moved=()) -> list | None:
    """Pods waiting on Permit (the fourth group beside the queues), or None for a scenario
    without Permit plugins: each with its node, its pending plugins and the time left on each
    plugin's timer, and the signal if one was given."""
    waiting = mom.get("waitingPods")
    if waiting is None:
        return None
    now = mom["time"]
    out = []
    for key, w in waiting.items():
        plugins = [{"name": name, "deadline": seconds(deadline), "remaining": seconds(max(0.0, deadline - now))}
                   for name, deadline in w["plugins"].items()]
        first = min(w["plugins"].values()) if w["plugins"] else None
        out.append({"key": key, "node": w["node"], "since": seconds(w["since"]), "plugins": plugins,
                    "result": w["result"], "priority": pods.get(key, {}).get("priority", 0),
                    "remaining": seconds(max(0.0, first - now)) if first is not None else None,
                    "just_moved": key in moved})
    return out
