"""The in-tree plugins (upstream ``framework/plugins/registry.go``, v1.28), minus the non-CSI
volume limits (EBSLimits, GCEPDLimits, AzureDiskLimits)."""
from __future__ import annotations

from . import (defaultbinder, defaultpreemption, imagelocality, nodeaffinity, nodename, nodeports,
               nodeunschedulable, nodevolumelimits, queuesort, schedulinggates, tainttoleration,
               volumebinding, volumerestrictions, volumezone)
from .interpodaffinity import plugin as interpodaffinity
from .noderesources import balanced_allocation, fit
from .podtopologyspread import plugin as podtopologyspread
from .registry import IN_TREE as ORIGIN_IN_TREE, register

_MODULES = [queuesort, schedulinggates, nodeunschedulable, nodename, tainttoleration, nodeaffinity,
            nodeports, fit, balanced_allocation, imagelocality, interpodaffinity, podtopologyspread,
            defaultpreemption, defaultbinder, volumerestrictions, nodevolumelimits, volumebinding, volumezone]

for _m in _MODULES:
    register(_m.NAME, _m.new, origin=ORIGIN_IN_TREE)
