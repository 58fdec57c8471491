"""The in-tree plugins (upstream ``framework/plugins/registry.go``, v1.28), minus the non-CSI
volume limits (EBSLimits, GCEPDLimits, AzureDiskLimits)."""
from __future__ import annotations

from . import (defaultbinder, defaultpreemption, imagelocality, nodeaffinity, nodename, nodeports,
               nodeunschedulable, nodevolumelimits, queuesort, schedulinggates, tainttoleration,
               volumebinding, volumerestrictions, volumezone)
from .interpodaffinity import plugin as interpodaffinity
from .noderesources import balanced_allocation, fit
from .podtopologyspread import plugin as podtopologyspread

_MODULES = [queuesort, schedulinggates, nodeunschedulable, nodename, tainttoleration, nodeaffinity,
            nodeports, fit, balanced_allocation, imagelocality, interpodaffinity, podtopologyspread,
            defaultpreemption, defaultbinder, volumerestrictions, nodevolumelimits, volumebinding, volumezone]


def new_in_tree_registry() -> list:
    """[(name, factory)] of every in-tree plugin, in upstream's order (``NewInTreeRegistry``);
    ``engine.plugins.registry`` registers them (this module imports nothing of it)."""
    return [(m.NAME, m.new) for m in _MODULES]
