"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), the parts the engine honours.

Upstream: ``pkg/scheduler/apis/config/v1/{defaults,default_plugins}.go`` (defaults and
``mergePlugins``) and ``framework/runtime/framework.go`` (``expandMultiPointPlugins``), v1.28.

The default profile is v1.28's.  Its volume plugins (VolumeRestrictions, NodeVolumeLimits,
VolumeBinding, VolumeZone) are in it only when the scenario uses volumes
(``scenario.uses_volumes``): for a pod without volumes they only Skip at PreFilter and pass
every Filter, so leaving them out keeps the trace and state of every scenario without volumes
exactly as they were.  EBSLimits, GCEPDLimits and AzureDiskLimits (the non-CSI attach limits)
are not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ConfigError
from .objects import Problems, _q, get_int, get_list, get_map, get_str
from .quantity import US

# v1.28 getDefaultPlugins().MultiPoint, volume plugins left out; SchedulingGates appended
# because PodSchedulingReadiness is on by default.
DEFAULT_MULTI_POINT = [
    ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0), ("TaintToleration", 3),
    ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1), ("PodTopologySpread", 2),
    ("InterPodAffinity", 2), ("DefaultPreemption", 0), ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1), ("DefaultBinder", 0), ("SchedulingGates", 0),
]
# v1.28's volume plugins in multiPoint order, after NodeResourcesFit (EBSLimits, GCEPDLimits and
# AzureDiskLimits, between VolumeRestrictions and VolumeBinding upstream, are not modelled).
DEFAULT_VOLUME_PLUGINS = [("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0),
                          ("VolumeZone", 0)]
DEFAULT_MULTI_POINT_WITH_VOLUMES = (DEFAULT_MULTI_POINT[:7] + DEFAULT_VOLUME_PLUGINS + DEFAULT_MULTI_POINT[7:])
VOLUME_PLUGINS = {"VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits",
                  "AzureDiskLimits", "VolumeBinding", "VolumeZone"}
NOT_MODELLED_VOLUME_PLUGINS = {"EBSLimits", "GCEPDLimits", "AzureDiskLimits"}
EXTENSION_POINT_FIELDS = ["preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
                          "score", "reserve", "permit", "preBind", "bind", "postBind"]
DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass
class PluginSet:
    enabled: list = field(default_factory=list)   # [(name, weight)]
    disabled: list = field(default_factory=list)  # [name]


@dataclass
class Profile:
    scheduler_name: str
    plugins: dict                      # point -> PluginSet, plus "multiPoint"
    plugin_config: dict                # name -> args dict
    percentage_of_nodes_to_score: int | None = None
    place: str = "scheduler.profiles[0]"


@dataclass
class SchedulerConfig:
    pod_initial_backoff: int = 1 * US
    pod_max_backoff: int = 10 * US
    percentage_of_nodes_to_score: int = 0
    profiles: list = field(default_factory=list)


def _plugin_set(raw, place, probs) -> PluginSet:
    ps = PluginSet()
    if raw is None:
        return ps
    if not isinstance(raw, dict):
        probs.add(place, f"{_q(raw)} is not a plugin set")
        return ps
    for i, p in enumerate(get_list(raw, "enabled", place, probs)):
        pp = f"{place}.enabled[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not p["name"]:
            probs.add(pp, f"{_q(p)} is not a plugin (a mapping with a name)")
            continue
        w = get_int(p, "weight", pp, probs, default=0, minimum=0, maximum=100)
        ps.enabled.append((p["name"], w or 0))
    for i, p in enumerate(get_list(raw, "disabled", place, probs)):
        pp = f"{place}.disabled[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not p["name"]:
            probs.add(pp, f"{_q(p)} is not a plugin (a mapping with a name)")
            continue
        ps.disabled.append(p["name"])
    return ps


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: defaults minus disabled, re-configured defaults replaced in place,
    then the custom plugins that replaced nothing."""
    disabled = set(custom.disabled)
    custom_index = {name: (i, (name, w)) for i, (name, w) in enumerate(custom.enabled)}
    replaced = set()
    enabled = []
    if "*" not in disabled:
        for name, w in default.enabled:
            if name in disabled:
                continue
            if name in custom_index:
                i, plugin = custom_index[name]
                replaced.add(i)
                enabled.append(plugin)
            else:
                enabled.append((name, w))
    for i, plugin in enumerate(custom.enabled):
        if i not in replaced:
            enabled.append(plugin)
    return PluginSet(enabled, list(custom.disabled))


def parse_scheduler_config(raw, probs: Problems, place="scheduler", volumes: bool = False) -> SchedulerConfig:
    """``volumes``: the scenario uses volumes, so the default profile has the volume plugins."""
    cfg = SchedulerConfig()
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        probs.add(place, f"{_q(raw)} is not a mapping")
        raw = {}
    known = {"apiVersion", "kind", "podInitialBackoffSeconds", "podMaxBackoffSeconds",
             "percentageOfNodesToScore", "profiles", "parallelism", "leaderElection",
             "clientConnection", "healthzBindAddress", "metricsBindAddress", "enableProfiling",
             "enableContentionProfiling", "extenders", "delayCacheUntilActive"}
    for k in raw:
        if k not in known:
            probs.add(f"{place}.{k}", "is not a KubeSchedulerConfiguration field the engine knows")
    if raw.get("extenders"):
        probs.add(f"{place}.extenders", "scheduler extenders are not supported by the engine")
    ib = get_int(raw, "podInitialBackoffSeconds", place, probs, default=1, minimum=1)
    mb = get_int(raw, "podMaxBackoffSeconds", place, probs, default=10, minimum=1)
    if ib is not None and mb is not None and mb < ib:
        probs.add(f"{place}.podMaxBackoffSeconds", f"{mb} must be greater than or equal to podInitialBackoffSeconds ({ib})")
    cfg.pod_initial_backoff = (ib or 1) * US
    cfg.pod_max_backoff = (mb or 10) * US
    cfg.percentage_of_nodes_to_score = get_int(raw, "percentageOfNodesToScore", place, probs, default=0, minimum=0, maximum=100) or 0
    raw_profiles = get_list(raw, "profiles", place, probs) or [{}]
    names = set()
    for i, rp in enumerate(raw_profiles):
        pp = f"{place}.profiles[{i}]"
        if not isinstance(rp, dict):
            probs.add(pp, f"{_q(rp)} is not a profile")
            continue
        for k in rp:
            if k not in ("schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"):
                probs.add(f"{pp}.{k}", "is not a profile field (schedulerName, plugins, pluginConfig, percentageOfNodesToScore)")
        name = get_str(rp, "schedulerName", pp, probs) or DEFAULT_SCHEDULER_NAME
        if name in names:
            probs.add(f"{pp}.schedulerName", f"{_q(name)} is used by another profile")
        names.add(name)
        praw = get_map(rp, "plugins", pp, probs)
        plugins = {}
        for point in ["multiPoint"] + EXTENSION_POINT_FIELDS:
            custom = _plugin_set(praw.get(point), f"{pp}.plugins.{point}", probs)
            if point == "multiPoint":
                default = DEFAULT_MULTI_POINT_WITH_VOLUMES if volumes else DEFAULT_MULTI_POINT
                plugins[point] = merge_plugin_set(PluginSet(list(default), []), custom)
            else:
                plugins[point] = custom
        for k in praw:
            if k not in plugins:
                probs.add(f"{pp}.plugins.{k}", f"is not an extension point (one of multiPoint, {', '.join(EXTENSION_POINT_FIELDS)})")
        pc = {}
        for j, c in enumerate(get_list(rp, "pluginConfig", pp, probs)):
            cp = f"{pp}.pluginConfig[{j}]"
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                probs.add(cp, f"{_q(c)} is not a plugin config (a mapping with a name and args)")
                continue
            args = c.get("args") or {}
            if not isinstance(args, dict):
                probs.add(f"{cp}.args", f"{_q(args)} is not a mapping")
                continue
            if c["name"] in pc:
                probs.add(f"{cp}.name", f"{_q(c['name'])} is configured twice")
            pc[c["name"]] = args
        pct = get_int(rp, "percentageOfNodesToScore", pp, probs, default=None, minimum=0, maximum=100)
        cfg.profiles.append(Profile(name, plugins, pc, pct, pp))
    return cfg


def expand_plugins(profile: Profile, implements) -> dict:
    """expandMultiPointPlugins: the ordered plugin names per extension point, and score weights.

    ``implements(name, point) -> bool`` says whether the plugin named implements a point.
    Returns ``({point: [names]}, {score plugin: weight})``; raises ConfigError on double
    registration or unknown plugins.
    """
    out = {}
    weights = {}
    mp = profile.plugins["multiPoint"]
    for point in EXTENSION_POINT_FIELDS:
        ps = profile.plugins[point]
        enabled_set = [n for n, _ in ps.enabled]
        if len(set(enabled_set)) != len(enabled_set):
            dup = next(n for n in enabled_set if enabled_set.count(n) > 1)
            raise ConfigError([f"{profile.place}.plugins.{point}: plugin {_q(dup)} is enabled twice"])
        disabled = set(ps.disabled)
        if "*" in disabled:
            out[point] = list(enabled_set)
        else:
            multi, override = [], []
            for name, _w in mp.enabled:
                if not implements(name, point):
                    continue
                if name in disabled:
                    continue
                if name in enabled_set:
                    override.append(name)
                    continue
                if name in multi:
                    raise ConfigError([f"{profile.place}.plugins.multiPoint: plugin {_q(name)} already registered as {point}"])
                multi.append(name)
            names = [n for n in enabled_set if n in override] + multi + [n for n in enabled_set if n not in override]
            out[point] = names
        if point == "score":
            mp_weights = {n: w for n, w in mp.enabled}
            pt_weights = {n: w for n, w in ps.enabled}
            for n in out[point]:
                w = pt_weights.get(n, mp_weights.get(n, 0))
                weights[n] = w if w else 1
    return out, weights
