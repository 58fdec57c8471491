"""The InterPodAffinity plugin: required and preferred pod (anti-)affinity.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/plugin.go`` (v1.28.0); the
extension points live in :mod:`.filtering` and :mod:`.scoring`, as upstream's methods live in
filtering.go and scoring.go.

Args (``InterPodAffinityArgs``, v1 defaults): ``hardPodAffinityWeight`` (default 1, valid
range [0, 100]) and ``ignorePreferredTermsOfExistingPods`` (default false).
"""
from __future__ import annotations

from ...framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint,
                                    EnqueueExtensions, FilterPlugin, GVK, PreFilterExtensions,
                                    PreFilterPlugin, PreScorePlugin, ScoreExtensions,
                                    ScorePlugin)
from ...objects import IMPLICIT_NAMESPACES
from ..helper import ArgsChecker
from . import filtering, scoring

NAME = "InterPodAffinity"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin,
                       EnqueueExtensions, PreFilterExtensions, ScoreExtensions):
    """InterPodAffinity (PreFilter, Filter, PreScore, Score with NormalizeScore)."""
    name = NAME

    def __init__(self, handle, hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
                 ignore_preferred_terms_of_existing_pods: bool = False):
        self.handle = handle
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods

    @property
    def ns_lister(self):
        """``pl.nsLister`` (``New`` takes it from the shared informer factory): the engine's
        NamespaceLister, or the implicit namespaces when the plugin runs without one."""
        host = getattr(self.handle, "host", None)
        return host.namespaces if host is not None else IMPLICIT_NAMESPACES

    def events_to_register(self) -> list:
        """InterPodAffinity.EventsToRegister: any Pod event (a deleted or relabelled pod may
        stop violating anti-affinity, an added one may satisfy affinity) and Node Add or
        label update. No Namespace event, in v1.28: a namespace created, relabelled or
        deleted moves no pod (the scheduler has no namespace event handler; the lister is
        read at PreFilter and PreScore, so the change shows in the next cycle of a pod that
        is tried again for another reason, or after podMaxInUnschedulablePodsDuration)."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.All)),
            ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.UpdateNodeLabel)),
        ]

    # filtering.go
    pre_filter = filtering.pre_filter
    pre_filter_extensions = filtering.pre_filter_extensions
    add_pod = filtering.add_pod
    remove_pod = filtering.remove_pod
    filter = filtering.filter
    _filter_suspects = filtering.filter_suspects

    # scoring.go
    pre_score = scoring.pre_score
    score = scoring.score
    score_nodes = scoring.score_nodes
    _normalize_values = scoring._normalize_values
    normalize_score = scoring.normalize_score
    score_extensions = scoring.score_extensions

    def __repr__(self):
        return (f"InterPodAffinity(hardPodAffinityWeight={self.hard_pod_affinity_weight}, "
                f"ignorePreferredTermsOfExistingPods={self.ignore_preferred_terms_of_existing_pods})")


def parse_args(args) -> tuple:
    """Apply the v1 defaults (SetDefaults_InterPodAffinityArgs) and validate
    (ValidateInterPodAffinityArgs).  Returns ``(hard_pod_affinity_weight,
    ignore_preferred_terms_of_existing_pods)``; raises ConfigError naming the field
    (``pluginConfig[InterPodAffinity].args.<field>: ...``)."""
    ck = ArgsChecker(NAME, args, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"))
    w = ck.get_int(ck.args, "hardPodAffinityWeight", "hardPodAffinityWeight",
                   default=DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    if w is None:
        w = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    elif w < MIN_HARD_POD_AFFINITY_WEIGHT or w > MAX_HARD_POD_AFFINITY_WEIGHT:
        ck.add("hardPodAffinityWeight", f"Invalid value: {w}: not in valid range "
               f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]")
    ignore = ck.args.get("ignorePreferredTermsOfExistingPods")
    if ignore is None:
        ignore = False
    elif not isinstance(ignore, bool):
        ck.add("ignorePreferredTermsOfExistingPods", f"{ignore!r} is not true or false")
        ignore = False
    ck.raise_if_any()
    return w, ignore


def new(args, handle) -> InterPodAffinity:
    """interpodaffinity.New: the plugin factory ``(args, handle)``."""
    w, ignore = parse_args(args)
    return InterPodAffinity(handle, w, ignore)
