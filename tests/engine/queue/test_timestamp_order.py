"""Equal queue timestamps are ordered by when they were taken (issue 8, SPEC.md section 4).

Upstream v1.28.0 ``plugins/queuesort/priority_sort.go`` ``Less`` orders equal priorities by
``QueuedPodInfo.Timestamp``; with a real clock two timestamps are never equal, so the pod whose
timestamp was *taken* first wins.  In ``internal/queue/scheduling_queue.go`` the timestamp is
taken by ``newQueuedPodInfo`` (``Add``; ``Update`` of a pod in no queue) and refreshed by
``AddUnschedulableIfNotPresent`` after a failed attempt; ``Update`` of a queued pod,
``addToActiveQ`` after a gate is removed, ``Activate``, ``flushBackoffQCompleted`` and
``flushUnschedulablePodsLeftover`` all keep the ``*QueuedPodInfo`` and so its timestamp.

The engine's clock gives equal timestamps to everything at one instant, so each taking also
takes ``QueuedPodInfo.seq``, the last key of activeQ's and podBackoffQ's order.  Each test
below makes the order of heap pushes disagree with the order the timestamps were taken, so it
fails if the queue orders by pushes.
"""
from engine.framework import interface as fw
from engine.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS
from tests.engine.queue.queue_helpers import (
    SEC, active_keys, backoff_keys, default_profiles, drain, fail, make_qpod, make_queue,
    new_clock, pop_expect, updated)


def _pods(*names):
    return [make_qpod(n).obj() for n in names]


def test_add_takes_a_timestamp_in_order():
    # Add -> newQueuedPodInfo: each Add takes a new, later-numbered timestamp.
    t = new_clock()
    q = make_queue(t)
    a, b, c = _pods("a", "b", "c")
    for p in (c, a, b):
        q.add(p)
    infos = {pi.pod.name: pi for pi in q.active_q.items()}
    assert infos["c"].seq < infos["a"].seq < infos["b"].seq
    assert {pi.timestamp for pi in infos.values()} == {0}
    assert drain(q) == ["default/c", "default/a", "default/b"]


def test_update_of_a_pod_in_active_q_keeps_its_timestamp():
    # Update, pod in activeQ: pInfo.Update(newPod) keeps Timestamp; the heap is re-sorted.
    t = new_clock()
    q = make_queue(t)
    a, b = _pods("a", "b")
    q.add(a)
    q.add(b)
    before = q.active_q.get(a.key).seq
    q.update(a, updated(a, **{"metadata.annotations.x": "1"}))   # re-pushed last
    assert q.active_q.get(a.key).seq == before
    assert active_keys(q) == ["default/a", "default/b"]


def test_update_of_a_pod_in_backoff_q_keeps_its_timestamp():
    t = new_clock()
    q = make_queue(t)
    a, b = _pods("a", "b")
    q.add(a)
    q.add(b)
    pa, pb = pop_expect(q, a), pop_expect(q, b)
    q.move_request_cycle = q.scheduling_cycle      # a move request arrived: both go to backoffQ
    fail(q, pa, "P")
    fail(q, pb, "P")
    assert backoff_keys(q) == ["default/a", "default/b"]
    seq = q.pod_backoff_q.get(a.key).seq
    q.update(a, updated(a, **{"metadata.annotations.x": "1"}))
    assert q.pod_backoff_q.get(a.key).seq == seq
    assert backoff_keys(q) == ["default/a", "default/b"]


def test_update_of_a_pod_in_no_queue_takes_a_new_timestamp():
    # Update, pod in no queue (in flight): newQueuedPodInfo, so it goes behind pods that were
    # added before the update at the same instant.
    t = new_clock()
    q = make_queue(t)
    a, b = _pods("a", "b")
    q.add(a)
    pa = pop_expect(q, a)
    q.add(b)
    q.update(a, updated(a, **{"metadata.annotations.x": "1"}))
    fresh = q.active_q.get(a.key)
    assert fresh is not pa and fresh.seq > q.active_q.get(b.key).seq
    assert drain(q) == ["default/b", "default/a"]


def test_ungating_keeps_the_timestamp_of_the_add():
    # Update of a gated pod: addToActiveQ(pInfo) keeps the pInfo taken at Add, so the gated pod
    # created first pops before pods created after it at the same instant, although it entered
    # activeQ last (shared conformance case queue-timestamp-taken-order).
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    g = make_qpod("gated").scheduling_gates("example.com/hold").obj()
    b, c = _pods("b", "c")
    q.add(g)
    q.add(b)
    q.add(c)
    assert q.where_is(g.key) == UNSCHEDULABLE_PODS
    seq = q.unschedulable_pods[g.key].seq
    t[0] = SEC // 2
    q.update(g, updated(g, **{"spec.schedulingGates": None}))
    assert q.where_is(g.key) == ACTIVE_Q
    assert q.active_q.get(g.key).seq == seq and q.active_q.get(g.key).timestamp == 0
    assert drain(q) == ["default/gated", "default/b", "default/c"]


def test_activate_keeps_the_timestamp():
    # Activate: addToActiveQ(pInfo) of the pInfo from unschedulablePods.
    t = new_clock()
    q = make_queue(t)
    a, b = _pods("a", "b")
    q.add(a)
    pa = pop_expect(q, a)
    fail(q, pa, "P")                                   # a's timestamp taken at t=0, first
    q.add(b)                                           # b's taken after it
    pb = pop_expect(q, b)
    q.add(updated(b, **{"metadata.name": "c"}))       # a third pod keeps activeQ non-empty
    fail(q, pb, "P")
    q.activate([b])                                    # b pushed first
    q.activate([a])
    assert active_keys(q) == ["default/a", "default/c", "default/b"]


def test_backoff_flush_keeps_the_timestamp():
    # flushBackoffQCompleted moves the pInfo as it is: two pods whose backoff ends at the same
    # time reach activeQ in the order of their timestamps, whatever order they are pushed.
    t = new_clock()
    q = make_queue(t)
    a, b = _pods("a", "b")
    q.add(b)
    q.add(a)
    pb, pa = pop_expect(q, b), pop_expect(q, a)
    q.move_request_cycle = q.scheduling_cycle
    fail(q, pa, "P")                                   # a fails first: earlier timestamp
    fail(q, pb, "P")
    assert backoff_keys(q) == ["default/a", "default/b"]
    seqs = (pa.seq, pb.seq)
    t[0] = SEC
    q.flush_backoff_q_completed()
    assert (pa.seq, pb.seq) == seqs
    assert active_keys(q) == ["default/a", "default/b"]


def test_leftover_flush_keeps_the_timestamp():
    t = new_clock()
    q = make_queue(t)
    a, b = _pods("a", "b")
    q.add(a)
    q.add(b)
    pa, pb = pop_expect(q, a), pop_expect(q, b)
    fail(q, pb, "P")                                   # b enters unschedulablePods first
    fail(q, pa, "P")
    assert list(q.unschedulable_pods) == ["default/b", "default/a"]
    t[0] = 301 * SEC
    q.flush_unschedulable_pods_leftover()              # moves b first (the order they entered)
    assert (pb.timestamp, pa.timestamp) == (0, 0) and pb.seq < pa.seq
    assert active_keys(q) == ["default/b", "default/a"]


def test_failed_attempt_takes_a_new_timestamp():
    # AddUnschedulableIfNotPresent: pInfo.Timestamp = now; a pod failing at t goes behind pods
    # added earlier at t, and ahead of pods added later at t.
    t = new_clock()
    q = make_queue(t)
    a, b, c = _pods("a", "b", "c")
    q.add(a)
    pa = pop_expect(q, a)
    first = pa.seq
    q.add(b)
    q.move_request_cycle = q.scheduling_cycle
    fail(q, pa, "P")
    assert pa.seq > first and pa.seq > q.active_q.get(b.key).seq
    q.add(c)
    t[0] = SEC
    q.flush_backoff_q_completed()
    assert q.where_is(a.key) == ACTIVE_Q
    assert drain(q) == ["default/b", "default/a", "default/c"]


def test_failed_attempt_with_queueing_hints_takes_a_new_timestamp():
    t = new_clock()
    q = make_queue(t, queueing_hints=True)
    a, b = _pods("a", "b")
    q.add(a)
    pa = pop_expect(q, a)
    first = pa.seq
    q.add(b)
    fail(q, pa)                                        # no plugin, no event: unschedulablePods
    assert pa.seq > first and pa.seq > q.active_q.get(b.key).seq


def test_backoff_q_orders_equal_expiries_by_timestamp_order():
    # Equal backoff expiries: the pod whose timestamp was taken first leaves first, even when it
    # was pushed into podBackoffQ last.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    a, b = _pods("a", "b")
    q.add(a)
    q.add(b)
    pa, pb = pop_expect(q, a), pop_expect(q, b)
    fail(q, pa, "P")
    fail(q, pb, "P")                                   # both in unschedulablePods, a first
    q.unschedulable_pods = {k: q.unschedulable_pods[k] for k in ("default/b", "default/a")}
    t[0] = SEC // 2
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)   # pushes b, then a
    assert q.where_is(a.key) == BACKOFF_Q and q.where_is(b.key) == BACKOFF_Q
    assert backoff_keys(q) == ["default/a", "default/b"]
    t[0] = SEC
    q.flush_backoff_q_completed()
    assert drain(q) == ["default/a", "default/b"]


def test_custom_queue_sort_ties_fall_to_timestamp_order():
    # A custom QueueSort whose Less orders by priority only: its ties are left to the order
    # the timestamps were taken (documented in docs/writing-plugins.md).
    t = new_clock()
    q = make_queue(t, less=lambda x, y: x.pod.priority > y.pod.priority)
    lo1 = make_qpod("lo1", priority=1).obj()
    hi = make_qpod("hi", priority=5).obj()
    lo2 = make_qpod("lo2", priority=1).obj()
    for p in (lo1, hi, lo2):
        q.add(p)
    q.update(lo1, updated(lo1, **{"metadata.annotations.x": "1"}))   # re-pushed last
    assert drain(q) == ["default/hi", "default/lo1", "default/lo2"]
