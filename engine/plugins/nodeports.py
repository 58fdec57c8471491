"""NodePorts: host-port conflicts (upstream ``plugins/nodeports/node_ports.go``, v1.28.0)."""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                   EnqueueExtensions, FilterPlugin, GVK, PreFilterPlugin, Status)

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ErrReason = "node(s) didn't have free ports for the requested pod ports"


class _PreFilterState:
    """preFilterState: the pod's container ports with a host port (``objects.HostPort``)."""
    __slots__ = ("ports",)

    def __init__(self, ports):
        self.ports = ports

    def clone(self):
        return self


def get_container_ports(*pods) -> list:
    """getContainerPorts: the host ports (> 0) of the pods' regular containers.  The parser
    already keeps only those in ``Pod.host_ports``."""
    out = []
    for p in pods:
        out.extend(p.host_ports)
    return out


def fits_ports(want_ports, node_info) -> bool:
    """fitsPorts: no wanted port conflicts with the node's used ports (HostPortInfo.CheckConflict:
    0.0.0.0 conflicts with every address on the same protocol and port)."""
    if not node_info.used_ports:
        return True
    for hp in want_ports:
        if node_info.ports_conflict(hp.ip, hp.protocol, hp.port):
            return False
    return True


def fits(pod, node_info) -> bool:
    """nodeports.Fits (used by the queue's preCheck)."""
    return fits_ports(pod.host_ports, node_info)


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = NAME

    def pre_filter(self, state, pod):
        """NodePorts.PreFilter: Skip when the pod asks for no host port; otherwise store the
        ports for Filter."""
        ports = pod.host_ports
        if len(ports) == 0:
            return None, Status(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None, None

    def pre_filter_extensions(self):
        return None

    def events_to_register(self) -> list:
        """NodePorts.EventsToRegister: Pod/Delete (a port is freed); Node/Add|Update."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.Delete)),
            ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.Update)),
        ]

    def filter(self, state, pod, node_info):
        """NodePorts.Filter: Unschedulable when a wanted host port is in use on the node; an
        Error when PreFilter state is missing."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not fits_ports(s.ports, node_info):
            return Status(Code.Unschedulable, ErrReason)
        return None


def new(args, handle) -> NodePorts:
    """nodeports.New."""
    return NodePorts()
