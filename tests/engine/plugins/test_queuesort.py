"""PrioritySort.  Mirrors upstream queuesort/priority_sort_test.go TestLess."""
import pytest

from engine.framework.types import QueuedPodInfo
from engine.plugins import queuesort
from tests.engine.builders import make_pod

LOW, HIGH = 10, 100
T1, T2 = 1_000_000, 2_000_000


def qpi(priority, timestamp=0):
    return QueuedPodInfo(pod=make_pod().priority(priority).obj(), timestamp=timestamp)


# name, p1, p2, expected
CASES = [
    ("p1.priority less than p2.priority", qpi(LOW), qpi(HIGH), False),
    ("p1.priority greater than p2.priority", qpi(HIGH), qpi(LOW), True),
    ("equal priority. p1 is added to schedulingQ earlier than p2", qpi(HIGH, T1), qpi(HIGH, T2), True),
    ("equal priority. p2 is added to schedulingQ earlier than p1", qpi(HIGH, T2), qpi(HIGH, T1), False),
    # Not in the upstream table: equal priority and timestamp is not "less" either way (the
    # simulator's queue adds its own insertion-order tie-break).
    ("equal priority and timestamp", qpi(HIGH, T1), qpi(HIGH, T1), False),
    ("higher priority wins over an earlier timestamp", qpi(HIGH, T2), qpi(LOW, T1), True),
]


@pytest.mark.parametrize("name,p1,p2,expected", CASES, ids=[c[0] for c in CASES])
def test_less(name, p1, p2, expected):
    pl = queuesort.new({}, None)
    assert pl.name == queuesort.NAME == "PrioritySort"
    assert pl.less(p1, p2) is expected
