"""scheduleOne and the scheduling cycle (upstream ``pkg/scheduler/schedule_one.go``, v1.28):
Pop, PreFilter, the nominated node first, Filter from nextStartNodeIndex until
numFeasibleNodesToFind (``find_nodes_that_fit_pod``, ``filter_nodes``), PostFilter
(preemption), PreScore and Score (``prioritize_nodes``), ``select_host``; when the cycle ends
(``schedulingCycleDuration`` later, SPEC §4), assume, Reserve and Permit, or
``handle_scheduling_failure``, and the cycle's API writes (victim deletions, nominations).

Not upstream's: the Filter loop's screened and table paths (``filter_screened``,
``filter_on_table``: engine/nodetable.py, engine/resourcefit.py), which visit the same nodes,
record the same statuses and stop at the same node as the per-node loop.

The loop it runs in gives it: the clock (``now``), ``_push`` (the cycle's end), the queue, the
cache, the frameworks, the API objects it reads (``pods``), the trace, the metrics,
``cycle_in_flight``, ``next_start_node_index``, and three calls: ``_start_binding(outcome)``
(the binding cycle), ``_pod_delete(...)`` and ``_set_nominated_node_name(...)`` (API writes,
engine/eventhandlers.py). It imports none of those modules.
"""
from __future__ import annotations

from itertools import compress

import numpy as np

from .framework.cycle_state import CycleState
from .framework import interface as fw
from .framework.interface import Code, MODE_OVERRIDE, NominatingInfo, Status
from .framework.runtime import host_selected_reason
from .framework.types import Diagnosis, FitError
from .extender import find_nodes_that_pass_extenders, prioritize_with_extenders
from .phases import PHASE_COMPLETION
from .resourcefit import FilterSegment, ResourceFilter, table_names
from .trace import ScoreTable

NO_NODES_MESSAGE = "no nodes available to schedule pods"
# Filter screens the nodes through the node table (filter_screened) from this many nodes on:
# always; tests set it out of reach to run the per-node loop for comparison
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


def schedule_one(loop):
    """scheduleOne: Pop, then evaluate the whole scheduling cycle at this instant."""
    pinfo = loop.queue.pop()
    key = pinfo.pod.key
    loop.pinfos[key] = pinfo
    pod = pinfo.pod
    fwk = loop.frameworks[pod.scheduler_name]
    cycle = loop.queue.scheduling_cycle
    rec = loop.cycle_state_recorder      # the CycleState inspector's (off: None)
    out = CycleOutcome(pinfo, fwk, CycleState() if rec is None else CycleState(rec.for_cycle(cycle, key)), cycle)
    out.end = loop.now + loop.cycle_duration
    loop.cycle_in_flight = out
    if pod.deletion_timestamp is not None or loop.cache.is_assumed_pod(key, pod.uid):
        # skipPodSchedule returns at once (and v1.28 does not call Done here)
        out.skipped = True
        out.end = loop.now
        loop.trace.emit("CycleSkipped", pod=key, cycle=cycle,
                        reason="the pod is being deleted" if pod.deletion_timestamp is not None
                        else "the pod is already assumed on a node (a stale copy was queued)")
        loop._push(out.end, PHASE_COMPLETION, "cycleEnd", out)
        return
    loop.trace.emit("CycleStart", pod=key, cycle=cycle, attempts=pinfo.attempts,
                    priority=pod.priority, nominatedNode=pod.nominated_node_name or None)
    fwk.cycle = cycle
    fwk.set_snapshot(loop.cache.snapshot())
    loop._cycle_writes = out.writes
    try:
        scheduling_cycle(loop, out)
    finally:
        loop._cycle_writes = None
        fwk.set_snapshot(None)
    loop._push(out.end, PHASE_COMPLETION, "cycleEnd", out)


def scheduling_cycle(loop, out: CycleOutcome):
    fwk, state, pod = out.fwk, out.state, out.pinfo.pod
    snap = fwk.snapshot()
    if snap.num_nodes() == 0:
        out.status = Status(Code.UnschedulableAndUnresolvable, [NO_NODES_MESSAGE])
        out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
        out.diagnosis = Diagnosis()
        return
    feasible, diagnosis, err = find_nodes_that_fit_pod(loop, fwk, state, pod, snap)
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
        if loop.trace.enabled:
            loop.trace.emit("HostSelected", pod=pod.key, cycle=out.cycle, node=host, scores=None,
                            ties=[host], reason="it is the only feasible node, so scoring is skipped")
    else:
        totals, st = prioritize_nodes(loop, fwk, state, pod, feasible)
        if st is not None:
            out.status = st
            out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
            return
        host = select_host(loop, pod, out.cycle, totals)
    out.host = host


def assume_reserve_permit(loop, out: CycleOutcome):
    """The end of schedulingCycle: assume the pod on its node, then Reserve and Permit.

    Upstream does this after scoring, as the last steps of the cycle; the simulator does it
    when the cycle ends, so an update of the pod received during the cycle still reaches
    the queue (as a fresh copy), as it would upstream before the assume.
    """
    fwk, state, host = out.fwk, out.state, out.host
    pod = out.pinfo.pod          # the version popped, as upstream's DeepCopy of podInfo
    assumed = pod.copy(node_name=host)
    loop.cache.assume_pod(assumed)
    loop.queue.nominator.delete_nominated_pod_if_exists(pod)
    st = fwk.run_reserve_plugins_reserve(state, assumed, host)
    if st is not None:
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        loop.cache.forget_pod(assumed)
        out.status = wrap_single_node_failure(loop, pod, host, st)
        out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
        return
    st, waiting = fwk.run_permit_plugins(state, assumed, host)
    out.waiting = waiting
    if st is not None and st.code != Code.Wait:
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        loop.cache.forget_pod(assumed)
        out.status = wrap_single_node_failure(loop, pod, host, st)
        out.nominating_info = NominatingInfo("", MODE_OVERRIDE)
        return
    out.status = None
    activate(loop, state)


def activate(loop, state):
    """Move the pods plugins put in PodsToActivate to activeQ (Activate)."""
    if state.pods_to_activate:
        pods = [loop.pods[k] for k in list(state.pods_to_activate) if k in loop.pods]
        state.pods_to_activate.clear()
        loop.queue.activate(pods)


def wrap_single_node_failure(loop, pod, host, st):
    if st.is_unschedulable():
        d = Diagnosis({host: st}, {st.failed_plugin} if st.failed_plugin else set())
        fit = FitError(pod, 1, d)
        out = Status(st.code, [fit.message()], st.failed_plugin, err=fit)
        return out
    return st


def find_nodes_that_fit_pod(loop, fwk, state, pod, snap):
    """findNodesThatFitPod: PreFilter; the nominated node first; then Filter from
    nextStartNodeIndex until enough feasible nodes are found."""
    diagnosis = Diagnosis()
    all_nodes = snap.node_info_list
    pre_res, s = fwk.run_pre_filter_plugins(state, pod)
    if s is None and state.recorder is not None:    # the CycleState inspector: Filter as a whole
        state.recorder.enter(state, "Filter", None)
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
            feasible, err = find_nodes_that_pass_filters(loop, fwk, state, pod, diagnosis, [ni], nominated=True)
            if feasible and loop.extenders and err is None:
                # evaluateNominatedNode runs the extenders too; an error there is only logged
                # upstream, and the full pass follows
                feasible, err = find_nodes_that_pass_extenders(loop, fwk, pod, feasible,
                                                               diagnosis.node_to_status_map, nominated=True)
                feasible = feasible or []
            if feasible:
                if loop.trace.enabled:
                    loop.trace.emit("NominatedNodeEvaluated", pod=pod.key, cycle=fwk.cycle, node=ni.name, fits=True,
                                    message=f"its nominated node {ni.name} is tried first and passes every filter, "
                                            f"so it is chosen without looking at other nodes")
                return feasible, diagnosis, None
            if loop.trace.enabled:
                st = diagnosis.node_to_status_map.get(ni.name)
                loop.trace.emit("NominatedNodeEvaluated", pod=pod.key, cycle=fwk.cycle, node=ni.name, fits=False,
                                message=f"its nominated node {ni.name} is tried first but fails "
                                        f"({st.failed_plugin + ': ' if st and st.failed_plugin else ''}"
                                        f"{st.message() if st else 'error'}); every node is evaluated")
    nodes = all_nodes
    if pre_res is not None and not pre_res.all_nodes():
        nodes = [ni for ni in all_nodes if ni.name in pre_res.node_names]
    feasible, err = find_nodes_that_pass_filters(loop, fwk, state, pod, diagnosis, nodes)
    processed = len(feasible) + len(diagnosis.node_to_status_map)
    if nodes:
        loop.next_start_node_index = (loop.next_start_node_index + processed) % len(nodes)
    if err is not None:
        return None, diagnosis, err
    if loop.extenders:
        feasible, err = find_nodes_that_pass_extenders(loop, fwk, pod, feasible, diagnosis.node_to_status_map)
        if err is not None:
            return None, diagnosis, err
    return feasible, diagnosis, None


def find_nodes_that_pass_filters(loop, fwk, state, pod, diagnosis, nodes, nominated=False):
    out = filter_nodes(loop, fwk, state, pod, diagnosis, nodes, nominated)
    # the Filter results reach the trace's sinks now, while the engine is as it was when
    # the plugins ran (a sink may read the engine's state at each event)
    loop.trace.flush()
    return out


def filter_nodes(loop, fwk, state, pod, diagnosis, nodes, nominated):
    n = len(nodes)
    if n == 0:
        return [], None
    to_find = fwk.num_feasible_nodes_to_find(n)
    # nextStartNodeIndex was reduced modulo the previous cycle's node count: after nodes
    # are deleted it may be n or more (the loop below reads it modulo n, as upstream does)
    start = 0 if nominated else loop.next_start_node_index % n
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
                rf = ResourceFilter.for_cycle(fwk, state, pod, table)
                if rf is not None and loop.trace.enabled and (rf.node_only is not None or fwk._frows):
                    # the trace on: the table decides only where it decides every node (the
                    # Filter results are then recorded as its columns: FilterSegment), and not
                    # when results of this pod are still to be handed over (they would share a
                    # batch)
                    rf = None
                if rf is not None:
                    fail = rf.filter_failures()
                    if rf.node_only is None:
                        return filter_on_table(loop, diagnosis, nodes, table, rf, fail, to_find, start,
                                               (fwk, state, pod) if loop.trace.enabled else None)
                    rows = np.flatnonzero(fail & ~rf.node_only)
                    codes = dict(zip(rows.tolist(), rf.filter_codes(rows).tolist()))
                    return filter_screened(loop, fwk, state, pod, diagnosis, nodes, table,
                                                 fail | rf.node_only, to_find, start, check,
                                                 run, nominated_pods, (rf, codes))
                screen = fwk.filter_suspects(state, pod, table)
                if screen is not False:
                    suspects, known = screen
                    return filter_screened(loop, fwk, state, pod, diagnosis, nodes, table, suspects,
                                                 to_find, start, check, run, nominated_pods, known=known)
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
                if loop.trace.enabled:
                    loop.trace.emit("FilterStopped", pod=pod.key, cycle=fwk.cycle, evaluated=i + 1, nodes=n,
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


def filter_screened(loop, fwk, state, pod, diagnosis, nodes, table, suspects, to_find, start,
                     check, run, nominated_pods, rf=None, known=None):
    """``filter_nodes``' loop with the nodes no Filter plugin can reject counted feasible
    without calling the plugins (Framework.filter_suspects): the same nodes are visited in
    the same order, the same suspects evaluated, the same statuses recorded and the search
    stops at the same node. Nodes with nominated pods are evaluated with them, as before.

    A suspect without nominated pods whose status a screen knows (``known``:
    Framework.filter_suspects') gets it without calling the plugins: those nodes are counted
    between the nodes evaluated as ``filter_on_table`` counts Fit's failures, their statuses
    recorded in visiting order, and with the trace on the rows the per-node loop would record
    (the plugins before the one rejecting the node passed).

    With ``rf`` (an engine.resourcefit.ResourceFilter and the filter_codes of the rows
    that fail, by row; the trace off) ``suspects`` are the nodes that fail and those a
    node-only plugin might reject: the former's statuses come from the codes, the latter
    are evaluated by the plugins."""
    n = len(nodes)
    positions = np.flatnonzero(suspects) if suspects is not None else np.zeros(0, dtype=np.int64)
    if start and len(positions):
        positions = (positions - start) % n
        positions.sort()
    row = table.row
    nominated = ([(row[name] - start) % n for name, pods in nominated_pods.items() if pods and name in row]
                 if nominated_pods and rf is None else [])
    kpos = None         # the positions of the suspects with known statuses, ascending
    if known is not None:
        kinds, krows = known
        # one Status per kind for all the nodes: the diagnosis' statuses are only read
        # (FitError.message, preemption), as the trace's rows are
        shared = [None] + [Status(code, reasons, name) for code, reasons, name, _i in kinds[1:]]
        if nominated:
            krows = krows.copy()
            krows[[(start + j) % n for j in nominated]] = 0
        kcodes = krows[(positions + start) % n if start else positions]
        is_known = kcodes > 0
        kpos, kcodes = positions[is_known], kcodes[is_known]
        positions = positions[~is_known]
    positions = positions.tolist()
    if nominated:
        positions = sorted(set(positions).union(nominated))
    tr = loop.trace.enabled
    if tr:
        order = nodes[start:] + nodes[:start] if start else nodes
        skip = state.skip_filter_plugins
        names = [pl.name for pl in fwk.filter_plugins if not (skip and pl.name in skip)]

        def passed(lo, hi):       # the rows of nodes lo..hi-1 (positions), every plugin Success
            fwk.add_passed_filter_rows(pod, names, [ni.name for ni in order[lo:hi]])
    statuses = diagnosis.node_to_status_map
    plugins = diagnosis.unschedulable_plugins
    failed = []
    ki = 0              # the known statuses before kpos[ki] are recorded
    count = 0           # feasible nodes so far
    prev = 0            # the first position not yet accounted for
    stop = None         # the position of the passing node that overflowed to_find
    err = None
    end = n
    for j in positions + [n]:
        gap = j - prev
        if kpos is not None:        # the known failures before j
            kj = ki + int(kpos[ki:].searchsorted(j))
            f = kpos[ki:kj]
            gap -= len(f)
        if count + gap > to_find:
            need = to_find - count      # the passing nodes still kept
            if kpos is not None:
                f = f[:int(np.searchsorted(f - np.arange(len(f)), prev + need, side="right"))]
                kj = ki + len(f)
            stop = prev + need + (len(f) if kpos is not None else 0)
            j = stop + 1
        if kpos is not None and len(f):
            codes = kcodes[ki:kj]
            rows = (f + start) % n if start else f
            codes = codes.tolist()
            st = list(map(shared.__getitem__, codes))
            f = f.tolist()
            fnames = list(map(table_names(table).__getitem__, rows.tolist()))
            if tr:
                lo = prev
                for p, name, status, k in zip(f, fnames, st, codes):
                    passed(lo, p)
                    fwk.add_rejected_filter_rows(pod, names[:kinds[k][3] + 1], name, status)
                    lo = p + 1
                prev = lo
            statuses.update(zip(fnames, st))
            plugins.update({kinds[k][2] for k in set(codes)})
            failed.extend(f)
            ki = kj
        if tr:
            passed(prev, min(j, n))
        if stop is not None or j == n:
            break
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
    if stop is not None:
        end = stop
        if tr:
            name = nodes[(start + stop) % n].name
            loop.trace.emit("FilterStopped", pod=pod.key, cycle=fwk.cycle, evaluated=stop + 1, nodes=n,
                            feasible=to_find,
                            message=f"found {to_find} feasible nodes (numFeasibleNodesToFind for {n} "
                                    f"nodes); the next node that passed, {name}, stopped the search "
                                    f"and is not kept, so the remaining {n - stop - 1} are not evaluated")
    return feasible_nodes(nodes, table, start, end, failed), err


def feasible_nodes(nodes, table, start, end, failed):
    """The nodes at positions 0..end-1 from ``start`` but ``failed`` (positions, ascending),
    as a FeasibleNodes that knows their rows in the node table."""
    n = len(nodes)
    if not len(failed):
        feasible = FeasibleNodes(nodes[start:start + end] if start + end <= n
                                 else nodes[start:] + nodes[:start + end - n])
        rows = np.arange(start, start + end)
    else:
        keep = np.ones(end, dtype=bool)
        keep[failed] = False
        rows = np.flatnonzero(keep)
        rows += start
    if start:
        rows %= n
    if len(failed):
        feasible = FeasibleNodes(map(nodes.__getitem__, rows.tolist()))
    # where each feasible node is in the node table, for Score (resource_allocation._table_rows)
    feasible.table = table
    feasible.rows = rows
    return feasible


def filter_on_table(loop, diagnosis, nodes, table, rf, fail, to_find, start, traced=None):
    """``filter_nodes``' loop when every node's Filter outcome is known from the table
    (``fail``: engine.resourcefit.ResourceFilter.filter_failures; no node-only plugin
    might reject a node): the nodes from ``start`` are visited until the passing node that
    overflows numFeasibleNodesToFind, and the failed ones among them get Fit's statuses, in
    visiting order. With the trace on (``traced``: the framework, cycle state and pod) the
    Filter results of the nodes visited are recorded as the table's codes (FilterSegment),
    then FilterStopped if the search stopped early, as the per-node loop emits them."""
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
    if traced is not None:
        _trace_on_table(loop, traced, nodes, table, rf, to_find, start, end)
    return feasible_nodes(nodes, table, start, end, failed.tolist()), None


def _trace_on_table(loop, traced, nodes, table, rf, to_find, start, end):
    fwk, state, pod = traced
    n = len(nodes)
    visited = end + 1 if end < n else n     # the passing node that stopped the search too
    rows = np.arange(start, start + visited)
    if start:
        rows %= n
    codes, has = rf.packed_codes(rows)
    skip = state.skip_filter_plugins
    plugins = tuple(pl.name for pl in fwk.filter_plugins if not (skip and pl.name in skip))
    tr = loop.trace
    tr.emit_segment(FilterSegment(pod.key, fwk.cycle, plugins, plugins.index(rf.fit_name), table_names(table),
                                  start, visited, codes, has))
    if end < n:
        name = nodes[(start + end) % n].name
        tr.emit("FilterStopped", pod=pod.key, cycle=fwk.cycle, evaluated=end + 1, nodes=n, feasible=to_find,
                message=f"found {to_find} feasible nodes (numFeasibleNodesToFind for {n} "
                        f"nodes); the next node that passed, {name}, stopped the search "
                        f"and is not kept, so the remaining {n - end - 1} are not evaluated")


def prioritize_nodes(loop, fwk, state, pod, feasible):
    """prioritizeNodes: every node scores 1 when there is neither a Score plugin nor an
    extender; else PreScore, Score, and the extenders' scores added (engine/extender.py)."""
    if not fwk.score_plugins and not loop.extenders:
        return [(ni.name, 1, {}) for ni in feasible], None
    if feasible.__class__ is FeasibleNodes and fwk.out_of_tree_scoring():
        feasible.table = None       # such a plugin may reorder the list it is given
    st = fwk.run_pre_score_plugins(state, pod, feasible)
    if st is not None:
        return None, st
    totals, st = fwk.run_score_plugins(state, pod, feasible)
    if st is None and loop.extenders:
        totals = prioritize_with_extenders(loop, fwk, pod, feasible, totals)
    return totals, st


def select_host(loop, pod, cycle, totals):
    """selectHost: the highest total; among ties, the first in evaluation order
    (upstream samples the tie set at random; SPEC §4)."""
    tot = getattr(totals, "totals", None)
    if tot is None:     # prioritize_nodes' (node, 1, {}) rows: nothing scores
        names, tot = [n for n, _t, _d in totals], [t for _n, t, _d in totals]
    else:
        names = totals.names
    best = max(tot)
    host = names[tot.index(best)]
    if not loop.trace.enabled:
        return host
    tied = tot.count(best)
    table = getattr(totals, "table", None)
    if table is not None:
        # scores, detail and ties built from the cycle's ScoreSegment only when read
        # (trace.ScoreTable); without extenders, a segment with events is not handed over yet
        # (no event since: Trace.pend) and HostSelected joins it
        scored, extra = table
        if not extra and scored.n and scored.start is None:
            scored.select(host, best, tied)
            loop.trace.flush()
            return host
        loop.trace.emit_deferred("HostSelected", pod=pod.key, cycle=cycle, node=host,
                                 scores=ScoreTable("scores", scored, extra),
                                 detail=ScoreTable("detail", scored, extra),
                                 ties=ScoreTable("ties", scored, extra),
                                 reason=host_selected_reason(best, tied))
    else:
        loop.trace.emit("HostSelected", pod=pod.key, cycle=cycle, node=host,
                        scores={n: t for n, t, _ in totals},
                        detail={n: d for n, _t, d in totals},
                        ties=list(compress(names, map(best.__eq__, tot))),
                        reason=host_selected_reason(best, tied))
    return host


def finish_cycle(loop, out: CycleOutcome):
    loop.cycle_in_flight = None
    if out.skipped:
        return
    pod = out.pinfo.pod
    if out.status is None:
        fwk = out.fwk
        fwk.cycle = out.cycle
        assume_reserve_permit(loop, out)
    if out.status is None:
        loop.trace.emit("CycleEnd", pod=pod.key, cycle=out.cycle, result="Scheduled", node=out.host,
                        nominatedNode=None)
        loop._start_binding(out)
        return
    result = "Error" if out.status.code == Code.Error else "Unschedulable"
    nom = None
    if out.nominating_info is not None and out.nominating_info.mode == MODE_OVERRIDE:
        nom = out.nominating_info.nominated_node_name or None
    loop.trace.emit("CycleEnd", pod=pod.key, cycle=out.cycle, result=result, node=None, nominatedNode=nom,
                    message=out.status.message(),
                    unschedulablePlugins=sorted(out.diagnosis.unschedulable_plugins) if out.diagnosis else [])
    count_attempt(loop, out.fwk, "error" if result == "Error" else "unschedulable")
    handle_scheduling_failure(loop, out.fwk, out.pinfo, out.status, out.nominating_info, out.diagnosis)
    for w in out.writes:
        w()


def count_attempt(loop, fwk, result):
    m = loop.metrics["schedule_attempts_total"]
    k = f"{result}/{fwk.profile_name}"
    m[k] = m.get(k, 0) + 1


def handle_scheduling_failure(loop, fwk, pinfo, status, nominating_info, diagnosis):
    """handleSchedulingFailure: record the rejecting plugins, requeue the latest version of
    the pod, record the nomination, and patch nominatedNodeName if it changes."""
    if isinstance(status.err, FitError):
        pinfo.unschedulable_plugins = set(p for p in status.err.diagnosis.unschedulable_plugins if p)
    key = pinfo.pod.key
    cached = loop.pods.get(key)
    if cached is None:
        loop.trace.emit("QueueTransition", pod=key, **{"from": None, "to": None}, event=fw.ScheduleAttemptFailure,
                        message="the pod no longer exists, so it is not requeued")
        loop.queue.done(key)
    elif cached.node_name:
        loop.queue.done(key)
    else:
        pinfo.pod = cached
        loop.queue.add_unschedulable_if_not_present(pinfo, loop.queue.scheduling_cycle)
    pod = cached or pinfo.pod
    loop.queue.nominator.add_nominated_pod(pod, nominating_info)
    if cached is not None and nominating_info is not None and nominating_info.mode == MODE_OVERRIDE \
            and nominating_info.nominated_node_name != cached.nominated_node_name:
        loop._set_nominated_node_name(cached, nominating_info.nominated_node_name)


def delete_victim(loop, victim, preemptor, plugin_name="DefaultPreemption"):
    """Queued by prepareCandidate; runs when the cycle ends.  A victim waiting on Permit is
    rejected ("preempted", by ``plugin_name``) instead of deleted, as prepareCandidate does."""
    def write():
        fwk = loop.frameworks.get(victim.scheduler_name)
        wp = fwk.get_waiting_pod(victim.uid) if fwk is not None else None
        if wp is not None:
            wp.reject(plugin_name, "preempted")
        else:
            loop._pod_delete(victim.key, None, "Preempted", preemptor.key)
        loop.metrics["preemption_victims"].append(victim.key)
    loop._cycle_writes.append(write)


def clear_nominated_node_name(loop, pods, reason=""):
    def write():
        for p in pods:
            loop._set_nominated_node_name(p, "")
    loop._cycle_writes.append(write)
