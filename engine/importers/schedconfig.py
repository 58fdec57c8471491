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

API_VERSION = "kubescheduler.config.k8s.io/v1"


def convert_scheduler_config(raw, place, report, problems):
    """A scenario ``scheduler`` mapping from a KubeSchedulerConfiguration, or None (problems
    recorded with their place)."""
    if not isinstance(raw, dict):
        problems.append(f"{place}: is not a KubeSchedulerConfiguration (a mapping)")
        return None
    api = raw.get("apiVersion")
    if api is not None and api != API_VERSION:
        problems.append(f"{place}.apiVersion: \"{api}\" is not {API_VERSION} (only v1 is read)")
        return None
    cfg = copy.deepcopy(raw)
    cfg.pop("apiVersion", None)
    cfg.pop("kind", None)
    if cfg.get("extenders") is None:
        cfg.pop("extenders", None)
    for k in [k for k, v in cfg.items() if v is None]:
        del cfg[k]
    dropped = set()
    for prof in cfg.get("profiles") or []:
        if not isinstance(prof, dict):
            continue
        plugins = prof.get("plugins")
        if isinstance(plugins, dict):
            for point, ps in list(plugins.items()):
                if ps is None:
                    del plugins[point]
                    continue
                if not isinstance(ps, dict):
                    continue
                for which in ("enabled", "disabled"):
                    lst = ps.get(which)
                    if lst is None:
                        ps.pop(which, None)
                        continue
                    if isinstance(lst, list):
                        keep = []
                        for p in lst:
                            if isinstance(p, dict) and p.get("name") in NOT_MODELLED_VOLUME_PLUGINS:
                                if which == "enabled":
                                    dropped.add(p["name"])
                                continue
                            keep.append(p)
                        ps[which] = keep
        pcs = prof.get("pluginConfig")
        if isinstance(pcs, list):
            keep = []
            for c in pcs:
                if isinstance(c, dict) and c.get("name") in NOT_MODELLED_VOLUME_PLUGINS:
                    report.ignore("KubeSchedulerConfiguration", f"pluginConfig[{c['name']}]")
                    continue
                if isinstance(c, dict) and isinstance(c.get("args"), dict):
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
    if not isinstance(cfg, dict) or not cfg.get("profiles"):
        return ["default-scheduler"]
    return [(p.get("schedulerName") if isinstance(p, dict) else None) or "default-scheduler"
            for p in cfg["profiles"]]
