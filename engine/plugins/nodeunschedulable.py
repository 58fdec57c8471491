"""NodeUnschedulable: keeps pods off cordoned nodes (upstream
``plugins/nodeunschedulable/node_unschedulable.go``, v1.28.0)."""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                   EnqueueExtensions, FilterPlugin, GVK, Status)
from ..labels import Taint, tolerations_tolerate_taint

NAME = "NodeUnschedulable"

ErrReasonUnknownCondition = "node(s) had unknown conditions"
ErrReasonUnschedulable = "node(s) were unschedulable"

# v1.TaintNodeUnschedulable with the NoSchedule effect: tolerating it lets a pod onto a
# cordoned node.
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    name = NAME

    def events_to_register(self) -> list:
        """NodeUnschedulable.EventsToRegister: Node/Add|UpdateNodeTaint."""
        return [ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.UpdateNodeTaint))]

    def filter(self, state, pod, node_info):
        """NodeUnschedulable.Filter: a node with ``spec.unschedulable`` rejects the pod
        (UnschedulableAndUnresolvable) unless the pod tolerates the
        ``node.kubernetes.io/unschedulable:NoSchedule`` taint.  Like v1.28.0 there is no
        check for a NodeInfo without a node: the framework never passes one."""
        node = node_info.node
        if not node.unschedulable:
            return None
        if tolerations_tolerate_taint(pod.tolerations, _UNSCHEDULABLE_TAINT):
            return None
        return Status(Code.UnschedulableAndUnresolvable, ErrReasonUnschedulable)

    # Filter reads the node and the pod only, never the node's pods (engine.resourcefit)
    _filter_node_only = True

    def _filter_suspects(self, state, pod, table):
        """The cordoned nodes (Framework.filter_suspects)."""
        return table.unschedulable if table.any_unschedulable else None


def new(args, handle) -> NodeUnschedulable:
    """nodeunschedulable.New."""
    return NodeUnschedulable()
