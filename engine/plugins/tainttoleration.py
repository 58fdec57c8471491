"""TaintToleration (upstream ``plugins/tainttoleration/taint_toleration.go``, v1.28.0).

Filter keeps a pod off nodes with a NoSchedule/NoExecute taint it does not tolerate; Score
prefers nodes with fewer untolerated PreferNoSchedule taints.
"""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                   EnqueueExtensions, FilterPlugin, GVK, MAX_NODE_SCORE,
                                   PreScorePlugin, ScoreExtensions, ScorePlugin, Status)
from .helper import default_normalize_score, default_normalize_values

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Declared upstream but unused by v1.28's Filter, which names the offending taint instead.
ErrReasonNotMatch = "node(s) had taints that the pod didn't tolerate"


class _PreScoreState:
    """preScoreState: the pod's tolerations that can apply to PreferNoSchedule taints."""
    __slots__ = ("tolerations_prefer_no_schedule",)

    def __init__(self, tolerations):
        self.tolerations_prefer_no_schedule = tolerations

    def clone(self):
        return self


def get_all_toleration_prefer_no_schedule(tolerations) -> tuple:
    """getAllTolerationPreferNoSchedule: tolerations whose effect is PreferNoSchedule or empty
    (an empty effect matches every effect)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == "PreferNoSchedule")


def count_intolerable_taints_prefer_no_schedule(taints, tolerations) -> int:
    """countIntolerableTaintsPreferNoSchedule: PreferNoSchedule taints no toleration tolerates."""
    n = 0
    for taint in taints:
        if taint.effect != "PreferNoSchedule":
            continue
        for t in tolerations:
            if t.tolerates(taint):
                break
        else:
            n += 1
    return n


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions):
    name = NAME

    def __init__(self, handle=None):
        self.handle = handle

    def events_to_register(self) -> list:
        """TaintToleration.EventsToRegister: Node/Add|Update."""
        return [ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.Update))]

    def filter(self, state, pod, node_info):
        """TaintToleration.Filter: the first NoSchedule/NoExecute taint (in the node's order)
        that no toleration tolerates makes the node UnschedulableAndUnresolvable, reported as
        ``node(s) had untolerated taint {key: value}``."""
        tolerations = pod.tolerations
        for taint in node_info.node.taints:
            eff = taint.effect
            if eff != "NoSchedule" and eff != "NoExecute":
                continue
            for t in tolerations:
                if t.tolerates(taint):
                    break
            else:
                return Status(Code.UnschedulableAndUnresolvable,
                              f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")
        return None

    # Filter reads the node and the pod only, never the node's pods (engine.resourcefit)
    _filter_node_only = True

    def _filter_suspects(self, state, pod, table):
        """The nodes with a NoSchedule or NoExecute taint (Framework.filter_suspects)."""
        return table.hard_taints if table.any_hard_taints else None

    def pre_score(self, state, pod, nodes):
        """TaintToleration.PreScore: nothing to do without nodes; otherwise keep the pod's
        PreferNoSchedule-capable tolerations for Score."""
        if len(nodes) == 0:
            return None
        state.write(PRE_SCORE_STATE_KEY,
                    _PreScoreState(get_all_toleration_prefer_no_schedule(pod.tolerations)))
        return None

    def score(self, state, pod, node_name):
        """TaintToleration.Score: the number of the node's PreferNoSchedule taints the pod does
        not tolerate (NormalizeScore reverses it)."""
        try:
            node_info = self.handle.snapshot().get(node_name)
        except KeyError:
            return 0, Status.error(f'getting node "{node_name}" from Snapshot: '
                                   f'nodeinfo not found for node name "{node_name}"')
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return count_intolerable_taints_prefer_no_schedule(
            node_info.node.taints, s.tolerations_prefer_no_schedule), None

    def score_nodes(self, state, pod, node_infos):
        """Score for every node in one call (same results as ``score``)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return None, Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        table = getattr(node_infos, "table", None)     # the Filter loop's FeasibleNodes
        if table is not None and not table.soft_taints()[node_infos.rows].any():
            return [0] * len(node_infos), None        # no PreferNoSchedule taint to count
        tol = s.tolerations_prefer_no_schedule
        return [count_intolerable_taints_prefer_no_schedule(ni.node.taints, tol) if ni.node.taints else 0
                for ni in node_infos], None

    def normalize_score(self, state, pod, scores):
        """TaintToleration.NormalizeScore: DefaultNormalizeScore(MaxNodeScore, reverse=True)."""
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def _normalize_values(self, state, pod, values):
        """NormalizeScore over plain scores (Framework.run_score_plugins' shortcut)."""
        return default_normalize_values(MAX_NODE_SCORE, True, values)

    def score_extensions(self):
        return self


def new(args, handle) -> TaintToleration:
    """tainttoleration.New."""
    return TaintToleration(handle)
