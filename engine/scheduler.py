"""The scheduler's virtual-time event loop (upstream ``pkg/scheduler/scheduler.go``, v1.28:
construction, Run, the queue's periodic flushes): the ``Engine`` holds the cluster's objects,
the cache, the queue and the frameworks, and a heap of work due at virtual times, and does one
unit of it at a time. The work itself lives in modules laid out as upstream's files:

- ``engine/eventhandlers.py`` (eventhandlers.go): the API objects' writes and what each change
  does to the cache and the queue;
- ``engine/schedule_one.py`` (schedule_one.go): scheduleOne, the scheduling cycle, the Filter
  search, scoring, selectHost, handleSchedulingFailure;
- ``engine/binding_cycle.py`` (schedule_one.go's bindingCycle, framework.go's WaitOnPermit);
- ``engine/state_output.py``: the state of SPEC.md §3.

Each is a set of functions of the loop (``loop``: this Engine), which reads and writes the
loop's objects named in its docstring and reaches the other pieces only through the few loop
methods named there (``_start_binding``, ``_pod_delete``, ``_set_nominated_node_name``,
``_wait_on_permit_returned``): none imports another, except the binding cycle, which imports the
failure handling of ``schedule_one`` below it (upstream keeps both in one file).

The loop follows SPEC.md §4.  Virtual time is integer microseconds.  At each instant, until
nothing more is due: timeline actions, then completions (cycle ends, bindings, terminations)
in the order they were scheduled, then the 1 s backoff flush and the 30 s leftover flush,
then, if no cycle is in flight, one Pop.  A cycle is evaluated in full when it starts (its
snapshot is the cluster at that instant); its outcome is applied when it ends
``schedulingCycleDuration`` later: binding starts, or the pod goes back to a queue and the
cycle's API writes (victim deletions, nominations) take effect.
"""
from __future__ import annotations

import heapq

from . import binding_cycle, eventhandlers, schedule_one, state_output
from .cache import Cache
from .extender import NoTransport, build_extenders
from .eventhandlers import compute_disruptions_allowed, node_scheduling_properties_change  # noqa: F401
from .framework.runtime import Framework
from .objects import CustomObject, NamespaceLister, system_priority_classes
from .phases import (BACKOFF_FLUSH_PERIOD, LEFTOVER_FLUSH_PERIOD, PHASE_ACTION, PHASE_COMPLETION,  # noqa: F401
                     PHASE_FLUSH_BACKOFF, PHASE_FLUSH_LEFTOVER)
from .queue import PriorityQueue
from .queue.scheduling_queue import ProfileQueueInfo
from .scenario import uses_volumes
from .schedule_one import NO_NODES_MESSAGE, CycleOutcome, FeasibleNodes  # noqa: F401
from .trace import Trace
from .volumes import AssumeCache


class Engine:
    """A deterministic, steppable kube-scheduler v1.28 over a Scenario.

    ``step()`` advances by one unit of work (one action, one completion, one flush or one
    Pop and its cycle evaluation); ``run(until)`` steps until everything due at or before
    ``until`` has happened.  Observe it through ``trace`` sinks and ``state()``.
    """

    # The CycleState inspector (engine/framework/recorder.py): a CycleStateRecorder set here
    # records what the plugins write in the cycles it asks for; None (off) costs nothing.
    cycle_state_recorder = None

    def __init__(self, scenario, trace: Trace | None = None, extender_transport=None):
        """``extender_transport``: how the scheduler extenders of the scenario's configuration
        are called (engine/extender.py: HTTPTransport, RecordingTransport, ReplayTransport);
        without one every extender call fails with an error saying so."""
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
        # the namespaces the scenario names (in objects or actions), none existing before
        # _load; any other namespace is implicit (engine.objects.NamespaceLister)
        self.namespaces = NamespaceLister({a.name: None for a in scenario.actions if a.kind == "Namespace"})
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
        # scheduler extenders (engine/extender.py): the calls are numbered in the order the
        # engine makes them (``extender_calls``), which is how a record is replayed
        self.extender_transport = extender_transport if extender_transport is not None else NoTransport()
        self.extender_calls = 0
        self.extenders = build_extenders(cfg.extenders, self._extender_call) if cfg.extenders else []
        for f in self.frameworks.values():
            f.host = self
            f.extenders = self.extenders
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
            queueing_hints=self.queueing_hints, pod_lister=self.pods.get, ns_lister=self.namespaces)
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
        """Objects at t=0: priority classes and namespaces, PDBs, nodes, bound pods, then
        pending pods."""
        self._loaded = True
        objs = self.scenario.objects
        for kind, o in objs:
            if kind == "PriorityClass":
                self.priority_classes[o.name] = o
            elif kind == "Namespace":
                self.namespaces.namespaces[o.name] = o
        for kind, o in objs:
            if kind == "PodDisruptionBudget":
                self.pdbs[o.key] = o
            elif kind in eventhandlers.VOLUME_STORES:
                eventhandlers.volume_store(self, kind)[eventhandlers.volume_key(o)] = \
                    eventhandlers.stamp_volume(self, kind, o)
        for kind, o in objs:
            if isinstance(o, CustomObject):
                o.resource_version = self._next_rv()
                self.custom_objects.setdefault(o.type_key, {})[o.key] = o
        for kind, o in objs:
            if kind == "Node":
                eventhandlers.node_add(self, o)
        for kind, o in objs:
            if kind == "Pod" and o.node_name:
                eventhandlers.pod_create(self, o)
        restore = self.scenario.queue_state   # exported queue state (scenario ``queue``), if any
        for kind, o in objs:
            if kind == "Pod" and not o.node_name:
                eventhandlers.pod_create(self, o, restore=restore.get(o.key) if restore else None)
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
            schedule_one.schedule_one(self)
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
            eventhandlers.apply_action(self, payload)
        elif phase == PHASE_COMPLETION:
            if kind == "permitTimeout":
                if not payload.stopped:          # a stopped timer was uncounted when it stopped
                    self._pending_completions -= 1
                    payload.stopped = True
                    payload.waiting_pod._timeout(payload)
                return
            self._pending_completions -= 1
            if kind == "cycleEnd":
                schedule_one.finish_cycle(self, payload)
            elif kind == "bind":
                binding_cycle.finish_binding(self, payload)
            elif kind == "termination":
                eventhandlers.finish_termination(self, payload)
            elif kind == "permitDone":
                binding_cycle.wait_on_permit_returned(self, payload)
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

    def inject(self, action) -> None:
        """Apply an action now (events injected from the UI)."""
        if not self._loaded:
            self._load()
        action.at = self.now
        eventhandlers.apply_action(self, action)
        self.trace.flush()

    next_start_node_index = 0     # findNodesThatFitPod's rotation (schedule_one)

    # ================================================================== what the pieces call on the loop

    def _start_binding(self, out) -> None:
        binding_cycle.start_binding(self, out)

    def _pod_delete(self, key, action=None, reason="Deleted", preemptor=None) -> None:
        eventhandlers.pod_delete(self, key, action, reason, preemptor)

    def _set_nominated_node_name(self, pod, node_name) -> None:
        eventhandlers.set_nominated_node_name(self, pod, node_name)

    def _wait_on_permit_returned(self, wp) -> None:
        binding_cycle.wait_on_permit_returned(self, wp)

    def _extender_call(self, request):
        """One extender call (engine/extender.py), numbered, through the transport."""
        seq = self.extender_calls
        self.extender_calls += 1
        return self.extender_transport.call(seq, request)

    # ================================================================== the handle API (framework/handle.py)

    def _pdb_list(self):
        """The PDBs with disruptionsAllowed as the disruption controller would compute it."""
        return eventhandlers.pdb_list(self)

    def _resolve_priority(self, pod):
        """Priority admission (engine/eventhandlers.py)."""
        eventhandlers.resolve_priority(self, pod)

    def get_object(self, api_version, kind, namespace, name):
        """The manifest of a custom resource (a copy), or None."""
        return eventhandlers.get_object(self, api_version, kind, namespace, name)

    def list_objects(self, api_version, kind, namespace=None) -> list:
        """The manifests (copies) of a custom resource's kind, in namespace/name order."""
        return eventhandlers.list_objects(self, api_version, kind, namespace)

    def volume_write(self, kind, key, new, old=None):
        """An API create/update of a volume object (engine/eventhandlers.py)."""
        eventhandlers.volume_write(self, kind, key, new, old)

    def delete_victim(self, victim, preemptor, plugin_name="DefaultPreemption"):
        """Queued by prepareCandidate; runs when the cycle ends (engine/schedule_one.py)."""
        schedule_one.delete_victim(self, victim, preemptor, plugin_name)

    def clear_nominated_node_name(self, pods, reason=""):
        schedule_one.clear_nominated_node_name(self, pods, reason)

    def start_permit_timers(self, wp):
        """newWaitingPod: one timer per plugin that asked to wait (engine/binding_cycle.py)."""
        binding_cycle.start_permit_timers(self, wp)

    def stop_permit_timer(self, timer):
        binding_cycle.stop_permit_timer(self, timer)

    def permit_signalled(self, wp):
        binding_cycle.permit_signalled(self, wp)

    # ================================================================== state (engine/state_output.py)

    def pod_phase(self, pod) -> str:
        return state_output.pod_phase(self, pod)

    def state(self) -> dict:
        """The state of SPEC.md §3."""
        return state_output.state(self)

    def _custom_objects_state(self) -> dict:
        return state_output.custom_objects_state(self)

    def _waiting_pods_state(self) -> dict:
        return state_output.waiting_pods_state(self)

    def volume_state(self) -> dict:
        return state_output.volume_state(self)

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

    @property
    def uses_volumes(self) -> bool:
        return uses_volumes(self.scenario)


