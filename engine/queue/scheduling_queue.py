"""The scheduling queue (upstream ``pkg/scheduler/internal/queue/scheduling_queue.go``, v1.28).

PriorityQueue holds every pending pod of the scheduler in one of three places:

- **activeQ**: a heap ordered by the profile's QueueSort plugin (PrioritySort: higher
  priority, then earlier queue timestamp); the scheduler pops its head.
- **podBackoffQ**: a heap of pods that failed and wait out their backoff, ordered by backoff
  expiry (``timestamp + backoff(attempts)``); ``flush_backoff_q_completed`` (every 1 s) moves
  the expired ones to activeQ.
- **unschedulablePods**: a map of pods that failed and wait for a cluster event that may help
  them (``move_all_to_active_or_backoff_queue``), plus pods gated by a PreEnqueue plugin.
  ``flush_unschedulable_pods_leftover`` (every 30 s) moves pods that stayed longer than
  ``pod_max_in_unschedulable_pods_duration``.

A popped pod is "in flight" until it is bound or returned by
``add_unschedulable_if_not_present``.  ``move_request_cycle`` is the scheduling cycle at the
last move request: a pod whose cycle is <= it failed while a move request was received, so it
goes to podBackoffQ instead of unschedulablePods (SchedulerQueueingHints off).  With the gate
on, the events received while the pod was in flight are replayed against its rejecting
plugins instead.

Every move is reported to the trace as a ``QueueTransition`` whose ``message`` names the rule
and the numbers that decided it.
"""
from __future__ import annotations

from ..framework import interface as fw
from ..framework.interface import Code, QueueingHint
from ..framework.types import QueuedPodInfo
from ..objects import IMPLICIT_NAMESPACES
from ..quantity import US
from .heap import KeyedHeap
from .nominator import Nominator

ACTIVE_Q = "activeQ"
BACKOFF_Q = "backoffQ"
UNSCHEDULABLE_PODS = "unschedulablePods"


def _s(us: int) -> str:
    """Seconds for messages: 1.5s, 10s."""
    v = us / US
    return f"{v:g}s"


class _ReceivedEvent:
    __slots__ = ("seq", "event", "old", "new", "in_flight_pods_num", "removed")

    def __init__(self, seq, event, old, new, num):
        self.seq = seq
        self.event = event
        self.old = old
        self.new = new
        self.in_flight_pods_num = num
        self.removed = False


class ProfileQueueInfo:
    """What the queue needs from one profile: its PreEnqueue plugins and, per registered
    cluster event, the plugins (and hint functions) interested in it (queueingHintMap)."""

    def __init__(self, pre_enqueue_plugins, hint_map, run_pre_enqueue=None):
        self.pre_enqueue_plugins = pre_enqueue_plugins
        self.hint_map = hint_map  # list of (ClusterEvent, [(plugin_name, hint_fn or None)])
        self.run_pre_enqueue = run_pre_enqueue


class PriorityQueue:
    def __init__(self, *, clock, trace, profiles: dict, less=None,
                 pod_initial_backoff: int = 1 * US, pod_max_backoff: int = 10 * US,
                 pod_max_in_unschedulable_pods_duration: int = 300 * US,
                 queueing_hints: bool = False, pod_lister=None, ns_lister=IMPLICIT_NAMESPACES):
        self.clock = clock
        self.ns_lister = ns_lister           # p.nsLister (engine.objects.NamespaceLister)
        self.trace = trace
        self.profiles = profiles
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable_pods_duration = pod_max_in_unschedulable_pods_duration
        self.is_scheduling_queue_hint_enabled = queueing_hints
        # Equal queue timestamps are ordered by ``seq``, the order the timestamps were taken
        # (SPEC.md section 4): a real clock never gives two pods the same timestamp.
        if less is None:
            sort_key = lambda pi: (-pi.pod.priority, pi.timestamp, pi.seq)  # PrioritySort.Less
        else:
            k = _less_key(less)
            sort_key = lambda pi: (k(pi), pi.seq)
        self.active_q = KeyedHeap(sort_key)
        # podsCompareBackoffCompleted: backoff expiry, then (equal expiries) timestamp order.
        self.pod_backoff_q = KeyedHeap(lambda pi: (self.get_backoff_time(pi), pi.seq))
        self._timestamp_seq = 0              # taken with every queue timestamp
        self.unschedulable_pods: dict = {}   # key -> QueuedPodInfo, in the order they entered
        self.nominator = Nominator(pod_lister)
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        # SchedulerQueueingHints: in-flight pods and the events received meanwhile.
        self.in_flight_pods: dict = {}       # key -> _ReceivedEvent | None (log tail at Pop)
        self.received_events: list = []
        self._event_seq = 0
        # Metrics (upstream names): queue_incoming_pods_total{queue,event}.
        self.incoming_pods: dict = {}
        self.unschedulable_reasons: dict = {}  # unschedulable_pods{plugin}
        self._unsched_counter = 0

    # ------------------------------------------------------------------ helpers

    def _incoming(self, queue: str, event: str) -> None:
        k = f"{queue}/{event}"
        self.incoming_pods[k] = self.incoming_pods.get(k, 0) + 1

    def _transition(self, pinfo, from_q, to_q, event, message) -> None:
        self.trace.emit("QueueTransition", pod=pinfo.pod.key, **{"from": from_q, "to": to_q},
                        event=event, message=message)

    def calculate_backoff_duration(self, pinfo: QueuedPodInfo) -> int:
        """calculateBackoffDuration: initial * 2^(attempts-1), capped at the maximum."""
        duration = self.pod_initial_backoff
        for _ in range(1, pinfo.attempts):
            if duration > self.pod_max_backoff - duration:
                return self.pod_max_backoff
            duration += duration
        return duration

    def get_backoff_time(self, pinfo: QueuedPodInfo) -> int:
        return pinfo.timestamp + self.calculate_backoff_duration(pinfo)

    def is_pod_backing_off(self, pinfo: QueuedPodInfo) -> bool:
        """isPodBackingoff: gated pods never back off; expiry == now is not backing off."""
        if pinfo.gated:
            return False
        return self.get_backoff_time(pinfo) > self.clock()

    def _backoff_text(self, pinfo) -> str:
        d = self.calculate_backoff_duration(pinfo)
        expiry = pinfo.timestamp + d
        return (f"attempt {pinfo.attempts} gives a backoff of {_s(d)} "
                f"(initial {_s(self.pod_initial_backoff)} doubled per attempt, max {_s(self.pod_max_backoff)}), "
                f"counted from its queue time {_s(pinfo.timestamp)}: it expires at {_s(expiry)}")

    def _add_unschedulable(self, pinfo: QueuedPodInfo) -> None:
        """UnschedulablePods.addOrUpdate: a new entry goes last; an existing one keeps its place."""
        key = pinfo.pod.key
        if key not in self.unschedulable_pods:
            self._unsched_counter += 1
            pinfo.unsched_seq = self._unsched_counter
        self.unschedulable_pods[key] = pinfo

    def _delete_unschedulable(self, key: str) -> None:
        self.unschedulable_pods.pop(key, None)

    def _take_timestamp(self, pinfo: QueuedPodInfo) -> None:
        """Set the pod's queue timestamp to now and number it: ``seq`` orders equal
        timestamps in the order they were taken, as upstream's ``time.Now()`` would."""
        pinfo.timestamp = self.clock()
        self._timestamp_seq += 1
        pinfo.seq = self._timestamp_seq

    def new_queued_pod_info(self, pod, *plugins) -> QueuedPodInfo:
        """newQueuedPodInfo: a new queue entry, with a new timestamp."""
        pinfo = QueuedPodInfo(pod=pod, attempts=0, unschedulable_plugins=set(plugins))
        self._take_timestamp(pinfo)
        return pinfo

    # ------------------------------------------------------------------ PreEnqueue / addToActiveQ

    def run_pre_enqueue_plugins(self, pinfo: QueuedPodInfo) -> bool:
        """runPreEnqueuePlugins: the first non-Success gates the pod and names the plugin."""
        prof = self.profiles.get(pinfo.pod.scheduler_name)
        if prof is None:
            return True
        for pl in prof.pre_enqueue_plugins:
            status = prof.run_pre_enqueue(pl, pinfo.pod) if prof.run_pre_enqueue else pl.pre_enqueue(pinfo.pod)
            if status is None or status.code == Code.Success:
                continue
            pinfo.unschedulable_plugins.add(pl.name)
            self.unschedulable_reasons[pl.name] = self.unschedulable_reasons.get(pl.name, 0) + 1
            return False
        return True

    def add_to_active_q(self, pinfo: QueuedPodInfo) -> bool:
        """addToActiveQ: run PreEnqueue; a gated pod is put (back) into unschedulablePods."""
        pinfo.gated = not self.run_pre_enqueue_plugins(pinfo)
        if pinfo.gated:
            self._add_unschedulable(pinfo)
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self.clock()
        self.active_q.add(pinfo.pod.key, pinfo)
        return True

    def _gated_message(self, pinfo) -> str:
        plugins = ", ".join(sorted(pinfo.unschedulable_plugins)) or "a PreEnqueue plugin"
        return f"PreEnqueue plugin {plugins} rejected it, so it waits in unschedulablePods as a gated pod, outside any scheduling cycle"

    # ------------------------------------------------------------------ Add / Activate

    def add(self, pod) -> None:
        """Add: a new unassigned pod of one of our profiles."""
        pinfo = self.new_queued_pod_info(pod)
        if not self.add_to_active_q(pinfo):
            if self.trace.enabled:
                self._transition(pinfo, None, UNSCHEDULABLE_PODS, fw.PodAdd, self._gated_message(pinfo))
            return
        key = pod.key
        if key in self.unschedulable_pods:
            self._delete_unschedulable(key)
        self.pod_backoff_q.delete(key)
        self._incoming("active", fw.PodAdd)
        if self.trace.enabled:
            self._transition(pinfo, None, ACTIVE_Q, fw.PodAdd,
                             f"new pending pod (priority {pod.priority}) enters activeQ with queue time {_s(pinfo.timestamp)}")
        self.nominator.add_nominated_pod(pod, None)

    def restore(self, pod, queue: str, attempts: int, timestamp: int, unschedulable_plugins=(), gated=False) -> None:
        """Add a pod with the queue state an export recorded (scenario ``queue``): its
        attempts, queue timestamp and rejecting plugins, into the sub-queue it was in. Not an
        upstream operation: it stands for the scheduler having run up to the export."""
        pinfo = QueuedPodInfo(pod=pod, attempts=attempts, unschedulable_plugins=set(unschedulable_plugins))
        pinfo.timestamp = timestamp
        self._timestamp_seq += 1
        pinfo.seq = self._timestamp_seq
        pinfo.initial_attempt_timestamp = timestamp if attempts else None
        if not gated:
            for pl in pinfo.unschedulable_plugins:
                self.unschedulable_reasons[pl] = self.unschedulable_reasons.get(pl, 0) + 1
        else:
            pinfo.unschedulable_plugins = set()
        what = (f"restored from the exported queue state: {attempts} attempt(s), queue time {_s(timestamp)}"
                + (f", rejected by {', '.join(sorted(pinfo.unschedulable_plugins))}" if pinfo.unschedulable_plugins else ""))
        if queue == ACTIVE_Q or gated:
            # activeQ, or gated: PreEnqueue decides again, as for any pod added
            if not self.add_to_active_q(pinfo):
                if self.trace.enabled:
                    self._transition(pinfo, None, UNSCHEDULABLE_PODS, fw.PodAdd, self._gated_message(pinfo))
                return
            self._incoming("active", fw.PodAdd)
            if self.trace.enabled:
                self._transition(pinfo, None, ACTIVE_Q, fw.PodAdd, what)
        elif queue == BACKOFF_Q:
            self.pod_backoff_q.add(pod.key, pinfo)
            self._incoming("backoff", fw.PodAdd)
            if self.trace.enabled:
                self._transition(pinfo, None, BACKOFF_Q, fw.PodAdd, what + "; " + self._backoff_text(pinfo))
        else:
            self._add_unschedulable(pinfo)
            self._incoming("unschedulable", fw.PodAdd)
            if self.trace.enabled:
                self._transition(pinfo, None, UNSCHEDULABLE_PODS, fw.PodAdd, what)
        self.nominator.add_nominated_pod(pod, None)

    def activate(self, pods) -> None:
        """Activate: force pods from unschedulablePods or podBackoffQ into activeQ."""
        for pod in pods:
            key = pod.key
            if key in self.active_q:
                continue
            pinfo = self.unschedulable_pods.get(key)
            from_q = UNSCHEDULABLE_PODS
            if pinfo is None:
                pinfo = self.pod_backoff_q.get(key)
                from_q = BACKOFF_Q
                if pinfo is None:
                    continue
            if not self.add_to_active_q(pinfo):
                continue
            self._delete_unschedulable(key)
            self.pod_backoff_q.delete(key)
            self._incoming("active", fw.ForceActivate)
            if self.trace.enabled:
                self._transition(pinfo, from_q, ACTIVE_Q, fw.ForceActivate,
                                 "a plugin asked to activate it (PodsToActivate), skipping any remaining backoff")
            self.nominator.add_nominated_pod(pinfo.pod, None)

    # ------------------------------------------------------------------ Pop / Done

    def pop(self):
        """Pop: the head of activeQ; attempts and the scheduling cycle go up by one.

        v1.28.7 (#120535, "start scheduling attempt with clean") clears the pod's
        unschedulable plugins here, so a failure that names none leaves none.
        """
        pinfo = self.active_q.pop()
        if pinfo is None:
            return None
        pinfo.attempts += 1
        self.scheduling_cycle += 1
        if self.is_scheduling_queue_hint_enabled:
            self.in_flight_pods[pinfo.pod.key] = self.received_events[-1] if self.received_events else None
        for pl in pinfo.unschedulable_plugins:
            self.unschedulable_reasons[pl] = self.unschedulable_reasons.get(pl, 0) - 1
        pinfo.unschedulable_plugins = set()
        if self.trace.enabled:
            self._transition(pinfo, ACTIVE_Q, None, "Pop",
                             f"popped as the head of activeQ (priority {pinfo.pod.priority}, queue time "
                             f"{_s(pinfo.timestamp)}) for scheduling cycle {self.scheduling_cycle}, attempt {pinfo.attempts}")
        return pinfo

    def done(self, key: str) -> None:
        """Done: forget an in-flight pod and drop events no in-flight pod still needs."""
        if not self.is_scheduling_queue_hint_enabled:
            return
        if key not in self.in_flight_pods:
            return
        prev = self.in_flight_pods.pop(key)
        events = self.received_events
        start = 0
        if prev is not None and prev.in_flight_pods_num != 0 and not prev.removed:
            start = events.index(prev) + 1
        keep = events[:start]
        for e in events[start:]:
            e.in_flight_pods_num -= 1
            if e.in_flight_pods_num <= 0:
                e.removed = True
            else:
                keep.append(e)
        self.received_events = keep

    # ------------------------------------------------------------------ failures

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int) -> str | None:
        """AddUnschedulableIfNotPresent: return a failed pod to podBackoffQ or unschedulablePods.

        Returns the queue it went to, or None if the pod was already queued (a newer copy of it
        was added while it was in flight, which wins).
        """
        key = pinfo.pod.key
        try:
            if key in self.unschedulable_pods or key in self.active_q or key in self.pod_backoff_q:
                where = (UNSCHEDULABLE_PODS if key in self.unschedulable_pods else
                         ACTIVE_Q if key in self.active_q else BACKOFF_Q)
                if self.trace.enabled:
                    self.trace.emit("QueueTransition", pod=key, **{"from": None, "to": None},
                                    event=fw.ScheduleAttemptFailure,
                                    message=f"the failed attempt is dropped: an update re-queued a newer copy of the pod "
                                            f"in {where} while this attempt was in flight, and that copy wins")
                return None
            if not self.is_scheduling_queue_hint_enabled:
                return self._add_unschedulable_without_queueing_hint(pinfo, pod_scheduling_cycle)
            self._take_timestamp(pinfo)
            for pl in pinfo.unschedulable_plugins:
                self.unschedulable_reasons[pl] = self.unschedulable_reasons.get(pl, 0) + 1
            hint, why = self._determine_scheduling_hint_for_in_flight_pod(pinfo)
            queue = self._requeue_pod_via_queueing_hint(pinfo, hint, fw.ScheduleAttemptFailure, None,
                                                        f"the attempt failed; {why}")
            self.nominator.add_nominated_pod(pinfo.pod, None)
            return queue
        finally:
            self.done(key)

    def _add_unschedulable_without_queueing_hint(self, pinfo, pod_scheduling_cycle) -> str:
        self._take_timestamp(pinfo)
        for pl in pinfo.unschedulable_plugins:
            self.unschedulable_reasons[pl] = self.unschedulable_reasons.get(pl, 0) + 1
        if self.move_request_cycle >= pod_scheduling_cycle:
            self.pod_backoff_q.add(pinfo.pod.key, pinfo)
            self._incoming("backoff", fw.ScheduleAttemptFailure)
            if self.trace.enabled:
                self._transition(pinfo, None, BACKOFF_Q, fw.ScheduleAttemptFailure,
                                 f"the attempt failed, but a move request arrived during it (moveRequestCycle "
                                 f"{self.move_request_cycle} >= its cycle {pod_scheduling_cycle}), so it goes "
                                 f"straight to podBackoffQ instead of waiting for another event; {self._backoff_text(pinfo)}")
            q = BACKOFF_Q
        else:
            self._add_unschedulable(pinfo)
            self._incoming("unschedulable", fw.ScheduleAttemptFailure)
            if self.trace.enabled:
                plugins = ", ".join(sorted(pinfo.unschedulable_plugins)) or "no plugin"
                self._transition(pinfo, None, UNSCHEDULABLE_PODS, fw.ScheduleAttemptFailure,
                                 f"the attempt failed (rejected by {plugins}) and no move request arrived since its "
                                 f"cycle started (moveRequestCycle {self.move_request_cycle} < its cycle "
                                 f"{pod_scheduling_cycle}), so it waits in unschedulablePods for a cluster event "
                                 f"that may help it")
            q = UNSCHEDULABLE_PODS
        self.nominator.add_nominated_pod(pinfo.pod, None)
        return q

    def _determine_scheduling_hint_for_in_flight_pod(self, pinfo):
        """determineSchedulingHintForInFlightPod (replaying exactly the events received after
        this pod's Pop, as upstream intends)."""
        if not pinfo.unschedulable_plugins:
            if self.received_events:
                return QueueingHint.QueueAfterBackoff, ("it names no rejecting plugin and events were received "
                                                        "while pods were in flight, so it is retried after backoff")
            return QueueingHint.QueueSkip, "it names no rejecting plugin and no event was received meanwhile"
        key = pinfo.pod.key
        if key not in self.in_flight_pods:
            return QueueingHint.QueueAfterBackoff, "it was not recorded as in flight"
        prev = self.in_flight_pods[key]
        hint = QueueingHint.QueueSkip
        cause = None
        for e in self.received_events:
            if prev is not None and e.seq <= prev.seq:
                continue
            h = self.is_pod_worth_requeuing(pinfo, e.event, e.old, e.new)
            if h == QueueingHint.QueueSkip:
                continue
            cause = e.event.label
            if h == QueueingHint.QueueImmediately:
                hint = h
                break
            hint = QueueingHint.QueueAfterBackoff
        if hint == QueueingHint.QueueSkip:
            return hint, "no event received while it was in flight concerns the plugins that rejected it"
        return hint, f"an event received while it was in flight ({cause}) concerns a plugin that rejected it"

    # ------------------------------------------------------------------ flushes

    def flush_backoff_q_completed(self) -> None:
        """flushBackoffQCompleted (every 1 s): move pods whose backoff expired to activeQ."""
        while True:
            pinfo = self.pod_backoff_q.peek()
            if pinfo is None or self.is_pod_backing_off(pinfo):
                break
            self.pod_backoff_q.pop()
            if self.add_to_active_q(pinfo):
                self._incoming("active", fw.BackoffComplete)
                if self.trace.enabled:
                    expiry = self.get_backoff_time(pinfo)
                    self._transition(pinfo, BACKOFF_Q, ACTIVE_Q, fw.BackoffComplete,
                                     f"its backoff of {_s(self.calculate_backoff_duration(pinfo))} expired at "
                                     f"{_s(expiry)} and the 1s backoff flush at {_s(self.clock())} moved it to activeQ")
            elif self.trace.enabled:
                self._transition(pinfo, BACKOFF_Q, UNSCHEDULABLE_PODS, fw.BackoffComplete, self._gated_message(pinfo))

    def flush_unschedulable_pods_leftover(self) -> None:
        """flushUnschedulablePodsLeftover (every 30 s): pods parked for strictly longer than
        podMaxInUnschedulablePodsDuration move with the wildcard UnschedulableTimeout event."""
        now = self.clock()
        limit = self.pod_max_in_unschedulable_pods_duration
        to_move = [pi for pi in self.unschedulable_pods.values() if now - pi.timestamp > limit]
        if to_move:
            self.move_pods_to_active_or_backoff_queue(to_move, fw.UnschedulableTimeout, None, None)

    # ------------------------------------------------------------------ updates and deletes

    def update(self, old_pod, new_pod) -> None:
        """Update: an unassigned pod changed."""
        key = new_pod.key
        if old_pod is not None:
            pinfo = self.active_q.get(key)
            if pinfo is not None:
                pinfo.pod = new_pod
                self.nominator.update_nominated_pod(old_pod, new_pod)
                self.active_q.update(key, pinfo)
                return
            pinfo = self.pod_backoff_q.get(key)
            if pinfo is not None:
                pinfo.pod = new_pod
                self.nominator.update_nominated_pod(old_pod, new_pod)
                self.pod_backoff_q.update(key, pinfo)
                return
        pinfo = self.unschedulable_pods.get(key)
        if pinfo is not None:
            pinfo.pod = new_pod
            self.nominator.update_nominated_pod(old_pod, new_pod)
            if is_pod_updated(old_pod, new_pod):
                if self.is_pod_backing_off(pinfo):
                    self.pod_backoff_q.add(key, pinfo)
                    self._delete_unschedulable(key)
                    if self.trace.enabled:
                        self._transition(pinfo, UNSCHEDULABLE_PODS, BACKOFF_Q, fw.PodUpdate,
                                         f"its spec or metadata changed, which may make it schedulable; it is still "
                                         f"backing off ({self._backoff_text(pinfo)})")
                else:
                    # Upstream removes the entry only once addToActiveQ succeeds: a pod that is
                    # re-gated keeps its place in unschedulablePods.
                    if not self.add_to_active_q(pinfo):
                        if self.trace.enabled:
                            self._transition(pinfo, UNSCHEDULABLE_PODS, UNSCHEDULABLE_PODS, fw.PodUpdate,
                                             "its spec or metadata changed, but " + self._gated_message(pinfo))
                        return
                    self._delete_unschedulable(key)
                    if self.trace.enabled:
                        self._transition(pinfo, UNSCHEDULABLE_PODS, ACTIVE_Q, fw.PodUpdate,
                                         "its spec or metadata changed, which may make it schedulable, and it is not "
                                         "backing off, so it moves to activeQ")
            else:
                self._add_unschedulable(pinfo)
            return
        pinfo = self.new_queued_pod_info(new_pod)
        if not self.add_to_active_q(pinfo):
            if self.trace.enabled:
                self._transition(pinfo, None, UNSCHEDULABLE_PODS, fw.PodUpdate, self._gated_message(pinfo))
            return
        self.nominator.add_nominated_pod(new_pod, None)
        if self.trace.enabled:
            self._transition(pinfo, None, ACTIVE_Q, fw.PodUpdate,
                             "updated while in no queue (e.g. during its own scheduling cycle): a fresh copy "
                             "(attempts 0) enters activeQ")

    def delete(self, pod) -> str | None:
        """Delete: remove the pod from every structure and drop its nomination."""
        key = pod.key
        self.nominator.delete_nominated_pod_if_exists(pod)
        if self.active_q.delete(key):
            return ACTIVE_Q
        if self.pod_backoff_q.delete(key):
            return BACKOFF_Q
        if key in self.unschedulable_pods:
            self._delete_unschedulable(key)
            return UNSCHEDULABLE_PODS
        return None

    # ------------------------------------------------------------------ move requests

    def assigned_pod_added(self, pod) -> None:
        """AssignedPodAdded: move the unschedulable pods with a required affinity term the
        newly assigned pod matches."""
        self.move_pods_to_active_or_backoff_queue(
            self._unschedulable_pods_with_matching_affinity_term(pod), fw.AssignedPodAdd, None, pod)

    def assigned_pod_updated(self, old_pod, new_pod) -> None:
        self.move_pods_to_active_or_backoff_queue(
            self._unschedulable_pods_with_matching_affinity_term(new_pod), fw.AssignedPodUpdate, old_pod, new_pod)

    def _unschedulable_pods_with_matching_affinity_term(self, pod) -> list:
        """getUnschedulablePodsWithMatchingAffinityTerm: the unschedulable pods with a
        required affinity term that matches ``pod``, with the labels of ``pod``'s namespace
        (interpodaffinity.GetNamespaceLabelsSnapshot)."""
        out = []
        if not self.unschedulable_pods:
            return out
        ns_labels = self.ns_lister.labels_snapshot(pod.namespace)
        for pinfo in self.unschedulable_pods.values():
            for term in pinfo.pod.required_affinity_terms:
                if term.matches(pod, ns_labels):
                    out.append(pinfo)
                    break
        return out

    def move_all_to_active_or_backoff_queue(self, event, old_obj=None, new_obj=None, pre_check=None) -> None:
        """MoveAllToActiveOrBackoffQueue: every unschedulable pod passing ``pre_check``."""
        if pre_check is None:
            pods = list(self.unschedulable_pods.values())
        else:
            pods = [pi for pi in self.unschedulable_pods.values() if pre_check(pi.pod)]
        self.move_pods_to_active_or_backoff_queue(pods, event, old_obj, new_obj)

    def move_pods_to_active_or_backoff_queue(self, pinfos, event, old_obj, new_obj) -> None:
        """movePodsToActiveOrBackoffQueue; always sets moveRequestCycle to the current cycle."""
        for pinfo in pinfos:
            hint = self.is_pod_worth_requeuing(pinfo, event, old_obj, new_obj)
            if hint == QueueingHint.QueueSkip:
                continue
            self._delete_unschedulable(pinfo.pod.key)
            self._requeue_pod_via_queueing_hint(pinfo, hint, event.label, UNSCHEDULABLE_PODS,
                                                self._move_reason(pinfo, event))
        self.move_request_cycle = self.scheduling_cycle
        if self.in_flight_pods:
            self._event_seq += 1
            self.received_events.append(_ReceivedEvent(self._event_seq, event, old_obj, new_obj,
                                                       len(self.in_flight_pods)))

    def _move_reason(self, pinfo, event) -> str:
        if not self.trace.enabled:
            return ""
        if event.is_wildcard():
            if event.label == "UnschedulableTimeout":
                return (f"it stayed in unschedulablePods since {_s(pinfo.timestamp)}, longer than "
                        f"podMaxInUnschedulablePodsDuration ({_s(self.pod_max_in_unschedulable_pods_duration)}), "
                        f"so the 30s leftover flush at {_s(self.clock())} moves it")
            return f"the wildcard event {event.label} moves every pod"
        if not pinfo.unschedulable_plugins:
            return f"{event.label} moves it: no plugin is recorded as having rejected it"
        return (f"{event.label} is registered by a plugin that rejected it "
                f"({', '.join(sorted(pinfo.unschedulable_plugins))}), so it may now fit")

    def _requeue_pod_via_queueing_hint(self, pinfo, hint, event_label, from_q, why) -> str:
        """requeuePodViaQueueingHint."""
        if hint == QueueingHint.QueueSkip:
            self._add_unschedulable(pinfo)
            self._incoming("unschedulable", event_label)
            if self.trace.enabled:
                self._transition(pinfo, from_q, UNSCHEDULABLE_PODS, event_label,
                                 f"{why}; it waits in unschedulablePods for a cluster event that may help it")
            return UNSCHEDULABLE_PODS
        if hint == QueueingHint.QueueAfterBackoff and self.is_pod_backing_off(pinfo):
            self.pod_backoff_q.add(pinfo.pod.key, pinfo)
            self._incoming("backoff", event_label)
            if self.trace.enabled:
                self._transition(pinfo, from_q, BACKOFF_Q, event_label,
                                 f"{why}; it is still backing off: {self._backoff_text(pinfo)}")
            return BACKOFF_Q
        if self.add_to_active_q(pinfo):
            self._incoming("active", event_label)
            if self.trace.enabled:
                if hint == QueueingHint.QueueImmediately:
                    tail = "a queueing hint asked to retry it immediately"
                else:
                    tail = (f"its backoff already expired at {_s(self.get_backoff_time(pinfo))}, "
                            f"so it goes to activeQ")
                self._transition(pinfo, from_q, ACTIVE_Q, event_label, f"{why}; {tail}")
            return ACTIVE_Q
        if self.trace.enabled:
            self._transition(pinfo, from_q, UNSCHEDULABLE_PODS, event_label, f"{why}; but " + self._gated_message(pinfo))
        return UNSCHEDULABLE_PODS

    def is_pod_worth_requeuing(self, pinfo, event, old_obj, new_obj) -> QueueingHint:
        """isPodWorthRequeuing (v1.28): no rejecting plugins or a wildcard event -> after
        backoff; else the hints of the rejecting plugins registered for a matching event."""
        if not pinfo.unschedulable_plugins:
            return QueueingHint.QueueAfterBackoff
        if event.is_wildcard():
            return QueueingHint.QueueAfterBackoff
        prof = self.profiles.get(pinfo.pod.scheduler_name)
        if prof is None:
            return QueueingHint.QueueAfterBackoff
        hint = QueueingHint.QueueSkip
        rejectors = pinfo.unschedulable_plugins
        for registered, hint_fns in prof.hint_map:
            if registered.resource != event.resource or not (registered.action_type & event.action_type):
                continue
            for plugin_name, fn in hint_fns:
                if plugin_name not in rejectors:
                    continue
                if fn is None or not self.is_scheduling_queue_hint_enabled:
                    h = QueueingHint.QueueAfterBackoff
                else:
                    h = fn(pinfo.pod, old_obj, new_obj)
                if h == QueueingHint.QueueImmediately:
                    return h
                if h == QueueingHint.QueueAfterBackoff:
                    hint = h
        return hint

    # ------------------------------------------------------------------ views

    def where_is(self, key: str) -> str | None:
        if key in self.active_q:
            return ACTIVE_Q
        if key in self.pod_backoff_q:
            return BACKOFF_Q
        if key in self.unschedulable_pods:
            return UNSCHEDULABLE_PODS
        return None

    def get(self, key: str):
        return self.active_q.get(key) or self.pod_backoff_q.get(key) or self.unschedulable_pods.get(key)

    def pending_pods(self) -> dict:
        """pending_pods{queue}: active, backoff, unschedulable (not gated), gated."""
        gated = sum(1 for pi in self.unschedulable_pods.values() if pi.gated)
        return {"active": len(self.active_q), "backoff": len(self.pod_backoff_q),
                "unschedulable": len(self.unschedulable_pods) - gated, "gated": gated}


def is_pod_updated(old_pod, new_pod) -> bool:
    """isPodUpdated: a change outside status, resourceVersion, generation, managedFields and
    finalizers (so a nominatedNodeName patch alone does not requeue a pod)."""
    if old_pod is None:
        return True
    return old_pod.spec_for_compare() != new_pod.spec_for_compare()


def _less_key(less):
    """Turn a custom QueueSort ``less(a, b)`` into a heap key."""
    class _K:
        __slots__ = ("pi",)

        def __init__(self, pi):
            self.pi = pi

        def __lt__(self, other):
            return less(self.pi, other.pi)

        def __eq__(self, other):
            return not less(self.pi, other.pi) and not less(other.pi, self.pi)
    return _K
