"""NodeName: honours ``spec.nodeName`` (upstream ``plugins/nodename/node_name.go``, v1.28.0)."""
from __future__ import annotations

import numpy as np

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                   EnqueueExtensions, FilterPlugin, GVK, Status)

NAME = "NodeName"

ErrReason = "node(s) didn't match the requested node name"


def fits(pod, node_info) -> bool:
    """nodename.Fits: the pod names no node, or names this one."""
    return not pod.node_name or pod.node_name == node_info.node.name


class NodeName(FilterPlugin, EnqueueExtensions):
    name = NAME

    def events_to_register(self) -> list:
        """NodeName.EventsToRegister: Node/Add|Update."""
        return [ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.Update))]

    def filter(self, state, pod, node_info):
        """NodeName.Filter: UnschedulableAndUnresolvable when ``fits`` is false."""
        if not pod.node_name or pod.node_name == node_info.node.name:
            return None
        return Status(Code.UnschedulableAndUnresolvable, ErrReason)

    # Filter reads the node and the pod only, never the node's pods (engine.resourcefit)
    _filter_node_only = True

    def _filter_suspects(self, state, pod, table):
        """No node when the pod names none; otherwise every node other than the named one
        (Framework.filter_suspects)."""
        if not pod.node_name:
            return None
        m = np.ones(len(table.node_infos), dtype=bool)
        i = table.row.get(pod.node_name)
        if i is not None:
            m[i] = False
        return m


def new(args, handle) -> NodeName:
    """nodename.New."""
    return NodeName()
