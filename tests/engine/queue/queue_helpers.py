"""Helpers for the scheduling-queue tests, in the spirit of upstream's
``internal/queue/testing.go`` (``NewTestQueue``) and the fixtures at the top of
``scheduling_queue_test.go`` (``highPriorityPodInfo``, ``medPriorityPodInfo``, ...).

Time is a fake clock: a one-element list of virtual microseconds, read through
``clock=lambda: t[0]`` and advanced with ``t[0] += ...`` (upstream: ``testingclock.FakeClock``).
"""
from __future__ import annotations

import copy

from engine.config import parse_scheduler_config
from engine.framework.interface import Code, PreEnqueuePlugin, Status
from engine.framework.runtime import Framework
from engine.objects import Problems
from engine.quantity import US
from engine.queue.scheduling_queue import PriorityQueue, ProfileQueueInfo
from engine.trace import Trace
from tests.engine.builders import PodBuilder

DEFAULT_SCHEDULER = "default-scheduler"
SEC = US
MS = US // 1000

# Upstream's fixture priorities.
LOW, MID, HIGH = 0, 100, 1000
MEDIUM = (LOW + HIGH) // 2


class QPodBuilder(PodBuilder):
    """PodBuilder plus the few fields the queue tests need."""

    def annotation(self, k, v):
        self.m["metadata"].setdefault("annotations", {})[k] = v
        return self

    def nominated_node_name(self, node):
        """status.nominatedNodeName (upstream ``NominatedNodeName``)."""
        self.m.setdefault("status", {})["nominatedNodeName"] = node
        return self

    def condition_unschedulable(self):
        """status.conditions PodScheduled=False/Unschedulable (a status-only change)."""
        self.m.setdefault("status", {})["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        return self

    def scheduler_name(self, name):
        self.spec["schedulerName"] = name
        return self

    def pod_affinity_required(self, match_labels: dict, topology_key="kubernetes.io/hostname",
                              namespaces=None, anti=False):
        """One required (anti-)affinity term with a matchLabels selector (upstream
        ``PodAffinityExists`` / ``PodAntiAffinityExists`` with ``PodAffinityWithRequiredReq``)."""
        kind = "podAntiAffinity" if anti else "podAffinity"
        term = {"labelSelector": {"matchLabels": dict(match_labels)}, "topologyKey": topology_key}
        if namespaces is not None:
            term["namespaces"] = list(namespaces)
        aff = self.spec.setdefault("affinity", {}).setdefault(kind, {})
        aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        return self

    def clone(self) -> "QPodBuilder":
        b = QPodBuilder()
        b.m = copy.deepcopy(self.m)
        return b


def make_qpod(name="pod", namespace="default", priority=None) -> QPodBuilder:
    b = QPodBuilder().name(name).namespace(namespace)
    if priority is not None:
        b.priority(priority)
    return b


def updated(pod, **changes):
    """A copy of ``pod`` whose manifest is changed by ``changes`` (dotted paths), re-parsed.

    ``updated(p, **{"metadata.annotations.foo": "test"})`` is a spec/metadata change;
    ``updated(p, **{"status.nominatedNodeName": "n1"})`` a status-only change.
    """
    from engine.objects import pod_from_manifest
    m = copy.deepcopy(pod.manifest)
    for path, value in changes.items():
        cur = m
        parts = path.split(".")
        for part in parts[:-1]:
            cur = cur.setdefault(part, {})
        if value is None:
            cur.pop(parts[-1], None)
        else:
            cur[parts[-1]] = value
    probs = Problems()
    new = pod_from_manifest(m, "test", probs)
    assert not probs.items, probs.items
    new.priority = new.spec_priority or 0
    return new


# ------------------------------------------------------------------ PreEnqueue plugins

class AllowlistPreEnqueue(PreEnqueuePlugin):
    """Upstream test's ``preEnqueuePlugin``: admits a pod iff it carries a label whose key is
    in ``allowlists``; else UnschedulableAndUnresolvable."""

    def __init__(self, allowlists=(), name="preEnqueuePlugin"):
        self.allowlists = list(allowlists)
        self.name = name

    def pre_enqueue(self, pod):
        for allowed in self.allowlists:
            if allowed in pod.labels:
                return None
        return Status(Code.UnschedulableAndUnresolvable, ["pod name not in allowlists"])


# ------------------------------------------------------------------ profiles and queues

def default_framework() -> Framework:
    """A real Framework for the default profile (no scenario config)."""
    probs = Problems()
    cfg = parse_scheduler_config(None, probs)
    assert not probs.items, probs.items
    return Framework(cfg.profiles[0], trace=Trace(enabled=False))


def default_profiles() -> dict:
    """The default profile's PreEnqueue plugins (SchedulingGates) and queueingHintMap."""
    f = default_framework()
    return {DEFAULT_SCHEDULER: ProfileQueueInfo(f.pre_enqueue_plugins, f.hint_map(), f.run_pre_enqueue_plugin)}


def hint_profiles(hint_map=None, pre_enqueue=()) -> dict:
    """A profile with a hand-written queueingHintMap (upstream ``WithQueueingHintMapPerProfile``):
    ``hint_map`` is a list of ``(ClusterEvent, [(plugin name, hint fn or None)])``."""
    return {DEFAULT_SCHEDULER: ProfileQueueInfo(list(pre_enqueue), list(hint_map or []))}


def new_clock(start=0):
    return [start]


def make_queue(t, profiles=None, trace=None, **kwargs) -> PriorityQueue:
    """upstream ``NewTestQueue``: a PriorityQueue on the fake clock ``t``."""
    if profiles is None:
        profiles = hint_profiles()
    if trace is None:
        trace = Trace(enabled=False)
    return PriorityQueue(clock=lambda: t[0], trace=trace, profiles=profiles, **kwargs)


def recording_trace(t):
    """A Trace on the fake clock whose events are appended to the returned list."""
    events: list = []
    tr = Trace(clock=lambda: t[0])
    tr.add_sink(events.append)
    return tr, events


# ------------------------------------------------------------------ queue operations

def pop_expect(q, pod):
    """Pop and assert the head is ``pod`` (by key)."""
    pinfo = q.pop()
    assert pinfo is not None, f"activeQ is empty, expected {pod.key}"
    assert pinfo.pod.key == pod.key, f"popped {pinfo.pod.key}, expected {pod.key}"
    return pinfo


def fail(q, pinfo, *plugins, cycle=None):
    """The scheduler's failure handling: record the rejecting plugins and hand the pod back
    with the current scheduling cycle (or ``cycle``)."""
    pinfo.unschedulable_plugins = set(plugins)
    return q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle if cycle is None else cycle)


def park(q, pod, *plugins):
    """Add ``pod``, pop it and fail it: it waits in unschedulablePods (no move request)."""
    q.add(pod)
    pinfo = pop_expect(q, pod)
    where = fail(q, pinfo, *plugins)
    return pinfo, where


def keys(pinfos):
    return [pi.pod.key for pi in pinfos]


def active_keys(q):
    return keys(q.active_q.ordered())


def backoff_keys(q):
    return keys(q.pod_backoff_q.ordered())


def unsched_keys(q):
    return list(q.unschedulable_pods.keys())


def drain(q):
    """Pop everything in activeQ; the keys in pop order."""
    out = []
    while True:
        pi = q.pop()
        if pi is None:
            return out
        out.append(pi.pod.key)
