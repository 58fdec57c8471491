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
from .objects import Problems, _q, get_bool, get_int, get_list, get_map, get_str
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
class ExtenderConfig:
    """One entry of ``extenders`` (upstream ``pkg/scheduler/apis/config/types.go``: Extender;
    the v1 field names are the scenario's). ``http_timeout`` is in microseconds, already
    defaulted as NewHTTPExtender does (0 -> DefaultExtenderTimeout, 5 s)."""
    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    http_timeout: int = 5 * US
    node_cache_capable: bool = False
    managed_resources: tuple = ()       # ((name, ignoredByScheduler), ...)
    ignorable: bool = False
    place: str = "scheduler.extenders[0]"


@dataclass
class SchedulerConfig:
    pod_initial_backoff: int = 1 * US
    pod_max_backoff: int = 10 * US
    percentage_of_nodes_to_score: int = 0
    profiles: list = field(default_factory=list)
    extenders: list = field(default_factory=list)     # [ExtenderConfig], in configuration order


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
    cfg.extenders = parse_extenders(raw.get("extenders"), f"{place}.extenders", probs)
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
    ignored = [n for e in cfg.extenders for n, ign in e.managed_resources if ign]
    if ignored:
        # scheduler.go buildExtenders: the managed resources an extender marks
        # ignoredByScheduler become NodeResourcesFit's ignoredResources in every profile
        # (replacing the list the profile's own args give, as upstream does)
        for prof in cfg.profiles:
            args = dict(prof.plugin_config.get("NodeResourcesFit") or {})
            args["ignoredResources"] = list(ignored)
            prof.plugin_config["NodeResourcesFit"] = args
    return cfg


EXTENDER_FIELDS = ("urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
                   "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
                   "ignorable")
# the longest httpTimeout a scenario may ask for: a dead extender costs at most this per call
MAX_EXTENDER_TIMEOUT_US = 60 * US


def _valid_http_url(url: str) -> bool:
    """An http:// URL with a host and a valid port, no query or fragment."""
    import urllib.parse
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port
    except ValueError:
        return False
    return parts.scheme == "http" and bool(parts.hostname) and not parts.query and not parts.fragment


def parse_extenders(raw, place, probs: Problems) -> list:
    """``extenders``: each entry read and validated as upstream's validateExtenders does
    (``pkg/scheduler/apis/config/validation/validation.go``: a prioritizeVerb needs a positive
    weight; managed resources are extended resource names, each managed once; at most one
    extender binds), plus what the engine needs: a plain ``http://`` urlPrefix that the
    process's ``SCHEDULER_EXTENDERS`` allows (engine/extender.py), no HTTPS, no tlsConfig, and
    an ``httpTimeout`` of at most 60 s."""
    from .extender import ENV_VAR, allowed_prefixes, normalize_prefix
    from .plugins.helper import is_extended_resource_name, is_qualified_name
    from .quantity import parse_duration
    out = []
    if raw is None:
        return out
    if not isinstance(raw, list):
        probs.add(place, f"{_q(raw)} is not a list")
        return out
    allowed = allowed_prefixes()
    binders = 0
    managed_names = set()
    for i, e in enumerate(raw):
        ep = f"{place}[{i}]"
        if not isinstance(e, dict):
            probs.add(ep, f"{_q(e)} is not an extender (a mapping with a urlPrefix)")
            continue
        for k in e:
            if k not in EXTENDER_FIELDS:
                probs.add(f"{ep}.{k}", f"is not an extender field (one of {', '.join(EXTENDER_FIELDS)})")
        url = get_str(e, "urlPrefix", ep, probs) or ""
        if not url:
            probs.add(f"{ep}.urlPrefix", "is required")
        elif not url.startswith("http://") or not _valid_http_url(url):
            probs.add(f"{ep}.urlPrefix", f"{_q(url)} is not a plain http:// URL (http, a host, a valid port, "
                                         f"no query or fragment; the engine calls extenders over plain HTTP "
                                         f"only, HTTPS is not supported)")
        elif normalize_prefix(url) not in allowed:
            probs.add(f"{ep}.urlPrefix", f"{_q(url)} is not an extender this process may call: the "
                                         f"environment variable {ENV_VAR} (a comma-separated list of "
                                         f"allowed urlPrefix values) "
                                         + (f"allows only {', '.join(sorted(allowed))}" if allowed else "is not set")
                                         + "; a scenario cannot add extender URLs by itself")
        verbs = {k: get_str(e, k, ep, probs) or "" for k in ("filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb")}
        for k, v in verbs.items():
            if v and (any(c in v for c in "?#%\\") or any(c.isspace() for c in v) or ".." in v.split("/")):
                probs.add(f"{ep}.{k}", f"{_q(v)} is not a verb (a URL path appended to the urlPrefix, "
                                       f"without ?, #, %, spaces or '..')")
        weight = get_int(e, "weight", ep, probs, default=0, minimum=-(2**63), maximum=2**63 - 1) or 0
        if verbs["prioritizeVerb"] and weight <= 0:
            probs.add(f"{ep}.weight", f"{weight} is invalid: must have a positive weight applied to it "
                                      f"(an extender with a prioritizeVerb needs a weight of 1 or more)")
        if verbs["bindVerb"]:
            binders += 1
        if get_bool(e, "enableHTTPS", ep, probs):
            probs.add(f"{ep}.enableHTTPS", "is not supported: the engine calls extenders over plain HTTP only")
        if e.get("tlsConfig") is not None:
            probs.add(f"{ep}.tlsConfig", "is not supported: the engine calls extenders over plain HTTP only")
        timeout = 0
        if e.get("httpTimeout") is not None:
            try:
                timeout = parse_duration(e["httpTimeout"])
            except ValueError as err:
                probs.add(f"{ep}.httpTimeout", str(err))
            if timeout > MAX_EXTENDER_TIMEOUT_US:
                probs.add(f"{ep}.httpTimeout", f"{_q(e['httpTimeout'])} is longer than the engine allows "
                                               f"(at most 60s)")
                timeout = MAX_EXTENDER_TIMEOUT_US
        if timeout == 0:
            timeout = 5 * US        # extender.go NewHTTPExtender: DefaultExtenderTimeout
        managed = []
        for j, r in enumerate(get_list(e, "managedResources", ep, probs)):
            rp = f"{ep}.managedResources[{j}]"
            if not isinstance(r, dict):
                probs.add(rp, f"{_q(r)} is not a managed resource (a mapping with a name)")
                continue
            for k in r:
                if k not in ("name", "ignoredByScheduler"):
                    probs.add(f"{rp}.{k}", "is not a managed resource field (name, ignoredByScheduler)")
            name = get_str(r, "name", rp, probs) or ""
            if not is_qualified_name(name):
                probs.add(f"{rp}.name", f"{_q(name)} is not a qualified name ([prefix/]name)")
            elif not is_extended_resource_name(name):
                probs.add(f"{rp}.name", f"{_q(name)} is an invalid extended resource name")
            if name in managed_names:
                probs.add(f"{rp}.name", f"{_q(name)} is invalid: duplicate extender managed resource name")
            managed_names.add(name)
            managed.append((name, bool(get_bool(r, "ignoredByScheduler", rp, probs))))
        out.append(ExtenderConfig(
            url_prefix=url, filter_verb=verbs["filterVerb"], preempt_verb=verbs["preemptVerb"],
            prioritize_verb=verbs["prioritizeVerb"], bind_verb=verbs["bindVerb"], weight=weight,
            http_timeout=timeout, node_cache_capable=bool(get_bool(e, "nodeCacheCapable", ep, probs)),
            managed_resources=tuple(managed), ignorable=bool(get_bool(e, "ignorable", ep, probs)), place=ep))
    if binders > 1:
        probs.add(place, f"found {binders} extenders implementing bind: only one extender can implement bind")
    return out


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
