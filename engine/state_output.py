"""The engine's state as SPEC.md §3 describes it (``python -m engine run --state``), read off the
loop's objects; nothing here changes anything.

Reads from the loop: the API objects (``pods``, ``deleted_pods``, ``custom_objects``, ``pvs``,
``pvcs``), the queue (``queue``), the latest QueuedPodInfos (``pinfos``), the bindings in flight
(``binding``), the frameworks (their waiting pods and PostFilter plugins), the clock (``now``)
and the metrics. Imports nothing of the engine's other pieces.
"""
from __future__ import annotations

from .framework.interface import Code
from .quantity import US
from .queue import UNSCHEDULABLE_PODS


def pod_phase(loop, pod) -> str:
    if pod.deletion_timestamp is not None:
        return "Terminating"
    if pod.node_name:
        return "Running"
    out = loop.binding.get(pod.key)
    if out is not None:
        if out.waiting is not None and out.waiting._fwk.waiting_pods.get(out.waiting.pod.uid) is out.waiting:
            return "Waiting"
        return "Binding"
    return "Pending"


def state(loop) -> dict:
    """The state of SPEC.md §3."""
    q = loop.queue
    pods = {}
    for key in sorted(loop.pods):
        pod = loop.pods[key]
        pi = loop.pinfos.get(key)
        phase = pod_phase(loop, pod)
        node = pod.node_name or None
        if phase == "Binding" or phase == "Waiting":
            node = loop.binding[key].host
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
        "time": loop.now / US,
        "schedulingCycle": q.scheduling_cycle,
        "moveRequestCycle": q.move_request_cycle,
        "queues": {
            "activeQ": [pi.pod.key for pi in q.active_q.ordered()],
            "backoffQ": [pi.pod.key for pi in q.pod_backoff_q.ordered()],
            "unschedulablePods": sorted(q.unschedulable_pods),
        },
        "pods": pods,
        "deletedPods": {k: loop.deleted_pods[k] for k in sorted(loop.deleted_pods)},
        "nominatedPods": {n: [p.key for p in lst] for n, lst in sorted(q.nominator.nominated_pods.items())},
        "metrics": {
            "pending_pods": q.pending_pods(),
            "queue_incoming_pods_total": dict(sorted(q.incoming_pods.items())),
            "schedule_attempts_total": dict(sorted(loop.metrics["schedule_attempts_total"].items())),
            "preemption_attempts_total": sum(getattr(p, "preemption_attempts", 0)
                                             for f in loop.frameworks.values() for p in f.post_filter_plugins),
            "preemption_victims_total": len(loop.metrics["preemption_victims"]),
            "unschedulable_pods": {k: v for k, v in sorted(q.unschedulable_reasons.items()) if v},
        },
    }
    if loop.has_custom_objects:
        # only for scenarios with custom resources, so that other scenarios' state stays as it was
        out["customObjects"] = custom_objects_state(loop)
        out = {k: v for k, v in out.items() if k != "metrics"} | {"metrics": out["metrics"]}
    if any(f.permit_plugins for f in loop.frameworks.values()):
        # only with a Permit plugin, so that other scenarios' state stays as it was
        out = {k: v for k, v in out.items() if k != "metrics"} | {"waitingPods": waiting_pods_state(loop),
                                                                   "metrics": out["metrics"]}
    if loop.uses_volumes:
        out["volumes"] = volume_state(loop)
    return out


def custom_objects_state(loop) -> dict:
    """``customObjects``: apiVersion/kind -> namespace/name -> manifest, sorted."""
    return {t: {k: loop.custom_objects[t][k].manifest for k in sorted(loop.custom_objects[t])}
            for t in sorted(loop.custom_objects) if loop.custom_objects[t]}


def waiting_pods_state(loop) -> dict:
    """``waitingPods``: every pod waiting on Permit, its node and its pending plugins'
    deadlines; ``result`` is ``Allowed``/``Rejected`` once the signal is given and until
    the binding cycle takes it (the same instant), else null."""
    res = {}
    for f in loop.frameworks.values():
        for wp in f.waiting_pods.pods.values():
            sig = wp.signal
            res[wp.pod.key] = {
                "node": wp.node_name,
                "since": wp.since / US,
                "plugins": {name: t.deadline / US for name, t in wp.pending_plugins.items()},
                "result": None if sig is None else ("Allowed" if sig.code == Code.Success else "Rejected"),
            }
    return {k: res[k] for k in sorted(res)}


def volume_state(loop) -> dict:
    """``volumes`` of the state (only in scenarios that use volumes): each claim's phase,
    volume and selected node, each PV's phase and claim (API objects, not assumed ones)."""
    from .objects import ANN_SELECTED_NODE
    return {
        "persistentVolumeClaims": {k: {"phase": c.phase, "volumeName": c.volume_name or None,
                                       "storageClassName": c.class_name or None,
                                       "selectedNode": c.annotations.get(ANN_SELECTED_NODE)}
                                   for k, c in sorted(loop.pvcs.items())},
        "persistentVolumes": {k: {"phase": v.phase, "storageClassName": v.storage_class_name or None,
                                  "claim": f"{v.claim_ref[0]}/{v.claim_ref[1]}" if v.claim_ref else None}
                              for k, v in sorted(loop.pvs.items())},
    }
