"""PrioritySort: the default QueueSort plugin (upstream ``plugins/queuesort/priority_sort.go``,
v1.28.0)."""
from __future__ import annotations

from ..framework.interface import QueueSortPlugin

NAME = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    """Orders activeQ by priority, then by the time the pod was queued."""

    name = NAME

    def less(self, a, b) -> bool:
        """PrioritySort.Less: ``a`` goes first if its pod has the higher priority, or the same
        priority and a strictly earlier queue timestamp.  (The simulator's queue breaks the
        remaining ties by insertion order itself.)"""
        p1 = a.pod.priority
        p2 = b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


def new(args, handle) -> PrioritySort:
    """queuesort.New."""
    return PrioritySort()
