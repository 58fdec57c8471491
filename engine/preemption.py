"""Preemption's generic evaluator (upstream ``pkg/scheduler/framework/preemption/preemption.go``, v1.28).

``Evaluator.preempt`` follows upstream's numbered steps:

0. re-read the preemptor from the API (its latest nominatedNodeName);
1. ``pod_eligible_to_preempt_others`` (the plugin's);
2. ``find_candidates``: ``nodes_where_preemption_might_help`` (skip nodes whose filter status is
   UnschedulableAndUnresolvable), then ``dry_run_preemption`` on a clone of each node and of
   the cycle state, calling the plugin's ``select_victims_on_node``;
3. ``callExtenders`` (engine/extender.py): extenders that support preemption narrow the
   candidates and their victims;
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

from .framework.interface import (Code, MODE_OVERRIDE, NominatingInfo, PostFilterResult, Status)
from itertools import chain

from .framework.types import Diagnosis, FitError
from .trace import Deferred
from .util import get_earliest_pod_start_time, more_important_pod, pod_start_time, sort_more_important  # noqa: F401

INT32_MAX = 2**31 - 1

CRITERIA = ("minNumPDBViolatingVictims", "minHighestPriorityVictim", "minSumPriorities",
            "minNumPods", "latestStartTime")


class Candidate:
    __slots__ = ("name", "victims", "num_pdb_violations")

    def __init__(self, name, victims, num_pdb_violations):
        self.name = name
        self.victims = victims
        self.num_pdb_violations = num_pdb_violations


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


class PickCandidates(Deferred):
    """PreemptionPick's ``candidates``, kept unbuilt (Trace.emit_deferred): ``value()`` is
    ``[{"node", "victims": [keys], "pdbViolations", "values": {criterion: value}}]`` for each
    candidate in order. Kept as a few flat lists, not an object per candidate (what the trace
    keeps must not burden the garbage collector); pods' keys never change and the values
    are not changed once computed."""
    __slots__ = ("names", "counts", "victims", "pdb", "values")

    def __init__(self, candidates, values: dict):
        self.names = [c.name for c in candidates]
        vs = [c.victims for c in candidates]
        self.counts = list(map(len, vs))
        self.victims = list(chain.from_iterable(vs))
        self.pdb = [c.num_pdb_violations for c in candidates]
        self.values = values

    def nbytes(self) -> int:
        """Roughly what it keeps (the pods are the cluster's)."""
        return 4 * 56 + 8 * (3 * len(self.names) + len(self.victims)) + 400 * len(self.values)

    def value(self) -> list:
        out = []
        at = 0
        victims, values = self.victims, self.values
        for name, k, pdb in zip(self.names, self.counts, self.pdb):
            out.append({"node": name, "victims": [v.key for v in victims[at:at + k]], "pdbViolations": pdb,
                        "values": dict(values[name])})
            at += k
        return out


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
        # 3) the extenders that support preemption may drop candidates or change their victims
        if getattr(h, "extenders", None):
            from .extender import call_extenders_for_preemption
            candidates, st = call_extenders_for_preemption(h, pod, candidates, Candidate)
            if st is not None:
                return None, st
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
        not_helpful = None          # one Status for every such node (its readers only read it)
        for ni in nodes:
            st = m.get(ni.name)
            if st is not None and st.code == Code.UnschedulableAndUnresolvable:
                if not_helpful is None:
                    not_helpful = Status(Code.UnschedulableAndUnresolvable, ["Preemption is not helpful for scheduling"])
                statuses[ni.name] = not_helpful
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
        # every node at once on the node table, where the framework can (see
        # Framework.victims_on_table); None: node by node. With the trace on, only when every
        # node is on the table: its events are then recorded as the table's columns
        # (DryRunSegment), expanded when read.
        on_table = None
        if getattr(h, "victims_on_table", None) is not None:
            on_table = h.victims_on_table(self, pod, pdbs)
        if on_table is not None and on_table.per_node is None:
            if not tr.enabled:
                return on_table.dry_run(potential, offset, num_candidates)
            skip = self.state.skip_filter_plugins
            plugins = [pl.name for pl in h.filter_plugins if not (skip and pl.name in skip)]
            candidates, statuses, err, seg = on_table.traced_dry_run(
                potential, offset, num_candidates, plugins, plugins.index(on_table.rf.fit_name), h.cycle)
            tr.emit_segment(seg)
            return candidates, statuses, err
        if tr.enabled:
            on_table = None
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

    def select_candidate(self, pod, candidates):
        h = self.handle
        now = h.now()
        if len(candidates) == 1:
            best, crit, values = candidates[0].name, "onlyCandidate", {candidates[0].name: criterion_values(candidates[0], now)}
        else:
            best, crit, values = pick_one_node_for_preemption(candidates, now)
        if h.trace.enabled:
            h.trace.emit_deferred("PreemptionPick", preemptor=pod.key, node=best, criterion=crit, cycle=h.cycle,
                                  criteria=list(CRITERIA), candidates=PickCandidates(candidates, values))
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
