"""A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as a scenario's ``scheduler``.

The engine reads the configuration itself (``engine/config.py``); here we only take out what
it cannot have, and say so: the non-CSI volume limit plugins EBSLimits, GCEPDLimits and
AzureDiskLimits (not modelled), and the ``apiVersion`` /
``kind`` that a plugin's ``args`` carry in a full configuration (``DefaultPreemptionArgs`` ...),
which the engine's argument parsers would refuse as unknown fields.
"""
from __future__ import annotations

import copy

from ..config import NOT_MODELLED_VOLUME_PLUGINS
from ..quantity import _q
from .kube import typed, wrong_type

API_VERSION = "kubescheduler.config.k8s.io/v1"


def _check(raw, place, problems) -> bool:
    """Whether the parts of a configuration read here have their types: ``profiles`` a list of
    mappings, each with a string ``schedulerName``, ``plugins`` a mapping of extension points
    whose ``enabled``/``disabled`` are lists of plugins with a string ``name``, and
    ``pluginConfig`` a list of mappings with a string ``name`` and mapping ``args``. Everything
    else goes to the engine's configuration reader (``engine/config.py``)."""
    before = len(problems)
    for i, prof in enumerate(typed(raw, "profiles", list, place, problems) or []):
        pp = f"{place}.profiles[{i}]"
        if not isinstance(prof, dict):
            problems.append(f"{pp}: {wrong_type(prof, dict)}")
            continue
        typed(prof, "schedulerName", str, pp, problems)
        plugins = typed(prof, "plugins", dict, pp, problems) or {}
        for point, ps in plugins.items():
            ptp = f"{pp}.plugins.{point}"
            if ps is not None and not isinstance(ps, dict):
                problems.append(f"{ptp}: {wrong_type(ps, dict)}")
                continue
            for which in ("enabled", "disabled"):
                for j, plugin in enumerate(typed(ps, which, list, ptp, problems) or []):
                    if not isinstance(plugin, dict):
                        problems.append(f"{ptp}.{which}[{j}]: {wrong_type(plugin, dict)}")
                    else:
                        typed(plugin, "name", str, f"{ptp}.{which}[{j}]", problems)
        for j, c in enumerate(typed(prof, "pluginConfig", list, pp, problems) or []):
            cp = f"{pp}.pluginConfig[{j}]"
            if not isinstance(c, dict):
                problems.append(f"{cp}: {wrong_type(c, dict)}")
                continue
            typed(c, "name", str, cp, problems)
            typed(c, "args", dict, cp, problems)
    return len(problems) == before


def convert_scheduler_config(raw, place, report, problems):
    """A scenario ``scheduler`` mapping from a KubeSchedulerConfiguration, or None (problems
    recorded with their place)."""
    if not isinstance(raw, dict):
        problems.append(f"{place}: is not a KubeSchedulerConfiguration (a mapping)")
        return None
    api = raw.get("apiVersion")
    if api is not None and api != API_VERSION:
        problems.append(f"{place}.apiVersion: {_q(api)} is not {API_VERSION} (only v1 is read)")
        return None
    if not _check(raw, place, problems):
        return None
    cfg = copy.deepcopy(raw)
    cfg.pop("apiVersion", None)
    cfg.pop("kind", None)
    if cfg.get("extenders") is None:
        cfg.pop("extenders", None)
    for k in [k for k, v in cfg.items() if v is None]:
        del cfg[k]
    dropped = set()
    for prof in cfg.get("profiles") or []:      # _check saw to the types read below
        plugins = prof.get("plugins")
        if isinstance(plugins, dict):
            for point, ps in list(plugins.items()):
                if ps is None:
                    del plugins[point]
                    continue
                for which in ("enabled", "disabled"):
                    lst = ps.get(which)
                    if lst is None:
                        ps.pop(which, None)
                        continue
                    keep = []
                    for p in lst:
                        if p.get("name") in NOT_MODELLED_VOLUME_PLUGINS:
                            if which == "enabled":
                                dropped.add(p["name"])
                            continue
                        keep.append(p)
                    ps[which] = keep
        pcs = prof.get("pluginConfig")
        if isinstance(pcs, list):
            keep = []
            for c in pcs:
                if c.get("name") in NOT_MODELLED_VOLUME_PLUGINS:
                    report.ignore("KubeSchedulerConfiguration", f"pluginConfig[{c['name']}]")
                    continue
                if isinstance(c.get("args"), dict):
                    args = c["args"]
                    for k in ("apiVersion", "kind"):
                        if k in args:
                            args.pop(k)
                keep.append(c)
            prof["pluginConfig"] = keep
        for k in [k for k, v in prof.items() if v is None]:
            del prof[k]
    if dropped:
        report.note("scheduler: non-CSI volume limit plugins left out (not modelled): " + ", ".join(sorted(dropped)))
    report.keep("KubeSchedulerConfiguration")
    return cfg


def profile_names(cfg) -> list:
    """The scheduler names of a configuration ``convert_scheduler_config`` returned."""
    if not isinstance(cfg, dict) or not cfg.get("profiles"):
        return ["default-scheduler"]
    return [(p.get("schedulerName") if isinstance(p, dict) else None) or "default-scheduler"
            for p in cfg["profiles"]]
