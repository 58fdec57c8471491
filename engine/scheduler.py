"""The scheduler and its virtual-time event loop.

Upstream: ``pkg/scheduler/schedule_one.go`` (scheduleOne, schedulingCycle, bindingCycle,
handleSchedulingFailure, handleBindingCycleError, findNodesThatFitPod, prioritizeNodes,
selectHost), ``eventhandlers.go`` (how API changes reach the cache and the queue) and
``scheduler.go`` (the queue's periodic flushes), v1.28.

The loop follows SPEC.md §4.  Virtual time is integer microseconds.  At each instant, until
nothing more is due: timeline actions, then completions (cycle ends, bindings, terminations)
in the order they were scheduled, then the 1 s backoff flush and the 30 s leftover flush,
then, if no cycle is in flight, one Pop.  A cycle is evaluated in full when it starts (its
snapshot is the cluster at that instant); its outcome is applied when it ends
``schedulingCycleDuration`` later: binding starts, or the pod goes back to a queue and the
cycle's API writes (victim deletions, nominations) take effect.
"""
from __future__ import annotations

import copy
import heapq
from itertools import compress

import numpy as np

from .cache import Cache
from .framework.cycle_state import CycleState
from .framework.interface import (Code, MODE_NOOP, MODE_OVERRIDE, NominatingInfo, Status)
from .framework import interface as fw
from .framework.runtime import Framework
from .framework.types import Diagnosis, FitError
from .labels import find_untolerated_taint
from .objects import CustomObject, system_priority_classes
from .scenario import SYSTEM_CLASS_NAMES, uses_volumes
from .quantity import US
from .resourcefit import ResourceFilter
from .queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS, PriorityQueue
from .queue.scheduling_queue import ProfileQueueInfo
from .trace import ScoreTable, Trace
from .volumes import AssumeCache

PHASE_ACTION, PHASE_COMPLETION, PHASE_FLUSH_BACKOFF, PHASE_FLUSH_LEFTOVER = 1, 2, 3, 4
BACKOFF_FLUSH_PERIOD = 1 * US
LEFTOVER_FLUSH_PERIOD = 30 * US
NO_NODES_MESSAGE = "no nodes available to schedule pods"
# Filter screens the nodes through the node table (Engine._filter_screened) from this many
# nodes on: always; tests set it out of reach to run the per-node loop for comparison
SCREEN_MIN_NODES = 1


class CycleOutcome:
    """What a scheduling cycle decided, applied when the cycle ends."""
    __slots__ = ("pinfo", "fwk", "state", "cycle", "status", "host", "nominating_info",
                 "diagnosis", "writes", "end", "skipped", "waiting")

    def __init__(self, pinfo, fwk, state, cycle):
        self.pinfo = pinfo
        self.fwk = fwk
        self.state = state
        self.cycle = cycle
        self.status = None
        self.host = None
        self.nominating_info = None
        self.diagnosis = None
        self.writes = []
        self.end = 0
        self.skipped = False
        self.waiting = None      # the WaitingPod while the binding cycle waits on Permit


class FeasibleNodes(list):
    """The Filter loop's feasible NodeInfos, with where they are in the snapshot's node table
    (``table``, ``rows``: an index array), so Score reads the table without looking them up."""
    __slots__ = ("table", "rows")


class Engine:
    """A deterministic, steppable kube-scheduler v1.28 over a Scenario.

    ``step()`` advances by one unit of work (one action, one completion, one flush or one
    Pop and its cycle evaluation); ``run(until)`` steps until everything due at or before
    ``until`` has happened.  Observe it through ``trace`` sinks and ``state()``.
    """

    def __init__(self, scenario, trace: Trace | None = None):
        from .plugins import registry  # noqa: F401  (in-tree plugins)
        self.scenario = scenario
        self.now = 0
        self.trace = trace if trace is not None else Trace(enabled=False)
        self.trace._clock = self._trace_clock
        sim = scenario.simulation
        cfg = scenario.scheduler
        self.bind_duration = sim.bind_duration
        self.cycle_duration = sim.scheduling_cycle_duration
        self.queueing_hints = bool(sim.feature_gates.get("SchedulerQueueingHints", False))
        # the API objects
        self.pods: dict = {}
        self.nodes: dict = {}
        # The API server's bootstrap classes exist in every cluster (a scenario may declare
        # them too, with the same values).
        self.priority_classes: dict = {pc.name: pc for pc in system_priority_classes()}
        self.pdbs: dict = {}
        # custom resources: "apiVersion/kind" -> {namespace/name: CustomObject}
        self.custom_objects: dict = {}
        self.has_custom_objects = any(isinstance(o, CustomObject) for _k, o in scenario.objects) or any(
            isinstance(a.obj, CustomObject) or a.api_version for a in scenario.actions)
        # volumes (engine.volumes): API objects by name (claims by namespace/name), and the
        # VolumeBinding binder's assume caches over the PVs and claims
        self.pvs: dict = {}
        self.pvcs: dict = {}
        self.storage_classes: dict = {}
        self.csi_nodes: dict = {}
        self.pv_cache = AssumeCache(self.pvs)
        self.pvc_cache = AssumeCache(self.pvcs)
        self.deleted_pods: dict = {}
        self._rv = 0
        self._uid = 0
        self.cache = Cache()
        self.frameworks: dict = {}
        for prof in cfg.profiles:
            self.frameworks[prof.scheduler_name] = Framework(
                prof, trace=self.trace, pdb_lister=self._pdb_list, snapshot_fn=self.cache.snapshot,
                global_percentage=cfg.percentage_of_nodes_to_score)
        for f in self.frameworks.values():
            f.host = self
        first = next(iter(self.frameworks.values()))
        qs = first.queue_sort
        for f in self.frameworks.values():
            if f.queue_sort.name != qs.name:
                from .errors import ConfigError
                raise ConfigError([f"scheduler.profiles: every profile must use the same queue sort plugin "
                                   f"({first.profile_name!r} uses {qs.name}, {f.profile_name!r} uses {f.queue_sort.name})"])
        less = None if qs.name == "PrioritySort" else qs.less
        profiles = {}
        for name, f in self.frameworks.items():
            profiles[name] = ProfileQueueInfo(f.pre_enqueue_plugins, f.hint_map(), f.run_pre_enqueue_plugin)
        self.queue = PriorityQueue(
            clock=lambda: self.now, trace=self.trace, profiles=profiles, less=less,
            pod_initial_backoff=cfg.pod_initial_backoff, pod_max_backoff=cfg.pod_max_backoff,
            pod_max_in_unschedulable_pods_duration=sim.pod_max_in_unschedulable_pods_duration,
            queueing_hints=self.queueing_hints, pod_lister=self.pods.get)
        for f in self.frameworks.values():
            f.nominator = self.queue.nominator
        # The GVKs of other API groups that enabled plugins register for, with the actions
        # registered (addAllEventHandlers' gvkMap: only these get event handlers).
        self.custom_gvk_actions: dict = {}
        for f in self.frameworks.values():
            for _name, events in f.enqueue_extensions():
                for ev, _fn in events:
                    if ev.resource.count(".") >= 2:
                        self.custom_gvk_actions[ev.resource] = self.custom_gvk_actions.get(ev.resource, 0) | int(ev.action_type)
        self.pinfos: dict = {}           # key -> the latest QueuedPodInfo of the pod
        self.cycle_in_flight: CycleOutcome | None = None
        self.binding: dict = {}          # key -> (outcome, node)
        self.terminating: dict = {}      # key -> end time
        self._events: list = []          # heap of (time, phase, seq, kind, payload)
        self._seq = 0
        self._pending_actions = 0
        self._pending_completions = 0
        self.metrics = {"schedule_attempts_total": {}, "preemption_attempts_total": 0,
                        "preemption_victims": [], "pod_scheduling_attempts": []}
        self._cycle_writes = None
        self._taking_signal_now = None   # a waiting pod whose rejection is handled in this step
        self._loaded = False
        self.idle_reached = False

    def plugin_errors(self) -> list:
        """Every failed call of an out-of-tree plugin so far (``framework.guard``), in order:
        ``(PluginCallError, pod key or None, scheduling cycle)``."""
        out = []
        for f in self.frameworks.values():
            out.extend(f.plugin_errors)
        return out

    # ================================================================== time and events

    def _push(self, at, phase, kind, payload=None):
        self._seq += 1
        heapq.heappush(self._events, (at, phase, self._seq, kind, payload))
        if phase == PHASE_ACTION:
            self._pending_actions += 1
        elif phase == PHASE_COMPLETION:
            self._pending_completions += 1

    def _load(self):
        """Objects at t=0: priority classes, PDBs, nodes, bound pods, then pending pods."""
        self._loaded = True
        objs = self.scenario.objects
        for kind, o in objs:
            if kind == "PriorityClass":
                self.priority_classes[o.name] = o
        for kind, o in objs:
            if kind == "PodDisruptionBudget":
                self.pdbs[o.key] = o
            elif kind in _VOLUME_STORES:
                self._volume_store(kind)[_volume_key(o)] = self._stamp_volume(kind, o)
        for kind, o in objs:
            if isinstance(o, CustomObject):
                o.resource_version = self._next_rv()
                self.custom_objects.setdefault(o.type_key, {})[o.key] = o
        for kind, o in objs:
            if kind == "Node":
                self._node_add(o)
        for kind, o in objs:
            if kind == "Pod" and o.node_name:
                self._pod_create(o)
        restore = self.scenario.queue_state   # exported queue state (scenario ``queue``), if any
        for kind, o in objs:
            if kind == "Pod" and not o.node_name:
                self._pod_create(o, restore=restore.get(o.key) if restore else None)
        for a in self.scenario.actions:
            self._push(a.at, PHASE_ACTION, "action", a)
        # the flushes run at t = 0, period, 2*period ... unless an exported queue says where
        # in their period the run was (scenario ``queue.nextFlush...``)
        flush_at = getattr(self.scenario, "flush_at", None) or {}
        self._push(flush_at.get("backoff", 0), PHASE_FLUSH_BACKOFF, "flushBackoffQCompleted")
        self._push(flush_at.get("leftover", 0), PHASE_FLUSH_LEFTOVER, "flushUnschedulablePodsLeftover")

    def is_idle(self) -> bool:
        """No action left, no completion pending, activeQ and backoffQ empty."""
        return (self._pending_actions == 0 and self._pending_completions == 0 and
                self.cycle_in_flight is None and len(self.queue.active_q) == 0 and
                len(self.queue.pod_backoff_q) == 0)

    def _drop_stopped_timers(self):
        """Stopped Permit timers stay in the heap until they reach its top; drop them there."""
        ev = self._events
        while ev and ev[0][3] == "permitTimeout" and ev[0][4].stopped:
            heapq.heappop(ev)

    def next_time(self):
        """The time of the next unit of work, or None when idle."""
        if not self._loaded:
            return 0
        self._drop_stopped_timers()
        if self.cycle_in_flight is None and len(self.queue.active_q):
            if not self._events or self._events[0][0] > self.now:
                return self.now
        if self.is_idle():
            return None
        return self._events[0][0] if self._events else None

    def _trace_clock(self) -> int:
        """The trace's clock (a method, so a checkpoint's copy reads its own engine's)."""
        return self.now

    def step(self, until: int | None = None) -> bool:
        """Do one unit of work at or before ``until``.  Returns False if there was none.
        Every trace event of the unit has reached the sinks when it returns."""
        did = self._step(until)
        if self.trace._pending is not None:
            self.trace.flush()
        return did

    def _step(self, until):
        if not self._loaded:
            self._load()
            return True
        self._drop_stopped_timers()
        ev = self._events
        if ev and ev[0][0] <= self.now:
            self._dispatch(heapq.heappop(ev))
            return True
        if self.cycle_in_flight is None and len(self.queue.active_q):
            self._schedule_one()
            return True
        if not ev or (until is None and self.is_idle()):
            return False
        t = ev[0][0]
        if until is not None and t > until:
            return False
        self.now = t
        self._dispatch(heapq.heappop(ev))
        return True

    def run(self, until: int | None = None) -> None:
        """Run until everything due at times <= ``until`` happened (or until idle)."""
        while self.step(until):
            pass
        if until is not None and until > self.now:
            self.now = until
        if until is None:
            self.idle_reached = True

    def _dispatch(self, item):
        at, phase, _seq, kind, payload = item
        if phase == PHASE_ACTION:
            self._pending_actions -= 1
            self._apply_action(payload)
        elif phase == PHASE_COMPLETION:
            if kind == "permitTimeout":
                if not payload.stopped:          # a stopped timer was uncounted when it stopped
                    self._pending_completions -= 1
                    payload.stopped = True
                    payload.waiting_pod._timeout(payload)
                return
            self._pending_completions -= 1
            if kind == "cycleEnd":
                self._finish_cycle(payload)
            elif kind == "bind":
                self._finish_binding(payload)
            elif kind == "termination":
                self._finish_termination(payload)
            elif kind == "permitDone":
                self._wait_on_permit_returned(payload)
        elif kind == "flushBackoffQCompleted":
            self.queue.flush_backoff_q_completed()
            self._push(at + BACKOFF_FLUSH_PERIOD, PHASE_FLUSH_BACKOFF, kind)
        elif kind == "flushUnschedulablePodsLeftover":
            self.queue.flush_unschedulable_pods_leftover()
            self._push(at + LEFTOVER_FLUSH_PERIOD, PHASE_FLUSH_LEFTOVER, kind)

    # ================================================================== API objects

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def get_pod(self, key):
        return self.pods.get(key)

    def list_pods(self, namespace=None) -> list:
        """The pods as the pod informer's lister sees them (every pod that exists, bound or
        not, terminating included), in key order; only ``namespace``'s if given."""
        return [p for _k, p in sorted(self.pods.items()) if namespace is None or p.namespace == namespace]

    def _resolve_priority(self, pod):
        """Priority admission: spec.priority, else the PriorityClass, else the global default."""
        pc = None
        if pod.priority_class_name:
            pc = self.priority_classes.get(pod.priority_class_name)
        else:
            for c in self.priority_classes.values():
                if c.global_default:
                    pc = c
                    break
        if pod.spec_priority is not None:
            pod.priority = pod.spec_priority
        elif pc is not None:
            pod.priority = pc.value
        if pod.preemption_policy is None and pc is not None:
            pod.preemption_policy = pc.preemption_policy

    def _responsible(self, pod) -> bool:
        return pod.scheduler_name in self.frameworks

    # ------------------------------------------------------------------ pods

    def _pod_create(self, pod, action=None, restore=None):
        if pod.key in self.pods:
            self._skip(action, f"pod {pod.key} already exists")
            return
        pod = pod.copy()
        self._resolve_priority(pod)
        pod.resource_version = self._next_rv()
        self._uid += 1
        pod.uid = f"uid-{self._uid}"
        self.deleted_pods.pop(pod.key, None)
        if pod.node_name:
            if pod.start_time is None:
                pod.start_time = self.now
            self.pods[pod.key] = pod
            self.cache.add_pod(pod)
            self.queue.assigned_pod_added(pod)
        else:
            self.pods[pod.key] = pod
            if self._responsible(pod):
                if restore is not None:
                    self.queue.restore(pod, **restore)
                else:
                    self.queue.add(pod)
                self._remember_pinfo(pod.key)

    def _remember_pinfo(self, key):
        pi = self.queue.get(key)
        if pi is not None:
            self.pinfos[key] = pi

    def _pod_update(self, new, action=None):
        old = self.pods.get(new.key)
        if old is None:
            self._skip(action, f"pod {new.key} does not exist")
            return
        new = new.copy(uid=old.uid, priority=old.priority, spec_priority=old.spec_priority,
                       preemption_policy=old.preemption_policy if new.preemption_policy is None else new.preemption_policy,
                       node_name=old.node_name, nominated_node_name=old.nominated_node_name,
                       start_time=old.start_time if new.start_time is None else new.start_time,
                       deletion_timestamp=old.deletion_timestamp, disruption_target=old.disruption_target,
                       resource_version=self._next_rv())
        self._replace_pod(old, new)

    def _replace_pod(self, old, new):
        """Store a new version of a pod and deliver the update as the informers would."""
        self.pods[new.key] = new
        if old.node_name:
            self.cache.update_pod(old, new)
            self.queue.assigned_pod_updated(old, new)
            return
        if self.cache.is_assumed_pod(new.key, new.uid):
            return  # updates of assumed pods are ignored (eventhandlers.go)
        if self._responsible(new):
            self.queue.update(old, new)
            self._remember_pinfo(new.key)

    def _pod_delete(self, key, action=None, reason="Deleted", preemptor=None):
        pod = self.pods.get(key)
        if pod is None:
            self._skip(action, f"pod {key} does not exist")
            return
        if pod.deletion_timestamp is not None:
            if reason == "Preempted" and not pod.disruption_target:
                # prepareCandidate marks every victim DisruptionTarget/PreemptionByScheduler and
                # deletes it, even one already terminating: it now terminates by preemption.
                self.trace.emit("PodDeleted", pod=key, reason=reason, preemptor=preemptor,
                                gracePeriodSeconds=pod.termination_grace_period,
                                message="already terminating; marked as terminating by preemption")
                self._replace_pod(pod, pod.copy(disruption_target=True, resource_version=self._next_rv()))
                return
            self._skip(action, f"pod {key} is already terminating")
            return
        self.trace.emit("PodDeleted", pod=key, reason=reason, preemptor=preemptor,
                        gracePeriodSeconds=pod.termination_grace_period if pod.node_name else 0)
        if not pod.node_name:
            self._remove_pod(pod, reason, preemptor)
            return
        new = pod.copy(deletion_timestamp=self.now, disruption_target=(reason == "Preempted"),
                       resource_version=self._next_rv())
        new._delete_reason = (reason, preemptor)
        self._replace_pod(pod, new)
        end = self.now + pod.termination_grace_period * US
        self.terminating[key] = end
        self._push(end, PHASE_COMPLETION, "termination", key)

    def _remove_pod(self, pod, reason, preemptor):
        """The pod object is gone from the API."""
        key = pod.key
        del self.pods[key]
        self.deleted_pods[key] = {"deletedAt": self.now / US, "reason": reason, "preemptor": preemptor}
        self.terminating.pop(key, None)
        if pod.node_name:
            self.cache.remove_pod(pod)
            self.queue.move_all_to_active_or_backoff_queue(fw.AssignedPodDelete, pod, None, None)
        else:
            self.queue.delete(pod)
            # deletePodFromSchedulingQueue: a pod waiting on Permit is rejected ("removed"), and
            # since it was assumed, its release is announced as an AssignedPodDelete
            fwk = self.frameworks.get(pod.scheduler_name)
            wp = fwk.get_waiting_pod(pod.uid) if fwk is not None else None
            if wp is not None:
                # Its binding cycle takes the rejection at once (upstream's goroutine races the
                # handler; here it goes first), so the pod leaves its node in this same step.
                self._taking_signal_now = wp
                try:
                    fwk.reject_waiting_pod(pod.uid)
                finally:
                    self._taking_signal_now = None
                if wp.signal is not None and wp.signal.code != Code.Success:
                    self._wait_on_permit_returned(wp)
                self.queue.move_all_to_active_or_backoff_queue(fw.AssignedPodDelete, pod, None, None)
        self.pinfos.pop(key, None)

    def _finish_termination(self, key):
        pod = self.pods.get(key)
        if pod is None or self.terminating.get(key) != self.now:
            return
        reason, preemptor = getattr(pod, "_delete_reason", ("Deleted", None))
        self.trace.emit("PodRemoved", pod=key, node=pod.node_name, reason=reason, preemptor=preemptor,
                        message=f"its grace period ended: the pod is gone and {pod.node_name} frees its resources")
        self._remove_pod(pod, reason, preemptor)

    # ------------------------------------------------------------------ nodes

    def _node_add(self, node, action=None):
        if node.name in self.nodes:
            self._skip(action, f"node {node.name} already exists")
            return
        self.nodes[node.name] = node
        ni = self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(fw.NodeAdd, None, node, self._pre_check_for_node(ni))

    def _node_update(self, new, action=None):
        old = self.nodes.get(new.name)
        if old is None:
            self._skip(action, f"node {new.name} does not exist")
            return
        self.nodes[new.name] = new
        ni = self.cache.update_node(old, new)
        event = node_scheduling_properties_change(new, old)
        if event is not None:
            self.queue.move_all_to_active_or_backoff_queue(event, old, new, self._pre_check_for_node(ni))

    def _node_delete(self, name, action=None):
        node = self.nodes.pop(name, None)
        if node is None:
            self._skip(action, f"node {name} does not exist")
            return
        self.cache.remove_node(node)
        # The pod garbage collector deletes the pods bound to a deleted node at once.
        for pod in [p for p in self.pods.values() if p.node_name == name]:
            self.trace.emit("PodDeleted", pod=pod.key, reason="Deleted", preemptor=None, gracePeriodSeconds=0,
                            message=f"its node {name} was deleted, so the pod garbage collector deletes it")
            self._remove_pod(pod, "Deleted", None)

    def _pre_check_for_node(self, node_info):
        """preCheckForNode: the pod would pass admission on the node (resources, node
        affinity/selector, nodeName, host ports) and tolerates its NoSchedule taints."""
        from .plugins.noderesources.fit import fits
        from .plugins.nodeaffinity import get_required_node_affinity, required_node_affinity_match
        node = node_info.node

        def check(pod):
            if fits(pod, node_info):
                return False
            if not required_node_affinity_match(get_required_node_affinity(pod), node):
                return False
            if pod.node_name and pod.node_name != node.name:
                return False
            for hp in pod.host_ports:
                if node_info.ports_conflict(hp.ip, hp.protocol, hp.port):
                    return False
            return find_untolerated_taint(node.taints, pod.tolerations, ("NoSchedule",)) is None
        return check

    # ------------------------------------------------------------------ actions

    def _skip(self, action, reason):
        if action is not None:
            self.trace.emit("ActionSkipped", action=action.verb, kind=action.kind,
                            name=(f"{action.namespace}/{action.name}" if action.namespace else action.name),
                            reason=reason, place=action.place)

    def _apply_action(self, a):
        verb, kind = a.verb, a.kind
        if isinstance(a.obj, CustomObject) or a.api_version:
            return self._custom_object_action(a)
        if self.trace.enabled:
            self.trace.emit("Action", action=verb, kind=kind,
                            name=(f"{a.namespace}/{a.name}" if a.namespace else a.name), place=a.place)
        if kind == "Pod":
            if verb == "create":
                self._pod_create(a.obj, a)
            elif verb == "update":
                self._pod_update(a.obj, a)
            else:
                self._pod_delete(f"{a.namespace}/{a.name}", a)
        elif kind == "Node":
            if verb == "create":
                self._node_add(a.obj, a)
            elif verb == "update":
                self._node_update(a.obj, a)
            else:
                self._node_delete(a.name, a)
        elif kind == "PriorityClass":
            if verb == "delete":
                if a.name in SYSTEM_CLASS_NAMES:
                    # pkg/registry/scheduling/priorityclass/storage: REST.Delete refuses.
                    self._skip(a, f"PriorityClass {a.name} is a system priority class and cannot be deleted")
                elif self.priority_classes.pop(a.name, None) is None:
                    self._skip(a, f"PriorityClass {a.name} does not exist")
            elif verb == "create" and a.name in self.priority_classes:
                self._skip(a, f"PriorityClass {a.name} already exists")
            elif verb == "update" and a.name not in self.priority_classes:
                self._skip(a, f"PriorityClass {a.name} does not exist")
            else:
                self.priority_classes[a.name] = a.obj
        elif kind == "PodDisruptionBudget":
            key = f"{a.namespace}/{a.name}"
            if verb == "delete":
                if self.pdbs.pop(key, None) is None:
                    self._skip(a, f"PodDisruptionBudget {key} does not exist")
            elif verb == "create" and key in self.pdbs:
                self._skip(a, f"PodDisruptionBudget {key} already exists")
            elif verb == "update" and key not in self.pdbs:
                self._skip(a, f"PodDisruptionBudget {key} does not exist")
            else:
                self.pdbs[key] = a.obj
        elif kind in _VOLUME_STORES:
            self._volume_action(a)

    def _custom_object_action(self, a):
        """Create, update or delete a custom resource; the dynamic informer's handler then
        moves pods if a plugin registered the object's GVK for that action
        (eventhandlers.go addAllEventHandlers, buildEvtResHandler)."""
        api = a.obj.api_version if a.obj is not None else a.api_version
        self.has_custom_objects = True     # an injected one shows the state's customObjects from now on
        type_key = f"{api}/{a.kind}"
        key = f"{a.namespace}/{a.name}"
        store = self.custom_objects.setdefault(type_key, {})
        old = store.get(key)

        def announce():
            # the object is stored before its Action event, so whoever looks at the engine
            # when the event is emitted (the page) sees the action carried out, as it says
            if self.trace.enabled:
                self.trace.emit("Action", action=a.verb, kind=a.kind, name=key, place=a.place)
        if (a.verb == "create") == (old is not None):
            announce()
        if a.verb == "create" and old is not None:
            return self._skip(a, f"{a.kind} {key} already exists")
        if a.verb != "create" and old is None:
            return self._skip(a, f"{a.kind} {key} does not exist")
        if a.verb == "delete":
            del store[key]
            new = None
            action, label = fw.ActionType.Delete, "Delete"
        else:
            new = CustomObject(a.obj.api_version, a.obj.kind, a.obj.namespace, a.obj.name, a.obj.manifest,
                               self._next_rv())
            store[key] = new
            action, label = (fw.ActionType.Add, "Add") if a.verb == "create" else (fw.ActionType.Update, "Update")
        announce()
        gvk = (new or old).gvk
        if self.custom_gvk_actions.get(gvk, 0) & int(action):
            resource = gvk.split(".", 1)[0]
            event = fw.ClusterEvent(gvk, action, f"{resource[:1].upper()}{resource[1:]}{label}")
            self.queue.move_all_to_active_or_backoff_queue(
                event, old.manifest if old is not None else None, new.manifest if new is not None else None, None)

    def get_object(self, api_version, kind, namespace, name):
        """The manifest of a custom resource (a copy), or None."""
        o = self.custom_objects.get(f"{api_version}/{kind}", {}).get(f"{namespace}/{name}")
        return copy.deepcopy(o.manifest) if o is not None else None

    def list_objects(self, api_version, kind, namespace=None) -> list:
        """The manifests (copies) of a custom resource's kind, in namespace/name order."""
        store = self.custom_objects.get(f"{api_version}/{kind}", {})
        return [copy.deepcopy(o.manifest) for k, o in sorted(store.items())
                if namespace is None or o.namespace == namespace]

    # ------------------------------------------------------------------ volumes

    def _volume_store(self, kind) -> dict:
        return getattr(self, _VOLUME_STORES[kind])

    def _stamp_volume(self, kind, o):
        """A new version of a volume object (a claim gets a uid the first time, as the API
        server gives it)."""
        if kind == "PersistentVolumeClaim" and not o.uid:
            # a UUID as the API server gives, derived from the claim and the resource version
            # (deterministic; a provisioned PV is named pvc-<uid>)
            import uuid
            o = o.copy(uid=str(uuid.uuid5(uuid.NAMESPACE_OID, f"{o.key}#{self._rv + 1}")))
        if kind in ("PersistentVolume", "PersistentVolumeClaim"):
            o = o.copy(resource_version=self._next_rv())
        return o

    def _volume_action(self, a):
        kind, verb = a.kind, a.verb
        store = self._volume_store(kind)
        key = f"{a.namespace}/{a.name}" if kind == "PersistentVolumeClaim" else a.name
        if verb == "delete":
            if store.pop(key, None) is None:
                self._skip(a, f"{kind} {key} does not exist")
            self._volume_cache_changed(kind, key)
            return        # no volume plugin registers a Delete event
        old = store.get(key)
        if verb == "create" and old is not None:
            self._skip(a, f"{kind} {key} already exists")
            return
        if verb == "update" and old is None:
            self._skip(a, f"{kind} {key} does not exist")
            return
        new = a.obj
        if kind == "PersistentVolumeClaim" and old is not None and not new.uid:
            new = new.copy(uid=old.uid)
        self.volume_write(kind, key, new, old)

    def _volume_cache_changed(self, kind, key):
        if kind == "PersistentVolume":
            self.pv_cache.on_api_change(key)
        elif kind == "PersistentVolumeClaim":
            self.pvc_cache.on_api_change(key)

    def volume_write(self, kind, key, new, old=None):
        """An API create/update of a volume object, from an action or from the binder's
        PreBind (and the controllers that answer it): store it, refresh the assume cache and
        send the cluster event its informer would (eventhandlers.go: PvAdd, PvUpdate, PvcAdd,
        PvcUpdate, StorageClassAdd (WaitForFirstConsumer classes only), StorageClassUpdate,
        CSINodeAdd, CSINodeUpdate), if some plugin registered for the resource."""
        new = self._stamp_volume(kind, new)
        self._volume_store(kind)[key] = new
        self._volume_cache_changed(kind, key)
        gvk, short = _VOLUME_EVENTS[kind]
        if old is None and kind == "StorageClass" and new.volume_binding_mode != "WaitForFirstConsumer":
            return
        if not self._gvk_registered(gvk):
            return
        action = fw.ActionType.Add if old is None else fw.ActionType.Update
        event = fw.ClusterEvent(gvk, action, f"{short}{'Add' if old is None else 'Update'}")
        self.queue.move_all_to_active_or_backoff_queue(event, old, new, None)

    def _gvk_registered(self, gvk) -> bool:
        for f in self.frameworks.values():
            for ev, _plugins in f.hint_map():
                if ev.resource == gvk:
                    return True
        return False

    def inject(self, action) -> None:
        """Apply an action now (events injected from the UI)."""
        if not self._loaded:
            self._load()
        action.at = self.now
        self._apply_action(action)
        self.trace.flush()

    # ------------------------------------------------------------------ PDBs

    def _pdb_list(self):
        """The PDBs with disruptionsAllowed as the disruption controller would compute it."""
        out = []
        for pdb in self.pdbs.values():
            if pdb.fixed_disruptions_allowed is not None:
                pdb.disruptions_allowed = pdb.fixed_disruptions_allowed
            else:
                pdb.disruptions_allowed = compute_disruptions_allowed(pdb, self.pods.values())
            out.append(pdb)
        return out

    # ================================================================== scheduleOne

    def _schedule_one(self):
        """scheduleOne: Pop, then evaluate the whole scheduling cycle at this instant."""
        pinfo = self.queue.pop()
        key = pinfo.pod.key
        self.pinfos[key] = pinfo
        pod = pinfo.pod
        fwk = self.frameworks[pod.scheduler_name]
        cycle = self.queue.scheduling_cycle
        out = CycleOutcome(pinfo, fwk, CycleState(), cycle)
        out.end = self.now + self.cycle_duration
        self.cycle_in_flight = out
        if pod.deletion_timestamp is not None or self.cache.is_assumed_pod(key, pod.uid):
            # skipPodSchedule returns at once (and v1.28 does not call Done here)
            out.skipped = True
            out.end = self.now
            self.trace.emit("CycleSkipped", pod=key, cycle=cycle,
                            reason="the pod is being deleted" if pod.deletion_timestamp is not None
                            else "the pod is already assumed on a node (a stale copy was queued)")
            self._push(out.end, PHASE_COMPLETION, "cycleEnd", out)
            return
        self.trace.emit("CycleStart", pod=key, cycle=cycle, attempts=pinfo.attempts,
                        priority=pod.priority, nominatedNode=pod.nominated_node_name or None)
        fwk.cycle = cycle
        fwk.set_snapshot(self.cache.snapshot())
        self._cycle_writes = out.writes
        try:
            self._scheduling_cycle(out)
        finally:
            self._cycle_writes = None
            fwk.set_snapshot(None)
        self._push(out.end, PHASE_COMPLETION, "cycleEnd", out)

    def _scheduling_cycle(self, out: CycleOutcome):
        fwk, state, pod = out.fwk, out.state, out.pinfo.pod
        snap = fwk.snapshot()
        if snap.num_nodes() == 0:
            out.status = Status(Code.UnschedulableAndUnresolvable, [NO_NODES_MESSAGE])
            out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
            out.diagnosis = Diagnosis()
            return
        feasible, diagnosis, err = self._find_nodes_that_fit_pod(fwk, state, pod, snap)
        if err is not None:
            out.status = err
            out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
            return
        if not feasible:
            fit = FitError(pod, snap.num_nodes(), diagnosis)
            out.diagnosis = diagnosis
            if not fwk.post_filter_plugins:
                out.status = Status(Code.Unschedulable, [fit.message()], err=fit)
                out.nominating_info = None
                return
            result, st = fwk.run_post_filter_plugins(state, pod, diagnosis.node_to_status_map)
            if st is not None and st.code == Code.Error:
                pass
            elif st is not None:
                diagnosis.post_filter_msg = st.message()
            out.status = Status(Code.Unschedulable, [fit.message()], err=fit)
            out.nominating_info = result.nominating_info if result is not None else None
            return
        if len(feasible) == 1:
            host = feasible[0].name
            if self.trace.enabled:
                self.trace.emit("HostSelected", pod=pod.key, cycle=out.cycle, node=host, scores=None,
                                ties=[host], reason="it is the only feasible node, so scoring is skipped")
        else:
            totals, st = self._prioritize_nodes(fwk, state, pod, feasible)
            if st is not None:
                out.status = st
                out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
                return
            host = self._select_host(pod, out.cycle, totals)
        out.host = host

    def _assume_reserve_permit(self, out: CycleOutcome):
        """The end of schedulingCycle: assume the pod on its node, then Reserve and Permit.

        Upstream does this after scoring, as the last steps of the cycle; the simulator does it
        when the cycle ends, so an update of the pod received during the cycle still reaches
        the queue (as a fresh copy), as it would upstream before the assume.
        """
        fwk, state, host = out.fwk, out.state, out.host
        pod = out.pinfo.pod          # the version popped, as upstream's DeepCopy of podInfo
        assumed = pod.copy(node_name=host)
        self.cache.assume_pod(assumed)
        self.queue.nominator.delete_nominated_pod_if_exists(pod)
        st = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if st is not None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            out.status = self._wrap_single_node_failure(pod, host, st)
            out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
            return
        st, waiting = fwk.run_permit_plugins(state, assumed, host)
        out.waiting = waiting
        if st is not None and st.code != Code.Wait:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            out.status = self._wrap_single_node_failure(pod, host, st)
            out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
            return
        out.status = None
        self._activate(state)

    def _activate(self, state):
        """Move the pods plugins put in PodsToActivate to activeQ (Activate)."""
        if state.pods_to_activate:
            pods = [self.pods[k] for k in list(state.pods_to_activate) if k in self.pods]
            state.pods_to_activate.clear()
            self.queue.activate(pods)

    def _wrap_single_node_failure(self, pod, host, st):
        if st.is_unschedulable():
            d = Diagnosis({host: st}, {st.failed_plugin} if st.failed_plugin else set())
            fit = FitError(pod, 1, d)
            out = Status(st.code, [fit.message()], st.failed_plugin, err=fit)
            return out
        return st

    def _find_nodes_that_fit_pod(self, fwk, state, pod, snap):
        """findNodesThatFitPod: PreFilter; the nominated node first; then Filter from
        nextStartNodeIndex until enough feasible nodes are found."""
        diagnosis = Diagnosis()
        all_nodes = snap.node_info_list
        pre_res, s = fwk.run_pre_filter_plugins(state, pod)
        if s is not None:
            if not s.is_unschedulable():
                return None, diagnosis, s
            for ni in all_nodes:
                diagnosis.node_to_status_map[ni.name] = s
            diagnosis.pre_filter_msg = s.message()
            if s.failed_plugin:
                diagnosis.unschedulable_plugins.add(s.failed_plugin)
            return [], diagnosis, None
        if pod.nominated_node_name:
            try:
                ni = snap.get(pod.nominated_node_name)
            except KeyError:
                ni = None
            if ni is not None:
                feasible, err = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, [ni], nominated=True)
                if feasible:
                    if self.trace.enabled:
                        self.trace.emit("NominatedNodeEvaluated", pod=pod.key, cycle=fwk.cycle, node=ni.name, fits=True,
                                        message=f"its nominated node {ni.name} is tried first and passes every filter, "
                                                f"so it is chosen without looking at other nodes")
                    return feasible, diagnosis, None
                if self.trace.enabled:
                    st = diagnosis.node_to_status_map.get(ni.name)
                    self.trace.emit("NominatedNodeEvaluated", pod=pod.key, cycle=fwk.cycle, node=ni.name, fits=False,
                                    message=f"its nominated node {ni.name} is tried first but fails "
                                            f"({st.failed_plugin + ': ' if st and st.failed_plugin else ''}"
                                            f"{st.message() if st else 'error'}); every node is evaluated")
        nodes = all_nodes
        if pre_res is not None and not pre_res.all_nodes():
            nodes = [ni for ni in all_nodes if ni.name in pre_res.node_names]
        feasible, err = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        processed = len(feasible) + len(diagnosis.node_to_status_map)
        if nodes:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(nodes)
        if err is not None:
            return None, diagnosis, err
        return feasible, diagnosis, None

    next_start_node_index = 0

    def _find_nodes_that_pass_filters(self, fwk, state, pod, diagnosis, nodes, nominated=False):
        out = self._filter_nodes(fwk, state, pod, diagnosis, nodes, nominated)
        # the Filter results reach the trace's sinks now, while the engine is as it was when
        # the plugins ran (a sink may read the engine's state at each event)
        self.trace.flush()
        return out

    def _filter_nodes(self, fwk, state, pod, diagnosis, nodes, nominated):
        n = len(nodes)
        if n == 0:
            return [], None
        to_find = fwk.num_feasible_nodes_to_find(n)
        # nextStartNodeIndex was reduced modulo the previous cycle's node count: after nodes
        # are deleted it may be n or more (the loop below reads it modulo n, as upstream does)
        start = 0 if nominated else self.next_start_node_index % n
        if not fwk.filter_plugins:
            return [nodes[(start + i) % n] for i in range(to_find)], None
        feasible = []
        statuses = diagnosis.node_to_status_map
        plugins = diagnosis.unschedulable_plugins
        run = fwk.run_filter_plugins_with_nominated_pods
        # a node without nominated pods is filtered once, without them (addNominatedPods adds
        # nothing): its plugins are called directly (Framework.node_filter)
        check = fwk.node_filter(state, pod)
        nominated_pods = fwk.nominator.nominated_pods if check is not None and fwk.nominator is not None else {}
        if check is not None and n >= SCREEN_MIN_NODES:
            snap = fwk.snapshot()
            if snap is not None and nodes is snap.node_info_list:
                table = snap.node_table()
                if table is not None:
                    rf = ResourceFilter.for_cycle(fwk, state, pod, table) if not self.trace.enabled else None
                    if rf is not None:
                        fail = rf.filter_failures()
                        if rf.node_only is None:
                            return self._filter_on_table(diagnosis, nodes, table, rf, fail, to_find, start)
                        rows = np.flatnonzero(fail & ~rf.node_only)
                        codes = dict(zip(rows.tolist(), rf.filter_codes(rows).tolist()))
                        return self._filter_screened(fwk, state, pod, diagnosis, nodes, table,
                                                     fail | rf.node_only, to_find, start, check,
                                                     run, nominated_pods, (rf, codes))
                    suspects = fwk.filter_suspects(state, pod, table)
                    if suspects is not False:
                        return self._filter_screened(fwk, state, pod, diagnosis, nodes, table, suspects,
                                                     to_find, start, check, run, nominated_pods)
        # findNodesThatPassFilters (v1.28) with one worker: the search goes on after the
        # numFeasibleNodesToFind-th feasible node; the next node that passes overflows the count,
        # cancels the search and is not kept. The failed nodes examined meanwhile are recorded
        # (and counted by nextStartNodeIndex), as upstream's checkNode does.
        for i in range(n):
            ni = nodes[(start + i) % n]
            if check is not None and not nominated_pods.get(ni.name):
                status = check(ni)
            else:
                status = run(state, pod, ni)
            if status is None or status.code == Code.Success:
                if len(feasible) >= to_find:
                    if self.trace.enabled:
                        self.trace.emit("FilterStopped", pod=pod.key, cycle=fwk.cycle, evaluated=i + 1, nodes=n,
                                        feasible=len(feasible),
                                        message=f"found {to_find} feasible nodes (numFeasibleNodesToFind for {n} "
                                                f"nodes); the next node that passed, {ni.name}, stopped the search "
                                                f"and is not kept, so the remaining {n - i - 1} are not evaluated")
                    break
                feasible.append(ni)
                continue
            if status.code == Code.Error:
                return feasible, status
            statuses[ni.name] = status
            plugins.add(status.failed_plugin)
        return feasible, None

    def _filter_screened(self, fwk, state, pod, diagnosis, nodes, table, suspects, to_find, start,
                         check, run, nominated_pods, rf=None):
        """``_filter_nodes``' loop with the nodes no Filter plugin can reject counted feasible
        without calling the plugins (Framework.filter_suspects): the same nodes are visited in
        the same order, the same suspects evaluated, the same statuses recorded and the search
        stops at the same node. Nodes with nominated pods are evaluated with them, as before.

        With ``rf`` (an engine.resourcefit.ResourceFilter and the filter_codes of the rows
        that fail, by row; the trace off) ``suspects`` are the nodes that fail and those a
        node-only plugin might reject: the former's statuses come from the codes, the latter
        are evaluated by the plugins."""
        n = len(nodes)
        positions = np.flatnonzero(suspects) if suspects is not None else None
        if positions is not None and len(positions):
            if start:
                positions = (positions - start) % n
                positions.sort()
            positions = positions.tolist()
        else:
            positions = []
        if nominated_pods and rf is None:
            row = table.row
            extra = [(row[name] - start) % n for name, pods in nominated_pods.items() if pods and name in row]
            if extra:
                positions = sorted(set(positions).union(extra))
        order = nodes[start:] + nodes[:start] if start else nodes
        tr = self.trace.enabled
        if tr:
            skip = state.skip_filter_plugins
            names = [pl.name for pl in fwk.filter_plugins if not (skip and pl.name in skip)]

            def passed(lo, hi):       # the rows of nodes lo..hi-1 (positions), every plugin Success
                fwk.add_passed_filter_rows(pod, names, [ni.name for ni in order[lo:hi]])
        statuses = diagnosis.node_to_status_map
        plugins = diagnosis.unschedulable_plugins
        failed = []
        count = 0           # feasible nodes so far
        prev = 0            # the first position not yet accounted for
        stop = None         # the position of the passing node that overflowed to_find
        err = None
        end = n
        for j in positions:
            gap = j - prev
            if count + gap > to_find:
                stop = prev + (to_find - count)
                if tr:
                    passed(prev, stop + 1)
                break
            if tr and gap:
                passed(prev, j)
            count += gap
            r = (start + j) % n
            ni = nodes[r]
            if rf is not None and not rf[0].node_only[r]:
                code = rf[1].get(r)
                status = rf[0].statuses((code,))[0] if code else None
            else:
                status = run(state, pod, ni) if nominated_pods.get(ni.name) else check(ni)
            if status is None or status.code == Code.Success:
                if count >= to_find:
                    stop = j
                    break
                count += 1
            elif status.code == Code.Error:
                err = status
                end = j
                break
            else:
                statuses[ni.name] = status
                plugins.add(status.failed_plugin)
                failed.append(j)
            prev = j + 1
        else:
            gap = n - prev
            if count + gap > to_find:
                stop = prev + (to_find - count)
            if tr:
                passed(prev, n if stop is None else stop + 1)
        if stop is not None:
            end = stop
            if tr:
                name = nodes[(start + stop) % n].name
                self.trace.emit("FilterStopped", pod=pod.key, cycle=fwk.cycle, evaluated=stop + 1, nodes=n,
                                feasible=to_find,
                                message=f"found {to_find} feasible nodes (numFeasibleNodesToFind for {n} "
                                        f"nodes); the next node that passed, {name}, stopped the search "
                                        f"and is not kept, so the remaining {n - stop - 1} are not evaluated")
        return self._feasible(nodes, table, start, end, failed), err

    @staticmethod
    def _feasible(nodes, table, start, end, failed):
        """The nodes at positions 0..end-1 from ``start`` but ``failed`` (positions, ascending),
        as a FeasibleNodes that knows their rows in the node table."""
        n = len(nodes)
        order = nodes[start:] + nodes[:start] if start else nodes
        if not len(failed):
            feasible = FeasibleNodes(order[:end])
            positions = np.arange(start, start + end)
        else:
            feasible = FeasibleNodes()
            lo = 0
            for f in failed:
                feasible.extend(order[lo:f])
                lo = f + 1
            feasible.extend(order[lo:end])
            positions = np.delete(np.arange(start, start + end), failed)
        # where each feasible node is in the node table, for Score (resource_allocation._table_rows)
        feasible.table = table
        feasible.rows = positions % n if start else positions
        return feasible

    def _filter_on_table(self, diagnosis, nodes, table, rf, fail, to_find, start):
        """``_filter_nodes``' loop when every node's Filter outcome is known from the table
        (``fail``: engine.resourcefit.ResourceFilter.filter_failures; no node-only plugin
        might reject a node; the trace off): the nodes from ``start`` are visited until the
        passing node that overflows numFeasibleNodesToFind, and the failed ones among them get
        Fit's statuses, in visiting order."""
        n = len(nodes)
        failed = np.flatnonzero(fail)            # rows
        if start:
            failed = (failed - start) % n        # positions from start
            failed.sort()
        # the passing node that stops the search is at position to_find + j, j being the
        # number of failed nodes before it: those with at most to_find passing nodes before them
        j = int(np.searchsorted(failed - np.arange(len(failed)), to_find, side="right"))
        end = min(to_find + j, n)
        failed = failed[:j]
        if j:
            rows = (failed + start) % n if start else failed
            diagnosis.node_to_status_map.update(
                zip([nodes[r].name for r in rows.tolist()], rf.statuses(rf.filter_codes(rows).tolist())))
            diagnosis.unschedulable_plugins.add(rf.fit_name)
        return self._feasible(nodes, table, start, end, failed.tolist()), None

    def _prioritize_nodes(self, fwk, state, pod, feasible):
        if not fwk.score_plugins:
            return [(ni.name, 1, {}) for ni in feasible], None
        if feasible.__class__ is FeasibleNodes and fwk.out_of_tree_scoring():
            feasible.table = None       # such a plugin may reorder the list it is given
        st = fwk.run_pre_score_plugins(state, pod, feasible)
        if st is not None:
            return None, st
        return fwk.run_score_plugins(state, pod, feasible)

    def _select_host(self, pod, cycle, totals):
        """selectHost: the highest total; among ties, the first in evaluation order
        (upstream samples the tie set at random; SPEC §4)."""
        tot = getattr(totals, "totals", None)
        if tot is not None:
            names = totals.names
            best = max(tot)
            if not self.trace.enabled:
                return names[tot.index(best)]
            ties = list(compress(names, map(best.__eq__, tot)))
        else:
            best = max(t for _, t, _ in totals)
            ties = [n for n, t, _ in totals if t == best]
        host = ties[0]
        if self.trace.enabled:
            reason = (f"highest total score {best}" + (
                f"; {len(ties)} nodes tie, and the simulator takes the first in evaluation order "
                f"(upstream picks one of them at random)" if len(ties) > 1 else ""))
            table = getattr(totals, "table", None)
            if table is not None:
                # built from the Score/NormalizeScore columns only when read (trace.ScoreTable)
                names, plugins = table
                self.trace.emit_deferred("HostSelected", pod=pod.key, cycle=cycle, node=host,
                                         scores=ScoreTable("scores", names, plugins),
                                         detail=ScoreTable("detail", names, plugins),
                                         ties=ties, reason=reason)
            else:
                self.trace.emit("HostSelected", pod=pod.key, cycle=cycle, node=host,
                                scores={n: t for n, t, _ in totals},
                                detail={n: d for n, _t, d in totals},
                                ties=ties, reason=reason)
        return host

    # ------------------------------------------------------------------ cycle end

    def _finish_cycle(self, out: CycleOutcome):
        self.cycle_in_flight = None
        if out.skipped:
            return
        pod = out.pinfo.pod
        if out.status is None:
            fwk = out.fwk
            fwk.cycle = out.cycle
            self._assume_reserve_permit(out)
        if out.status is None:
            self.trace.emit("CycleEnd", pod=pod.key, cycle=out.cycle, result="Scheduled", node=out.host,
                            nominatedNode=None)
            self._start_binding(out)
            return
        result = "Error" if out.status.code == Code.Error else "Unschedulable"
        nom = None
        if out.nominating_info is not None and out.nominating_info.mode == MODE_OVERRIDE:
            nom = out.nominating_info.nominated_node_name or None
        self.trace.emit("CycleEnd", pod=pod.key, cycle=out.cycle, result=result, node=None, nominatedNode=nom,
                        message=out.status.message(),
                        unschedulablePlugins=sorted(out.diagnosis.unschedulable_plugins) if out.diagnosis else [])
        self._count_attempt(out.fwk, "error" if result == "Error" else "unschedulable")
        self._handle_scheduling_failure(out.fwk, out.pinfo, out.status, out.nominating_info, out.diagnosis)
        for w in out.writes:
            w()

    def _count_attempt(self, fwk, result):
        m = self.metrics["schedule_attempts_total"]
        k = f"{result}/{fwk.profile_name}"
        m[k] = m.get(k, 0) + 1

    def _handle_scheduling_failure(self, fwk, pinfo, status, nominating_info, diagnosis):
        """handleSchedulingFailure: record the rejecting plugins, requeue the latest version of
        the pod, record the nomination, and patch nominatedNodeName if it changes."""
        if isinstance(status.err, FitError):
            pinfo.unschedulable_plugins = set(p for p in status.err.diagnosis.unschedulable_plugins if p)
        key = pinfo.pod.key
        cached = self.pods.get(key)
        if cached is None:
            self.trace.emit("QueueTransition", pod=key, **{"from": None, "to": None}, event=fw.ScheduleAttemptFailure,
                            message="the pod no longer exists, so it is not requeued")
            self.queue.done(key)
        elif cached.node_name:
            self.queue.done(key)
        else:
            pinfo.pod = cached
            self.queue.add_unschedulable_if_not_present(pinfo, self.queue.scheduling_cycle)
        pod = cached or pinfo.pod
        self.queue.nominator.add_nominated_pod(pod, nominating_info)
        if cached is not None and nominating_info is not None and nominating_info.mode == MODE_OVERRIDE \
                and nominating_info.nominated_node_name != cached.nominated_node_name:
            self._set_nominated_node_name(cached, nominating_info.nominated_node_name)

    def _set_nominated_node_name(self, pod, node_name):
        """A status patch of nominatedNodeName (an unassigned-pod update event)."""
        current = self.pods.get(pod.key)
        if current is None or current.node_name or current.nominated_node_name == node_name:
            return
        new = current.copy(nominated_node_name=node_name, resource_version=self._next_rv())
        self.trace.emit("Nomination", pod=pod.key, node=node_name or None)
        self._replace_pod(current, new)

    # ------------------------------------------------------------------ preemption's writes (handle API)

    def delete_victim(self, victim, preemptor, plugin_name="DefaultPreemption"):
        """Queued by prepareCandidate; runs when the cycle ends.  A victim waiting on Permit is
        rejected ("preempted", by ``plugin_name``) instead of deleted, as prepareCandidate does."""
        def write():
            fwk = self.frameworks.get(victim.scheduler_name)
            wp = fwk.get_waiting_pod(victim.uid) if fwk is not None else None
            if wp is not None:
                wp.reject(plugin_name, "preempted")
            else:
                self._pod_delete(victim.key, None, "Preempted", preemptor.key)
            self.metrics["preemption_victims"].append(victim.key)
        self._cycle_writes.append(write)

    def clear_nominated_node_name(self, pods, reason=""):
        def write():
            for p in pods:
                self._set_nominated_node_name(p, "")
        self._cycle_writes.append(write)

    # ------------------------------------------------------------------ binding

    def _start_binding(self, out):
        """The binding cycle starts; a pod that Permit parked first waits on permit."""
        key = out.pinfo.pod.key
        self.binding[key] = out
        if out.waiting is None:
            self._push(self.now + self.bind_duration, PHASE_COMPLETION, "bind", out)

    # -- WaitOnPermit (framework/runtime/framework.go) in virtual time; see framework/waiting_pods.py

    def start_permit_timers(self, wp):
        """newWaitingPod: one timer per plugin that asked to wait, fired at its deadline."""
        for timer in wp.pending_plugins.values():
            self._push(timer.deadline, PHASE_COMPLETION, "permitTimeout", timer)

    def stop_permit_timer(self, timer):
        """timer.Stop(): the completion stays in the heap but no longer counts."""
        self._pending_completions -= 1

    def permit_signalled(self, wp):
        """The first Allow-all, Reject or timeout reached the pod's channel: its binding cycle,
        blocked in WaitOnPermit, wakes at this instant (a completion due now)."""
        if self._taking_signal_now is wp:
            return
        self._push(self.now, PHASE_COMPLETION, "permitDone", wp)

    def _wait_on_permit_returned(self, wp):
        """WaitOnPermit returns (the pod leaves the waiting-pods map); bindingCycle goes on
        with PreBind and Bind (``bindDuration`` later), or, rejected, fails with a FitError on
        the one node and ``handleBindingCycleError``."""
        fwk = wp._fwk
        fwk.waiting_pods.remove(wp.pod.uid)
        key = wp.pod.key
        out = self.binding.get(key)
        if out is None or out.waiting is not wp:
            return      # cannot happen: a waiting pod's binding cycle is in flight
        status = wp.signal
        if status.code == Code.Success:
            self._push(self.now + self.bind_duration, PHASE_COMPLETION, "bind", out)
            return
        del self.binding[key]
        fwk.cycle = out.cycle
        self.trace.emit("BindFailed", pod=key, node=out.host, reasons=list(status.reasons))
        if status.is_unschedulable():
            status = self._wrap_single_node_failure(out.pinfo.pod, out.host, status)
        self._handle_binding_cycle_error(out, status)

    def _finish_binding(self, out):
        """bindingCycle: PreBind, Bind; then the bind is observed (pod assigned)."""
        fwk, state, pinfo, host = out.fwk, out.state, out.pinfo, out.host
        key = pinfo.pod.key
        if self.binding.get(key) is out:
            # only this binding's entry: a re-created pod of the same name may have its own
            # binding in flight (docs/examples/recreate.yaml), which stays "Binding"
            del self.binding[key]
        fwk.cycle = out.cycle
        assumed = self.cache.get_pod(key)
        if assumed is None or assumed.uid != pinfo.pod.uid:
            assumed = pinfo.pod.copy(node_name=host)
        st = fwk.run_pre_bind_plugins(state, assumed, host)
        if st is None:
            st = fwk.run_bind_plugins(state, assumed, host)
            if st is not None and st.code == Code.Success:
                st = None
        current = self.pods.get(key)
        if st is None:
            if current is None or current.uid != pinfo.pod.uid:
                st = Status(Code.Error, [f'pods "{pinfo.pod.name}" not found'])
            elif host not in self.nodes:
                st = Status(Code.Error, [f'nodes "{host}" not found'])
        if st is not None:
            self.trace.emit("BindFailed", pod=key, node=host, reasons=list(st.reasons))
            self._handle_binding_cycle_error(out, st)
            return
        bound = current.copy(node_name=host, resource_version=self._next_rv(),
                             start_time=current.start_time if current.start_time is not None else self.now)
        self.pods[key] = bound
        self.trace.emit("Bound", pod=key, node=host)
        self._count_attempt(fwk, "scheduled")
        self.metrics["pod_scheduling_attempts"].append(pinfo.attempts)
        # informers: the unassigned handler sees a delete, the assigned one an add
        self.queue.delete(current)
        self.cache.add_pod(bound)
        self.queue.assigned_pod_added(bound)
        fwk.run_post_bind_plugins(state, bound, host)
        self._activate(state)
        self.queue.done(key)

    def _handle_binding_cycle_error(self, out, status):
        fwk, pinfo = out.fwk, out.pinfo
        assumed = self.cache.get_pod(pinfo.pod.key)
        if assumed is not None and assumed.uid != pinfo.pod.uid:
            assumed = None  # the cache now holds a newer pod of the same name
        fwk.run_reserve_plugins_unreserve(out.state, assumed or pinfo.pod, out.host)
        deferred = None
        if assumed is not None and self.cache.is_assumed_pod(pinfo.pod.key, pinfo.pod.uid):
            self.cache.forget_pod(assumed)
            if status.is_unschedulable():
                k = pinfo.pod.key
                deferred = lambda: self.queue.move_all_to_active_or_backoff_queue(
                    fw.AssignedPodDelete, assumed, None, lambda p: p.key != k)
            else:
                self.queue.move_all_to_active_or_backoff_queue(fw.AssignedPodDelete, assumed, None, None)
        self._count_attempt(fwk, "error" if status.code == Code.Error else "unschedulable")
        self._handle_scheduling_failure(fwk, pinfo, status, NominatingInfo("", MODE_OVERRIDE), None)
        if deferred is not None:
            deferred()

    # ================================================================== state

    def pod_phase(self, pod) -> str:
        if pod.deletion_timestamp is not None:
            return "Terminating"
        if pod.node_name:
            return "Running"
        out = self.binding.get(pod.key)
        if out is not None:
            if out.waiting is not None and out.waiting._fwk.waiting_pods.get(out.waiting.pod.uid) is out.waiting:
                return "Waiting"
            return "Binding"
        return "Pending"

    def discard(self) -> None:
        """Break the engine's reference cycles (each plugin holds its framework as its handle,
        a framework holds bound methods of itself) so that dropping the engine frees its memory
        at once rather than at the garbage collector's next full collection, which then has a
        whole engine to free (a stall of a tenth of a second at 500 nodes). The engine cannot
        be used afterwards; the visualizer calls it on an engine it stops showing."""
        for fwk in list(self.frameworks.values()):
            for inst in list(getattr(fwk, "_instances", {}).values()):
                try:
                    vars(inst).clear()
                except TypeError:       # a plugin without a __dict__ holds no handle there
                    pass
            vars(fwk).clear()
        # the engine's own parts (the queue's heaps hold key functions bound to it); never the
        # scenario, which other engines share
        for name in ("queue", "cache", "pv_cache", "pvc_cache"):
            part = vars(self).get(name)
            if part is not None and hasattr(part, "__dict__"):
                vars(part).clear()
        vars(self).clear()

    def state(self) -> dict:
        """The state of SPEC.md §3."""
        q = self.queue
        pods = {}
        for key in sorted(self.pods):
            pod = self.pods[key]
            pi = self.pinfos.get(key)
            phase = self.pod_phase(pod)
            node = pod.node_name or None
            if phase == "Binding" or phase == "Waiting":
                node = self.binding[key].host
            where = q.where_is(key)
            pods[key] = {
                "phase": phase,
                "nodeName": node,
                "nominatedNodeName": pod.nominated_node_name or None,
                "queue": where,
                "attempts": pi.attempts if pi is not None else 0,
                "unschedulablePlugins": sorted(pi.unschedulable_plugins) if pi is not None else [],
                "gated": bool(pi.gated) if (pi is not None and where == UNSCHEDULABLE_PODS) else False,
                "priority": pod.priority,
            }
        out = {
            "time": self.now / US,
            "schedulingCycle": q.scheduling_cycle,
            "moveRequestCycle": q.move_request_cycle,
            "queues": {
                "activeQ": [pi.pod.key for pi in q.active_q.ordered()],
                "backoffQ": [pi.pod.key for pi in q.pod_backoff_q.ordered()],
                "unschedulablePods": sorted(q.unschedulable_pods),
            },
            "pods": pods,
            "deletedPods": {k: self.deleted_pods[k] for k in sorted(self.deleted_pods)},
            "nominatedPods": {n: [p.key for p in lst] for n, lst in sorted(q.nominator.nominated_pods.items())},
            "metrics": {
                "pending_pods": q.pending_pods(),
                "queue_incoming_pods_total": dict(sorted(q.incoming_pods.items())),
                "schedule_attempts_total": dict(sorted(self.metrics["schedule_attempts_total"].items())),
                "preemption_attempts_total": sum(getattr(p, "preemption_attempts", 0)
                                                 for f in self.frameworks.values() for p in f.post_filter_plugins),
                "preemption_victims_total": len(self.metrics["preemption_victims"]),
                "unschedulable_pods": {k: v for k, v in sorted(q.unschedulable_reasons.items()) if v},
            },
        }
        if self.has_custom_objects:
            # only for scenarios with custom resources, so that other scenarios' state stays as it was
            out["customObjects"] = self._custom_objects_state()
            out = {k: v for k, v in out.items() if k != "metrics"} | {"metrics": out["metrics"]}
        if any(f.permit_plugins for f in self.frameworks.values()):
            # only with a Permit plugin, so that other scenarios' state stays as it was
            out = {k: v for k, v in out.items() if k != "metrics"} | {"waitingPods": self._waiting_pods_state(),
                                                                       "metrics": out["metrics"]}
        if self.uses_volumes:
            out["volumes"] = self.volume_state()
        return out

    def _custom_objects_state(self) -> dict:
        """``customObjects``: apiVersion/kind -> namespace/name -> manifest, sorted."""
        return {t: {k: self.custom_objects[t][k].manifest for k in sorted(self.custom_objects[t])}
                for t in sorted(self.custom_objects) if self.custom_objects[t]}

    def _waiting_pods_state(self) -> dict:
        """``waitingPods``: every pod waiting on Permit, its node and its pending plugins'
        deadlines; ``result`` is ``Allowed``/``Rejected`` once the signal is given and until
        the binding cycle takes it (the same instant), else null."""
        res = {}
        for f in self.frameworks.values():
            for wp in f.waiting_pods.pods.values():
                sig = wp.signal
                res[wp.pod.key] = {
                    "node": wp.node_name,
                    "since": wp.since / US,
                    "plugins": {name: t.deadline / US for name, t in wp.pending_plugins.items()},
                    "result": None if sig is None else ("Allowed" if sig.code == Code.Success else "Rejected"),
                }
        return {k: res[k] for k in sorted(res)}

    @property
    def uses_volumes(self) -> bool:
        return uses_volumes(self.scenario)

    def volume_state(self) -> dict:
        """``volumes`` of the state (only in scenarios that use volumes): each claim's phase,
        volume and selected node, each PV's phase and claim (API objects, not assumed ones)."""
        from .objects import ANN_SELECTED_NODE
        return {
            "persistentVolumeClaims": {k: {"phase": c.phase, "volumeName": c.volume_name or None,
                                           "storageClassName": c.class_name or None,
                                           "selectedNode": c.annotations.get(ANN_SELECTED_NODE)}
                                       for k, c in sorted(self.pvcs.items())},
            "persistentVolumes": {k: {"phase": v.phase, "storageClassName": v.storage_class_name or None,
                                      "claim": f"{v.claim_ref[0]}/{v.claim_ref[1]}" if v.claim_ref else None}
                                  for k, v in sorted(self.pvs.items())},
        }


_VOLUME_STORES = {"PersistentVolume": "pvs", "PersistentVolumeClaim": "pvcs", "StorageClass": "storage_classes",
                  "CSINode": "csi_nodes"}
_VOLUME_EVENTS = {"PersistentVolume": (fw.GVK.PersistentVolume, "Pv"),
                  "PersistentVolumeClaim": (fw.GVK.PersistentVolumeClaim, "Pvc"),
                  "StorageClass": (fw.GVK.StorageClass, "StorageClass"), "CSINode": (fw.GVK.CSINode, "CSINode")}


def _volume_key(o) -> str:
    return o.key if hasattr(o, "key") else o.name


def compute_disruptions_allowed(pdb, pods) -> int:
    """SPEC §1: expected = existing pods in the namespace the selector matches; healthy = those
    bound and not terminating; desired from minAvailable or expected - maxUnavailable
    (percentages of expected rounded up)."""
    sel = pdb.selector
    expected = healthy = 0
    for p in pods:
        if p.namespace != pdb.namespace or sel is None or sel.empty or not sel.matches(p.labels):
            continue
        expected += 1
        if p.node_name and p.deletion_timestamp is None:
            healthy += 1

    def scaled(v):
        if isinstance(v, str) and v.endswith("%"):
            pct = int(v[:-1])
            return -(-pct * expected // 100)
        return int(v)

    if pdb.max_unavailable is not None:
        desired = expected - scaled(pdb.max_unavailable)
    elif pdb.min_available is not None:
        desired = scaled(pdb.min_available)
    else:
        desired = 1
    return max(0, healthy - desired)


def node_scheduling_properties_change(new, old):
    """nodeSchedulingPropertiesChange: the first of these that changed, else None."""
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        return fw.NodeSpecUnschedulableChange
    if new.allocatable != old.allocatable:
        return fw.NodeAllocatableChange
    if new.labels != old.labels:
        return fw.NodeLabelChange
    if new.taints != old.taints:
        return fw.NodeTaintChange
    if new.conditions != old.conditions:
        return fw.NodeConditionChange
    return None
