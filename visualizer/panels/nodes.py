"""The nodes panel (templates/visualizer/partials/_nodes.html, one card per node in
_node_card.html): the node cards of a small cluster, the node overview of a larger one (its
search by name, label filter, colour resource and selected node), and the custom resources.
Each page may switch between the two (its own view's ``nodes``: ``cards`` or ``overview``)."""
from __future__ import annotations

from html import escape as html_escape

from django.utils.safestring import mark_safe

from engine import US
from visualizer.events import forward
from visualizer.formatting import seconds
from visualizer.panels.common import HEAT_RESOURCES, quantity
from visualizer.panels.log import summary

NODE_CARD_LIMIT = 12      # up to this many nodes: one card per node by default; above: the node overview
NODE_CARD_MAX = 100       # the most nodes a page may ask to see as cards (a frame of cards costs its size)
MATCH_LIMIT = 20          # nodes listed by a search of the node overview
_LANDING = frozenset(("CycleEnd", "Bound", "PodDeleted", "BindFailed"))


def _resource_order(names):
    first = ["cpu", "memory", "ephemeral-storage", "pods"]
    return [n for n in first if n in names] + sorted(n for n in names if n not in first)


def _label_matcher(expr: str):
    """``key=value``, ``key!=value`` or ``key`` (has the label), as kubectl's -l writes them;
    several separated by commas must all hold. None for no filter."""
    if not expr:
        return None
    terms = []
    for term in expr.split(","):
        term = term.strip()
        if not term:
            continue
        if "!=" in term:
            k, _, v = term.partition("!=")
            terms.append((k.strip(), v.strip(), False))
        elif "=" in term:
            k, _, v = term.partition("=")
            terms.append((k.strip(), v.strip().lstrip("="), True))
        else:
            terms.append((term, None, True))

    def match(labels: dict) -> bool:
        for k, v, equal in terms:
            if v is None:
                if k not in labels:
                    return False
            elif (labels.get(k) == v) != equal:
                return False
        return True
    return match


def nodes(live, mom, view=None) -> dict:
    """The cluster panel. Up to NODE_CARD_LIMIT nodes, by default: one card per node
    (requested vs allocatable, bound, binding, terminating and nominated pods). Above: the node
    overview, one small cell per node coloured by requested/allocatable of the chosen resource,
    with the search by name, the label filter and the card of the selected node. The page's
    view may ask for either (``nodes``: ``overview`` for a small cluster, ``cards`` for one of
    up to NODE_CARD_MAX nodes). The search and the label filter narrow the cards too."""
    view = view or {}
    engine = live.stepper.engine
    now = int(round(mom["time"] * US))
    pods_state = mom["pods"]
    nominated = mom["nominatedPods"]
    hide, restore, phases = mom["hide_on_nodes"], mom["restore_on_nodes"], mom["phase_on_nodes"]
    landed = {}   # pods that just arrived on (or changed on) a node: the event that did it
    start, end = live.last_change
    if end > start:
        for e in forward(live.stepper.events, start, min(end, live.position), quiet=False, types=_LANDING):
            if e.get("pod"):
                landed[e["pod"]] = summary(e)
    restore_by_node = {}
    for info in restore.values():
        restore_by_node.setdefault(info["node"], []).append(info)
    # The node tree's order, read without engine.cache.node_info_list(): that method caches
    # the list the engine's snapshot is rebuilt from, so calling it from outside can change a run.
    cache = engine.cache
    infos = [cache.nodes[name] for name in cache.node_tree.list()
             if cache.nodes[name].node is not None and name not in mom["hide_nodes"]]
    find = view.get("find", "")
    label = _label_matcher(view.get("label", ""))
    filtering = bool(find or label)

    def matches(ni) -> bool:
        return (not find or find in ni.node.name) and (label is None or label(ni.node.labels))

    def card(ni) -> dict:
        node = ni.node
        nominated_pods = []
        reserved = {}
        for key in nominated.get(node.name, []):
            pod = engine.pods.get(key)
            requests = pod.requests if pod is not None else {}
            for r, v in requests.items():
                reserved[r] = reserved.get(r, 0) + v
            nominated_pods.append({"key": key, "priority": pod.priority if pod else 0,
                                   "requests": _requests(requests)})
        # the node's pods at this moment: the cache's, less those not assumed yet, plus those
        # an unrevealed deletion removed
        shown = [(p.key, p.priority, p.requests) for p in ni.pods if p.key not in hide]
        shown += [(i["key"], i["priority"], i["requests"]) for i in restore_by_node.get(node.name, [])]
        requested = _requested(ni, hide, restore_by_node)
        resources = []
        allocatable = node.allocatable
        for r in _resource_order(set(allocatable) | set(requested)):
            total = allocatable.get(r, 0)
            used = len(shown) if r == "pods" else requested.get(r, 0)
            extra = len(nominated_pods) if r == "pods" else reserved.get(r, 0)
            if not total and not used and not extra:
                continue   # a resource the node does not have and nobody asks for
            resources.append({
                "name": r, "allocatable": quantity(r, total), "requested": quantity(r, used),
                "reserved": quantity(r, extra) if extra else "",
                "percent": min(100, round(100 * used / total)) if total else (100 if used else 0),
                "reserved_percent": min(100, round(100 * extra / total)) if total and extra else 0,
                "over": used > total,
            })
        bound = []
        for key, priority, requests in shown:
            info = pods_state.get(key, {})
            phase = phases.get(key) or (restore[key]["phase"] if key in restore else info.get("phase", "Running"))
            item = {"key": key, "priority": priority, "phase": phase, "requests": _requests(requests),
                    "just_moved": key in landed, "why": landed.get(key, "")}
            end = engine.terminating.get(key)
            if phase == "Terminating" and end is not None:
                item["grace_remaining"] = seconds(max(0, end - now) / US)
            wait = (mom.get("waitingPods") or {}).get(key)
            if phase == "Waiting" and wait is not None:
                if wait["plugins"]:
                    first = min(wait["plugins"].items(), key=lambda kv: kv[1])
                    item["permit_remaining"] = seconds(max(0.0, first[1] - mom["time"]))
                    item["permit_plugin"] = first[0]
                item["permit_result"] = wait["result"]
            bound.append(item)
        return {
            "name": node.name, "labels": sorted(node.labels.items()),
            "taints": [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in node.taints],
            "unschedulable": node.unschedulable, "resources": resources, "pods": bound,
            "nominated": nominated_pods,
        }

    default = "overview" if len(infos) > NODE_CARD_LIMIT else "cards"
    mode = view.get("nodes") or default
    if mode == "cards" and len(infos) > NODE_CARD_MAX:
        mode = "overview"
    out = {"total": len(infos), "not_started": live.position == 0 and not infos, "find": find,
           "label": view.get("label", ""), "filtering": filtering, "colour": view.get("colour", "cpu"),
           "resources": HEAT_RESOURCES, "overview": mode == "overview", "custom": custom_objects(mom),
           "mode": mode, "default_mode": default, "cards_allowed": len(infos) <= NODE_CARD_MAX,
           "card_max": NODE_CARD_MAX, "modes": (("cards", "Cards"), ("overview", "Overview"))}
    if not out["overview"]:
        picked = [ni for ni in infos if matches(ni)] if filtering else infos
        out.update(cards=[card(ni) for ni in picked], matched=len(picked), hidden=0)
        return out
    out.update(_overview(infos, out["colour"], matches if filtering else None, view.get("node"),
                         nominated, hide, restore_by_node))
    selected = cache.nodes.get(view.get("node", "")) if view.get("node") else None
    if selected is not None and selected.node is not None and selected.node.name not in mom["hide_nodes"]:
        out["selected"] = card(selected)
    elif view.get("node"):
        out["selected_missing"] = view["node"]
    out["cards"] = []
    out["hidden"] = 0
    return out


CUSTOM_FIELDS = 4   # spec fields shown per custom resource


def custom_objects(mom) -> list | None:
    """The custom resources at this moment (kind, namespace/name, a few scalar spec and status
    fields), or None for a scenario without any."""
    objs = mom.get("customObjects")
    if objs is None:
        return None
    out = []
    for type_key, by_key in objs.items():
        api, _, kind = type_key.rpartition("/")
        for key, m in by_key.items():
            fields = []
            for part in ("spec", "status"):
                body = m.get(part)
                if isinstance(body, dict):
                    for k, v in body.items():
                        if isinstance(v, (str, int, float, bool)) and len(fields) < CUSTOM_FIELDS:
                            fields.append(f"{k}: {v}" if part == "spec" else f"status.{k}: {v}")
            out.append({"kind": kind, "api_version": api, "key": key, "fields": fields})
    return out


def _requested(ni, hide, restore_by_node) -> dict:
    """The node's requested resources at the moment shown (less the pods not assumed yet,
    plus those an unrevealed deletion removed)."""
    requested = dict(ni.requested)
    for p in ni.pods:
        if p.key in hide:
            for r, v in p.requests.items():
                requested[r] = requested.get(r, 0) - v
    for i in restore_by_node.get(ni.node.name, []):
        for r, v in i["requests"].items():
            requested[r] = requested.get(r, 0) + v
    return requested


def _overview(infos, colour, matches, selected, nominated, hide, restore_by_node) -> dict:
    """The node overview's cells as one HTML string (a template loop over 5,000 nodes costs
    more than the rest of the frame): ``<i data-n="name" class="hN">`` with N the tenth of
    ``colour`` requested/allocatable (0-10; 11 over allocatable), plus ``m`` for a node the
    search or the label filter matches, ``s`` for the selected node, ``c`` cordoned and ``n``
    with nominated pods. static/js/session.js turns a hover into a title and a click into a
    selection."""
    parts = []
    matched = []
    levels = [0] * 12
    for ni in infos:
        node = ni.node
        name = node.name
        total = node.allocatable.get(colour, 0)
        if colour == "pods":
            used = sum(1 for p in ni.pods if p.key not in hide) + len(restore_by_node.get(name, ()))
        elif hide or restore_by_node:
            used = _requested(ni, hide, restore_by_node).get(colour, 0)
        else:
            used = ni.requested.get(colour, 0)
        level = (11 if used > total else min(10, (10 * used) // total)) if total else (11 if used else 0)
        levels[level] += 1
        flags = f"h{level}"
        if matches is not None and matches(ni):
            flags += " m"
            if len(matched) < MATCH_LIMIT:
                matched.append(name)
            else:
                matched.append(None)
        if name == selected:
            flags += " s"
        if node.unschedulable:
            flags += " c"
        if nominated.get(name):
            flags += " n"
        parts.append(f'<i data-n="{html_escape(name)}" class="{flags}"></i>')
    listed = [n for n in matched if n is not None]
    return {"cells": mark_safe("".join(parts)), "matched": len(matched), "match_list": listed,
            "match_hidden": len(matched) - len(listed),
            "legend": [{"level": i, "label": f"{i * 10}–{i * 10 + 9}%" if i < 10 else ("100%" if i == 10 else "over"),
                        "count": levels[i]} for i in range(12) if levels[i]]}


def _requests(requests: dict) -> str:
    return ", ".join(f"{r} {quantity(r, v)}" for r, v in sorted(requests.items()) if v)
