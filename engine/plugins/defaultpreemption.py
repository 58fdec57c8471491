"""DefaultPreemption (upstream ``framework/plugins/defaultpreemption/default_preemption.go``, v1.28).

A PostFilter plugin: when no node fits a pod, find a node where evicting lower-priority pods
would make it fit, evict the fewest/least important, and nominate the node.  The generic
steps live in ``engine.preemption.Evaluator``; this module holds the plugin's own parts:
eligibility, the candidate limits, and ``select_victims_on_node`` with the reprieve.

Args (DefaultPreemptionArgs): ``minCandidateNodesPercentage`` (default 10, 0..100) and
``minCandidateNodesAbsolute`` (default 100, >= 0; not both 0).
"""
from __future__ import annotations

from ..framework.interface import Code, PostFilterPlugin, Status
from ..objects import PREEMPT_NEVER
from ..preemption import Evaluator, sort_more_important
from .helper import ArgsChecker

NAME = "DefaultPreemption"


class DefaultPreemption(PostFilterPlugin):
    name = NAME

    def __init__(self, args, handle):
        """NewDefaultPreemption with SetDefaults_DefaultPreemptionArgs and
        ValidateDefaultPreemptionArgs; unknown fields are refused (strict decoding)."""
        self.handle = handle
        ck = ArgsChecker(NAME, args, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
        pct = ck.get_int(ck.args, "minCandidateNodesPercentage", "minCandidateNodesPercentage", 10)
        absolute = ck.get_int(ck.args, "minCandidateNodesAbsolute", "minCandidateNodesAbsolute", 100)
        if pct is not None and not 0 <= pct <= 100:
            ck.add("minCandidateNodesPercentage", f"{pct} is not in the range [0, 100]")
        if absolute is not None and absolute < 0:
            ck.add("minCandidateNodesAbsolute", f"{absolute} must not be negative")
        if pct == 0 and absolute == 0:
            ck.add("", "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
        ck.raise_if_any()
        self.min_candidate_nodes_percentage = pct
        self.min_candidate_nodes_absolute = absolute
        self.preemption_attempts = 0

    def post_filter(self, state, pod, filtered_node_status_map):
        """PostFilter: run the Evaluator and prefix its message with "preemption: "."""
        self.preemption_attempts += 1
        ev = Evaluator(NAME, self.handle, state, self)
        result, status = ev.preempt(pod, filtered_node_status_map)
        if status is not None and status.message():
            return result, Status(status.code, ["preemption: " + status.message()])
        return result, status

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        if n < self.min_candidate_nodes_absolute:
            n = self.min_candidate_nodes_absolute
        if n > num_nodes:
            n = num_nodes
        return n

    def get_offset_and_num_candidates(self, num_nodes: int):
        """Upstream draws the offset at random; the simulator always starts at 0 (SPEC §4)."""
        return 0, self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(self, pod, nominated_node_status):
        """PodEligibleToPreemptOthers: preemptionPolicy Never never preempts; a pod whose
        nominated node still has a lower-priority pod terminating by preemption waits."""
        if pod.effective_preemption_policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        nnn = pod.nominated_node_name
        if nnn:
            if nominated_node_status is not None and nominated_node_status.code == Code.UnschedulableAndUnresolvable:
                return True, ""
            try:
                ni = self.handle.snapshot().get(nnn)
            except KeyError:
                ni = None
            if ni is not None:
                for p in ni.pods:
                    if p.priority < pod.priority and p.deletion_timestamp is not None and p.disruption_target:
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def select_victims_on_node(self, state, pod, node_info, pdbs):
        """SelectVictimsOnNode: remove every lower-priority pod, check the preemptor fits, then
        reprieve victims one by one (PDB-violating first, each group most important first),
        keeping each that still lets the preemptor fit."""
        h = self.handle
        tr = h.trace
        now = h.now()
        potential = []

        def remove_pod(p):
            node_info.remove_pod(p)
            return h.run_pre_filter_extension_remove_pod(state, pod, p, node_info, True)

        def add_pod(p):
            node_info.add_pod(p)
            return h.run_pre_filter_extension_add_pod(state, pod, p, node_info, True)

        for p in list(node_info.pods):
            if p.priority < pod.priority:
                potential.append(p)
                err = remove_pod(p)
                if err is not None:
                    return None, 0, err
        if not potential:
            return None, 0, Status(Code.UnschedulableAndUnresolvable, ["No preemption victims found for incoming pod"])
        if tr.enabled:
            tr.emit("ReprieveStart", preemptor=pod.key, node=node_info.name, cycle=h.cycle,
                    removed=[p.key for p in potential],
                    message=f"removed all {len(potential)} pod(s) with priority lower than {pod.priority}; "
                            f"checking whether the preemptor fits without them")
        status = h.run_filter_plugins_with_nominated_pods(state, pod, node_info, True)
        if status is not None and status.code != Code.Success:
            if tr.enabled:
                tr.emit("ReprieveFits", preemptor=pod.key, node=node_info.name, cycle=h.cycle, fits=False,
                        plugin=status.failed_plugin, reasons=list(status.reasons))
            return None, 0, status
        if tr.enabled:
            tr.emit("ReprieveFits", preemptor=pod.key, node=node_info.name, cycle=h.cycle, fits=True,
                    plugin=None, reasons=[])
        potential = sort_more_important(potential, now)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims = []
        num_violating = 0

        def reprieve(p, violates):
            err = add_pod(p)
            if err is not None:
                return None, err
            st = h.run_filter_plugins_with_nominated_pods(state, pod, node_info, True)
            fits = st is None or st.code == Code.Success
            if not fits:
                err = remove_pod(p)
                if err is not None:
                    return None, err
                victims.append(p)
            if tr.enabled:
                if fits:
                    why = f"with {p.key} (priority {p.priority}) put back, the preemptor still fits: it is reprieved"
                else:
                    why = (f"with {p.key} (priority {p.priority}) put back, {st.failed_plugin} says "
                           f"{st.message()!r}: it stays a victim")
                tr.emit("ReprieveStep", preemptor=pod.key, node=node_info.name, victim=p.key, reprieved=fits,
                        pdbViolating=violates, plugin=None if fits else st.failed_plugin,
                        reasons=[] if fits else list(st.reasons), cycle=h.cycle, message=why)
            return fits, None

        for p in violating:
            fits, err = reprieve(p, True)
            if err is not None:
                return None, 0, err
            if not fits:
                num_violating += 1
        for p in non_violating:
            fits, err = reprieve(p, False)
            if err is not None:
                return None, 0, err
        return victims, num_violating, Status(Code.Success)


def filter_pods_with_pdb_violation(pods, pdbs):
    """filterPodsWithPDBViolation: consume each matching PDB's disruptionsAllowed in order; a
    pod that takes a budget below zero is violating.  Pods in disruptedPods neither count nor
    violate; pods without labels match nothing."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating, non_violating = [], []
    for p in pods:
        violated = False
        if p.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != p.namespace:
                    continue
                sel = pdb.selector
                if sel is None or sel.empty or not sel.matches(p.labels):
                    continue
                if p.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(p)
    return violating, non_violating


def new(args, handle):
    return DefaultPreemption(args or {}, handle)
