"""SchedulingGates: keeps gated pods out of activeQ (upstream
``plugins/schedulinggates/scheduling_gates.go``, v1.28.0, with PodSchedulingReadiness on as
v1.28 defaults it)."""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                   EnqueueExtensions, GVK, PreEnqueuePlugin, Status)
from .helper import go_list

NAME = "SchedulingGates"


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = NAME

    def pre_enqueue(self, pod):
        """SchedulingGates.PreEnqueue: UnschedulableAndUnresolvable while the pod lists any
        scheduling gate, naming the gates as Go prints a ``[]string``."""
        gates = pod.scheduling_gates
        if not gates:
            return None
        return Status(Code.UnschedulableAndUnresolvable,
                      "waiting for scheduling gates: " + go_list(gates))

    def events_to_register(self) -> list:
        """SchedulingGates.EventsToRegister: Pod/Update (a gate may be removed)."""
        return [ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.Update))]


def new(args, handle) -> SchedulingGates:
    """schedulinggates.New."""
    return SchedulingGates()
