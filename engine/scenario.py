"""Scenario files: loading and validation (SPEC.md §1).

``load_scenario(path)`` / ``Scenario.from_path`` / ``Scenario.from_text`` parse YAML (or JSON),
check every field the engine honours and raise ``ScenarioError`` listing every problem with
its place (``objects[3].spec.containers[0].resources.requests.cpu: "12x" is not a quantity``).
Nothing runs half-loaded: a Scenario exists only if it is valid.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import limits, yamlload
from .config import SchedulerConfig, parse_scheduler_config
from .errors import ScenarioError
from .objects import (CustomObject, Problems, _q, custom_object_from_manifest, get_bool, get_list, get_map,
                      get_str, is_custom_api_version, namespace_from_manifest, node_from_manifest,
                      parse_time, pdb_from_manifest, pod_from_manifest,
                      priority_class_from_manifest, SYSTEM_PRIORITY_CLASSES, pv_from_manifest,
                      pvc_from_manifest, storage_class_from_manifest, csi_node_from_manifest,
                      RESTRICTED_SOURCES)
from .quantity import US, parse_duration

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
KINDS = {"Node": "v1", "Pod": "v1", "PriorityClass": "scheduling.k8s.io/v1",
         "PodDisruptionBudget": "policy/v1", "PersistentVolume": "v1", "PersistentVolumeClaim": "v1",
         "StorageClass": "storage.k8s.io/v1", "CSINode": "storage.k8s.io/v1", "Namespace": "v1"}
VOLUME_KINDS = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode")
CLUSTER_SCOPED = ("Node", "PriorityClass", "PersistentVolume", "StorageClass", "CSINode", "Namespace")
# The pod volume sources a volume plugin reads (VolumeBinding, VolumeZone, NodeVolumeLimits:
# claims; VolumeRestrictions: the in-tree disks it compares; NodeVolumeLimits: migratable
# inline disks).
VOLUME_PLUGIN_SOURCES = ("persistentVolumeClaim", "ephemeral", "azureDisk") + RESTRICTED_SOURCES
KNOWN_FEATURE_GATES = {"SchedulerQueueingHints": False}
DEFAULT_START = datetime(2026, 1, 1, tzinfo=timezone.utc)
# A problem's line and column come from the text's node tree, read again once a problem is
# found (by PyYAML's bounded loader: about 5 s and 50 MB a MiB); above this size a problem
# names its place (objects[3].spec...) only.
LOCATE_MAX_BYTES = 1024 * 1024


@dataclass
class Action:
    at: int            # virtual microseconds
    verb: str          # create | update | delete
    kind: str
    obj: object        # parsed object (create/update) or None
    namespace: str = "default"
    name: str = ""
    place: str = ""
    manifest: dict = field(default_factory=dict)
    index: int = 0
    api_version: str = ""   # for a custom resource's delete (create/update carry it in obj)


@dataclass
class Simulation:
    pod_max_in_unschedulable_pods_duration: int = 300 * US
    bind_duration: int = 0
    scheduling_cycle_duration: int = 0
    seed: int = 0
    start_time: datetime = DEFAULT_START
    feature_gates: dict = field(default_factory=lambda: dict(KNOWN_FEATURE_GATES))


@dataclass
class Scenario:
    name: str
    title: str = ""
    description: str = ""
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    simulation: Simulation = field(default_factory=Simulation)
    objects: list = field(default_factory=list)   # [(kind, obj)] in file order
    actions: list = field(default_factory=list)
    cues: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    source: str = "<input>"
    queue_state: dict = field(default_factory=dict)   # pod key -> restore(**) arguments
    flush_at: dict = field(default_factory=dict)      # "backoff"/"leftover" -> first flush time (us)

    @classmethod
    def from_path(cls, path) -> "Scenario":
        p = Path(path)
        try:
            if p.is_file() and p.stat().st_size > yamlload.MAX_BYTES:
                raise ScenarioError([f"the file is larger than {yamlload.MAX_BYTES // (1024 * 1024)} MiB"], str(path))
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ScenarioError([f"cannot read the file: {e.strerror or e}"], str(path)) from None
        except UnicodeDecodeError:
            raise ScenarioError(["the file is not UTF-8 text"], str(path)) from None
        return cls.from_text(text, str(path))

    @classmethod
    def from_text(cls, text: str, source: str = "<input>", max_objects: int = limits.MAX_SCENARIO_OBJECTS) -> "Scenario":
        """Parse a scenario's YAML (or JSON) text, in bounded time and memory
        (``engine.yamlload``); every schema problem names its place in the document and the
        line and column of the YAML node it is about."""
        try:
            data = yamlload.load_data(text)
        except yamlload.YAMLLoadError as e:
            raise ScenarioError([f"{e.where}: {e.problem}"], source) from None
        try:
            return cls.from_dict(data, source, max_objects)
        except ScenarioError as e:
            if len(text) > LOCATE_MAX_BYTES:
                raise       # the places name the fields; a node tree of this text would cost more
            # the node tree that gives each problem its line and column is read only now
            try:
                _data, root = yamlload.load(text)
            except yamlload.YAMLLoadError as y:     # the bounded loader refuses it: say so
                raise ScenarioError([f"{y.where}: {y.problem}"], source) from None
            if root is not None:
                e.problems = [_located(p, root) for p in e.problems]
                e.args = (e.describe(),)
            raise

    @classmethod
    def from_dict(cls, data, source: str = "<input>", max_objects: int = limits.MAX_SCENARIO_OBJECTS) -> "Scenario":
        probs = Problems()
        sc = _parse(data, probs, max_objects)
        if probs:
            raise ScenarioError(probs.items, source)
        sc.source = source
        return sc


def _located(problem: str, root) -> str:
    """``problem`` ("place: message") with the line and column of the node at ``place``."""
    place, sep, message = problem.partition(": ")
    if not sep or not place or " " in place:
        return problem
    mark = yamlload.mark_for(root, place, key=message.startswith("is not a") and "field" in message)
    if mark is None:
        return problem
    return f"{problem} ({yamlload.where(mark)})"


def load_scenario(path) -> Scenario:
    return Scenario.from_path(path)


def _duration(d, key, place, probs, default):
    v = d.get(key)
    if v is None:
        return default
    try:
        return parse_duration(v)
    except ValueError as e:
        probs.add(f"{place}.{key}", str(e))
        return default


def parse_object(m, place, probs, start_instant, allowed_kinds=KINDS):
    """(kind, object) of a manifest, or (kind, None) with problems recorded."""
    if not isinstance(m, dict):
        probs.add(place, f"{_q(m)} is not a Kubernetes object")
        return None, None
    kind = m.get("kind")
    if (not isinstance(kind, str) or kind not in allowed_kinds) and allowed_kinds is KINDS \
            and is_custom_api_version(m.get("apiVersion")):
        # a custom resource (e.g. a PodGroup of scheduling.x-k8s.io/v1alpha1): kept as a manifest
        obj = custom_object_from_manifest(m, place, probs)
        return (obj.kind if obj is not None else kind), obj
    if not isinstance(kind, str) or kind not in allowed_kinds:
        probs.add(f"{place}.kind", f"{_q(kind)} is not one of {', '.join(allowed_kinds)}")
        return None, None
    api = m.get("apiVersion")
    if api is not None and api != KINDS[kind]:
        probs.add(f"{place}.apiVersion", f"{_q(api)} is not {KINDS[kind]} (the apiVersion of a {kind})")
    if kind == "Pod":
        return kind, pod_from_manifest(m, place, probs, start_instant)
    if kind == "Node":
        return kind, node_from_manifest(m, place, probs)
    if kind == "PriorityClass":
        return kind, priority_class_from_manifest(m, place, probs)
    if kind == "PersistentVolume":
        return kind, pv_from_manifest(m, place, probs)
    if kind == "PersistentVolumeClaim":
        return kind, pvc_from_manifest(m, place, probs)
    if kind == "StorageClass":
        return kind, storage_class_from_manifest(m, place, probs)
    if kind == "CSINode":
        return kind, csi_node_from_manifest(m, place, probs)
    if kind == "Namespace":
        return kind, namespace_from_manifest(m, place, probs)
    return kind, pdb_from_manifest(m, place, probs)


def uses_volumes(sc) -> bool:
    """Whether a scenario uses volumes: any PersistentVolume, PersistentVolumeClaim,
    StorageClass or CSINode in its objects or actions, or a pod (object or action) with a
    volume of a kind a volume plugin reads.  Only then does the default profile get the
    volume plugins (docs/scenario-format.md, "Volumes"). Worked out once per scenario (a run
    never changes its scenario) and kept on it."""
    known = sc.__dict__.get("_uses_volumes")
    if known is None:
        known = sc._uses_volumes = any(
            kind in VOLUME_KINDS or (kind == "Pod" and o is not None
                                     and any(v.kind in VOLUME_PLUGIN_SOURCES for v in o.volumes))
            for kind, o in list(sc.objects) + [(a.kind, a.obj) for a in sc.actions])
    return known


def _parse(data, probs: Problems, max_objects: int = limits.MAX_SCENARIO_OBJECTS) -> Scenario:
    if not isinstance(data, dict):
        probs.add("", f"the scenario must be a mapping with kind: Scenario, got {type(data).__name__}")
        return Scenario(name="invalid")
    known = {"kind", "apiVersion", "metadata", "scheduler", "simulation", "objects", "actions", "cues", "queue"}
    for k in data:
        if k not in known:
            probs.add(str(k), f"is not a scenario field (one of {', '.join(sorted(known))})")
    if data.get("kind") != "Scenario":
        probs.add("kind", f"{_q(data.get('kind'))} must be \"Scenario\"")
    md = get_map(data, "metadata", "", probs)
    name = get_str(md, "name", "metadata", probs)
    if not name:
        probs.add("metadata.name", "is required")
    elif not _NAME_RE.match(name):
        probs.add("metadata.name", f"{_q(name)} must match [a-z0-9]([-a-z0-9]*[a-z0-9])?")
    sc = Scenario(name=name or "invalid", title=get_str(md, "title", "metadata", probs) or "",
                  description=get_str(md, "description", "metadata", probs) or "", raw=data)
    sched_raw = data.get("scheduler")
    sc.scheduler = parse_scheduler_config(sched_raw, probs)

    sim_raw = get_map(data, "simulation", "", probs)
    sim = Simulation()
    known_sim = {"podMaxInUnschedulablePodsDuration", "bindDuration", "schedulingCycleDuration",
                 "seed", "startTime", "featureGates"}
    for k in sim_raw:
        if k not in known_sim:
            probs.add(f"simulation.{k}", f"is not a simulation field (one of {', '.join(sorted(known_sim))})")
    sim.pod_max_in_unschedulable_pods_duration = _duration(sim_raw, "podMaxInUnschedulablePodsDuration", "simulation", probs, 300 * US)
    sim.bind_duration = _duration(sim_raw, "bindDuration", "simulation", probs, 0)
    sim.scheduling_cycle_duration = _duration(sim_raw, "schedulingCycleDuration", "simulation", probs, 0)
    seed = sim_raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        probs.add("simulation.seed", f"{_q(seed)} is not an integer")
    else:
        sim.seed = seed
    if "startTime" in sim_raw:
        t = parse_time(sim_raw.get("startTime"), "simulation.startTime", probs)
        if t is not None:
            sim.start_time = t
    fg = get_map(sim_raw, "featureGates", "simulation", probs)
    for k, v in fg.items():
        if k not in KNOWN_FEATURE_GATES:
            probs.add(f"simulation.featureGates.{k}", f"is not a feature gate the engine models (known: {', '.join(KNOWN_FEATURE_GATES)})")
        elif not isinstance(v, bool):
            probs.add(f"simulation.featureGates.{k}", f"{_q(v)} is not true or false")
        else:
            sim.feature_gates[k] = v
    sc.simulation = sim

    # the size of the cluster, before any object is read (engine/limits.py)
    raw_objects, raw_actions = data.get("objects"), data.get("actions")
    n_objects = (len(raw_objects) if isinstance(raw_objects, list) else 0) + (
        sum(1 for a in raw_actions if isinstance(a, dict) and "create" in a) if isinstance(raw_actions, list) else 0)
    if n_objects > max_objects:
        probs.add("objects", limits.too_many_objects(n_objects, max_objects))
        return sc

    seen = {}
    for i, m in enumerate(get_list(data, "objects", "", probs)):
        place = f"objects[{i}]"
        kind, obj = parse_object(m, place, probs, sim.start_time)
        if obj is None:
            continue
        key = (obj.type_key if isinstance(obj, CustomObject) else kind, getattr(obj, "namespace", ""), obj.name)
        if key in seen:
            probs.add(f"{place}.metadata.name", f"{_q(obj.name)} is already defined at {seen[key]}")
            continue
        seen[key] = place
        sc.objects.append((kind, obj))

    last_at = 0
    for i, a in enumerate(get_list(data, "actions", "", probs)):
        place = f"actions[{i}]"
        if not isinstance(a, dict):
            probs.add(place, f"{_q(a)} is not an action")
            continue
        verbs = [v for v in ("create", "update", "delete") if v in a]
        for k in a:
            if k not in ("at", "create", "update", "delete"):
                probs.add(f"{place}.{k}", "is not an action field (at, create, update or delete)")
        if len(verbs) != 1:
            probs.add(place, "must have exactly one of create, update or delete")
            continue
        if "at" not in a:
            probs.add(f"{place}.at", "is required")
            continue
        try:
            at = parse_duration(a["at"])
        except ValueError as e:
            probs.add(f"{place}.at", str(e))
            continue
        if at < last_at:
            probs.add(f"{place}.at", f"{_q(a['at'])} is earlier than the action before it; actions are applied in order")
        last_at = max(last_at, at)
        verb = verbs[0]
        act = parse_action(verb, a[verb], f"{place}.{verb}", probs, sim.start_time, at, i)
        if act is not None:
            sc.actions.append(act)

    sc.cues = parse_cues(data.get("cues"), probs, _node_names(data) if data.get("cues") else None)
    if "queue" in data:
        sc.queue_state, sc.flush_at = parse_queue_state(data.get("queue"), sc, probs)
    _check_references(sc, probs)
    if uses_volumes(sc):
        # the default profile gets the volume plugins (its problems are already reported)
        sc.scheduler = parse_scheduler_config(sched_raw, Problems(), volumes=True)
    return sc


def parse_action(verb, body, place, probs, start_instant, at=0, index=0):
    """One create/update/delete (also used for events injected from the UI)."""
    if verb in ("create", "update"):
        kind, obj = parse_object(body, place, probs, start_instant)
        if obj is None:
            return None
        return Action(at, verb, kind, obj, getattr(obj, "namespace", ""), obj.name, place, body, index)
    if not isinstance(body, dict):
        probs.add(place, f"{_q(body)} is not a reference (kind, name, namespace)")
        return None
    kind = body.get("kind")
    custom_api = body.get("apiVersion") if is_custom_api_version(body.get("apiVersion")) else ""
    if (not isinstance(kind, str) or kind not in KINDS) and not (custom_api and isinstance(kind, str) and kind):
        probs.add(f"{place}.kind", f"{_q(kind)} is not one of {', '.join(KINDS)}")
        return None
    name = body.get("name")
    if name is None and isinstance(body.get("metadata"), dict):
        name = body["metadata"].get("name")
        ns = body["metadata"].get("namespace") or "default"
    else:
        ns = body.get("namespace") or "default"
    if not isinstance(name, str) or not name:
        probs.add(f"{place}.name", "is required")
        return None
    if kind in CLUSTER_SCOPED and not custom_api:
        ns = ""
    return Action(at, "delete", kind, None, ns, name, place, body, index,
                  api_version=custom_api if kind not in KINDS else "")


QUEUE_NAMES = ("activeQ", "backoffQ", "unschedulablePods")


FLUSH_FIELDS = {"nextFlushBackoffQCompleted": ("backoff", 1), "nextFlushUnschedulablePodsLeftover": ("leftover", 30)}


def parse_queue_state(raw, sc, probs):
    """``queue``: the scheduling queue at t=0, as ``python -m engine export`` records it::

        queue:
          nextFlushBackoffQCompleted: 0.5              # first run of the 1s flush (default 0)
          nextFlushUnschedulablePodsLeftover: 29.5     # first run of the 30s flush (default 0)
          pods:
            - {pod: default/big, queue: backoffQ, attempts: 2, timestamp: -0.5,
               unschedulablePlugins: [NodeResourcesFit]}

    Each entry names a pending pod of ``objects``; ``timestamp`` is its queue time in seconds
    (negative: before t=0). Pods without an entry are added as usual (activeQ at t=0)."""
    out, flush = {}, {}
    if not isinstance(raw, dict):
        probs.add("queue", f"{_q(raw)} is not a mapping (pods: [...])")
        return out, flush
    for k in raw:
        if k != "pods" and k not in FLUSH_FIELDS:
            probs.add(f"queue.{k}", f"is not a queue field (pods, {', '.join(FLUSH_FIELDS)})")
    for k, (name, period) in FLUSH_FIELDS.items():
        if k in raw:
            v = raw[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= period:
                probs.add(f"queue.{k}", f"{_q(v)} is not a number of seconds in [0, {period}]")
            else:
                flush[name] = int(round(v * US))
    pending = {o.key for kind, o in sc.objects if kind == "Pod" and not o.node_name}
    for i, e in enumerate(get_list(raw, "pods", "queue", probs)):
        place = f"queue.pods[{i}]"
        if not isinstance(e, dict):
            probs.add(place, f"{_q(e)} is not a queue entry")
            continue
        for k in e:
            if k not in ("pod", "queue", "attempts", "timestamp", "unschedulablePlugins", "gated"):
                probs.add(f"{place}.{k}", "is not a queue entry field (pod, queue, attempts, timestamp, "
                                          "unschedulablePlugins, gated)")
        key = e.get("pod")
        if not isinstance(key, str) or key not in pending:
            probs.add(f"{place}.pod", f"{_q(key)} is not a pending pod of objects (namespace/name)")
            continue
        if key in out:
            probs.add(f"{place}.pod", f"{_q(key)} has two entries")
            continue
        q = e.get("queue")
        if q not in QUEUE_NAMES:
            probs.add(f"{place}.queue", f"{_q(q)} is not one of {', '.join(QUEUE_NAMES)}")
            continue
        attempts = e.get("attempts", 0)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
            probs.add(f"{place}.attempts", f"{_q(attempts)} is not an integer >= 0")
            continue
        ts = e.get("timestamp", 0)
        if isinstance(ts, bool) or not isinstance(ts, (int, float)):
            probs.add(f"{place}.timestamp", f"{_q(ts)} is not a number of seconds")
            continue
        plugins = e.get("unschedulablePlugins") or []
        if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
            probs.add(f"{place}.unschedulablePlugins", f"{_q(plugins)} is not a list of plugin names")
            continue
        gated = e.get("gated", False)
        if not isinstance(gated, bool):
            probs.add(f"{place}.gated", f"{_q(gated)} is not true or false")
            continue
        out[key] = {"queue": q, "attempts": attempts, "timestamp": int(round(ts * US)),
                    "unschedulable_plugins": tuple(plugins), "gated": gated}
    return out, flush


# What a cue's ``panel`` may name: the web UI's panel that shows what the cue talks about
# (visualizer/panels/narrative.py), or one node's card as ``node:<name>``.
CUE_PANELS = ("queues", "cycle", "filter", "scores", "preemption", "nodes", "metrics", "log")


def _cue_panel_problem(panel, node_names) -> str | None:
    """Why ``panel`` is not a cue's panel (None: it is)."""
    if isinstance(panel, str) and panel.startswith("node:"):
        name = panel[len("node:"):]
        if not name or name != name.strip():
            return f"{_q(panel)} names no node (write node:<name>, e.g. node:n1)"
        if node_names is not None and name not in node_names:
            return f"{_q(panel)} names no Node of the scenario (its objects or a create action)"
        return None
    if isinstance(panel, str) and panel in CUE_PANELS:
        return None
    return f"{_q(panel)} is not one of {', '.join(CUE_PANELS)} or node:<name>"


def _node_names(data) -> set:
    """The names of the Nodes a scenario mapping declares, in ``objects`` or created by an
    action (read from the mapping: a Node with a problem of its own still counts)."""
    manifests = list(data.get("objects") or []) if isinstance(data.get("objects"), list) else []
    if isinstance(data.get("actions"), list):
        manifests += [a.get("create") for a in data["actions"] if isinstance(a, dict)]
    names = set()
    for m in manifests:
        meta = m.get("metadata") if isinstance(m, dict) and m.get("kind") == "Node" else None
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            names.add(meta["name"])
    return names


def parse_cues(raw, probs, node_names=None):
    """Teaching cues: [{at: <seconds|duration> | when: {type, pod, ...}, text: Markdown, title,
    panel}]; ``node_names``: the scenario's Nodes, which a ``panel: node:<name>`` must name."""
    cues = []
    if raw is None:
        return cues
    if not isinstance(raw, list):
        probs.add("cues", f"{_q(raw)} is not a list")
        return cues
    for i, c in enumerate(raw):
        place = f"cues[{i}]"
        if not isinstance(c, dict):
            probs.add(place, f"{_q(c)} is not a cue")
            continue
        text = c.get("text")
        if not isinstance(text, str) or not text.strip():
            probs.add(f"{place}.text", "is required (Markdown shown when the presenter reaches the cue)")
            continue
        cue = {"text": text, "title": c.get("title") or ""}
        if "at" in c:
            try:
                cue["at"] = parse_duration(c["at"]) / US
            except ValueError as e:
                probs.add(f"{place}.at", str(e))
                continue
        if "when" in c:
            if not isinstance(c["when"], dict) or not c["when"]:
                probs.add(f"{place}.when", "must be a mapping of trace event fields, e.g. {type: QueueTransition, pod: default/p, to: backoffQ}")
                continue
            cue["when"] = c["when"]
        if "at" not in cue and "when" not in cue:
            probs.add(place, "needs at (a time) or when (a trace event to match)")
            continue
        if "panel" in c:
            problem = _cue_panel_problem(c["panel"], node_names)
            if problem:
                probs.add(f"{place}.panel", problem)
                continue
            cue["panel"] = c["panel"]
        cues.append(cue)
    return cues


# The API server creates these at bootstrap: a pod may name them without the scenario declaring them.
SYSTEM_CLASS_NAMES = frozenset(n for n, _ in SYSTEM_PRIORITY_CLASSES)


def _check_references(sc: Scenario, probs: Problems):
    classes = {o.name for k, o in sc.objects if k == "PriorityClass"}
    classes |= {a.obj.name for a in sc.actions if a.kind == "PriorityClass" and a.obj is not None}
    defaults = [o.name for k, o in sc.objects if k == "PriorityClass" and o.global_default]
    if len(defaults) > 1:
        probs.add("objects", f"more than one PriorityClass has globalDefault: true ({', '.join(defaults)})")
    for i, (k, o) in enumerate(sc.objects):
        if k == "Pod" and o.priority_class_name and o.priority_class_name not in classes \
                and o.priority_class_name not in SYSTEM_CLASS_NAMES:
            probs.add(f"objects[{i}].spec.priorityClassName", f"{_q(o.priority_class_name)} names no PriorityClass in the scenario")
    for a in sc.actions:
        if a.kind == "Pod" and a.obj is not None and a.obj.priority_class_name \
                and a.obj.priority_class_name not in classes \
                and a.obj.priority_class_name not in SYSTEM_CLASS_NAMES:
            probs.add(f"{a.place}.spec.priorityClassName", f"{_q(a.obj.priority_class_name)} names no PriorityClass in the scenario")
    profiles = {p.scheduler_name for p in sc.scheduler.profiles}
    del profiles  # pods for unknown schedulers are allowed: they are never enqueued (SPEC §4)


def dump_json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False)
