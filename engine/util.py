"""Small helpers shared by the scheduler's pieces (upstream ``pkg/scheduler/util/utils.go``,
v1.28), below every module that uses them: the framework's preemption, the DefaultPreemption
plugin and the node table's victim columns all order pods with ``more_important_pod``.
"""
from __future__ import annotations

# The largest quantity the node table's arrays hold (engine.nodetable): a sum of two stays
# below 2**56 and its product with MaxNodeScore (100 < 2**7) below 2**63, so no int64
# operation on them can overflow. The resource plugins check their values against it before
# they read the table (engine.plugins.noderesources).
LIMIT = 2 ** 55


def pod_start_time(pod, now: int) -> int:
    """util.GetPodStartTime: status.startTime, else now."""
    return pod.start_time if pod.start_time is not None else now


def more_important_pod(p1, p2, now: int) -> bool:
    """util.MoreImportantPod: higher priority, then earlier start time."""
    if p1.priority != p2.priority:
        return p1.priority > p2.priority
    return pod_start_time(p1, now) < pod_start_time(p2, now)


def sort_more_important(pods: list, now: int) -> list:
    """A stable sort by MoreImportantPod (upstream's sort is not stable; equal pods keep the
    node's pod order here, as SPEC §4 says)."""
    return sorted(pods, key=lambda p: (-p.priority, pod_start_time(p, now)))


def get_earliest_pod_start_time(victims: list, now: int):
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    if not victims:
        return None
    earliest = pod_start_time(victims[0], now)
    max_priority = victims[0].priority
    for p in victims:
        if p.priority == max_priority:
            t = pod_start_time(p, now)
            if t < earliest:
                earliest = t
        elif p.priority > max_priority:
            max_priority = p.priority
            earliest = pod_start_time(p, now)
    return earliest
