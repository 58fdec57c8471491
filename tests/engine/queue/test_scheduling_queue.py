"""PriorityQueue.  Mirrors upstream v1.28.0 ``pkg/scheduler/internal/queue/scheduling_queue_test.go``
(each test names the upstream test it follows) and UPSTREAM-v1.28.md sections 2-7, with the
v1.28.7 behaviour SPEC.md takes as the default: SchedulerQueueingHints off, Pop clears a pod's
unschedulable plugins.

Time is a fake clock (``t[0]``, virtual microseconds); the queue is built directly, with either
a hand-written queueingHintMap (upstream ``WithQueueingHintMapPerProfile``) or the default
profile's real Framework (its PreEnqueue plugins and ``hint_map()``).
"""
import pytest

from engine.framework import interface as fw
from engine.framework.interface import ActionType, ClusterEvent, GVK, QueueingHint
from engine.framework.types import QueuedPodInfo
from engine.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS, is_pod_updated
from tests.engine.queue.queue_helpers import (
    HIGH, LOW, MEDIUM, MID, MS, SEC, AllowlistPreEnqueue, active_keys, backoff_keys,
    default_profiles, drain, fail, hint_profiles, make_qpod, make_queue, new_clock, park,
    pop_expect, recording_trace, unsched_keys, updated)

# upstream: TestEvent = ClusterEvent{Resource: "test"} (no action, no registered plugin).
TEST_EVENT = ClusterEvent("test", 0, "TestEvent")
# Events the engine does not predefine (no volumes), as upstream's events.go spells them.
PV_ADD = ClusterEvent(GVK.PersistentVolume, ActionType.Add, "PvAdd")
PVC_ADD = ClusterEvent(GVK.PersistentVolumeClaim, ActionType.Add, "PvcAdd")
CSI_NODE_UPDATE = ClusterEvent(GVK.CSINode, ActionType.Update, "CSINodeUpdate")
DEFAULT_MAX_IN_UNSCHED = 300 * SEC


def hint_after_backoff(pod, old, new):
    return QueueingHint.QueueAfterBackoff


def hint_immediately(pod, old, new):
    return QueueingHint.QueueImmediately


def hint_skip(pod, old, new):
    return QueueingHint.QueueSkip


# Upstream's pod fixtures (highPriorityPodInfo, highPriNominatedPodInfo, medPriorityPodInfo,
# unschedulablePodInfo).
def hpp():
    return make_qpod("hpp", "ns1", HIGH).obj()


def hpp_nominated():
    return make_qpod("hpp", "ns1", HIGH).nominated_node_name("node1").obj()


def mpp():
    return make_qpod("mpp", "ns2", MEDIUM).annotation("annot2", "val2").nominated_node_name("node1").obj()


def up():
    return (make_qpod("up", "ns1", LOW).annotation("annot2", "val2").nominated_node_name("node1")
            .condition_unschedulable().obj())


def nominated(q, node="node1"):
    return [p.key for p in q.nominator.nominated_pods_for_node(node)]


def where(q, pod):
    return q.where_is(pod.key)


# =============================================================================== Add

def test_add():
    # TestPriorityQueue_Add
    t = new_clock()
    q = make_queue(t)
    m, u, h = mpp(), up(), hpp()
    q.add(m)
    q.add(u)
    q.add(h)
    assert q.nominator.nominated_pod_to_node == {m.key: "node1", u.key: "node1"}
    assert nominated(q) == [m.key, u.key]
    assert pop_expect(q, h).pod is h
    assert pop_expect(q, m).pod is m
    assert pop_expect(q, u).pod is u
    # Popping does not touch nominations.
    assert len(q.nominator.nominated_pods["node1"]) == 2
    assert q.incoming_pods == {"active/PodAdd": 3}


def test_add_creates_a_fresh_queued_pod_info():
    # UPSTREAM-v1.28.md 4.1 / newQueuedPodInfo: timestamp now, attempts 0, no plugins;
    # initialAttemptTimestamp set when it actually enters activeQ.
    t = new_clock(7 * SEC)
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.get(p.key)
    assert (pi.timestamp, pi.attempts, pi.unschedulable_plugins, pi.gated) == (7 * SEC, 0, set(), False)
    assert pi.initial_attempt_timestamp == 7 * SEC
    assert where(q, p) == ACTIVE_Q
    assert q.pending_pods() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_add_removes_a_stale_copy_from_backoff_q_and_unschedulable_pods():
    # PriorityQueue.Add: "pod is already in the unschedulable queue / podBackoff queue" is an
    # error upstream logs, then removes the stale copy.
    t = new_clock()
    q = make_queue(t)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    park(q, a)
    park(q, b)
    q.move_all_to_active_or_backoff_queue(TEST_EVENT, pre_check=lambda pod: pod.name == "a")
    assert (where(q, a), where(q, b)) == (BACKOFF_Q, UNSCHEDULABLE_PODS)
    q.add(a)
    q.add(b)
    assert active_keys(q) == [a.key, b.key]
    assert backoff_keys(q) == [] and unsched_keys(q) == []
    assert q.get(a.key).attempts == 0


def test_add_with_reverse_priority_less_func():
    # TestPriorityQueue_AddWithReversePriorityLessFunc (upstream passes the default sort, so
    # high pops first); plus a real custom QueueSort ``less`` (reverse priority).
    t = new_clock()
    q = make_queue(t)
    m, h = mpp(), hpp()
    q.add(m)
    q.add(h)
    assert drain(q) == [h.key, m.key]

    q2 = make_queue(t, less=lambda a, b: a.pod.priority < b.pod.priority)
    pods = [make_qpod(f"p{i}", priority=pr).obj() for i, pr in enumerate([5, 1, 9, 1])]
    for p in pods:
        q2.add(p)
    # Lowest priority first; equal ones in insertion order.
    assert drain(q2) == ["default/p1", "default/p3", "default/p0", "default/p2"]


def test_add_gated_pod():
    # UPSTREAM-v1.28.md 4.1/4.13: a gated Add goes to unschedulablePods with the gated flag and
    # the PreEnqueue plugin recorded; no incoming-pods metric, no nominator update.
    t = new_clock(3 * SEC)
    q = make_queue(t, profiles=default_profiles())
    g = make_qpod("g").scheduling_gates("example.com/gate").nominated_node_name("node1").obj()
    q.add(g)
    pi = q.get(g.key)
    assert where(q, g) == UNSCHEDULABLE_PODS
    assert pi.gated is True
    assert pi.unschedulable_plugins == {"SchedulingGates"}
    assert pi.attempts == 0 and pi.initial_attempt_timestamp is None
    assert q.incoming_pods == {}
    assert q.nominator.nominated_pod_to_node == {}
    assert q.unschedulable_reasons == {"SchedulingGates": 1}
    assert q.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert q.pop() is None


class TestAddToActiveQ:
    # TestPriorityQueue_addToActiveQ
    CASES = [
        ("no plugins registered", [], "p", 0, True),
        ("preEnqueue plugin registered, pod name not in allowlists",
         [AllowlistPreEnqueue([]), AllowlistPreEnqueue([])], "p", 1, False),
        ("preEnqueue plugin registered, pod failed one preEnqueue plugin",
         [AllowlistPreEnqueue(["foo", "bar"]), AllowlistPreEnqueue(["foo"])], "bar", 1, False),
        ("preEnqueue plugin registered, pod passed all preEnqueue plugins",
         [AllowlistPreEnqueue(["foo", "bar"]), AllowlistPreEnqueue(["bar"])], "bar", 0, True),
    ]

    @pytest.mark.parametrize("name,plugins,label,want_unsched,want_success", CASES, ids=[c[0] for c in CASES])
    def test_add_to_active_q(self, name, plugins, label, want_unsched, want_success):
        t = new_clock()
        q = make_queue(t, profiles=hint_profiles(pre_enqueue=plugins),
                       pod_initial_backoff=30 * SEC, pod_max_backoff=60 * SEC)
        pod = make_qpod(label).label(label, "").obj()
        assert q.add_to_active_q(q.new_queued_pod_info(pod)) is want_success
        assert len(q.unschedulable_pods) == want_unsched
        # Simulate an update event: the pod stays where it is.
        q.update(pod, updated(pod, **{"metadata.annotations.foo": ""}))
        assert len(q.unschedulable_pods) == want_unsched

    def test_first_rejecting_plugin_is_recorded(self):
        t = new_clock()
        a = AllowlistPreEnqueue(["foo"], name="A")
        b = AllowlistPreEnqueue(["bar"], name="B")
        q = make_queue(t, profiles=hint_profiles(pre_enqueue=[a, b]))
        pi = q.new_queued_pod_info(make_qpod("p").label("foo", "").obj())
        assert q.add_to_active_q(pi) is False
        assert pi.unschedulable_plugins == {"B"} and pi.gated
        pi2 = q.new_queued_pod_info(make_qpod("q").obj())
        assert q.add_to_active_q(pi2) is False
        assert pi2.unschedulable_plugins == {"A"}
        assert q.unschedulable_reasons == {"A": 1, "B": 1}

    def test_pod_of_an_unknown_profile_is_not_gated(self):
        t = new_clock()
        q = make_queue(t, profiles=hint_profiles(pre_enqueue=[AllowlistPreEnqueue([])]))
        p = make_qpod("p").scheduler_name("other").obj()
        q.add(p)
        assert where(q, p) == ACTIVE_Q


# =============================================================================== Pop

def test_pop():
    # TestPriorityQueue_Pop: Pop returns the pod; nominations are kept.
    t = new_clock()
    q = make_queue(t)
    m = mpp()
    q.add(m)
    assert pop_expect(q, m).pod is m
    assert len(q.nominator.nominated_pods["node1"]) == 1


def test_pop_increments_attempts_and_scheduling_cycle():
    t = new_clock()
    q = make_queue(t)
    assert q.pop() is None                   # empty: nothing happens (upstream blocks)
    assert q.scheduling_cycle == 0
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    pa = q.pop()
    assert (pa.attempts, q.scheduling_cycle) == (1, 1)
    pb = q.pop()
    assert (pb.attempts, q.scheduling_cycle) == (1, 2)
    fail(q, pa)
    q.activate([a])
    pa2 = pop_expect(q, a)
    assert pa2 is pa and (pa2.attempts, q.scheduling_cycle) == (2, 3)


def test_pop_clears_unschedulable_plugins():
    # v1.28.7 (SPEC.md): Pop starts the attempt with no unschedulable plugins, and decrements
    # the unschedulable_pods{plugin} gauge for the ones it had.
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    pinfo, _ = park(q, p, "NodeResourcesFit", "TaintToleration")
    assert q.unschedulable_reasons == {"NodeResourcesFit": 1, "TaintToleration": 1}
    q.activate([p])
    again = pop_expect(q, p)
    assert again.unschedulable_plugins == set()
    assert q.unschedulable_reasons == {"NodeResourcesFit": 0, "TaintToleration": 0}
    # A failure that names no plugin now leaves none (not the stale set).
    q.add_unschedulable_if_not_present(again, q.scheduling_cycle)
    assert q.get(p.key).unschedulable_plugins == set()


# =============================================================================== ordering

def test_priority_sort_order_and_fifo_ties():
    # PrioritySort.Less: higher priority, then earlier timestamp; equal pods pop in the order
    # they were added (SPEC.md 4: "the pod that entered the queue first comes first").
    t = new_clock()
    q = make_queue(t)
    x = make_qpod("x", priority=0).obj()
    y = make_qpod("y", priority=10).obj()
    q.add(x)
    q.add(y)
    t[0] = 1 * SEC
    z = make_qpod("z", priority=10).obj()
    w = make_qpod("w", priority=0).obj()
    v = make_qpod("v", priority=10).obj()
    for p in (z, w, v):
        q.add(p)
    assert active_keys(q) == [y.key, z.key, v.key, x.key, w.key]
    assert drain(q) == [y.key, z.key, v.key, x.key, w.key]


def _pinfos_for_timestamp_test(t0):
    p1 = make_qpod("test-pod-1", "ns1").nominated_node_name("node1").obj()
    p2 = make_qpod("test-pod-2", "ns2").nominated_node_name("node2").obj()
    return QueuedPodInfo(pod=p1, timestamp=t0), QueuedPodInfo(pod=p2, timestamp=t0 + SEC)


def _op_add_active(q, t, pi):
    q.active_q.add(pi.pod.key, pi)


def _op_update_active(q, t, pi):
    q.active_q.update(pi.pod.key, pi)


def _op_add_unsched(q, t, pi):
    q._add_unschedulable(pi)


def _op_add_backoff(q, t, pi):
    q.pod_backoff_q.add(pi.pod.key, pi)


def _op_move_all(q, t, pi):
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)


def _op_clock_forward(q, t, pi):
    t[0] += 2 * SEC


def _op_flush_backoff(q, t, pi):
    t[0] += 2 * SEC
    q.flush_backoff_q_completed()


POD_TIMESTAMP_CASES = [
    ("add two pod to activeQ and sort them by the timestamp",
     [_op_add_active, _op_add_active], ["p2", "p1"], ["p1", "p2"]),
    ("update two pod to activeQ and sort them by the timestamp",
     [_op_update_active, _op_update_active], ["p2", "p1"], ["p1", "p2"]),
    ("add two pod to unschedulablePods then move them to activeQ and sort them by the timestamp",
     [_op_add_unsched, _op_add_unsched, _op_clock_forward, _op_move_all], ["p2", "p1", None, None], ["p1", "p2"]),
    ("add one pod to BackoffQ and move it to activeQ",
     [_op_add_active, _op_add_backoff, _op_flush_backoff, _op_move_all], ["p2", "p1", None, None], ["p1", "p2"]),
]


@pytest.mark.parametrize("name,ops,operands,expected", POD_TIMESTAMP_CASES, ids=[c[0] for c in POD_TIMESTAMP_CASES])
def test_pod_timestamp(name, ops, operands, expected):
    # TestPodTimestamp
    t = new_clock(100 * SEC)
    q = make_queue(t)
    p1, p2 = _pinfos_for_timestamp_test(t[0])
    by_name = {"p1": p1, "p2": p2, None: None}
    for op, operand in zip(ops, operands):
        op(q, t, by_name[operand])
    assert len(q.active_q) == len(expected)
    got = [q.active_q.pop() for _ in expected]
    assert got == [by_name[n] for n in expected]


def test_recently_tried_pods_go_back():
    # TestRecentlyTriedPodsGoBack: an unschedulable pod moved back goes behind the other pods
    # of the same priority (its timestamp was refreshed at the failure).
    t = new_clock()
    q = make_queue(t)
    pods = [make_qpod(f"test-pod-{i}", "ns1", HIGH).node("node1").nominated_node_name("node1").obj()
            for i in range(5)]
    for p in pods:
        q.add(p)
    t[0] += 1                                # c.Step(time.Microsecond)
    p1 = q.pop()
    q.add_unschedulable_if_not_present(p1, q.scheduling_cycle)
    t[0] += 1 * SEC                          # DefaultPodInitialBackoffDuration
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)
    popped = [q.pop() for _ in range(5)]
    assert popped[4] is p1
    assert p1 not in popped[:4]


def test_pod_failed_scheduling_multiple_times_does_not_block_newer_pod():
    # TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod
    t = new_clock()
    q = make_queue(t)
    unsched = make_qpod("test-pod-unscheduled", "ns1", HIGH).nominated_node_name("node1").obj()
    q.add_to_active_q(q.new_queued_pod_info(unsched))
    assert pop_expect(q, unsched).pod is unsched
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(unsched), q.scheduling_cycle)
    t[0] += 2 * SEC
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)
    assert pop_expect(q, unsched).pod is unsched
    # A newer pod is added while the unschedulable one is in flight ...
    newer = make_qpod("test-newer-pod", "ns1", HIGH).nominated_node_name("node1").obj()
    q.add(newer)
    # ... which then fails AGAIN.
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(unsched), q.scheduling_cycle)
    t[0] += 2 * SEC
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)
    assert pop_expect(q, newer).pod is newer


def test_high_priority_backoff():
    # TestHighPriorityBackoff: a high priority pod that failed waits out its backoff and does
    # not block the others.
    t = new_clock()
    q = make_queue(t)
    mid = make_qpod("test-midpod", "ns1", MID).nominated_node_name("node1").obj()
    high = make_qpod("test-highpod", "ns1", HIGH).nominated_node_name("node1").obj()
    q.add(mid)
    q.add(high)
    p = pop_expect(q, high)
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
    q.move_all_to_active_or_backoff_queue(TEST_EVENT)
    assert where(q, high) == BACKOFF_Q
    pop_expect(q, mid)


# =============================================================================== backoff

@pytest.mark.parametrize("initial,maximum,attempts,want", [
    # the defaults (UPSTREAM-v1.28.md 3): 1s, 2s, 4s, 8s, then 10s
    (1, 10, 0, 1), (1, 10, 1, 1), (1, 10, 2, 2), (1, 10, 3, 4), (1, 10, 4, 8),
    (1, 10, 5, 10), (1, 10, 6, 10), (1, 10, 50, 10),
    # other initial/max pairs
    (2, 20, 1, 2), (2, 20, 2, 4), (2, 20, 4, 16), (2, 20, 5, 20), (2, 20, 9, 20),
    (3, 10, 2, 6), (3, 10, 3, 10),            # 6 > 10 - 6: clamps instead of doubling to 12
    (5, 10, 2, 10), (5, 10, 3, 10),           # initial == max - initial: doubling reaches max
    (6, 10, 1, 6), (6, 10, 2, 10),            # initial > max - initial: the first doubling clamps
    (15, 10, 1, 15), (15, 10, 2, 10),         # initial > max: attempt 1 is not clamped
    (10, 10, 1, 10), (10, 10, 4, 10),
])
def test_calculate_backoff_duration(initial, maximum, attempts, want):
    # calculateBackoffDuration; TestBackOffFlow's table for the defaults.
    t = new_clock()
    q = make_queue(t, pod_initial_backoff=initial * SEC, pod_max_backoff=maximum * SEC)
    pi = QueuedPodInfo(pod=make_qpod("p").obj(), timestamp=5 * SEC, attempts=attempts)
    assert q.calculate_backoff_duration(pi) == want * SEC
    assert q.get_backoff_time(pi) == 5 * SEC + want * SEC


@pytest.mark.parametrize("initial,maximum,attempts,want", [
    (1, 32, 16, 32),                          # "normal"
    (1, 2**31 - 1, 32, 2**31 - 1),            # "overflow_32bit"
    (1, 2**63 - 1, 64, 2**63 - 1),            # "overflow_64bit"
], ids=["normal", "overflow_32bit", "overflow_64bit"])
def test_calculate_backoff_duration_upstream_table(initial, maximum, attempts, want):
    # TestPriorityQueue_calculateBackoffDuration (nanoseconds upstream; any unit here).
    t = new_clock()
    q = make_queue(t, pod_initial_backoff=initial, pod_max_backoff=maximum)
    assert q.calculate_backoff_duration(QueuedPodInfo(pod=make_qpod("p").obj(), attempts=attempts)) == want


def test_new_with_options():
    # TestPriorityQueue_NewWithOptions
    t = new_clock()
    q = make_queue(t, pod_initial_backoff=2 * SEC, pod_max_backoff=20 * SEC)
    assert (q.pod_initial_backoff, q.pod_max_backoff) == (2 * SEC, 20 * SEC)
    d = make_queue(t)
    assert (d.pod_initial_backoff, d.pod_max_backoff) == (1 * SEC, 10 * SEC)
    assert d.pod_max_in_unschedulable_pods_duration == DEFAULT_MAX_IN_UNSCHED
    assert d.move_request_cycle == -1 and d.scheduling_cycle == 0
    assert d.is_scheduling_queue_hint_enabled is False


@pytest.mark.parametrize("now,gated,want", [
    (1 * SEC - 1, False, True),    # expiry in the future: backing off
    (1 * SEC, False, False),       # expiry == now: NOT backing off (strict After)
    (1 * SEC + 1, False, False),
    (0, True, False),              # gated pods never back off
])
def test_is_pod_backing_off(now, gated, want):
    # isPodBackingoff
    t = new_clock()
    q = make_queue(t)
    pi = QueuedPodInfo(pod=make_qpod("p").obj(), timestamp=0, attempts=1, gated=gated)
    t[0] = now
    assert q.is_pod_backing_off(pi) is want


def test_back_off_flow():
    # TestBackOffFlow
    t = new_clock(1000 * SEC)
    q = make_queue(t)
    pod = make_qpod("test-pod", "test-ns").obj()
    q.add(pod)
    for i, want in enumerate([1, 2, 4, 8, 10, 10, 10]):
        timestamp = t[0]
        pinfo = q.pop()
        assert pinfo.pod.key == pod.key
        assert pinfo.attempts == i + 1
        assert q.add_unschedulable_if_not_present(pinfo, i) is not None
        # An event happens.
        q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)
        assert where(q, pod) == BACKOFF_Q
        assert q.get_backoff_time(pinfo) - timestamp == want * SEC
        # An early flush leaves it in the backoff queue ...
        t[0] += 1 * MS
        q.flush_backoff_q_completed()
        assert where(q, pod) == BACKOFF_Q
        # ... and it moves out after the timeout.
        t[0] += want * SEC
        q.flush_backoff_q_completed()
        assert where(q, pod) == ACTIVE_Q


# =============================================================================== flushBackoffQCompleted

def _three_in_backoff(q, t):
    """a, b, c in podBackoffQ with expiries 1.1s, 1.2s, 1.0s (a move request arrived while
    they were in flight, so each failure goes straight to backoffQ)."""
    pods = {n: make_qpod(n).obj() for n in "abc"}
    for p in pods.values():
        q.add(p)
    pinfos = {n: pop_expect(q, pods[n]) for n in "abc"}
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)     # nothing to move; moveRequestCycle = 3
    for n, at in (("c", 0), ("a", 100 * MS), ("b", 200 * MS)):
        t[0] = at
        assert fail(q, pinfos[n], "NodeResourcesFit") == BACKOFF_Q
    return pods


def test_flush_backoff_q_completed_order_and_strictness():
    # flushBackoffQCompleted: pops expired pods in backoff-expiry order and stops at the first
    # one still backing off; expiry == now counts as expired.
    t = new_clock()
    tr, events = recording_trace(t)
    q = make_queue(t, trace=tr)
    pods = _three_in_backoff(q, t)
    assert backoff_keys(q) == [pods["c"].key, pods["a"].key, pods["b"].key]
    t[0] = 1100 * MS - 1
    q.flush_backoff_q_completed()
    assert backoff_keys(q) == [pods["a"].key, pods["b"].key]
    t[0] = 1100 * MS
    q.flush_backoff_q_completed()
    assert backoff_keys(q) == [pods["b"].key]
    t[0] = 5 * SEC
    q.flush_backoff_q_completed()
    assert backoff_keys(q) == []
    moved = [e["pod"] for e in events if e["event"] == fw.BackoffComplete]
    assert moved == [pods["c"].key, pods["a"].key, pods["b"].key]
    assert q.incoming_pods["active/BackoffComplete"] == 3
    # activeQ keeps its own order: same priority, earlier queue timestamp first.
    assert active_keys(q) == [pods["c"].key, pods["a"].key, pods["b"].key]


def test_flush_backoff_q_completed_on_empty_queue_does_nothing():
    t = new_clock()
    q = make_queue(t)
    q.flush_backoff_q_completed()
    assert q.incoming_pods == {} and q.move_request_cycle == -1


def test_flush_backoff_q_completed_re_gates():
    # flushBackoffQCompleted runs PreEnqueue (addToActiveQ): a pod rejected now goes to
    # unschedulablePods as gated, with no BackoffComplete metric.
    t = new_clock()
    gate = AllowlistPreEnqueue(["ok"])
    q = make_queue(t, profiles=hint_profiles(pre_enqueue=[gate]))
    p = make_qpod("p").label("ok", "").obj()
    q.add(p)
    pi = q.pop()
    q.move_all_to_active_or_backoff_queue(TEST_EVENT)
    assert fail(q, pi, "NodeResourcesFit") == BACKOFF_Q
    gate.allowlists = []
    t[0] = 1 * SEC
    q.flush_backoff_q_completed()
    assert where(q, p) == UNSCHEDULABLE_PODS
    assert pi.gated is True
    assert pi.unschedulable_plugins == {"NodeResourcesFit", "preEnqueuePlugin"}
    assert "active/BackoffComplete" not in q.incoming_pods
    assert q.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}


# =============================================================================== flushUnschedulablePodsLeftover

def test_high_priority_flush_unschedulable_pods_leftover():
    # TestHighPriorityFlushUnschedulablePodsLeftover
    t = new_clock()
    q = make_queue(t, profiles=hint_profiles([(fw.NodeAdd, [("fakePlugin", hint_after_backoff)])]))
    mid = make_qpod("test-midpod", "ns1", MID).nominated_node_name("node1").condition_unschedulable().obj()
    high = make_qpod("test-highpod", "ns1", HIGH).nominated_node_name("node1").condition_unschedulable().obj()
    q.add_to_active_q(q.new_queued_pod_info(high))
    pop_expect(q, high)
    q.add_to_active_q(q.new_queued_pod_info(mid))
    pop_expect(q, mid)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(high, "fakePlugin"), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(mid, "fakePlugin"), q.scheduling_cycle)
    t[0] += DEFAULT_MAX_IN_UNSCHED + 1 * SEC
    q.flush_unschedulable_pods_leftover()
    assert pop_expect(q, high).pod is high
    assert pop_expect(q, mid).pod is mid
    assert q.incoming_pods["active/UnschedulableTimeout"] == 2


def test_flush_unschedulable_pods_leftover_is_strict():
    # flushUnschedulablePodsLeftover: strictly longer than podMaxInUnschedulablePodsDuration.
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    park(q, p, "NodeResourcesFit")          # queue timestamp 0
    t[0] = DEFAULT_MAX_IN_UNSCHED
    q.flush_unschedulable_pods_leftover()
    assert where(q, p) == UNSCHEDULABLE_PODS
    assert q.move_request_cycle == -1       # nothing to move: no move request
    t[0] = DEFAULT_MAX_IN_UNSCHED + 1
    q.flush_unschedulable_pods_leftover()
    assert where(q, p) == ACTIVE_Q          # UnschedulableTimeout is a wildcard: any rejector moves
    assert q.incoming_pods["active/UnschedulableTimeout"] == 1
    assert q.move_request_cycle == 1


@pytest.mark.parametrize("limit", [None, 30 * SEC], ids=["default", "user-defined 30s"])
def test_init_pod_max_in_unschedulable_pods_duration(limit):
    # TestPriorityQueue_initPodMaxInUnschedulablePodsDuration
    t = new_clock(1000 * SEC)
    kw = {} if limit is None else {"pod_max_in_unschedulable_pods_duration": limit}
    q = make_queue(t, **kw)
    p1 = QueuedPodInfo(pod=make_qpod("test-pod-1", "ns1").nominated_node_name("node1").obj(), timestamp=t[0] - 1 * SEC)
    p2 = QueuedPodInfo(pod=make_qpod("test-pod-2", "ns2").nominated_node_name("node2").obj(), timestamp=t[0] - 2 * SEC)
    q._add_unschedulable(p1)
    q._add_unschedulable(p2)
    t[0] += q.pod_max_in_unschedulable_pods_duration          # flushUnschedulerQ
    q.flush_unschedulable_pods_leftover()
    assert len(q.active_q) == 2
    assert [q.active_q.pop(), q.active_q.pop()] == [p2, p1]


def test_flush_unschedulable_pods_leftover_backing_off_pod_goes_to_backoff_q():
    t = new_clock()
    q = make_queue(t, pod_initial_backoff=400 * SEC, pod_max_backoff=400 * SEC)
    p = make_qpod("p").obj()
    park(q, p, "NodeResourcesFit")
    t[0] = DEFAULT_MAX_IN_UNSCHED + 1 * SEC
    q.flush_unschedulable_pods_leftover()
    assert where(q, p) == BACKOFF_Q
    assert q.incoming_pods["backoff/UnschedulableTimeout"] == 1


def test_flush_unschedulable_pods_leftover_includes_gated_pods():
    # UPSTREAM-v1.28.md 4.12/4.13: gated pods are moved too and PreEnqueue re-gates them.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    g = make_qpod("g").scheduling_gates("gate").obj()
    q.add(g)
    t[0] = DEFAULT_MAX_IN_UNSCHED + 1
    q.flush_unschedulable_pods_leftover()
    assert where(q, g) == UNSCHEDULABLE_PODS and q.get(g.key).gated
    assert q.move_request_cycle == 0
    assert q.incoming_pods == {}
    assert q.pending_pods()["gated"] == 1


# =============================================================================== AddUnschedulableIfNotPresent

def test_add_unschedulable_if_not_present():
    # TestPriorityQueue_AddUnschedulableIfNotPresent
    t = new_clock()
    q = make_queue(t)
    u, h = up(), hpp_nominated()
    q.add(u)
    pop_expect(q, u)
    q.add(h)
    assert q.add_unschedulable_if_not_present(QueuedPodInfo(pod=u), q.scheduling_cycle) == UNSCHEDULABLE_PODS
    # The failed pod is re-added to the nominator: it goes after hpp.
    assert q.nominator.nominated_pod_to_node == {u.key: "node1", h.key: "node1"}
    assert nominated(q) == [h.key, u.key]
    assert pop_expect(q, h).pod is h
    assert len(q.nominator.nominated_pods) == 1
    assert q.get(u.key).pod is u and where(q, u) == UNSCHEDULABLE_PODS


def test_add_unschedulable_if_not_present_backoff():
    # TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff: pods in and before the cycle of a
    # move request go to backoffQ.
    t = new_clock()
    q = make_queue(t)
    pods = [make_qpod(f"pod{i}", f"ns{i}", i).obj() for i in range(10)]
    for p in pods:
        q.add(p)
    for i in range(9, 0, -1):
        assert pop_expect(q, pods[i]).pod is pods[i]
    q.move_all_to_active_or_backoff_queue(fw.WildCardEvent)
    old_cycle = q.scheduling_cycle
    assert pop_expect(q, pods[0]).pod is pods[0]
    for i in range(1, 10):
        failed = updated(pods[i], **{"status.conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]})
        assert q.add_unschedulable_if_not_present(QueuedPodInfo(pod=failed), old_cycle) == BACKOFF_Q
    for i in range(1, 10):
        assert where(q, pods[i]) == BACKOFF_Q
    assert q.incoming_pods["backoff/ScheduleAttemptFailure"] == 9


@pytest.mark.parametrize("move,cycle,want", [
    (False, 1, UNSCHEDULABLE_PODS),   # no move request: moveRequestCycle -1 < 1
    (True, 1, BACKOFF_Q),             # move request during the cycle: 1 >= 1
    (True, 0, BACKOFF_Q),             # a cycle older than the move request: 1 >= 0
    (True, 2, UNSCHEDULABLE_PODS),    # a cycle newer than the move request: 1 < 2
])
def test_move_request_cycle_rule(move, cycle, want):
    # addUnschedulableWithoutQueueingHint (SchedulerQueueingHints off).
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    if move:
        q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
        assert q.move_request_cycle == 1
    assert fail(q, pi, "NodeResourcesFit", cycle=cycle) == want
    assert where(q, p) == want
    key = "backoff" if want == BACKOFF_Q else "unschedulable"
    assert q.incoming_pods == {"active/PodAdd": 1, f"{key}/ScheduleAttemptFailure": 1}


def test_move_request_sends_to_backoff_q_even_when_backoff_already_expired():
    # The legacy rule pushes to backoffQ unconditionally; the 1s flush moves it on.
    t = new_clock()
    q = make_queue(t, pod_initial_backoff=0, pod_max_backoff=0)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    assert fail(q, pi, "NodeResourcesFit") == BACKOFF_Q
    assert q.is_pod_backing_off(pi) is False
    assert where(q, p) == BACKOFF_Q
    q.flush_backoff_q_completed()
    assert where(q, p) == ACTIVE_Q


def test_add_unschedulable_refreshes_timestamp_and_counts_plugins():
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    t[0] = 5 * SEC
    fail(q, pi, "NodeResourcesFit", "NodeAffinity")
    assert pi.timestamp == 5 * SEC
    assert q.get_backoff_time(pi) == 6 * SEC
    assert pi.initial_attempt_timestamp == 0
    assert q.unschedulable_reasons == {"NodeResourcesFit": 1, "NodeAffinity": 1}


def _put_copy(q, pod, where_to):
    copy_ = q.new_queued_pod_info(pod)
    if where_to == ACTIVE_Q:
        q.active_q.add(pod.key, copy_)
    elif where_to == BACKOFF_Q:
        q.pod_backoff_q.add(pod.key, copy_)
    else:
        q._add_unschedulable(copy_)
    return copy_


@pytest.mark.parametrize("hints", [False, True], ids=["QHint off", "QHint on"])
@pytest.mark.parametrize("present_in", [ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS])
def test_add_unschedulable_when_already_present_changes_nothing(present_in, hints):
    # AddUnschedulableIfNotPresent: "Pod ... is already present in ..." -> error, nothing
    # changes (but Done is still called).
    t = new_clock()
    q = make_queue(t, queueing_hints=hints)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    t[0] = 3 * SEC
    copy_ = _put_copy(q, p, present_in)
    before = (dict(q.incoming_pods), dict(q.unschedulable_reasons))
    assert fail(q, pi, "NodeResourcesFit") is None
    assert where(q, p) == present_in
    assert q.get(p.key) is copy_
    assert pi.timestamp == 0                       # not refreshed
    assert (q.incoming_pods, q.unschedulable_reasons) == before
    assert q.in_flight_pods == {} and q.received_events == []


def test_update_while_in_flight_wins_over_the_failed_attempt():
    # UPSTREAM-v1.28.md 4.5 step 4: an update while the pod is in flight puts a fresh copy
    # in activeQ; the attempt's AddUnschedulableIfNotPresent is then refused.
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    t[0] = 2 * SEC
    newer = updated(p, **{"metadata.labels.x": "y"})
    q.update(p, newer)
    fresh = q.get(p.key)
    assert fresh is not pi and (fresh.attempts, fresh.timestamp) == (0, 2 * SEC)
    assert fresh.initial_attempt_timestamp == 2 * SEC
    assert fail(q, pi, "NodeResourcesFit") is None
    assert where(q, p) == ACTIVE_Q and q.get(p.key).pod is newer


# =============================================================================== Update

def test_update():
    # TestPriorityQueue_Update
    t = new_clock()
    q = make_queue(t)
    h, hn, u, m = hpp(), hpp_nominated(), up(), mpp()
    # add highPriorityPodInfo to activeQ.
    q.update(None, h)
    assert where(q, h) == ACTIVE_Q
    assert q.nominator.nominated_pods == {}
    # Update it and add a nominatedNodeName.
    q.update(h, hn)
    assert len(q.active_q) == 1
    assert len(q.nominator.nominated_pods) == 1
    # Updating a pod that is in no queue adds it to activeQ.
    q.update(u, u)
    assert where(q, u) == ACTIVE_Q
    # Updating a pod already in activeQ does not change that.
    q.update(u, u)
    assert len(q.unschedulable_pods) == 0
    assert where(q, u) == ACTIVE_Q
    assert pop_expect(q, hn).pod is hn

    # A pod in backoffQ stays there and is updated in place.
    pinfo = q.new_queued_pod_info(m)
    q.pod_backoff_q.add(m.key, pinfo)
    q.update(m, m)
    assert q.pod_backoff_q.pop().pod is m

    # Fail it into unschedulablePods, then update it while it is backing off: backoffQ.
    q.active_q.add(m.key, pinfo)
    pop_expect(q, m)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(m), q.scheduling_cycle)
    assert len(q.unschedulable_pods) == 1
    upd = updated(m, **{"metadata.annotations.foo": "test"})
    q.update(m, upd)
    assert q.pod_backoff_q.pop().pod is upd

    # Once its backoff is over, an update moves it to activeQ.
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(m), q.scheduling_cycle)
    assert len(q.unschedulable_pods) == 1
    upd1 = updated(m, **{"metadata.annotations.foo": "test1"})
    t[0] += q.pod_initial_backoff
    q.update(m, upd1)
    assert pop_expect(q, upd1).pod is upd1


def test_update_in_active_q_keeps_attempts_and_timestamps():
    # TestPerPodSchedulingMetrics "pod is created and scheduled after 2 attempts but before
    # the second pop, call update": Add -> Pop -> AddUnschedulable -> leftover flush -> Update -> Pop.
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("test-pod", "test-ns").obj()
    q.add(p)
    pi = q.pop()
    q.add_unschedulable_if_not_present(pi, 1)
    t[0] = DEFAULT_MAX_IN_UNSCHED + 1
    q.flush_unschedulable_pods_leftover()
    new = updated(p, **{"metadata.generation": 1})
    q.update(p, new)
    got = q.pop()
    assert got is pi and got.pod is new
    assert (got.attempts, got.initial_attempt_timestamp, got.timestamp) == (2, 0, 0)


@pytest.mark.parametrize("scenario,want_attempts", [("one attempt", 1), ("leftover flush", 2)])
def test_per_pod_scheduling_metrics(scenario, want_attempts):
    # TestPerPodSchedulingMetrics: attempts counted per Pop; the initial attempt timestamp
    # stays the first activeQ insertion.
    t = new_clock(50 * SEC)
    q = make_queue(t)
    p = make_qpod("test-pod", "test-ns").obj()
    q.add(p)
    if scenario == "leftover flush":
        pi = q.pop()
        q.add_unschedulable_if_not_present(pi, 1)
        t[0] = 50 * SEC + DEFAULT_MAX_IN_UNSCHED + 1
        q.flush_unschedulable_pods_leftover()
    got = q.pop()
    assert got.attempts == want_attempts
    assert got.initial_attempt_timestamp == 50 * SEC


def test_per_pod_scheduling_metrics_gated_pod():
    # TestPerPodSchedulingMetrics "A gated pod is created and scheduled after lifting gate":
    # the initial attempt timestamp is when the pod first entered activeQ.
    t = new_clock(50 * SEC)
    q = make_queue(t, profiles=hint_profiles(pre_enqueue=[AllowlistPreEnqueue(["foo"])]))
    p = make_qpod("test-pod", "test-ns").obj()
    q.add(p)
    assert q.get(p.key).pod is p and where(q, p) == UNSCHEDULABLE_PODS
    t[0] += 60 * SEC
    q.update(p, updated(p, **{"metadata.labels": {"foo": ""}}))
    got = q.pop()
    assert got.attempts == 1
    assert got.initial_attempt_timestamp == 110 * SEC


def test_update_in_backoff_q_stays_even_if_expired():
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    fail(q, pi, "NodeResourcesFit")
    t[0] = 5 * SEC                           # long past its 1s backoff
    new = updated(p, **{"metadata.labels.x": "y"})
    q.update(p, new)
    assert where(q, p) == BACKOFF_Q and q.get(p.key).pod is new
    q.flush_backoff_q_completed()
    assert where(q, p) == ACTIVE_Q


def test_update_in_active_q_replaces_the_pod_in_place():
    t = new_clock()
    q = make_queue(t)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    pi = q.get(a.key)
    t[0] = 9 * SEC
    new = updated(a, **{"metadata.labels.x": "y"})
    q.update(a, new)
    assert q.get(a.key) is pi and pi.pod is new
    assert (pi.timestamp, pi.attempts) == (0, 0)
    assert active_keys(q) == [a.key, b.key]   # keeps its place among equals
    assert q.incoming_pods == {"active/PodAdd": 2}


@pytest.mark.parametrize("elapsed,want", [
    (0, BACKOFF_Q),                          # still backing off
    (1 * SEC - 1, BACKOFF_Q),
    (1 * SEC, ACTIVE_Q),                     # backoff expired (expiry == now)
])
def test_update_in_unschedulable_pods_with_a_spec_change(elapsed, want):
    # Update: isPodUpdated -> backoffQ if backing off, else activeQ; no metric either way.
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    pi, _ = park(q, p, "NodeResourcesFit")
    t[0] = elapsed
    new = updated(p, **{"metadata.annotations.a": "b"})
    q.update(p, new)
    assert where(q, p) == want
    assert q.get(p.key) is pi and pi.pod is new
    assert (pi.attempts, pi.timestamp) == (1, 0)
    assert q.incoming_pods == {"active/PodAdd": 1, "unschedulable/ScheduleAttemptFailure": 1}
    assert unsched_keys(q) == []


def test_update_in_unschedulable_pods_status_only_stays():
    # isPodUpdated ignores status: a nominatedNodeName patch alone does not requeue; the pod
    # object is refreshed, the entry keeps its place, and the nominator sees the new status.
    t = new_clock()
    q = make_queue(t)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    park(q, a, "NodeResourcesFit")
    park(q, b, "NodeResourcesFit")
    t[0] = 5 * SEC
    new = updated(a, **{"status.nominatedNodeName": "node1"})
    q.update(a, new)
    assert unsched_keys(q) == [a.key, b.key]
    assert q.get(a.key).pod is new
    assert nominated(q) == [a.key]


def test_update_gated_pod():
    # UPSTREAM-v1.28.md 4.13: removing the last gate moves the pod to activeQ (gated pods never
    # back off); removing one of two gates leaves it gated.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    p = make_qpod("p").scheduling_gates("a", "b").obj()
    q.add(p)
    one = updated(p, **{"spec.schedulingGates": [{"name": "a"}]})
    q.update(p, one)
    assert where(q, p) == UNSCHEDULABLE_PODS and q.get(p.key).gated
    assert q.pending_pods()["gated"] == 1
    none = updated(one, **{"spec.schedulingGates": None})
    q.update(one, none)
    assert where(q, p) == ACTIVE_Q
    pi = q.get(p.key)
    assert pi.gated is False and pi.attempts == 0
    assert q.incoming_pods == {}                 # no metric on Update paths
    assert q.pending_pods() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_update_that_re_gates_keeps_the_unschedulable_pods_order():
    t = new_clock()
    tr, events = recording_trace(t)
    q = make_queue(t, profiles=default_profiles(), trace=tr)
    g1 = make_qpod("g1").scheduling_gates("x", "y").obj()
    g2 = make_qpod("g2").scheduling_gates("x").obj()
    q.add(g1)
    q.add(g2)
    q.update(g1, updated(g1, **{"spec.schedulingGates": [{"name": "x"}]}))
    t[0] = DEFAULT_MAX_IN_UNSCHED + 1
    del events[:]
    q.flush_unschedulable_pods_leftover()
    assert [e["pod"] for e in events if e["event"] == "UnschedulableTimeout"] == [g1.key, g2.key]
    assert unsched_keys(q) == [g1.key, g2.key]


def test_update_of_a_pod_in_no_queue_adds_a_fresh_copy():
    t = new_clock(4 * SEC)
    q = make_queue(t)
    p = make_qpod("p").nominated_node_name("node1").obj()
    q.update(p, p)
    pi = q.get(p.key)
    assert where(q, p) == ACTIVE_Q
    assert (pi.attempts, pi.timestamp, pi.initial_attempt_timestamp) == (0, 4 * SEC, 4 * SEC)
    assert nominated(q) == [p.key]
    assert q.incoming_pods == {}


def test_update_of_a_pod_in_no_queue_may_be_gated():
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    g = make_qpod("g").scheduling_gates("x").nominated_node_name("node1").obj()
    q.update(None, g)
    assert where(q, g) == UNSCHEDULABLE_PODS and q.get(g.key).gated
    assert q.nominator.nominated_pods == {}


@pytest.mark.parametrize("changes,want", [
    ({}, False),
    ({"status.nominatedNodeName": "n1"}, False),
    ({"status.conditions": [{"type": "PodScheduled", "status": "False"}]}, False),
    ({"metadata.resourceVersion": "7"}, False),
    ({"metadata.generation": 3}, False),
    ({"metadata.finalizers": ["f"]}, False),
    ({"metadata.managedFields": [{"manager": "m"}]}, False),
    ({"metadata.labels.x": "y"}, True),
    ({"metadata.annotations.x": "y"}, True),
    ({"spec.priority": 5}, True),
    ({"spec.schedulingGates": None}, True),
])
def test_is_pod_updated(changes, want):
    # isPodUpdated: status, resourceVersion, generation, managedFields, finalizers ignored.
    old = make_qpod("p").scheduling_gates("g").obj()
    assert is_pod_updated(old, updated(old, **changes)) is want
    assert is_pod_updated(None, old) is True


# =============================================================================== Delete

def test_delete():
    # TestPriorityQueue_Delete
    t = new_clock()
    q = make_queue(t)
    h, hn, u = hpp(), hpp_nominated(), up()
    q.update(h, hn)
    q.add(u)
    assert q.delete(hn) == ACTIVE_Q
    assert where(q, u) == ACTIVE_Q
    assert where(q, hn) is None
    assert list(q.nominator.nominated_pod_to_node) == [u.key]
    q.delete(u)
    assert q.nominator.nominated_pods == {}


@pytest.mark.parametrize("place", [ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS, None])
def test_delete_from_each_place(place):
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").nominated_node_name("node1").obj()
    q.add(p)
    if place != ACTIVE_Q:
        pi = q.pop()
        if place == BACKOFF_Q:
            q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
        if place is not None:
            fail(q, pi, "NodeResourcesFit")
    assert where(q, p) == place
    assert nominated(q) == [p.key]
    assert q.delete(p) == place
    assert where(q, p) is None
    assert q.nominator.nominated_pod_to_node == {}
    assert q.pending_pods() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


# =============================================================================== Activate

@pytest.mark.parametrize("place,want_active", [
    ("activeQ", 1),                   # "pod already in activeQ"
    (None, 0),                        # "pod not in unschedulablePods/podBackoffQ"
    ("unschedulablePods", 1),         # "pod in unschedulablePods"
    ("backoffQ", 1),                  # "pod in backoffQ"
])
def test_activate(place, want_active):
    # TestPriorityQueue_Activate
    t = new_clock()
    q = make_queue(t)
    hn = hpp_nominated()
    if place is not None:
        _put_copy(q, hn, place)
    q.activate([hn])
    assert len(q.active_q) == want_active
    if want_active:
        assert where(q, hn) == ACTIVE_Q
    assert len(q.pod_backoff_q) == 0 and len(q.unschedulable_pods) == 0
    if place in (BACKOFF_Q, UNSCHEDULABLE_PODS):
        assert q.incoming_pods == {"active/ForceActivate": 1}
        assert nominated(q) == [hn.key]
    else:
        assert q.incoming_pods == {}


def test_activate_skips_remaining_backoff_and_keeps_timestamp():
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    fail(q, pi, "NodeResourcesFit")
    assert q.is_pod_backing_off(pi)
    q.activate([p])
    assert where(q, p) == ACTIVE_Q and q.get(p.key) is pi
    assert pi.timestamp == 0 and pi.attempts == 1


def test_activate_gated_pod_stays_gated():
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    g = make_qpod("g").scheduling_gates("x").obj()
    q.add(g)
    q.activate([g])
    assert where(q, g) == UNSCHEDULABLE_PODS and q.get(g.key).gated
    assert q.incoming_pods == {}


def test_activate_in_flight_pod_does_nothing():
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    q.pop()
    q.activate([p])
    assert where(q, p) is None and q.incoming_pods == {"active/PodAdd": 1}


# =============================================================================== MoveAllToActiveOrBackoffQueue

def test_move_all_to_active_or_backoff_queue():
    # TestPriorityQueue_MoveAllToActiveOrBackoffQueue
    t = new_clock()
    q = make_queue(t, profiles=hint_profiles([(fw.NodeAdd, [("fooPlugin", hint_after_backoff)])]))
    u, h, m = up(), hpp(), mpp()
    hpp1 = make_qpod("hpp1", "ns1", HIGH).obj()
    hpp2 = make_qpod("hpp2", "ns1", HIGH).obj()
    q.add_to_active_q(q.new_queued_pod_info(u))
    pop_expect(q, u)
    q.add_to_active_q(q.new_queued_pod_info(h))
    pop_expect(q, h)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(u, "fooPlugin"), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(h, "fooPlugin"), q.scheduling_cycle)
    # A pod whose failure is not associated with any plugin.
    q.add_to_active_q(q.new_queued_pod_info(hpp1))
    pop_expect(q, hpp1)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(hpp1), q.scheduling_cycle)
    # A pod rejected by "barPlugin", which registered no event.
    q.add_to_active_q(q.new_queued_pod_info(hpp2))
    pop_expect(q, hpp2)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(hpp2, "barPlugin"), q.scheduling_cycle)
    # Pods are still backing off: they move into backoffQ.
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    q.add(m)
    assert len(q.active_q) == 1
    pop_expect(q, m)
    # hpp2 won't be moved.
    assert len(q.pod_backoff_q) == 3
    assert set(backoff_keys(q)) == {u.key, h.key, hpp1.key}
    assert unsched_keys(q) == [hpp2.key]

    while q.pod_backoff_q.pop() is not None:
        pass
    q.scheduling_cycle += 1
    for p in (u, h, hpp1):
        q.add_to_active_q(q.new_queued_pod_info(p))
        pop_expect(q, p)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(u, "fooPlugin"), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(h, "fooPlugin"), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(hpp1), q.scheduling_cycle)
    q.add(m)
    for p in (u, h, hpp1, hpp2):
        assert where(q, p) == UNSCHEDULABLE_PODS
    # Their backoff is over: they move into activeQ.
    t[0] += q.pod_initial_backoff
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    # hpp2 won't be moved regardless of its backoff timer.
    assert len(q.active_q) == 4
    assert len(q.pod_backoff_q) == 0
    assert unsched_keys(q) == [hpp2.key]


PRE_CHECK_CASES = [
    ("nil PreEnqueueCheck", None, ["p0", "p1", "p2", "p3", "p4"]),
    ("move Pods with priority greater than 2", lambda pod: pod.priority >= 2, ["p2", "p3", "p4"]),
    ("move Pods with even priority and greater than 2",
     lambda pod: pod.priority % 2 == 0 and pod.priority >= 2, ["p2", "p4"]),
    ("move Pods with even and negative priority", lambda pod: pod.priority % 2 == 0 and pod.priority < 0, []),
]


@pytest.mark.parametrize("name,pre_check,want", PRE_CHECK_CASES, ids=[c[0] for c in PRE_CHECK_CASES])
def test_move_all_pre_enqueue_checks(name, pre_check, want):
    # TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks (the failures are 1ms apart so the
    # backoff order is p0..p4, as upstream arranges with timestamps).
    t = new_clock()
    q = make_queue(t)
    for i in range(5):
        p = make_qpod(f"p{i}", priority=i).obj()
        q.add_to_active_q(q.new_queued_pod_info(p))
        pi = pop_expect(q, p)
        t[0] = i * MS
        q.add_unschedulable_if_not_present(pi, q.scheduling_cycle)
    q.move_all_to_active_or_backoff_queue(TEST_EVENT, pre_check=pre_check)
    got = []
    while True:
        pi = q.pod_backoff_q.pop()
        if pi is None:
            break
        got.append(pi.pod.name)
    assert got == want
    assert q.move_request_cycle == 5


# Which events move a pod rejected by which default plugin (their EventsToRegister in v1.28.0).
EVENT_MATCH_CASES = [
    # NodeResourcesFit: Pod/Delete, Node/Add|Update
    ("NodeResourcesFit", fw.NodeAdd, True),
    ("NodeResourcesFit", fw.AssignedPodDelete, True),
    ("NodeResourcesFit", fw.AssignedPodAdd, False),
    ("NodeResourcesFit", fw.AssignedPodUpdate, False),
    ("NodeResourcesFit", fw.NodeAllocatableChange, True),
    ("NodeResourcesFit", fw.NodeTaintChange, True),
    # InterPodAffinity: Pod/All, Node/Add|UpdateNodeLabel
    ("InterPodAffinity", fw.NodeTaintChange, False),
    ("InterPodAffinity", fw.NodeAllocatableChange, False),
    ("InterPodAffinity", fw.NodeLabelChange, True),
    ("InterPodAffinity", fw.NodeAdd, True),
    ("InterPodAffinity", fw.AssignedPodAdd, True),
    ("InterPodAffinity", fw.AssignedPodDelete, True),
    # TaintToleration: Node/Add|Update
    ("TaintToleration", fw.NodeTaintChange, True),
    ("TaintToleration", fw.AssignedPodDelete, False),
    # NodeUnschedulable: Node/Add|UpdateNodeTaint
    ("NodeUnschedulable", fw.NodeSpecUnschedulableChange, True),
    ("NodeUnschedulable", fw.NodeLabelChange, False),
    # PodTopologySpread: Pod/All, Node/Add|Delete|UpdateNodeLabel
    ("PodTopologySpread", fw.AssignedPodAdd, True),
    ("PodTopologySpread", fw.NodeAllocatableChange, False),
    # A plugin without EnqueueExtensions is registered for (*, All); in v1.28 a *registered*
    # wildcard does not match concrete events (isPodWorthRequeuing compares Resource).
    ("DefaultBinder", fw.NodeAdd, False),
    ("DefaultBinder", fw.WildCardEvent, True),
    # A plugin registered for nothing.
    ("NoSuchPlugin", fw.NodeAdd, False),
    # Wildcard events move every pod, whatever rejected it.
    ("InterPodAffinity", fw.UnschedulableTimeout, True),
    ("NoSuchPlugin", fw.UnschedulableTimeout, True),
    ("NodeResourcesFit", fw.WildCardEvent, True),
    # No rejecting plugin: any event moves the pod.
    (None, fw.NodeTaintChange, True),
    (None, fw.AssignedPodAdd, True),
    (None, TEST_EVENT, True),
]


@pytest.mark.parametrize("rejector,event,moved", EVENT_MATCH_CASES,
                         ids=[f"{c[0]}-{c[1].label}" for c in EVENT_MATCH_CASES])
def test_move_all_event_to_plugin_matching(rejector, event, moved):
    # isPodWorthRequeuing with the default profile's real queueingHintMap.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    p = make_qpod("p").obj()
    park(q, p, *([rejector] if rejector else []))
    q.move_all_to_active_or_backoff_queue(event)
    assert where(q, p) == (BACKOFF_Q if moved else UNSCHEDULABLE_PODS)
    assert (f"backoff/{event.label}" in q.incoming_pods) is moved
    assert q.move_request_cycle == 1


def test_move_all_pod_of_unknown_profile_moves_on_any_event():
    # isPodWorthRequeuing: no QueueingHintMap for the profile -> QueueAfterBackoff.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    p = make_qpod("p").scheduler_name("other").obj()
    park(q, p, "InterPodAffinity")
    q.move_all_to_active_or_backoff_queue(fw.NodeTaintChange)
    assert where(q, p) == BACKOFF_Q


@pytest.mark.parametrize("how", ["empty queue", "pre_check rejects all", "no plugin matches"])
def test_move_request_cycle_is_set_even_when_nothing_moved(how):
    # movePodsToActiveOrBackoffQueue sets moveRequestCycle unconditionally.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    pa = q.pop()
    q.pop()
    if how == "empty queue":
        q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    elif how == "pre_check rejects all":
        fail(q, pa, "NodeResourcesFit")
        q.move_all_to_active_or_backoff_queue(fw.NodeAdd, pre_check=lambda pod: False)
    else:
        fail(q, pa, "InterPodAffinity")
        q.move_all_to_active_or_backoff_queue(fw.NodeTaintChange)
    assert q.move_request_cycle == 2
    assert len(q.active_q) == 0 and len(q.pod_backoff_q) == 0


def test_moved_pods_keep_the_order_they_entered_unschedulable_pods():
    # SPEC.md 4: "Pods that one event moves are moved in the order they entered
    # unschedulablePods" (upstream iterates a Go map).
    t = new_clock()
    tr, events = recording_trace(t)
    q = make_queue(t, trace=tr)
    c, a, b = make_qpod("c").obj(), make_qpod("a").obj(), make_qpod("b").obj()
    for p in (c, a, b):
        park(q, p, "NodeResourcesFit")
    assert unsched_keys(q) == [c.key, a.key, b.key]
    t[0] = 1 * SEC
    del events[:]
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)
    assert [e["pod"] for e in events] == [c.key, a.key, b.key]
    # Same priority and timestamp: activeQ keeps the move order.
    assert drain(q) == [c.key, a.key, b.key]


def test_a_pod_that_re_enters_unschedulable_pods_goes_last():
    t = new_clock()
    q = make_queue(t)
    c, a, b = make_qpod("c").obj(), make_qpod("a").obj(), make_qpod("b").obj()
    for p in (c, a, b):
        park(q, p, "NodeResourcesFit")
    q.activate([c])
    fail(q, pop_expect(q, c), "NodeResourcesFit")
    # A status-only update keeps a's place.
    q.update(a, updated(a, **{"status.nominatedNodeName": "n"}))
    assert unsched_keys(q) == [a.key, b.key, c.key]
    t[0] = 10 * SEC
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)
    # Same priority; c's queue timestamp is 0 like the others: move order decides.
    assert drain(q) == [a.key, b.key, c.key]


def test_pods_moved_to_backoff_q_with_equal_expiry_keep_the_move_order():
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    pods = [make_qpod(n).obj() for n in "zyx"]
    for p in pods:
        park(q, p, "NodeResourcesFit")
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    assert backoff_keys(q) == [p.key for p in pods]
    t[0] = 1 * SEC
    q.flush_backoff_q_completed()
    assert drain(q) == [p.key for p in pods]


# =============================================================================== queueing hints

@pytest.mark.parametrize("hint,elapsed,want", [
    (hint_immediately, 0, ACTIVE_Q),        # "QueueImmediately queues pod to activeQ"
    (hint_after_backoff, 0, BACKOFF_Q),     # "QueueAfterBackoff queues pod to backoffQ if Pod is backing off"
    (hint_after_backoff, 1 * SEC, ACTIVE_Q),  # "... to activeQ if Pod is not backing off"
    (hint_skip, 0, UNSCHEDULABLE_PODS),     # "QueueSkip queues pod to unschedulablePods"
], ids=["Immediately", "AfterBackoff-backing-off", "AfterBackoff-done", "Skip"])
def test_move_all_with_queueing_hint(hint, elapsed, want):
    # TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint (gate on, as v1.28.0).
    t = new_clock()
    q = make_queue(t, profiles=hint_profiles([(fw.NodeAdd, [("foo", hint)])]), queueing_hints=True)
    p = make_qpod("pod1", "ns1").obj()
    q.add_to_active_q(q.new_queued_pod_info(p))
    pop_expect(q, p)
    pinfo = QueuedPodInfo(pod=p, unschedulable_plugins={"foo"})
    assert q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle) == UNSCHEDULABLE_PODS
    t[0] += elapsed
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    assert where(q, p) == want


def _counting(hint, counter):
    def fn(pod, old, new):
        counter[0] += 1
        return hint
    return fn


NODE_UPDATE_LABEL = ClusterEvent(GVK.Node, ActionType.UpdateNodeLabel)
NODE_UPDATE = ClusterEvent(GVK.Node, ActionType.Update)


def _worth_requeuing_cases():
    # Test_isPodWorthRequeuing: (name, plugins, event, expected, executions, hint map builder)
    I, A, S = QueueingHint.QueueImmediately, QueueingHint.QueueAfterBackoff, QueueingHint.QueueSkip
    return [
        ("return QueueAfterBackoff when no queueing hint function is registered for the event",
         {"fooPlugin1"}, fw.NodeAdd, S, 0,
         lambda c: [(fw.AssignedPodAdd, [("fooPlugin1", _counting(I, c))])]),
        ("return QueueAfterBackoff when the event is wildcard",
         {"fooPlugin1"}, fw.WildCardEvent, A, 0, lambda c: []),
        ("QueueImmediately is the highest priority",
         {"fooPlugin1", "fooPlugin2", "fooPlugin3", "fooPlugin4"}, fw.NodeAdd, I, 2,
         lambda c: [(fw.NodeAdd, [("fooPlugin1", _counting(A, c)), ("fooPlugin2", _counting(I, c)),
                                  ("fooPlugin3", _counting(A, c)), ("fooPlugin4", _counting(S, c))])]),
        ("QueueSkip is the lowest priority",
         {"fooPlugin1", "fooPlugin2", "fooPlugin3"}, fw.NodeAdd, A, 3,
         lambda c: [(fw.NodeAdd, [("fooPlugin1", _counting(A, c)), ("fooPlugin2", _counting(S, c)),
                                  ("fooPlugin3", _counting(A, c))])]),
        ("Queueing hint function that isn't from the plugin, that is in the UnschedulablePlugins, is ignored",
         {"fooPlugin1", "fooPlugin2"}, fw.NodeAdd, A, 2,
         lambda c: [(fw.NodeAdd, [("fooPlugin1", _counting(A, c)), ("fooPlugin2", _counting(S, c)),
                                  ("fooPlugin3", _counting(I, c))])]),
        ("If event is specific Node update event, queueing hint function for NodeUpdate/UpdateNodeLabel is executed",
         {"fooPlugin1", "fooPlugin2"}, NODE_UPDATE_LABEL, A, 3,
         lambda c: [(NODE_UPDATE_LABEL, [("fooPlugin1", _counting(A, c)), ("fooPlugin2", _counting(A, c))]),
                    (NODE_UPDATE, [("fooPlugin1", _counting(A, c))]),
                    (fw.NodeAdd, [("fooPlugin1", _counting(A, c))])]),
    ]


WORTH_CASES = _worth_requeuing_cases()


@pytest.mark.parametrize("name,plugins,event,expected,executions,build", WORTH_CASES, ids=[c[0] for c in WORTH_CASES])
def test_is_pod_worth_requeuing(name, plugins, event, expected, executions, build):
    # Test_isPodWorthRequeuing (gate on: the plugins' own hint functions are called).
    count = [0]
    t = new_clock()
    q = make_queue(t, profiles=hint_profiles(build(count)), queueing_hints=True)
    pinfo = QueuedPodInfo(pod=make_qpod("pod1", "ns1").obj(), unschedulable_plugins=set(plugins))
    assert q.is_pod_worth_requeuing(pinfo, event, None, object()) == expected
    assert count[0] == executions


def test_is_pod_worth_requeuing_gate_off_ignores_hint_functions():
    # buildQueueingHintMap: with SchedulerQueueingHints off every plugin gets
    # defaultQueueingHintFn (always QueueAfterBackoff).
    count = [0]
    t = new_clock()
    q = make_queue(t, profiles=hint_profiles([(fw.NodeAdd, [("foo", _counting(QueueingHint.QueueSkip, count))])]))
    pinfo = QueuedPodInfo(pod=make_qpod("p").obj(), unschedulable_plugins={"foo"})
    assert q.is_pod_worth_requeuing(pinfo, fw.NodeAdd, None, None) == QueueingHint.QueueAfterBackoff
    assert q.is_pod_worth_requeuing(pinfo, fw.AssignedPodAdd, None, None) == QueueingHint.QueueSkip
    assert count[0] == 0
    empty = QueuedPodInfo(pod=make_qpod("e").obj())
    assert q.is_pod_worth_requeuing(empty, fw.AssignedPodAdd, None, None) == QueueingHint.QueueAfterBackoff


def test_hint_function_receives_the_event_objects():
    seen = []

    def fn(pod, old, new):
        seen.append((pod.key, old, new))
        return QueueingHint.QueueImmediately

    t = new_clock()
    q = make_queue(t, profiles=hint_profiles([(fw.NodeAdd, [("foo", fn)])]), queueing_hints=True)
    p = make_qpod("p").obj()
    q.add(p)
    pi = q.pop()
    old, new = object(), object()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd, old, new)
    assert fail(q, pi, "foo") == ACTIVE_Q       # replayed at failure: Immediately
    assert seen == [(p.key, old, new)]


# =============================================================================== in-flight pods (SchedulerQueueingHints on)

def _target(i=""):
    return make_qpod(f"targetpod{i}").obj()


IN_FLIGHT_CASES = [
    dict(name="when SchedulingQueueHint is disabled, inFlightPods and receivedEvents should be empty",
         hints=False, initial=[""], actions=[("pop", ""), ("event", PV_ADD)],
         in_flight={}, received=[]),
    dict(name="when SchedulingQueueHint is disabled, which queue to enqueue Pod should be decided without SchedulingQueueHint",
         hints=False, initial=[""], actions=[("pop", ""), ("event", fw.AssignedPodAdd), ("enqueue", "", ["fooPlugin1"])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin1", hint_skip)])],
         backoff=[""], in_flight={}, received=[]),
    dict(name="Pod is registered in inFlightPods with no previousEvent if Pod is popped from activeQ while no receivedEvents",
         initial=[""], actions=[("event", PVC_ADD), ("pop", ""), ("event", PV_ADD)],
         in_flight={"": None}, received=[("PvAdd", 1)]),
    dict(name="Pod, registered in inFlightPods with no previousEvent, is enqueued back to activeQ",
         initial=["", "2"],
         actions=[("event", PVC_ADD), ("pop", ""), ("event", PV_ADD), ("pop", "2"), ("event", fw.NodeAdd),
                  ("enqueue", "", [])],
         backoff=[""], in_flight={"2": ("PvAdd", 0)}, received=[("NodeAdd", 1)]),
    dict(name="Pod registered in inFlightPods with previousEvent with inFlightPodsNum:0 is enqueued back to activeQ",
         initial=["", "2"],
         actions=[("event", PVC_ADD), ("pop", ""), ("event", PV_ADD), ("pop", "2"), ("event", fw.NodeAdd),
                  ("enqueue", "", []), ("event", CSI_NODE_UPDATE), ("enqueue", "2", [])],
         backoff=["", "2"], in_flight={}, received=[]),
    dict(name="Pod registered in inFlightPods with previousEvent with inFlightPodsNum:non-zero is enqueued back to activeQ",
         initial=["", "2", "3"],
         actions=[("event", PVC_ADD), ("pop", ""), ("event", PV_ADD), ("pop", "2"), ("event", fw.NodeAdd),
                  ("pop", "3"), ("event", fw.AssignedPodAdd), ("enqueue", "2", [])],
         backoff=["2"], in_flight={"": None, "3": ("NodeAdd", 1)},
         received=[("PvAdd", 1), ("NodeAdd", 1), ("AssignedPodAdd", 2)]),
    dict(name="events before popping Pod are ignored",
         initial=[""], actions=[("event", fw.WildCardEvent), ("pop", ""), ("event", fw.AssignedPodAdd),
                                ("enqueue", "", ["fooPlugin1"])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin1", hint_skip)])],
         unsched=[""], in_flight={}, received=[]),
    dict(name="pod is enqueued to backoff if no failed plugin",
         initial=[""], actions=[("pop", ""), ("event", fw.AssignedPodAdd), ("enqueue", "", [])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin1", hint_immediately)])],
         backoff=[""], in_flight={}, received=[]),
    dict(name="pod is enqueued to unschedulable pod pool if no events that can make the pod schedulable",
         initial=[""], actions=[("pop", ""), ("event", fw.NodeAdd), ("enqueue", "", ["fooPlugin1"])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin1", hint_immediately)])],
         unsched=[""], in_flight={}, received=[]),
    dict(name="pod is enqueued to unschedulable pod pool because the failed plugin has a hint fn but it returns QueueSkip",
         initial=[""], actions=[("pop", ""), ("event", fw.AssignedPodAdd), ("enqueue", "", ["fooPlugin1"])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin1", hint_skip)])],
         unsched=[""], in_flight={}, received=[]),
    dict(name="pod is enqueued to activeQ because the failed plugin has a hint fn and it returns QueueImmediately",
         initial=[""], actions=[("pop", ""), ("event", fw.AssignedPodAdd),
                                ("enqueue", "", ["fooPlugin1", "fooPlugin2", "fooPlugin3"])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin3", hint_skip), ("fooPlugin2", hint_after_backoff),
                                        ("fooPlugin1", hint_immediately)])],
         active=[""], in_flight={}, received=[]),
    dict(name="pod is enqueued to backoffQ because the failed plugin has a hint fn and it returns QueueAfterBackoff",
         initial=[""], actions=[("pop", ""), ("event", fw.AssignedPodAdd), ("enqueue", "", ["fooPlugin1", "fooPlugin2"])],
         hint_map=[(fw.AssignedPodAdd, [("fooPlugin2", hint_skip), ("fooPlugin1", hint_after_backoff)])],
         backoff=[""], in_flight={}, received=[]),
]


@pytest.mark.parametrize("case", IN_FLIGHT_CASES, ids=[c["name"] for c in IN_FLIGHT_CASES])
def test_in_flight_pods(case):
    # Test_InFlightPods
    t = new_clock()
    q = make_queue(t, profiles=hint_profiles(case.get("hint_map")), queueing_hints=case.get("hints", True))
    pods = {i: _target(i) for i in case["initial"]}
    for p in pods.values():
        q.add(p)
    for action in case["actions"]:
        if action[0] == "pop":
            pop_expect(q, pods[action[1]])
        elif action[0] == "event":
            q.move_all_to_active_or_backoff_queue(action[1])
        else:
            pinfo = QueuedPodInfo(pod=pods[action[1]], unschedulable_plugins=set(action[2]))
            q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    got_in_flight = {k: (None if e is None else (e.event.label, e.in_flight_pods_num))
                     for k, e in q.in_flight_pods.items()}
    assert got_in_flight == {pods[i].key: v for i, v in case["in_flight"].items()}
    assert [(e.event.label, e.in_flight_pods_num) for e in q.received_events] == case["received"]
    if "active" in case:
        assert sorted(active_keys(q)) == sorted(pods[i].key for i in case["active"])
    if "backoff" in case:
        assert sorted(backoff_keys(q)) == sorted(pods[i].key for i in case["backoff"])
    for i in case.get("unsched", []):
        assert where(q, pods[i]) == UNSCHEDULABLE_PODS


def test_event_after_pop_moves_the_failed_pod_but_event_before_pop_does_not():
    # SchedulerQueueingHints on, default profile: only the events received after a pod's Pop
    # are replayed at its failure.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles(), queueing_hints=True)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    pa = pop_expect(q, a)
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)         # recorded: a is in flight
    pb = pop_expect(q, b)
    assert [e.event.label for e in q.received_events] == ["NodeAdd"]
    # b was popped after NodeAdd: nothing concerns NodeResourcesFit since -> unschedulablePods.
    assert fail(q, pb, "NodeResourcesFit") == UNSCHEDULABLE_PODS
    # a saw NodeAdd while in flight -> backoffQ (still backing off).
    assert fail(q, pa, "NodeResourcesFit") == BACKOFF_Q
    assert q.incoming_pods["backoff/ScheduleAttemptFailure"] == 1
    assert q.incoming_pods["unschedulable/ScheduleAttemptFailure"] == 1
    assert q.in_flight_pods == {} and q.received_events == []


def test_replay_starts_after_the_pods_pop_even_if_that_event_was_collected():
    # UPSTREAM-v1.28.md 4.4 (SIM): v1.28.0 replays from the element that was the log tail at
    # Pop, and sees nothing if that element was garbage-collected meanwhile; the engine
    # implements the intent (and v1.29+): exactly the events received after this pod's Pop.
    t = new_clock()
    q = make_queue(t, profiles=default_profiles(), queueing_hints=True)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    pa = pop_expect(q, a)
    q.move_all_to_active_or_backoff_queue(PV_ADD)             # seen by a only
    pb = pop_expect(q, b)                                     # b's Pop: log tail is PvAdd
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)         # seen by a and b
    assert fail(q, pa) == BACKOFF_Q                           # done(a) collects PvAdd
    assert [(e.event.label, e.in_flight_pods_num) for e in q.received_events] == [("NodeAdd", 1)]
    assert q.in_flight_pods[b.key].removed is True
    # NodeAdd arrived after b's Pop and concerns NodeResourcesFit.
    assert fail(q, pb, "NodeResourcesFit") == BACKOFF_Q
    assert q.received_events == [] and q.in_flight_pods == {}


def test_event_while_in_flight_that_does_not_concern_the_rejector():
    t = new_clock()
    q = make_queue(t, profiles=default_profiles(), queueing_hints=True)
    a = make_qpod("a").obj()
    q.add(a)
    pa = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeTaintChange)
    assert fail(q, pa, "InterPodAffinity") == UNSCHEDULABLE_PODS


def test_event_while_in_flight_to_active_q_when_backoff_already_expired():
    t = new_clock()
    q = make_queue(t, profiles=default_profiles(), queueing_hints=True,
                   pod_initial_backoff=0, pod_max_backoff=0)
    a = make_qpod("a").obj()
    q.add(a)
    pa = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    assert fail(q, pa, "NodeResourcesFit") == ACTIVE_Q
    assert q.incoming_pods["active/ScheduleAttemptFailure"] == 1


def test_queueing_hints_on_failure_of_a_pod_not_in_flight_goes_to_backoff():
    # determineSchedulingHintForInFlightPod: "In flight Pod isn't found" -> QueueAfterBackoff.
    t = new_clock()
    q = make_queue(t, queueing_hints=True)
    p = make_qpod("p").obj()
    assert q.add_unschedulable_if_not_present(QueuedPodInfo(pod=p, unschedulable_plugins={"x"}), 1) == BACKOFF_Q


def test_done_garbage_collects_events():
    t = new_clock()
    q = make_queue(t, queueing_hints=True)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)        # num 1 (a)
    q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeTaintChange)  # num 2 (a, b)
    assert [(e.event.label, e.in_flight_pods_num) for e in q.received_events] == [("NodeAdd", 1), ("NodeTaintChange", 2)]
    q.done(b.key)                     # b only saw NodeTaintChange
    assert [(e.event.label, e.in_flight_pods_num) for e in q.received_events] == [("NodeAdd", 1), ("NodeTaintChange", 1)]
    q.done(b.key)                     # already done: no-op
    q.done("default/unknown")
    assert len(q.received_events) == 2
    q.done(a.key)
    assert q.received_events == [] and q.in_flight_pods == {}
    # No in-flight pods: events are not recorded at all.
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    assert q.received_events == []


def test_done_is_a_no_op_with_the_gate_off():
    t = new_clock()
    q = make_queue(t)
    p = make_qpod("p").obj()
    q.add(p)
    q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    q.done(p.key)
    assert q.in_flight_pods == {} and q.received_events == []


def test_failure_with_no_plugins_uses_any_retained_event():
    # determineSchedulingHintForInFlightPod: no unschedulable plugins -> QueueAfterBackoff if
    # the received-event list is non-empty (even an event older than this pod's Pop), else Skip.
    t = new_clock()
    q = make_queue(t, queueing_hints=True)
    a, b = make_qpod("a").obj(), make_qpod("b").obj()
    q.add(a)
    q.add(b)
    q.pop()                                   # a in flight
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    pb = q.pop()                              # b popped after the event
    assert fail(q, pb) == BACKOFF_Q
    q2 = make_queue(t, queueing_hints=True)
    c = make_qpod("c").obj()
    q2.add(c)
    assert fail(q2, q2.pop()) == UNSCHEDULABLE_PODS


# =============================================================================== AssignedPodAdded / Updated

def _affinity_setup(profiles, *rejectors):
    t = new_clock()
    q = make_queue(t, profiles=profiles)
    affinity = (make_qpod("afp", "ns1", MEDIUM).annotation("annot2", "val2").nominated_node_name("node1")
                .pod_affinity_required({"service": "securityscan"}, "region").obj())
    u = up()
    q.add_to_active_q(q.new_queued_pod_info(u))
    pop_expect(q, u)
    q.add_to_active_q(q.new_queued_pod_info(affinity))
    pop_expect(q, affinity)
    q.add(mpp())
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(u, *rejectors), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(affinity, *rejectors), q.scheduling_cycle)
    # The unschedulable pods complete their backoff.
    t[0] += 2 * SEC
    return q, affinity, u


def test_assigned_pod_added():
    # TestPriorityQueue_AssignedPodAdded
    q, affinity, u = _affinity_setup(
        hint_profiles([(fw.AssignedPodAdd, [("fakePlugin", hint_after_backoff)])]), "fakePlugin")
    label_pod = make_qpod("lbp", "ns1").label("service", "securityscan").node("node1").obj()
    q.assigned_pod_added(label_pod)
    assert where(q, affinity) == ACTIVE_Q
    assert where(q, u) == UNSCHEDULABLE_PODS
    assert q.incoming_pods["active/AssignedPodAdd"] == 1


@pytest.mark.parametrize("label_pod_builder", [
    lambda: make_qpod("lbp", "ns2").label("service", "securityscan").node("node1").obj(),  # other namespace
    lambda: make_qpod("lbp", "ns1").label("service", "other").node("node1").obj(),         # selector mismatch
    lambda: make_qpod("lbp", "ns1").node("node1").obj(),                                   # no labels
], ids=["namespace mismatch", "selector mismatch", "no labels"])
def test_assigned_pod_added_requires_a_matching_term(label_pod_builder):
    q, affinity, u = _affinity_setup(
        hint_profiles([(fw.AssignedPodAdd, [("fakePlugin", hint_after_backoff)])]), "fakePlugin")
    q.assigned_pod_added(label_pod_builder())
    assert where(q, affinity) == UNSCHEDULABLE_PODS
    assert where(q, u) == UNSCHEDULABLE_PODS
    assert q.move_request_cycle == q.scheduling_cycle   # set even with no candidate


def test_assigned_pod_added_term_namespaces_and_anti_affinity():
    # Required affinity terms only (anti-affinity is ignored); a term's namespaces list
    # replaces the owner's namespace.
    t = new_clock()
    q = make_queue(t)
    other_ns = make_qpod("x", "ns1").pod_affinity_required({"app": "db"}, namespaces=["ns9"]).obj()
    anti = make_qpod("y", "ns1").pod_affinity_required({"app": "db"}, anti=True).obj()
    own_ns = make_qpod("z", "ns1").pod_affinity_required({"app": "db"}).obj()
    for p in (other_ns, anti, own_ns):
        park(q, p)
    t[0] = 5 * SEC
    q.assigned_pod_added(make_qpod("db", "ns9").label("app", "db").node("n").obj())
    assert [where(q, p) for p in (other_ns, anti, own_ns)] == [ACTIVE_Q, UNSCHEDULABLE_PODS, UNSCHEDULABLE_PODS]
    q.assigned_pod_added(make_qpod("db", "ns1").label("app", "db").node("n").obj())
    assert [where(q, p) for p in (anti, own_ns)] == [UNSCHEDULABLE_PODS, ACTIVE_Q]


@pytest.mark.parametrize("rejector,moved", [("InterPodAffinity", True), ("NodeResourcesFit", False)])
def test_assigned_pod_added_still_checks_the_rejecting_plugin(rejector, moved):
    # Candidates go through isPodWorthRequeuing(AssignedPodAdd): NodeResourcesFit does not
    # register Pod/Add.
    q, affinity, u = _affinity_setup(default_profiles(), rejector)
    q.assigned_pod_added(make_qpod("lbp", "ns1").label("service", "securityscan").node("node1").obj())
    assert where(q, affinity) == (ACTIVE_Q if moved else UNSCHEDULABLE_PODS)


def test_assigned_pod_updated():
    q, affinity, u = _affinity_setup(default_profiles(), "InterPodAffinity")
    old = make_qpod("lbp", "ns1").node("node1").obj()
    new = make_qpod("lbp", "ns1").label("service", "securityscan").node("node1").obj()
    q.assigned_pod_updated(old, new)
    assert where(q, affinity) == ACTIVE_Q
    assert where(q, u) == UNSCHEDULABLE_PODS
    assert q.incoming_pods["active/AssignedPodUpdate"] == 1


# =============================================================================== pending pods and metrics

def test_pending_pods():
    # TestPriorityQueue_PendingPods
    t = new_clock()
    q = make_queue(t)
    u, h, m = up(), hpp(), mpp()
    q.add_to_active_q(q.new_queued_pod_info(u))
    pop_expect(q, u)
    q.add_to_active_q(q.new_queued_pod_info(h))
    pop_expect(q, h)
    q.add(m)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(u), q.scheduling_cycle)
    q.add_unschedulable_if_not_present(q.new_queued_pod_info(h), q.scheduling_cycle)
    assert q.pending_pods() == {"active": 1, "backoff": 0, "unschedulable": 2, "gated": 0}
    q.move_all_to_active_or_backoff_queue(TEST_EVENT)
    assert q.pending_pods() == {"active": 1, "backoff": 2, "unschedulable": 0, "gated": 0}


def _metric_pinfos(t0):
    """makeQueuedPodInfos: 50 queueable, 10 gated ("failme"), 20 queueable 2s later."""
    def make(n, prefix, label, ts):
        return [QueuedPodInfo(pod=make_qpod(f"{prefix}-{i}", f"ns{i}").label(label, "").obj(), timestamp=ts)
                for i in range(1, n + 1)]
    pinfos = make(50, "x", "queueable", t0)
    gated = make(10, "y", "failme", t0)
    for pi in gated:
        pi.gated = True
    return pinfos + gated, make(20, "z", "queueable", t0 + 2 * SEC)


def _m_active(q, t, pi):
    q.active_q.add(pi.pod.key, pi)


def _m_backoff(q, t, pi):
    q.pod_backoff_q.add(pi.pod.key, pi)


def _m_unsched(q, t, pi):
    q._add_unschedulable(pi)


def _m_delete(q, t, pi):
    q.delete(pi.pod)


def _m_queueable(q, t, pi):
    q.update(pi.pod, updated(pi.pod, **{"metadata.labels": {"queueable": ""}}))


def _m_move_all(q, t, pi):
    q.move_all_to_active_or_backoff_queue(fw.UnschedulableTimeout)


def _m_forward(q, t, pi):
    t[0] += 2 * SEC


def _m_flush_backoff(q, t, pi):
    t[0] += 2 * SEC
    q.flush_backoff_q_completed()


PENDING_METRIC_CASES = [
    ("add pods to activeQ and unschedulablePods",
     [(_m_active, "p", 0, 30), (_m_unsched, "p", 30, 60)], (30, 0, 20, 10)),
    ("add pods to all kinds of queues",
     [(_m_active, "p", 0, 15), (_m_backoff, "p", 15, 40), (_m_unsched, "p", 40, 60)], (15, 25, 10, 10)),
    ("add pods to unschedulablePods and then move all to activeQ",
     [(_m_unsched, "p", 0, 60), (_m_forward, None, 0, 1), (_m_move_all, None, 0, 1)], (50, 0, 0, 10)),
    ("make some pods subject to backoff, add pods to unschedulablePods, and then move all to activeQ",
     [(_m_unsched, "p", 20, 60), (_m_forward, None, 0, 1), (_m_unsched, "d", 0, 20), (_m_move_all, None, 0, 1)],
     (30, 20, 0, 10)),
    ("make some pods subject to backoff, add pods to unschedulablePods/activeQ, move all to activeQ, and finally flush backoffQ",
     [(_m_unsched, "p", 0, 40), (_m_active, "p", 40, 50), (_m_move_all, None, 0, 1), (_m_flush_backoff, None, 0, 1)],
     (50, 0, 0, 0)),
    ("add pods to activeQ/unschedulablePods and then delete some Pods",
     [(_m_active, "p", 0, 30), (_m_unsched, "p", 30, 60), (_m_delete, "p", 0, 2), (_m_delete, "p", 30, 33),
      (_m_delete, "p", 50, 54)], (28, 0, 17, 6)),
    ("add pods to activeQ/unschedulablePods and then update some Pods as queueable",
     [(_m_active, "p", 0, 30), (_m_unsched, "p", 30, 60), (_m_queueable, "p", 50, 55)], (35, 0, 20, 5)),
]


@pytest.mark.parametrize("name,ops,want", PENDING_METRIC_CASES, ids=[c[0] for c in PENDING_METRIC_CASES])
def test_pending_pods_metric(name, ops, want):
    # TestPendingPodsMetric (the scheduler_pending_pods rows)
    t = new_clock(100 * SEC)
    q = make_queue(t, profiles=hint_profiles(pre_enqueue=[AllowlistPreEnqueue(["queueable"])]))
    pinfos, delayed = _metric_pinfos(t[0])
    for op, which, lo, hi in ops:
        operands = {"p": pinfos, "d": delayed, None: [None]}[which]
        for pi in operands[lo:hi]:
            op(q, t, pi)
    active, backoff, unsched, gated = want
    assert q.pending_pods() == {"active": active, "backoff": backoff, "unschedulable": unsched, "gated": gated}


def _i_add(q, t, pi):
    q.add(pi.pod)


def _i_back_to_unsched(q, t, pi):
    q.active_q.add(pi.pod.key, q.new_queued_pod_info(pi.pod))
    pop_expect(q, pi.pod)
    q.add_unschedulable_if_not_present(pi, 1)


def _i_back_to_backoff(q, t, pi):
    q.add_unschedulable_if_not_present(pi, 1)


INCOMING_CASES = [
    ("add pods to activeQ", [_i_add], {"active/PodAdd": 3}, None),
    ("add pods to unschedulablePods", [_i_back_to_unsched], {"unschedulable/ScheduleAttemptFailure": 3}, None),
    ("add pods to unschedulablePods and then move all to backoffQ", [_i_back_to_unsched, _m_move_all],
     {"unschedulable/ScheduleAttemptFailure": 3, "backoff/UnschedulableTimeout": 3}, None),
    ("add pods to unschedulablePods and then move all to activeQ", [_i_back_to_unsched, _m_forward, _m_move_all],
     {"unschedulable/ScheduleAttemptFailure": 3, "active/UnschedulableTimeout": 3}, None),
    # Upstream runs this row with the gate on (v1.28.0's default): a pod that was never popped
    # is "not in flight" -> QueueAfterBackoff.  With the gate off the moveRequestCycle rule
    # (-1 < 1) parks it in unschedulablePods.
    ("make some pods subject to backoff and add them to backoffQ, then flush backoffQ",
     [_i_back_to_backoff, _m_forward, _m_flush_backoff],
     {"backoff/ScheduleAttemptFailure": 3, "active/BackoffComplete": 3},
     {"unschedulable/ScheduleAttemptFailure": 3}),
]


@pytest.mark.parametrize("hints", [True, False], ids=["QHint on", "QHint off"])
@pytest.mark.parametrize("name,ops,want_on,want_off", INCOMING_CASES, ids=[c[0] for c in INCOMING_CASES])
def test_incoming_pods_metrics(name, ops, want_on, want_off, hints):
    # TestIncomingPodsMetrics: scheduler_queue_incoming_pods_total{queue,event} -> "queue/event".
    t = new_clock(100 * SEC)
    q = make_queue(t, queueing_hints=hints)
    pinfos = [QueuedPodInfo(pod=make_qpod(f"test-pod-{i}", f"ns{i}").obj(), timestamp=t[0],
                            unschedulable_plugins={"unschedulable_plugin"}) for i in (1, 2, 3)]
    for op in ops:
        for pi in pinfos:
            op(q, t, pi)
    want = want_on if hints or want_off is None else want_off
    assert q.incoming_pods == want


def test_incoming_pods_metrics_other_keys():
    # ForceActivate, gated Adds (none), the failure of a gated re-queue (none).
    t = new_clock()
    q = make_queue(t, profiles=default_profiles())
    p = make_qpod("p").obj()
    g = make_qpod("g").scheduling_gates("x").obj()
    q.add(p)
    q.add(g)
    park_pi = q.pop()
    fail(q, park_pi, "NodeResourcesFit")
    q.activate([p])
    q.move_all_to_active_or_backoff_queue(fw.WildCardEvent)  # g re-gated: no metric
    assert q.incoming_pods == {"active/PodAdd": 1, "unschedulable/ScheduleAttemptFailure": 1,
                               "active/ForceActivate": 1}


# =============================================================================== trace

QUEUES = {None, ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS}


def _run_everything(q, t):
    """Exercise every queue transition once."""
    a = make_qpod("a", priority=10).obj()
    b = make_qpod("b").obj()
    g = make_qpod("g").scheduling_gates("x").obj()
    c = make_qpod("c").pod_affinity_required({"app": "db"}).obj()
    for p in (a, b, g, c):
        q.add(p)
    pa = q.pop()
    fail(q, pa, "NodeResourcesFit")                                   # -> unschedulablePods
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)                 # -> backoffQ
    t[0] = 1 * SEC
    q.flush_backoff_q_completed()                                     # -> activeQ
    pa = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    fail(q, pa, "NodeResourcesFit")                                   # -> backoffQ (moveRequestCycle)
    q.activate([a])                                                   # ForceActivate
    q.pop()
    q.done(a.key)                                                     # a is bound
    pb = q.pop()
    fail(q, pb, "InterPodAffinity")
    q.update(b, updated(b, **{"metadata.labels.x": "y"}))             # PodUpdate -> backoffQ
    pc = q.pop()
    fail(q, pc, "InterPodAffinity")
    t[0] = 4 * SEC
    q.assigned_pod_added(make_qpod("db").label("app", "db").node("n").obj())   # -> activeQ
    pc = q.pop()
    q.update(c, updated(c, **{"metadata.labels.y": "z"}))             # fresh copy while in flight
    fail(q, pc, "InterPodAffinity")                                   # dropped
    pc = q.pop()
    fail(q, pc, "InterPodAffinity")
    t[0] = 400 * SEC
    q.flush_unschedulable_pods_leftover()                             # UnschedulableTimeout
    q.update(g, updated(g, **{"spec.schedulingGates": None}))         # gate removed -> activeQ
    return a, b, c, g


@pytest.mark.parametrize("hints", [False, True], ids=["QHint off", "QHint on"])
def test_every_queue_transition_has_a_message(hints):
    t = new_clock()
    tr, events = recording_trace(t)
    q = make_queue(t, profiles=default_profiles(), trace=tr, queueing_hints=hints)
    _run_everything(q, t)
    transitions = [e for e in events if e["type"] == "QueueTransition"]
    assert len(transitions) >= 20
    assert {e["event"] for e in transitions} >= {
        "PodAdd", "Pop", "ScheduleAttemptFailure", "NodeAdd", "BackoffComplete", "ForceActivate",
        "PodUpdate", "AssignedPodAdd", "UnschedulableTimeout"}
    for e in transitions:
        assert isinstance(e["message"], str) and e["message"].strip(), e
        assert e["from"] in QUEUES and e["to"] in QUEUES, e
        assert e["pod"].startswith("default/") and e["event"], e
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_queue_transition_messages_name_the_numbers():
    t = new_clock()
    tr, events = recording_trace(t)
    q = make_queue(t, profiles=default_profiles(), trace=tr)
    a = make_qpod("a", priority=10).obj()
    q.add(a)

    def last(event, to=...):
        for e in reversed(events):
            if e["type"] == "QueueTransition" and e["event"] == event and (to is ... or e["to"] == to):
                return e
        raise AssertionError(f"no {event} transition")

    add = last("PodAdd")
    assert (add["from"], add["to"]) == (None, ACTIVE_Q)
    assert "priority 10" in add["message"] and "0s" in add["message"]
    pi = q.pop()
    pop = last("Pop")
    assert (pop["from"], pop["to"]) == (ACTIVE_Q, None)
    assert "cycle 1" in pop["message"] and "attempt 1" in pop["message"]
    fail(q, pi, "NodeResourcesFit")
    f = last("ScheduleAttemptFailure")
    assert f["to"] == UNSCHEDULABLE_PODS
    assert "NodeResourcesFit" in f["message"] and "-1" in f["message"] and "1" in f["message"]
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    mv = last("NodeAdd")
    assert (mv["from"], mv["to"]) == (UNSCHEDULABLE_PODS, BACKOFF_Q)
    assert "1s" in mv["message"] and "NodeResourcesFit" in mv["message"]
    t[0] = 1 * SEC
    q.flush_backoff_q_completed()
    bc = last("BackoffComplete")
    assert (bc["from"], bc["to"]) == (BACKOFF_Q, ACTIVE_Q)
    assert "1s" in bc["message"]
    assert bc["time"] == 1.0
    pi = q.pop()
    q.move_all_to_active_or_backoff_queue(fw.NodeAdd)
    fail(q, pi, "NodeResourcesFit")
    f2 = last("ScheduleAttemptFailure", BACKOFF_Q)
    assert "moveRequestCycle 2" in f2["message"] and "cycle 2" in f2["message"]
    assert "2s" in f2["message"] and "3s" in f2["message"]     # attempt 2: 2s backoff from 1s -> 3s
    t[0] = 10 * SEC
    q.flush_backoff_q_completed()
    bc2 = last("BackoffComplete")
    assert "2s" in bc2["message"] and "3s" in bc2["message"] and "10s" in bc2["message"]
    pi = q.pop()
    fail(q, pi, "NodeResourcesFit")
    t[0] = 10 * SEC + DEFAULT_MAX_IN_UNSCHED + 1 * SEC
    q.flush_unschedulable_pods_leftover()
    ut = last("UnschedulableTimeout")
    assert (ut["from"], ut["to"]) == (UNSCHEDULABLE_PODS, ACTIVE_Q)
    assert "300s" in ut["message"] and "10s" in ut["message"]


def test_trace_disabled_emits_nothing_and_behaves_the_same():
    t1, t2 = new_clock(), new_clock()
    tr, events = recording_trace(t1)
    q_on = make_queue(t1, profiles=default_profiles(), trace=tr)
    q_off = make_queue(t2, profiles=default_profiles())
    _run_everything(q_on, t1)
    _run_everything(q_off, t2)
    assert events
    assert active_keys(q_on) == active_keys(q_off)
    assert backoff_keys(q_on) == backoff_keys(q_off)
    assert unsched_keys(q_on) == unsched_keys(q_off)
    assert q_on.incoming_pods == q_off.incoming_pods
    assert q_on.pending_pods() == q_off.pending_pods()
