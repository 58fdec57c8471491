"""The binding cycle (upstream ``pkg/scheduler/schedule_one.go``: bindingCycle,
handleBindingCycleError; ``framework/runtime/framework.go``: WaitOnPermit), v1.28, in virtual
time: a pod the scheduling cycle assumed waits on Permit if a plugin asked it to (one timer
per plugin, ``framework/waiting_pods.py``), then PreBind and Bind run ``bindDuration`` later, and
the bind is observed (the pod is assigned). A failure unreserves, forgets the assumed pod and
requeues it (``schedule_one.handle_scheduling_failure``).

The loop it runs in gives it: the clock (``now``) and ``_push`` (a completion due later), the
API objects (``pods``, ``nodes``, ``_next_rv``), the cache, the queue, the bindings in flight
(``binding``), the trace and the metrics. It imports ``schedule_one`` (below it) for the
failure handling both cycles share, and nothing else of the engine's pieces.
"""
from __future__ import annotations

from . import schedule_one
from .framework import interface as fw
from .framework.interface import Code, MODE_OVERRIDE, NominatingInfo, Status
from .extender import extenders_binding
from .phases import PHASE_COMPLETION


def start_binding(loop, out):
    """The binding cycle starts; a pod that Permit parked first waits on permit."""
    key = out.pinfo.pod.key
    loop.binding[key] = out
    if out.waiting is None:
        loop._push(loop.now + loop.bind_duration, PHASE_COMPLETION, "bind", out)


def start_permit_timers(loop, wp):
    """newWaitingPod: one timer per plugin that asked to wait, fired at its deadline."""
    for timer in wp.pending_plugins.values():
        loop._push(timer.deadline, PHASE_COMPLETION, "permitTimeout", timer)


def stop_permit_timer(loop, timer):
    """timer.Stop(): the completion stays in the heap but no longer counts."""
    loop._pending_completions -= 1


def permit_signalled(loop, wp):
    """The first Allow-all, Reject or timeout reached the pod's channel: its binding cycle,
    blocked in WaitOnPermit, wakes at this instant (a completion due now)."""
    if loop._taking_signal_now is wp:
        return
    loop._push(loop.now, PHASE_COMPLETION, "permitDone", wp)


def wait_on_permit_returned(loop, wp):
    """WaitOnPermit returns (the pod leaves the waiting-pods map); bindingCycle goes on
    with PreBind and Bind (``bindDuration`` later), or, rejected, fails with a FitError on
    the one node and ``handleBindingCycleError``."""
    fwk = wp._fwk
    fwk.waiting_pods.remove(wp.pod.uid)
    key = wp.pod.key
    out = loop.binding.get(key)
    if out is None or out.waiting is not wp:
        return      # cannot happen: a waiting pod's binding cycle is in flight
    status = wp.signal
    if status.code == Code.Success:
        loop._push(loop.now + loop.bind_duration, PHASE_COMPLETION, "bind", out)
        return
    del loop.binding[key]
    fwk.cycle = out.cycle
    loop.trace.emit("BindFailed", pod=key, node=out.host, reasons=list(status.reasons))
    if status.is_unschedulable():
        status = schedule_one.wrap_single_node_failure(loop, out.pinfo.pod, out.host, status)
    handle_binding_cycle_error(loop, out, status)


def finish_binding(loop, out):
    """bindingCycle: PreBind, Bind; then the bind is observed (pod assigned)."""
    fwk, state, pinfo, host = out.fwk, out.state, out.pinfo, out.host
    key = pinfo.pod.key
    if loop.binding.get(key) is out:
        # only this binding's entry: a re-created pod of the same name may have its own
        # binding in flight (docs/examples/recreate.yaml), which stays "Binding"
        del loop.binding[key]
    fwk.cycle = out.cycle
    assumed = loop.cache.get_pod(key)
    if assumed is None or assumed.uid != pinfo.pod.uid:
        assumed = pinfo.pod.copy(node_name=host)
    st = fwk.run_pre_bind_plugins(state, assumed, host)
    if st is None:
        # bind: an extender that binds and is interested in the pod binds it instead of the
        # bind plugins (extendersBinding)
        bound, st = extenders_binding(loop, fwk, assumed, host, out.cycle) if loop.extenders else (False, None)
        if not bound:
            st = fwk.run_bind_plugins(state, assumed, host)
        if st is not None and st.code == Code.Success:
            st = None
    current = loop.pods.get(key)
    if st is None:
        if current is None or current.uid != pinfo.pod.uid:
            st = Status(Code.Error, [f'pods "{pinfo.pod.name}" not found'])
        elif host not in loop.nodes:
            st = Status(Code.Error, [f'nodes "{host}" not found'])
    if st is not None:
        loop.trace.emit("BindFailed", pod=key, node=host, reasons=list(st.reasons))
        handle_binding_cycle_error(loop, out, st)
        return
    bound = current.copy(node_name=host, resource_version=loop._next_rv(),
                         start_time=current.start_time if current.start_time is not None else loop.now)
    loop.pods[key] = bound
    loop.trace.emit("Bound", pod=key, node=host)
    schedule_one.count_attempt(loop, fwk, "scheduled")
    loop.metrics["pod_scheduling_attempts"].append(pinfo.attempts)
    # informers: the unassigned handler sees a delete, the assigned one an add
    loop.queue.delete(current)
    loop.cache.add_pod(bound)
    loop.queue.assigned_pod_added(bound)
    fwk.run_post_bind_plugins(state, bound, host)
    schedule_one.activate(loop, state)
    loop.queue.done(key)


def handle_binding_cycle_error(loop, out, status):
    fwk, pinfo = out.fwk, out.pinfo
    assumed = loop.cache.get_pod(pinfo.pod.key)
    if assumed is not None and assumed.uid != pinfo.pod.uid:
        assumed = None  # the cache now holds a newer pod of the same name
    fwk.run_reserve_plugins_unreserve(out.state, assumed or pinfo.pod, out.host)
    deferred = None
    if assumed is not None and loop.cache.is_assumed_pod(pinfo.pod.key, pinfo.pod.uid):
        loop.cache.forget_pod(assumed)
        if status.is_unschedulable():
            k = pinfo.pod.key
            deferred = lambda: loop.queue.move_all_to_active_or_backoff_queue(
                fw.AssignedPodDelete, assumed, None, lambda p: p.key != k)
        else:
            loop.queue.move_all_to_active_or_backoff_queue(fw.AssignedPodDelete, assumed, None, None)
    schedule_one.count_attempt(loop, fwk, "error" if status.code == Code.Error else "unschedulable")
    schedule_one.handle_scheduling_failure(loop, fwk, pinfo, status, NominatingInfo("", MODE_OVERRIDE), None)
    if deferred is not None:
        deferred()
