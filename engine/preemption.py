"""Preemption's generic evaluator (upstream ``pkg/scheduler/framework/preemption/preemption.go``, v1.28).

``Evaluator.preempt`` follows upstream's numbered steps:

0. re-read the preemptor from the API (its latest nominatedNodeName);
1. ``pod_eligible_to_preempt_others`` (the plugin's);
2. ``find_candidates``: ``nodes_where_preemption_might_help`` (skip nodes whose filter status is
   UnschedulableAndUnresolvable), then ``dry_run_preemption`` on a clone of each node and of
   the cycle state, calling the plugin's ``select_victims_on_node``;
3. (extenders: not modelled);
4. ``select_candidate`` -> ``pick_one_node_for_preemption``;
5. ``prepare_candidate``: the victims' deletions and the clearing of lower-priority pods'
   nominations on the chosen node.  In the simulator these API writes are queued on the
   cycle and take effect when the cycle ends (SPEC §4).

Where upstream is random (the dry run's start offset) or parallel (its early stop), the
simulator starts at offset 0 and visits nodes in order.  Every step is traced: dry-run Filter
calls carry ``dryRun: true``; each node examined gets a ``PreemptionNodeResult`` (why it is or
is not a candidate); reprieves are ``ReprieveStep``; candidates ``PreemptionCandidate``; the
pick is ``PreemptionPick`` with every candidate's value for every criterion.
"""
from __future__ import annotations

import numpy as np

from .framework.interface import (Code, MODE_OVERRIDE, NominatingInfo, PostFilterResult, Status)
from .framework.types import Diagnosis, FitError

INT32_MAX = 2**31 - 1

CRITERIA = ("minNumPDBViolatingVictims", "minHighestPriorityVictim", "minSumPriorities",
            "minNumPods", "latestStartTime")


class Candidate:
    __slots__ = ("name", "victims", "num_pdb_violations")

    def __init__(self, name, victims, num_pdb_violations):
        self.name = name
        self.victims = victims
        self.num_pdb_violations = num_pdb_violations


def pod_start_time(pod, now: int) -> int:
    """util.GetPodStartTime: status.startTime, else now."""
    return pod.start_time if pod.start_time is not None else now


def more_important_pod(p1, p2, now: int) -> bool:
    """util.MoreImportantPod: higher priority, then earlier start time."""
    if p1.priority != p2.priority:
        return p1.priority > p2.priority
    return pod_start_time(p1, now) < pod_start_time(p2, now)


def sort_more_important(pods: list, now: int) -> list:
    """A stable sort by MoreImportantPod (upstream's sort is not stable; equal pods keep the
    node's pod order here, as SPEC §4 says)."""
    return sorted(pods, key=lambda p: (-p.priority, pod_start_time(p, now)))


def get_earliest_pod_start_time(victims: list, now: int):
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    if not victims:
        return None
    earliest = pod_start_time(victims[0], now)
    max_priority = victims[0].priority
    for p in victims:
        if p.priority == max_priority:
            t = pod_start_time(p, now)
            if t < earliest:
                earliest = t
        elif p.priority > max_priority:
            max_priority = p.priority
            earliest = pod_start_time(p, now)
    return earliest


def criterion_values(c: Candidate, now: int) -> dict:
    """The score of a candidate under each pickOneNodeForPreemption criterion (higher wins)."""
    v = c.victims
    earliest = get_earliest_pod_start_time(v, now)
    return {
        "minNumPDBViolatingVictims": -c.num_pdb_violations,
        "minHighestPriorityVictim": -v[0].priority,
        "minSumPriorities": -sum(p.priority + INT32_MAX + 1 for p in v),
        "minNumPods": -len(v),
        "latestStartTime": earliest if earliest is not None else -(2**63),
    }


def pick_one_node_for_preemption(candidates: list, now: int):
    """pickOneNodeForPreemption.  Returns (node name, deciding criterion, per-node values).

    Criteria in upstream's order: fewest PDB violations; lowest highest-priority victim
    (``victims[0]``); smallest sum of (priority + 2^31); fewest victims; latest earliest start
    time among the highest-priority victims; then the first remaining candidate.
    """
    if not candidates:
        return None, None, {}
    values = {c.name: criterion_values(c, now) for c in candidates}
    remaining = [c.name for c in candidates]
    if len(remaining) == 1:
        return remaining[0], "onlyCandidate", values
    for crit in CRITERIA:
        best = max(values[n][crit] for n in remaining)
        selected = [n for n in remaining if values[n][crit] == best]
        if len(selected) == 1:
            return selected[0], crit, values
        remaining = selected
    return remaining[0], "firstInNodeOrder", values


class Evaluator:
    """preemption.Evaluator.  ``interface`` is the PostFilter plugin: it provides
    ``get_offset_and_num_candidates``, ``select_victims_on_node``,
    ``pod_eligible_to_preempt_others`` and ``plugin_name``."""

    def __init__(self, plugin_name, handle, state, interface):
        self.plugin_name = plugin_name
        self.handle = handle
        self.state = state
        self.interface = interface

    def preempt(self, pod, m: dict):
        h = self.handle
        tr = h.trace
        # 0) the latest version of the preemptor
        latest = h.get_pod(pod.key)
        if latest is None:
            return None, Status(Code.Error, [f"pod {pod.key} not found"])
        pod = latest
        # 1) eligibility
        ok, msg = self.interface.pod_eligible_to_preempt_others(pod, m.get(pod.nominated_node_name))
        if not ok:
            if tr.enabled:
                tr.emit("PreemptionIneligible", preemptor=pod.key, reason=msg, cycle=h.cycle)
            return None, Status(Code.Unschedulable, [msg])
        # 2) candidates
        candidates, node_to_status, err = self.find_candidates(pod, m)
        if err is not None and not candidates:
            return None, err
        if not candidates:
            fit = FitError(pod, len(node_to_status), Diagnosis(node_to_status))
            return PostFilterResult(NominatingInfo("", MODE_OVERRIDE)), Status(Code.Unschedulable, [fit.message()])
        # 4) the best candidate
        best = self.select_candidate(pod, candidates)
        if best is None or not best.name:
            return None, Status(Code.Unschedulable, ["no candidate node for preemption"])
        # 5) prepare
        status = self.prepare_candidate(best, pod)
        if status is not None and status.code != Code.Success:
            return None, status
        return PostFilterResult(NominatingInfo(best.name, MODE_OVERRIDE)), Status(Code.Success)

    def find_candidates(self, pod, m):
        h = self.handle
        all_nodes = h.snapshot().node_info_list
        if not all_nodes:
            return [], {}, Status(Code.Error, ["no nodes available"])
        potential, unsched_status = self.nodes_where_preemption_might_help(all_nodes, m, pod)
        if not potential:
            # Preemption cannot help anywhere: clear the pod's nominated node (an API write).
            if pod.nominated_node_name:
                h.clear_nominated_node_name([pod], reason="preemption will not help on any node")
            return [], unsched_status, None
        pdbs = h.pdbs()
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        candidates, statuses, err = self.dry_run_preemption(pod, potential, pdbs, offset, num_candidates)
        statuses.update(unsched_status)
        return candidates, statuses, err

    def nodes_where_preemption_might_help(self, nodes, m, pod):
        tr = self.handle.trace
        potential, statuses = [], {}
        for ni in nodes:
            st = m.get(ni.name)
            if st is not None and st.code == Code.UnschedulableAndUnresolvable:
                statuses[ni.name] = Status(Code.UnschedulableAndUnresolvable, ["Preemption is not helpful for scheduling"])
                if tr.enabled:
                    tr.emit("PreemptionNodeResult", preemptor=pod.key, node=ni.name, candidate=False,
                            code="UnschedulableAndUnresolvable", cycle=self.handle.cycle,
                            reason=f"skipped: its filter status ({st.failed_plugin}: {st.message()}) is "
                                   f"UnschedulableAndUnresolvable, so removing pods cannot help")
                continue
            potential.append(ni)
        return potential, statuses

    def dry_run_preemption(self, pod, potential, pdbs, offset, num_candidates):
        """DryRunPreemption, sequential from ``offset``; stops once a non-violating candidate
        exists and numCandidates candidates were found."""
        h = self.handle
        tr = h.trace
        non_violating, violating = [], []
        statuses = {}
        errs = []
        n = len(potential)
        on_table = self._select_victims_on_table(pod, pdbs) if not tr.enabled else None
        if on_table is not None and on_table.per_node is None:
            return on_table.dry_run(potential, offset, num_candidates)
        for i in range(n):
            ni = potential[(offset + i) % n]
            if on_table is not None:
                victims, num_viol, status = on_table.select(ni)
            else:
                victims, num_viol, status = self.interface.select_victims_on_node(
                    self.state.clone(), pod, ni.clone(), pdbs)
            if (status is None or status.code == Code.Success) and victims:
                c = Candidate(ni.name, victims, num_viol)
                if num_viol == 0:
                    if len(non_violating) < num_candidates:
                        non_violating.append(c)
                else:
                    if len(violating) < num_candidates:
                        violating.append(c)
                if tr.enabled:
                    tr.emit("PreemptionCandidate", preemptor=pod.key, node=ni.name,
                            victims=[v.key for v in victims], pdbViolations=num_viol, cycle=h.cycle)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    if tr.enabled and i + 1 < n:
                        tr.emit("PreemptionDryRunStop", preemptor=pod.key, cycle=h.cycle,
                                examined=i + 1, potentialNodes=n, numCandidates=num_candidates,
                                reason=f"found {len(non_violating) + len(violating)} candidate(s) "
                                       f"(at least one violating no PodDisruptionBudget), which reaches "
                                       f"numCandidates={num_candidates}")
                    break
                continue
            if (status is None or status.code == Code.Success) and not victims:
                status = Status(Code.Error, [f'expected at least one victim pod on node "{ni.name}"'])
            if status.code == Code.Error:
                errs.append(status)
            statuses[ni.name] = status
            if tr.enabled:
                tr.emit("PreemptionNodeResult", preemptor=pod.key, node=ni.name, candidate=False,
                        code=status.code.name, cycle=h.cycle,
                        reason=(f"{status.failed_plugin + ': ' if status.failed_plugin else ''}{status.message()}"))
        err = None
        if errs:
            err = Status(Code.Error, [e.message() for e in errs])
        return non_violating + violating, statuses, err

    def _select_victims_on_table(self, pod, pdbs):
        """DefaultPreemption's SelectVictimsOnNode for every node at once (``TableVictims``)
        when it reduces to NodeResourcesFit's arithmetic (engine.resourcefit: the cycle's
        Filter is Fit plus node-only plugins and no PreFilter extension is active) and no
        PodDisruptionBudget exists; None otherwise (the caller goes node by node)."""
        from .plugins.defaultpreemption import DefaultPreemption
        from .resourcefit import ResourceFilter
        if pdbs or type(self.interface) is not DefaultPreemption:
            return None
        h = self.handle
        snap = h.snapshot()
        table = snap.node_table() if snap is not None else None
        rf = ResourceFilter.for_cycle(h, self.state, pod, table)
        if rf is None:
            return None
        return TableVictims(self, pod, pdbs, rf, table.victims(pod.priority, h.now()))

    def select_candidate(self, pod, candidates):
        h = self.handle
        now = h.now()
        if len(candidates) == 1:
            best, crit, values = candidates[0].name, "onlyCandidate", {candidates[0].name: criterion_values(candidates[0], now)}
        else:
            best, crit, values = pick_one_node_for_preemption(candidates, now)
        if h.trace.enabled:
            h.trace.emit("PreemptionPick", preemptor=pod.key, node=best, criterion=crit, cycle=h.cycle,
                         criteria=list(CRITERIA),
                         candidates=[{"node": c.name, "victims": [v.key for v in c.victims],
                                      "pdbViolations": c.num_pdb_violations, "values": values[c.name]}
                                     for c in candidates])
        for c in candidates:
            if c.name == best:
                return c
        return None

    def prepare_candidate(self, c: Candidate, pod):
        """prepareCandidate: delete the victims; clear the nominations of lower-priority pods
        nominated to the node.  The writes are applied when the cycle ends."""
        h = self.handle
        for v in c.victims:
            h.delete_victim(v, pod, self.plugin_name)
        lower = [p for p in h.nominator.nominated_pods_for_node(c.name) if p.priority < pod.priority]
        if lower:
            h.clear_nominated_node_name(lower, reason=f"preemptor {pod.key} (priority {pod.priority}) "
                                                      f"takes node {c.name}")
        return None


class TableVictims:
    """DefaultPreemption's SelectVictimsOnNode (engine.plugins.defaultpreemption) evaluated for
    every node of the node table at once, where it is NodeResourcesFit's arithmetic
    (``Evaluator._select_victims_on_table``), as it would run on a clone of each node:

    remove the pods of lower priority (none: UnschedulableAndUnresolvable, "No preemption
    victims found for incoming pod"); check the preemptor fits, with the pods nominated to the
    node of its priority or higher and then without (run_filter_plugins_with_nominated_pods;
    failing: Fit's status); put the victims back one by one, most important first, each kept
    only where the preemptor still fits both ways, else a victim. Without PDBs none violates.

    ``select(node_info)`` gives one node's (victims, 0, status); the nodes a node-only plugin
    might reject or whose requests are out of range (``per_node``) are evaluated by the
    plugin's own select_victims_on_node on clones, as the per-node loop does.
    """

    def __init__(self, ev, pod, pdbs, rf, vc):
        self.ev = ev
        self.pod = pod
        self.pdbs = pdbs
        self.rf = rf
        self.vc = vc
        t = rf.table
        self.row = t.row
        # each node after removing every potential victim: pod count, cpu, memory, eph. requested
        node = (t.num_pods - vc.cnt, t.req_cpu - vc.sum_cpu, t.req_mem - vc.sum_mem, t.req_eph - vc.sum_eph)
        # Fit's codes where the preemptor does not fit even without the victims
        self.codes = rf.codes_with_nominated(*node)
        fits = (self.codes == 0) & (vc.cnt > 0)
        self.fits = fits
        victim = np.zeros((len(t.node_infos), vc.k), dtype=bool)
        for k in range(vc.k):
            trying = fits & (vc.cnt > k)
            if not trying.any():
                break
            back = tuple(a + b for a, b in zip(node, (1, vc.cpu[:, k], vc.mem[:, k], vc.eph[:, k])))
            ok = ~rf.fails_with_nominated(*back)
            keep = trying & ok
            node = tuple(np.where(keep, b, a) for a, b in zip(node, back))
            victim[:, k] = trying & ~ok
        self.victim = victim
        per_node = (vc.bad | rf.node_only) if rf.node_only is not None else vc.bad
        self.per_node = per_node if per_node.any() else None

    def _outcome(self, i: int):
        """Row i's (victims, 0, status), the row evaluated on the table."""
        if self.fits[i]:
            return self._victims(i), 0, Status(Code.Success)
        if self.vc.cnt[i] == 0:
            return None, 0, Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS])
        return None, 0, self.rf.statuses((int(self.codes[i]),))[0]

    def _victims(self, i: int) -> list:
        """Row i's victims, in reprieve order (those put back that did not fit)."""
        return [p for p, v in zip(self.vc.pods[i], self.victim[i].tolist()) if v]

    def select(self, ni):
        i = self.row[ni.name]
        if self.per_node is not None and self.per_node[i]:
            return self.ev.interface.select_victims_on_node(self.ev.state.clone(), self.pod, ni.clone(),
                                                            self.pdbs)
        return self._outcome(i)

    def dry_run(self, potential, offset, num_candidates):
        """Evaluator.dry_run_preemption's loop when every node is evaluated on the table (the
        trace off; no PDBs, so every candidate violates none): the nodes from ``offset`` are
        examined until the numCandidates-th candidate; the others examined get their status,
        in examining order (a node whose victims were all reprieved: an Error)."""
        n = len(potential)
        row = self.row
        rows = np.fromiter((row[ni.name] for ni in potential), dtype=np.int64, count=n)
        o = offset % n
        if o:
            rows = np.concatenate((rows[o:], rows[:o]))
            potential = potential[o:] + potential[:o]
        cand = (self.fits & self.victim.any(axis=1))[rows]
        end = n
        at = np.flatnonzero(cand)
        candidates = []
        if num_candidates > 0:      # with none to find, none is kept and every node examined
            if num_candidates <= len(at):
                end = int(at[num_candidates - 1]) + 1
            for j in at[at < end].tolist():
                candidates.append(Candidate(potential[j].name, self._victims(int(rows[j])), 0))
        statuses = {}
        errs = []
        others = np.flatnonzero(~cand[:end])
        if len(others):
            r = rows[others]
            codes = self.codes[r]
            names = [potential[j].name for j in others.tolist()]
            fits = self.fits[r].tolist()
            no_victims = (self.vc.cnt[r] == 0).tolist()
            fit_statuses = iter(self.rf.statuses(codes[~self.fits[r] & (self.vc.cnt[r] != 0)].tolist()))
            for name, f, nv in zip(names, fits, no_victims):
                if f:
                    st = Status(Code.Error, [f'expected at least one victim pod on node "{name}"'])
                    errs.append(st)
                elif nv:
                    st = Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS])
                else:
                    st = next(fit_statuses)
                statuses[name] = st
        err = Status(Code.Error, [e.message() for e in errs]) if errs else None
        return candidates, statuses, err


NO_VICTIMS = "No preemption victims found for incoming pod"
