"""Export: the cluster at the current position as a scenario, and each pod's per-plugin results
as kube-scheduler-simulator's result annotations.

``scenario_at(engine)`` writes the objects as they are now, ready to run on from there:

- Nodes, PriorityClasses, Namespaces, PodDisruptionBudgets, the volume objects (StorageClasses,
  PersistentVolumes, PersistentVolumeClaims with their uid, CSINodes) and custom resources as
  they are now (a pod waiting on Permit is pending in the API: it is scheduled again); bound pods on their node
  with their start time (in node order, each node's pods in the order the scheduler's cache
  keeps them, which breaks ties between equal preemption victims); terminating pods bound and
  deleted at t=0 with what is left of their grace period (rounded up to a whole second);
  pending pods with their nomination: first those whose bind is in flight (assumed, but not
  bound in the API: they are scheduled again), then activeQ in pop order, backoffQ,
  unschedulablePods, then the rest.
- The timeline actions not applied yet, moved earlier by the current time;
  ``simulation.startTime`` moved later by it (start times keep their meaning); the scheduler
  configuration and the other simulation settings as they were. Cues are left out.
- The scheduling queue as ``queue``: for each pending pod in a queue, which one, its attempts,
  its queue timestamp (before t=0) and the plugins that rejected it, so the run goes on as it
  would have (``Scenario``'s ``queue``; ``PriorityQueue.restore``).
  The next runs of the 1 s and 30 s flushes go with it, so they stay in step.
- What a scenario cannot hold is lost, and said so in the description: a scheduling cycle or
  a binding in flight (the pod is pending again and is scheduled anew), which preemption
  victims were preempted (they are plain deletions now), a deleted Namespace (not named
  any more, it is implicit again unless a pending action names it).

``result_annotations(events)`` reads the trace the way kube-scheduler-simulator's result store
(``simulator/scheduler/plugin/resultstore/store.go``) records a scheduling attempt and writes
the same annotations with the same JSON shapes, for each pod's latest attempt, plus
``result-history`` (every attempt):

- ``prefilter-result-status``, ``prescore-result``, ``reserve-result``, ``permit-result``,
  ``prebind-result``, ``bind-result``: plugin → ``"success"`` or the status message;
- ``filter-result``: node → plugin → ``"passed"`` or the reason;
- ``postfilter-result``: node → {} for every node that failed Filter, with
  ``{"DefaultPreemption": "preemption victim"}`` on the nominated node;
- ``score-result``: node → plugin → raw score (as a string); ``finalscore-result``: node →
  plugin → normalized score × weight;
- ``selected-node``: the node chosen at Reserve; ``permit-result-timeout`` and
  ``prefilter-result`` are ``{}`` (the trace carries no PreFilterResult node sets).
"""
from __future__ import annotations

import copy
import json
import math
from datetime import timedelta

from .importers.kube import rfc3339
from .quantity import US
from .scenario import CLUSTER_SCOPED

ANNOTATION_PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = ANNOTATION_PREFIX + "prefilter-result-status"
PREFILTER = ANNOTATION_PREFIX + "prefilter-result"
FILTER = ANNOTATION_PREFIX + "filter-result"
POSTFILTER = ANNOTATION_PREFIX + "postfilter-result"
PRESCORE = ANNOTATION_PREFIX + "prescore-result"
SCORE = ANNOTATION_PREFIX + "score-result"
FINALSCORE = ANNOTATION_PREFIX + "finalscore-result"
RESERVE = ANNOTATION_PREFIX + "reserve-result"
PERMIT = ANNOTATION_PREFIX + "permit-result"
PERMIT_TIMEOUT = ANNOTATION_PREFIX + "permit-result-timeout"
PREBIND = ANNOTATION_PREFIX + "prebind-result"
BIND = ANNOTATION_PREFIX + "bind-result"
SELECTED_NODE = ANNOTATION_PREFIX + "selected-node"
RESULT_HISTORY = ANNOTATION_PREFIX + "result-history"
PASSED = "passed"
SUCCESS = "success"
PREEMPTION_VICTIM = "preemption victim"


# ----------------------------------------------------------------------------- the scenario

def _pod_manifest(engine, pod):
    m = copy.deepcopy(pod.manifest) if isinstance(pod.manifest, dict) else {}
    m["apiVersion"] = "v1"
    m["kind"] = "Pod"
    md = m.setdefault("metadata", {})
    md["name"] = pod.name
    md["namespace"] = pod.namespace
    spec = m.setdefault("spec", {})
    node = pod.node_name
    if node:
        spec["nodeName"] = node
    else:
        spec.pop("nodeName", None)
    # priority and preemption policy were resolved when the pod was created; keep them so
    # even if the classes changed since
    probe = pod.copy()
    probe.priority = 0
    probe.preemption_policy = pod.preemption_policy
    engine._resolve_priority(probe)
    if probe.priority != pod.priority:
        spec["priority"] = pod.priority
    if pod.preemption_policy is not None:
        spec["preemptionPolicy"] = pod.preemption_policy
    status = {}
    if pod.nominated_node_name:
        status["nominatedNodeName"] = pod.nominated_node_name
    if pod.start_time is not None and node:
        start = engine.scenario.simulation.start_time + timedelta(microseconds=pod.start_time)
        status["startTime"] = rfc3339(start)
    if status:
        m["status"] = status
    else:
        m.pop("status", None)
    return m


def _seconds(us):
    v = us / US
    return int(v) if v == int(v) else v


def scenario_at(engine) -> dict:
    """The cluster now, as a scenario mapping (see the module docstring)."""
    from .scheduler import PHASE_ACTION
    sc = engine.scenario
    now = engine.now
    raw = sc.raw if isinstance(sc.raw, dict) else {}
    t = now / US
    name = f"{sc.name}-at-{now // 1000}ms"[:63].rstrip("-")
    sim = copy.deepcopy(raw.get("simulation") or {})
    sim["startTime"] = rfc3339(sc.simulation.start_time + timedelta(microseconds=now))
    lost = ("Exported at t={:g}s by `python -m engine export`: the objects and the scheduling queue "
            "as they were then. A cycle or binding that was in flight starts again.").format(t)
    waiting = sum(len(f.waiting_pods) for f in engine.frameworks.values())
    if waiting:
        lost += (f" {waiting} pod(s) waiting on Permit were assumed but not bound: they are pending "
                 f"here and are scheduled again, with fresh Permit timers.")
    out = {"kind": "Scenario",
           "metadata": {"name": name, "title": f"{sc.title or sc.name} (at {t:g}s)",
                        "description": lost + ("\n\n" + sc.description if sc.description else "")}}
    if raw.get("scheduler") is not None:
        out["scheduler"] = copy.deepcopy(raw["scheduler"])
    out["simulation"] = sim
    objects = []
    for pc in engine.priority_classes.values():
        objects.append(copy.deepcopy(pc.manifest))
    for ns in engine.namespaces.namespaces.values():    # the declared ones that exist now
        if ns is not None:
            objects.append(copy.deepcopy(ns.manifest))
    for pdb in engine.pdbs.values():
        objects.append(copy.deepcopy(pdb.manifest))
    # volumes: StorageClasses, PVs, claims (with the uid the PVs' claimRefs name) and CSINodes,
    # as the API holds them now (a binding only assumed by a cycle in flight is not there)
    for sc_ in engine.storage_classes.values():
        objects.append(copy.deepcopy(sc_.manifest))
    for pv in engine.pvs.values():
        objects.append(copy.deepcopy(pv.manifest))
    for pvc in engine.pvcs.values():
        m = copy.deepcopy(pvc.manifest)
        if pvc.uid:
            m["metadata"] = dict(m.get("metadata") or {}, uid=pvc.uid)
        objects.append(m)
    for cn in engine.csi_nodes.values():
        objects.append(copy.deepcopy(cn.manifest))
    for type_key in sorted(engine.custom_objects):        # custom resources, as they are now
        for _k, o in sorted(engine.custom_objects[type_key].items()):
            objects.append(copy.deepcopy(o.manifest))
    for node in engine.nodes.values():
        objects.append(copy.deepcopy(node.manifest))
    actions = []
    done = set()
    for node_name in engine.nodes:
        ni = engine.cache.nodes.get(node_name)
        for entry in (ni.pods if ni is not None else []):
            p = getattr(entry, "pod", entry)
            cur = engine.pods.get(p.key)
            if cur is None or p.key in done:
                continue
            if p.key in engine.binding or engine.cache.is_assumed_pod(p.key) or cur.node_name != node_name:
                continue   # assumed, not bound: the API object is still pending
            done.add(p.key)
            m = _pod_manifest(engine, cur)
            if cur.deletion_timestamp is not None:
                end = engine.terminating.get(p.key, now)
                m["spec"]["terminationGracePeriodSeconds"] = max(0, math.ceil((end - now) / US))
                actions.append({"at": 0, "delete": {"kind": "Pod", "namespace": cur.namespace, "name": cur.name}})
            objects.append(m)
    q = engine.queue
    unsched = sorted(q.unschedulable_pods.values(), key=lambda pi: pi.unsched_seq)
    assumed = [k for k in engine.pods if k in engine.binding or engine.cache.is_assumed_pod(k)]
    order = assumed + [pi.pod.key for pi in q.active_q.ordered()] + \
        [pi.pod.key for pi in q.pod_backoff_q.ordered()] + [pi.pod.key for pi in unsched]
    order_keys = {k: i for i, k in enumerate(order)}
    pending = [p for k, p in engine.pods.items() if k not in done and not p.node_name]
    pending.sort(key=lambda p: order_keys.get(p.key, len(order)))
    queue = []
    for p in pending:
        objects.append(_pod_manifest(engine, p))
        where = q.where_is(p.key)
        pi = q.get(p.key)
        if where is None or pi is None or p.key in engine.binding or engine.cache.is_assumed_pod(p.key):
            continue   # in no queue, or its bind in flight (it is scheduled anew), or not ours
        entry = {"pod": p.key, "queue": where, "attempts": pi.attempts,
                 "timestamp": _seconds(pi.timestamp - now)}
        if pi.unschedulable_plugins and not pi.gated:
            entry["unschedulablePlugins"] = sorted(pi.unschedulable_plugins)
        if pi.gated:
            entry["gated"] = True
        queue.append(entry)
    out["objects"] = objects
    qs = {}
    for e in engine._events:
        if e[3] == "flushBackoffQCompleted" and e[0] != now:
            qs["nextFlushBackoffQCompleted"] = _seconds(e[0] - now)
        elif e[3] == "flushUnschedulablePodsLeftover" and e[0] != now:
            qs["nextFlushUnschedulablePodsLeftover"] = _seconds(e[0] - now)
    if queue:
        qs["pods"] = queue
    if qs:
        out["queue"] = qs
    future = sorted((e for e in engine._events if e[1] == PHASE_ACTION), key=lambda e: (e[0], e[2]))
    for at, _phase, _seq, _kind, a in future:
        rel = (at - now) / US
        rel = int(rel) if rel == int(rel) else rel
        if a.verb == "delete":
            body = {"kind": a.kind, "name": a.name}
            if a.api_version:
                body = {"apiVersion": a.api_version, **body}
            if a.kind not in CLUSTER_SCOPED or a.api_version:
                body["namespace"] = a.namespace
        else:
            body = copy.deepcopy(a.manifest)
        actions.append({"at": rel, a.verb: body})
    if actions:
        out["actions"] = actions
    return out


# ----------------------------------------------------------------------------- annotations

def _message(e):
    return ", ".join(e.get("reasons") or [])


def _status(e):
    return SUCCESS if e.get("code") == "Success" else _message(e)


class _Attempt:
    def __init__(self):
        self.prefilter_status, self.prefilter = {}, {}
        self.filter, self.postfilter = {}, {}
        self.prescore, self.score, self.finalscore = {}, {}, {}
        self.reserve, self.permit, self.permit_timeout = {}, {}, {}
        self.prebind, self.bind = {}, {}
        self.selected = ""
        self.nominated = None
        self.postfilter_ran = False

    def annotations(self) -> dict:
        post = {}
        if self.postfilter_ran:
            for node, plugins in self.filter.items():
                if any(v != PASSED for v in plugins.values()):
                    post[node] = {}
            for node, plugins in self.postfilter.items():
                post.setdefault(node, {}).update(plugins)

        def js(v):
            return json.dumps(v, separators=(",", ":"), sort_keys=True)
        return {
            PREFILTER: js(self.prefilter), PREFILTER_STATUS: js(self.prefilter_status),
            FILTER: js(self.filter), POSTFILTER: js(post), PRESCORE: js(self.prescore),
            SCORE: js(self.score), FINALSCORE: js(self.finalscore), RESERVE: js(self.reserve),
            PERMIT: js(self.permit), PERMIT_TIMEOUT: js(self.permit_timeout), PREBIND: js(self.prebind),
            BIND: js(self.bind), SELECTED_NODE: self.selected,
        }


def result_annotations(events) -> dict:
    """pod key -> {annotation: value} for every pod that had a scheduling attempt."""
    attempts: dict = {}    # (pod, cycle) -> _Attempt
    latest: dict = {}      # pod -> [cycles]
    for e in events:
        typ = e.get("type")
        if typ == "CycleStart":
            attempts[(e["pod"], e["cycle"])] = _Attempt()
            latest.setdefault(e["pod"], []).append(e["cycle"])
            continue
        key = (e.get("pod") or e.get("preemptor"), e.get("cycle"))
        a = attempts.get(key)
        if a is None:
            continue
        if typ == "PluginResult":
            if e.get("dryRun"):
                continue
            point, plugin, node = e["point"], e["plugin"], e.get("node")
            if point == "PreFilter":
                a.prefilter_status[plugin] = _status(e)
            elif point == "Filter":
                a.filter.setdefault(node, {})[plugin] = PASSED if e.get("code") == "Success" else _message(e)
            elif point == "PostFilter":
                a.postfilter_ran = True
            elif point == "PreScore":
                a.prescore[plugin] = _status(e)
            elif point == "Score":
                a.score.setdefault(node, {})[plugin] = str(e.get("score"))
            elif point == "Reserve":
                a.reserve[plugin] = _status(e)
            elif point == "Permit":
                a.permit[plugin] = _status(e)
            elif point == "PreBind":
                a.prebind[plugin] = _status(e)
            elif point == "Bind":
                a.bind[plugin] = _status(e)
        elif typ == "HostSelected":
            for node, plugins in (e.get("detail") or {}).items():
                for plugin, v in plugins.items():
                    a.finalscore.setdefault(node, {})[plugin] = str(v.get("weighted"))
        elif typ == "CycleEnd":
            if e.get("result") == "Scheduled":
                a.selected = e.get("node") or ""
            if e.get("nominatedNode"):
                a.postfilter.setdefault(e["nominatedNode"], {})["DefaultPreemption"] = PREEMPTION_VICTIM
    out = {}
    for pod, cycles in latest.items():
        history = [attempts[(pod, c)].annotations() for c in cycles]
        ann = dict(history[-1])
        ann[RESULT_HISTORY] = json.dumps(history, separators=(",", ":"))
        out[pod] = ann
    return out


def annotated_pods(engine, events) -> dict:
    """A ``v1 List`` of the pods (as ``scenario_at`` writes them) carrying their result
    annotations: what kube-scheduler-simulator's tools read."""
    results = result_annotations(events)
    items = []
    sc = scenario_at(engine)
    for o in sc["objects"]:
        if o.get("kind") != "Pod":
            continue
        key = f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"
        if key in results:
            o = copy.deepcopy(o)
            o["metadata"].setdefault("annotations", {}).update(results[key])
        items.append(o)
    return {"apiVersion": "v1", "kind": "List", "items": items}
