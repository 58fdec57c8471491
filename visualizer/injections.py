"""The session page's "inject a cluster event" forms, turned into scenario actions.

Each form gives a verb and a manifest (or a delete reference) that the engine then validates
exactly like a scenario's ``actions`` entry (``engine.scenario.parse_action``):

    node-add     name, cpu, memory, pods, labels, taints, unschedulable  → create Node
    pod-add      a Pod manifest in YAML (kind/apiVersion may be left out) → create Pod
    delete       kind (Pod or Node) and name (``namespace/name`` or ``name`` for a pod)
    node-update  node, set_labels, remove_labels, add_taints, remove_taints, unschedulable
                 → update Node: the node's current manifest with those changes
    yaml         verb and any manifest in YAML                          → that action

Labels are written ``key=value`` and taints ``key=value:Effect`` (or ``key:Effect``),
separated by commas or new lines.
"""
from __future__ import annotations

import copy

from engine import yamlload
from visualizer.errors import ControlError

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _field(msg, name) -> str:
    value = msg.get(name, "")
    if isinstance(value, list):
        value = value[0] if value else ""
    if isinstance(value, (dict, list)):
        raise ControlError([f"{name}: expected text, got a {type(value).__name__}"], title="The form is not valid")
    return str(value if value is not None else "").strip()


def _items(text: str) -> list[str]:
    return [part.strip() for line in text.splitlines() for part in line.split(",") if part.strip()]


def parse_labels(text: str, place: str, problems: list) -> dict:
    labels = {}
    for item in _items(text):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"{place}: {item!r} is not key=value")
            continue
        labels[key.strip()] = value.strip()
    return labels


def parse_taints(text: str, place: str, problems: list) -> list:
    taints = []
    for item in _items(text):
        head, sep, effect = item.rpartition(":")
        if not sep or effect not in TAINT_EFFECTS:
            problems.append(f"{place}: {item!r} is not key=value:Effect (Effect one of {', '.join(TAINT_EFFECTS)})")
            continue
        key, eq, value = head.partition("=")
        taint = {"key": key.strip(), "effect": effect}
        if eq:
            taint["value"] = value.strip()
        taints.append(taint)
    return taints


MAX_MANIFEST_NODES = 20_000   # values in one injected manifest, aliases expanded


def _yaml(text: str, place: str):
    """A manifest typed on the page, loaded as scenarios are (bounded: engine.yamlload)."""
    try:
        data, _ = yamlload.load(text, max_nodes=MAX_MANIFEST_NODES)
    except yamlload.YAMLLoadError as e:
        raise ControlError([f"{place}: {e.where}: {e.problem}"], title="The cluster event is not valid") from None
    if not isinstance(data, dict):
        raise ControlError([f"{place}: expected a manifest (a mapping), got {type(data).__name__}"],
                           title="The cluster event is not valid")
    return data


def _tri_state(msg, name, place, problems):
    value = _field(msg, name).lower()
    if value in ("", "unchanged"):
        return None
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    problems.append(f"{place}: {value!r} is not true or false")
    return None


def build(msg: dict, live) -> tuple[str, dict]:
    """(verb, body) for an inject message; ControlError lists what is wrong with the form."""
    form = _field(msg, "form")
    problems: list[str] = []
    if form == "node-add":
        name = _field(msg, "name")
        if not name:
            problems.append("name: is required")
        allocatable = {}
        for resource in ("cpu", "memory", "pods"):
            value = _field(msg, resource)
            if value:
                allocatable[resource] = value
        labels = parse_labels(_field(msg, "labels"), "labels", problems)
        taints = parse_taints(_field(msg, "taints"), "taints", problems)
        unschedulable = _tri_state(msg, "unschedulable", "unschedulable", problems)
        if problems:
            raise ControlError(problems, title="The node is not valid")
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"allocatable": allocatable}}
        if labels:
            body["metadata"]["labels"] = labels
        spec = {}
        if taints:
            spec["taints"] = taints
        if unschedulable:
            spec["unschedulable"] = True
        if spec:
            body["spec"] = spec
        return "create", body
    if form == "pod-add":
        text = _field(msg, "manifest")
        if not text:
            raise ControlError(["manifest: is required (a Pod in YAML)"], title="The pod is not valid")
        body = _yaml(text, "manifest")
        body.setdefault("kind", "Pod")
        body.setdefault("apiVersion", "v1")
        return "create", body
    if form == "delete":
        kind = _field(msg, "kind") or "Pod"
        name = _field(msg, "name")
        if not name:
            raise ControlError(["name: is required"], title="Nothing to delete")
        if kind == "Pod" and "/" in name:
            namespace, _, name = name.partition("/")
            return "delete", {"kind": kind, "namespace": namespace, "name": name}
        return "delete", {"kind": kind, "name": name}
    if form == "node-update":
        name = _field(msg, "node")
        node = live.stepper.engine.nodes.get(name)
        if node is None:
            raise ControlError([f"node: {name!r} is not a node of the cluster now"], title="No such node")
        body = copy.deepcopy(node.manifest) or {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        body.setdefault("kind", "Node")
        metadata = body.setdefault("metadata", {})
        spec = body.get("spec") or {}
        labels = dict(metadata.get("labels") or {})
        labels.update(parse_labels(_field(msg, "set_labels"), "set_labels", problems))
        for key in _items(_field(msg, "remove_labels")):
            labels.pop(key, None)
        taints = [t for t in (spec.get("taints") or []) if isinstance(t, dict)]
        removed = set(_items(_field(msg, "remove_taints")))
        taints = [t for t in taints if t.get("key") not in removed]
        for taint in parse_taints(_field(msg, "add_taints"), "add_taints", problems):
            taints = [t for t in taints if (t.get("key"), t.get("effect")) != (taint["key"], taint["effect"])]
            taints.append(taint)
        unschedulable = _tri_state(msg, "unschedulable", "unschedulable", problems)
        if problems:
            raise ControlError(problems, title="The node change is not valid")
        metadata["labels"] = labels
        spec["taints"] = taints
        if unschedulable is not None:
            spec["unschedulable"] = unschedulable
        body["spec"] = spec
        return "update", body
    if form == "yaml":
        verb = _field(msg, "verb")
        if verb not in ("create", "update", "delete"):
            raise ControlError([f"verb: {verb!r} is not create, update or delete"], title="The cluster event is not valid")
        if not _field(msg, "manifest"):
            raise ControlError(["manifest: is required (an object in YAML)"], title="The cluster event is not valid")
        return verb, _yaml(_field(msg, "manifest"), "manifest")
    raise ControlError([f"form: {form!r} is not one of node-add, pod-add, delete, node-update, yaml"])
