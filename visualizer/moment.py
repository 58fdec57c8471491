"""The moment the page shows: every panel at the same revealed trace position.

The engine runs in units of work (one action, one completion, one flush, or one Pop with its
whole cycle evaluation) and ``Stepper.state()`` is the state after the last unit. Stepping by
event (or by point, or to a CycleEnd) often stops inside a unit, with some of its events not
revealed yet. Showing the unit's outcome there makes the panels disagree (a pod the metrics
count in unschedulablePods while its QueueTransition is not revealed, so it is in no queue).

So the page shows the engine **as it was when it emitted the last revealed event**:

- ``Recorder`` is a trace sink added to each Stepper the visualizer builds. At every event
  except the per-node PluginResults of PreFilter/Filter/PreScore/Score/NormalizeScore (which
  change nothing) it copies the engine's small figures: the clock, the scheduling cycle,
  moveRequestCycle, the metrics and the nominator's nominations. It also notes the pods a
  PodDeleted/PodRemoved is about to remove (key, node, priority, requests). Only the
  snapshots from the last revealed event on are kept, so memory stays flat.
- ``moment()`` takes the unit's outcome (queues, pods, node contents) and undoes the
  unrevealed events one by one, newest first: QueueTransitions go back (a pod whose PreEnqueue
  checks are revealed stays out of its old queue: the engine took it out first), a CycleEnd
  that assumed a pod takes it off its node again, a Bound turns back into Binding, a
  BindFailed puts the pod back on its node, a PodDeleted/PodRemoved restores the pod, a
  created pod or node disappears. At the end of a unit the snapshot is the one taken then.
- The pod in its scheduling cycle is read from the trace (the pod of the latest revealed Pop
  until the event that places it: its requeueing QueueTransition, CycleEnd Scheduled,
  CycleSkipped or its deletion), so a pod between its CycleEnd and its requeueing is shown
  in flight, not nowhere.

Three events are emitted before the engine carries them out: an Action creating a pod,
PodDeleted and PodRemoved. Their unit's outcome already holds their effects (the pod created,
terminating or gone), so, revealed, they are shown carried out, as their log line says; the
figures snapshotted at a PodDeleted are corrected for it (the pending pod it removes from its
queue, the preemption victim the engine counts right after).

Every pending pod is then in exactly one place: a queue, in flight, waiting (between two
queues, or created but not queued yet), or not ours (its ``spec.schedulerName`` is none of the
scenario's profiles: kube-scheduler never queues it, so it stays pending). tests/visualizer/test_moment.py checks this, and the
figures, against a full ``engine.state()`` taken at every event and every unit's end of every
lesson (tests/visualizer/moment_reference.py states the two adjustments).
"""
from __future__ import annotations

import bisect
import math
import weakref

from engine import US
from engine.trace import EventBatch
from visualizer.events import QUEUE_TRANSITION, backward, span

QUEUE_NAMES = ("activeQ", "backoffQ", "unschedulablePods")
_QUIET_POINTS = {"PreFilter", "Filter", "PreScore", "Score", "NormalizeScore"}
# nominator -> (its version, the nominations as a snapshot shows them): after a preemption
# hundreds of nodes may hold nominations, and the snapshots share one map until it changes
_NOMINATED = weakref.WeakKeyDictionary()


def _nominated(nominator) -> dict:
    """engine.state()'s ``nominatedPods`` (node -> pod keys), built again only when the
    nominator changed. Readers do not change it (a snapshot's maps are shared)."""
    got = _NOMINATED.get(nominator)
    if got is None or got[0] != nominator.version:
        got = _NOMINATED[nominator] = (nominator.version, {
            n: [p.key for p in lst] for n, lst in sorted(nominator.nominated_pods.items()) if lst})
    return got[1]


def _small_state(engine) -> dict:
    q = engine.queue
    m = engine.metrics
    return {
        "time": engine.now / US,
        "schedulingCycle": q.scheduling_cycle,
        "moveRequestCycle": q.move_request_cycle,
        "nominatedPods": _nominated(q.nominator),
        "metrics": {
            "pending_pods": q.pending_pods(),
            "queue_incoming_pods_total": dict(sorted(q.incoming_pods.items())),
            "schedule_attempts_total": dict(sorted(m["schedule_attempts_total"].items())),
            "preemption_attempts_total": sum(getattr(p, "preemption_attempts", 0)
                                             for f in engine.frameworks.values() for p in f.post_filter_plugins),
            "preemption_victims_total": len(m["preemption_victims"]),
            "unschedulable_pods": {k: v for k, v in sorted(q.unschedulable_reasons.items()) if v},
        },
        # pods waiting on Permit, only for scenarios with a Permit plugin (as engine.state())
        "waitingPods": (engine._waiting_pods_state()
                        if any(f.permit_plugins for f in engine.frameworks.values()) else None),
        # custom resources, only for scenarios that have any (as engine.state())
        "customObjects": engine._custom_objects_state() if engine.has_custom_objects else None,
    }


class Recorder:
    """A trace sink keeping the engine's small figures at each revealed-or-later event."""

    deferred_values = True      # it never reads HostSelected's scores: leave them unbuilt

    def __init__(self, stepper):
        self.stepper = stepper
        self.seqs: list = []        # seqs with a snapshot, ascending
        self.snaps: list = []
        self.removed: dict = {}     # seq of a PodDeleted/PodRemoved -> the pod it removes
        self.unit_ends: dict = {}   # len(events) after a unit -> the snapshot then
        # While the stepper reveals up to a known position (a rebuild, run until), nothing
        # before it will be shown: ``floor`` lets the recorder forget it at once, so a replay
        # of a long run holds a few snapshots, not one per event.
        self.floor = -1
        stepper.trace.add_sink(self)
        stepper._moment_recorder = self
        advance = stepper._advance_unit

        def advance_unit(until=None):
            did = advance(until)
            end = len(stepper.events)
            for pos in [pos for pos in self.unit_ends if pos <= self._keep()]:
                del self.unit_ends[pos]
            self.unit_ends[end] = _small_state(stepper.engine)
            return did
        stepper._advance_unit = advance_unit
        for name, floor in (("reveal_to", None), ("run_until", math.inf), ("run_to_end", math.inf),
                            ("advance_until", math.inf), ("advance_to_end", math.inf)):
            setattr(stepper, name, self._with_floor(getattr(stepper, name), floor))

    def _with_floor(self, method, floor):
        def call(*args, **kwargs):
            self.floor = (args[0] - 1) if floor is None else floor
            try:
                return method(*args, **kwargs)
            finally:
                self.floor = -1
        return call

    def _keep(self):
        """Snapshots of events before this seq cannot be shown any more."""
        return max(self.stepper.position - 1, self.floor)

    def __call__(self, e: dict) -> None:
        if e["type"] == "PluginResult" and e.get("point") in _QUIET_POINTS:
            return
        engine = self.stepper.engine
        keep = self._keep()
        # drop what no later position can show (the newest one at or before ``keep`` stays)
        i = bisect.bisect_right(self.seqs, keep) - 1
        if i > 0:
            del self.seqs[:i], self.snaps[:i]
            for seq in [s for s in self.removed if s < keep]:
                del self.removed[seq]
        self.seqs.append(e["seq"])
        self.snaps.append(_small_state(engine))
        if e["type"] in ("PodDeleted", "PodRemoved"):
            pod = engine.pods.get(e["pod"])
            if pod is not None:
                where = engine.queue.where_is(pod.key)
                pinfo = engine.queue.get(pod.key) if where else None
                pending_key = {"activeQ": "active", "backoffQ": "backoff"}.get(where) or (
                    ("gated" if pinfo is not None and pinfo.gated else "unschedulable") if where else None)
                phase = engine.pod_phase(pod)
                # a pod waiting on Permit is not bound, but it holds its node until removed
                node = pod.node_name or (engine.binding[pod.key].host if phase == "Waiting" else None)
                self.removed[e["seq"]] = {"key": pod.key, "node": node, "priority": pod.priority,
                                          "requests": dict(pod.requests), "phase": phase,
                                          "queue": pending_key, "schedulerName": pod.scheduler_name}

    def add_batch(self, batch) -> None:
        """A batch holds per-node results of Filter, Score or NormalizeScore (engine/trace.py),
        which change nothing: there is nothing to record, and nothing is expanded."""

    def add_segment(self, seg) -> None:
        """A segment (engine/trace.py: a preemption dry run, a Filter search, a point's results,
        a Score phase) holds events of a stretch in which nothing these figures hold changes:
        one by one, each of its events that is not quiet would record the same figures. So only
        the first such event is recorded (``at`` finds it for every later position of the
        segment, as it would have found an equal copy), and the segment is expanded only up to
        it. A segment holding a pod's removal is taken one event at a time, as before; one of
        batches only (a Filter search, a Score phase) has nothing to record and is not
        expanded."""
        if not seg.single_types:
            return
        if seg.single_types & {"PodDeleted", "PodRemoved"}:
            for r in seg.records():
                if r.__class__ is not EventBatch:
                    self(r)
            return
        for r in seg.records():
            if r.__class__ is EventBatch:
                continue
            if r["type"] == "PluginResult" and r.get("point") in _QUIET_POINTS:
                continue
            self(r)
            return

    def at(self, position: int):
        """The figures after ``position`` events: at the end of a unit if one ended there,
        else as the last of those events was emitted; None if not recorded."""
        if position in self.unit_ends:
            return self.unit_ends[position]
        i = bisect.bisect_right(self.seqs, position - 1) - 1
        return self.snaps[i] if i >= 0 else None


def attach(stepper) -> Recorder:
    """Record the stepper's moments (call before its first step)."""
    return Recorder(stepper)


# ---------------------------------------------------------------------- the moment

class _Keys:
    """A queue's pod keys while the unrevealed events are undone: membership, removal and
    insertion at the head or the tail each in constant time (a unit of 10,000 pod creations
    undone event by event with list operations took over a second), in order again by
    ``keys()``."""
    __slots__ = ("_order", "_head", "_tail", "_sorted")

    def __init__(self, keys, sorted_=False):
        self._order = {k: i for i, k in enumerate(keys)}
        self._head, self._tail = -1, len(self._order)
        self._sorted = sorted_          # unschedulablePods is listed in key order

    def __contains__(self, key) -> bool:
        return key in self._order

    def __iter__(self):
        return iter(self._order)

    def remove(self, key) -> None:
        del self._order[key]

    def insert_head(self, key) -> None:
        self._order[key] = self._head
        self._head -= 1

    def append(self, key) -> None:
        self._order[key] = self._tail
        self._tail += 1

    def keys(self) -> list:
        if self._sorted:
            return sorted(self._order)
        return sorted(self._order, key=self._order.__getitem__)


def _undo_queue_transition(queues, e, restore_source=True) -> None:
    pod, src, dst = e["pod"], e.get("from"), e.get("to")
    if dst in queues and pod in queues[dst]:
        queues[dst].remove(pod)
    if restore_source and src in queues and pod not in queues[src]:
        if src == "activeQ":
            queues[src].insert_head(pod)   # a Pop takes the head
        else:
            queues[src].append(pod)        # (unschedulablePods: put in key order by keys())


def _last_queue_of(events, position, key, limit=50000):
    """The queue the latest revealed QueueTransition of ``key`` put it in (or None)."""
    for e in backward(events, position, position - limit, quiet=False, types=QUEUE_TRANSITION):
        if e["pod"] == key:
            return e.get("to")
    return None


def _enqueue_revealed(at, seq, position) -> bool:
    """Whether the PreEnqueue results that precede the QueueTransition at ``seq`` (a pod being
    created, or moved by a flush or a cluster event) are revealed: from the first of them the
    engine has the pod out of its old queue (or created) and not yet in the new one.
    (``at``: the event of a seq.)"""
    first = seq
    key = at(seq)["pod"]
    while first > 0 and at(first - 1)["type"] == "PluginResult" and \
            at(first - 1).get("point") == "PreEnqueue" and at(first - 1).get("pod") == key:
        first -= 1
    return first < seq and first < position


def _created_before(at, seq, position) -> bool:
    """Whether the Action that created the pod of the PodAdd QueueTransition at ``seq`` (just
    before it and its PreEnqueue results) is revealed (``at``: the event of a seq)."""
    key = at(seq)["pod"]
    i = seq - 1
    while i >= 0 and at(i)["type"] == "PluginResult" and at(i).get("point") == "PreEnqueue":
        i -= 1
    e = at(i) if i >= 0 else None
    return e is not None and i < position and e["type"] == "Action" and e.get("action") == "create" \
        and e.get("kind") == "Pod" and e.get("name") == key


def in_flight(events: list, position: int, index) -> dict | None:
    """The pod in its scheduling cycle at ``position``: popped, not yet placed; or None."""
    pop = index.last_pop(position)
    if pop is None:
        return None
    placed = index.placements.get(pop)
    if placed is not None and placed < position:
        return None
    e = events[pop]
    out = {"key": e["pod"], "cycle": None, "stage": "popped from activeQ", "ended": None}
    i = pop + 1
    while i < position:
        # the rows of one stored batch share their type, pod, point and dryRun: one is read
        later = events[i]
        i = max(i + 1, span(events, i)[1])
        t = later["type"]
        if t == "CycleStart":
            out["cycle"] = later.get("cycle")
            out["stage"] = "in its scheduling cycle"
        elif t == "PluginResult" and later.get("pod") == out["key"] and not later.get("dryRun"):
            out["stage"] = f"at {later['point']}"
        elif t == "CycleEnd" and later.get("pod") == out["key"]:
            out["ended"] = later.get("result")
            out["stage"] = f"cycle ended {later.get('result')}; being requeued"
    return out


def moment(stepper, state: dict, index) -> dict:
    """What the page shows at the stepper's position: see the module docstring.

    Returns ``{"time", "schedulingCycle", "moveRequestCycle", "metrics", "nominatedPods",
    "queues", "pods", "in_flight", "waiting", "not_ours", "hide_on_nodes", "restore_on_nodes",
    "phase_on_nodes", "hide_nodes"}``; ``not_ours`` lists the pending pods of another scheduler
    (``{"key", "schedulerName"}``, by key), which ``waiting`` leaves out; the last four adjust the
    node cards built from the engine's cache (pods to leave out, pods to add back, phases to show
    instead, nodes not created yet).
    """
    events, position = stepper.events, stepper.position
    partial = position < len(events)
    # the unit's unrevealed events, newest first; batched per-node results change nothing
    tail = list(backward(events, len(events), position, quiet=False)) if partial else []
    recorder = getattr(stepper, "_moment_recorder", None)
    snap = recorder.at(position) if (partial and recorder is not None) else None
    base = snap or state
    queues = {name: _Keys(keys, name == "unschedulablePods") for name, keys in state["queues"].items()}
    pods = {k: dict(v) for k, v in state["pods"].items()}
    hide_on_nodes, restore_on_nodes, phase_on_nodes, hide_nodes = set(), {}, {}, set()
    moving = {}   # pods between two queues: their PreEnqueue checks are revealed, the move not
    # the events before a tail event are mostly in the tail too: read them there
    by_seq = {e["seq"]: e for e in tail}

    def at(i):
        e = by_seq.get(i)
        return e if e is not None else events[i]
    for e in tail:
        t, key = e["type"], e.get("pod")
        if t == "QueueTransition":
            # a pod update and Activate (ForceActivate) run PreEnqueue with the pod still in its
            # queue; a creation, a flush or a move request takes it out first
            checking = e.get("event") not in ("PodUpdate", "ForceActivate") and \
                _enqueue_revealed(at, e["seq"], position)
            _undo_queue_transition(queues, e, restore_source=not checking)
            if checking:
                moving[key] = e.get("from")
            if e.get("event") == "Pop" and key in pods:
                pods[key]["attempts"] = max(0, pods[key]["attempts"] - 1)
            elif e.get("event") == "PodAdd" and e.get("from") is None and not checking \
                    and not _created_before(at, e["seq"], position):
                pods.pop(key, None)   # the pod is created by this unrevealed event
        elif t == "CycleEnd" and e.get("result") == "Scheduled":
            hide_on_nodes.add(key)
            restore_on_nodes.pop(key, None)
            if key in pods:
                pods[key].update(phase="Pending", nodeName=None)
        elif t == "Bound":
            phase_on_nodes[key] = "Binding"
            if key in pods:
                pods[key].update(phase="Binding")
        elif t == "BindFailed":
            pod = stepper.engine.pods.get(key)
            if pod is not None:
                # a pod rejected while waiting on Permit was still waiting until its BindFailed
                phase = "Waiting" if key in (base.get("waitingPods") or {}) else "Binding"
                restore_on_nodes[key] = {"key": key, "node": e["node"], "priority": pod.priority,
                                         "requests": dict(pod.requests), "phase": phase}
                hide_on_nodes.discard(key)
                if key in pods:
                    pods[key].update(phase=phase, nodeName=e["node"])
        elif t in ("PodDeleted", "PodRemoved"):
            info = recorder.removed.get(e["seq"]) if recorder is not None else None
            if key in pods and pods[key]["phase"] == "Terminating" and t == "PodDeleted":
                phase_on_nodes[key] = "Running"
                pods[key]["phase"] = "Running"
            elif info is not None:
                pods[key] = {"phase": info["phase"], "nodeName": info["node"], "nominatedNodeName": None,
                             "queue": None, "attempts": 0, "unschedulablePlugins": [], "gated": False,
                             "priority": info["priority"]}
                if info["node"]:
                    restore_on_nodes[key] = info
                    hide_on_nodes.discard(key)
                else:
                    where = _last_queue_of(events, position, key)
                    if where in queues and key not in queues[where]:
                        queues[where].append(key)
        elif t == "Action" and e.get("action") == "create":
            if e.get("kind") == "Pod":
                pods.pop(e.get("name"), None)
                hide_on_nodes.add(e.get("name"))
                restore_on_nodes.pop(e.get("name"), None)
                for keys in queues.values():
                    if e.get("name") in keys:
                        keys.remove(e.get("name"))
            elif e.get("kind") == "Node":
                hide_nodes.add(e.get("name"))
    metrics, nominated = base["metrics"], base["nominatedPods"]
    waiting_pods = base.get("waitingPods")
    last = events[position - 1] if position else None
    if snap is not None and last is not None and last["type"] == "PodDeleted" and position not in recorder.unit_ends:
        # The engine emits PodDeleted before it deletes the pod (and counts a preemption
        # victim right after): the page shows the deletion done, figures included.
        info = recorder.removed.get(last["seq"])
        metrics = dict(metrics, pending_pods=dict(metrics["pending_pods"]))
        if info is not None and info.get("queue"):
            metrics["pending_pods"][info["queue"]] -= 1
            nominated = {n: [k for k in keys if k != last["pod"]] for n, keys in nominated.items()}
            nominated = {n: keys for n, keys in nominated.items() if keys}
        if last.get("reason") == "Preempted":
            metrics["preemption_victims_total"] += 1
        if waiting_pods and last["pod"] in waiting_pods:
            waiting_pods = {k: v for k, v in waiting_pods.items() if k != last["pod"]}
    queues = {name: keys.keys() for name, keys in queues.items()}
    flight = in_flight(events, position, index)
    queued = {k for keys in queues.values() for k in keys}
    waiting, not_ours = [], []
    frameworks = stepper.engine.frameworks
    removed_names = {i["key"]: i.get("schedulerName") for i in recorder.removed.values()} if recorder else {}
    for k, p in sorted(pods.items()):
        if p["phase"] != "Pending" or k in queued or (flight is not None and flight["key"] == k):
            continue
        pod = stepper.engine.pods.get(k)
        scheduler = pod.scheduler_name if pod is not None else removed_names.get(k)
        if scheduler is not None and scheduler not in frameworks:
            not_ours.append({"key": k, "schedulerName": scheduler})   # never queued: another scheduler's
        else:
            waiting.append({"key": k, "from": moving.get(k)})
    return {
        "time": base["time"],
        "schedulingCycle": base["schedulingCycle"],
        "moveRequestCycle": base["moveRequestCycle"],
        "metrics": metrics,
        "nominatedPods": nominated,
        "waitingPods": waiting_pods,
        "customObjects": base.get("customObjects"),
        "queues": queues,
        "pods": pods,
        "in_flight": flight,
        "waiting": waiting,
        "not_ours": not_ours,
        "hide_on_nodes": hide_on_nodes,
        "restore_on_nodes": restore_on_nodes,
        "phase_on_nodes": phase_on_nodes,
        "hide_nodes": hide_nodes,
        "partial": partial,
    }
