"""The PodTopologySpread plugin: spreading pods across topology domains.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go`` (v1.28.0); the
extension points live in :mod:`.filtering` and :mod:`.scoring`.

Args (``PodTopologySpreadArgs``, v1): ``defaultingType`` ("System" by default, or "List")
and ``defaultConstraints`` (only with "List").  Validation is upstream's
``ValidatePodTopologySpreadArgs``.

Default constraints (System: ``{maxSkew 3, kubernetes.io/hostname, ScheduleAnyway}`` and
``{maxSkew 5, topology.kubernetes.io/zone, ScheduleAnyway}``; List: the given ones) apply to
pods without constraints of their own, with a selector built from the pod's Services,
ReplicationControllers, ReplicaSets and StatefulSets (``helper.DefaultSelector``).  This engine
models none of those objects, so the default selector is always empty and, exactly as upstream
does for a pod no such object selects (``buildDefaultConstraints`` returns nil for an empty
selector), default constraints apply to nothing.  ``PodTopologySpread.default_selector`` is
the single place to change if owners are ever modelled.

Feature gates (all beta and on in v1.28): MinDomainsInPodTopologySpread,
NodeInclusionPolicyInPodTopologySpread, MatchLabelKeysInPodTopologySpread; ``new`` accepts a
``features`` mapping to turn them off, as upstream's ``feature.Features``.
"""
from __future__ import annotations

from ...framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint,
                                    EnqueueExtensions, FilterPlugin, GVK, PreFilterExtensions,
                                    PreFilterPlugin, PreScorePlugin, ScoreExtensions,
                                    ScorePlugin)
from ...labels import LabelSelector
from ...objects import TopologySpreadConstraint as V1TopologySpreadConstraint
from ..helper import ArgsChecker, is_qualified_name
from . import filtering, scoring
from .common import (DO_NOT_SCHEDULE, HONOR, IGNORE, LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE,
                     SCHEDULE_ANYWAY)

NAME = "PodTopologySpread"

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

# systemDefaultConstraints
SYSTEM_DEFAULT_CONSTRAINTS = (
    V1TopologySpreadConstraint(max_skew=3, topology_key=LABEL_HOSTNAME,
                               when_unsatisfiable=SCHEDULE_ANYWAY, selector=None),
    V1TopologySpreadConstraint(max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE,
                               when_unsatisfiable=SCHEDULE_ANYWAY, selector=None),
)


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin,
                        EnqueueExtensions, PreFilterExtensions, ScoreExtensions):
    """PodTopologySpread (PreFilter, Filter, PreScore, Score with NormalizeScore)."""
    name = NAME

    def __init__(self, handle, default_constraints=(), system_defaulted: bool = False,
                 enable_min_domains: bool = True, enable_node_inclusion_policy: bool = True,
                 enable_match_label_keys: bool = True):
        self.handle = handle
        self.default_constraints = tuple(default_constraints)
        self.system_defaulted = system_defaulted
        self.enable_min_domains = enable_min_domains
        self.enable_node_inclusion_policy = enable_node_inclusion_policy
        self.enable_match_label_keys = enable_match_label_keys

    def default_selector(self, pod) -> LabelSelector:
        """helper.DefaultSelector: the union of the selectors of the Services,
        ReplicationControllers, ReplicaSets and StatefulSets selecting the pod.  None of them
        is modelled, so it is always empty (default constraints then apply to nothing)."""
        return LabelSelector()

    def events_to_register(self) -> list:
        """PodTopologySpread.EventsToRegister: any Pod event, and Node Add, Delete or label
        update (a topology domain may appear, vanish or change)."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.All)),
            ClusterEventWithHint(ClusterEvent(
                GVK.Node, ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel)),
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
    normalize_score = scoring.normalize_score
    _normalize_values = scoring._normalize_values
    score_extensions = scoring.score_extensions

    def __repr__(self):
        return (f"PodTopologySpread(systemDefaulted={self.system_defaulted}, "
                f"defaultConstraints={len(self.default_constraints)})")


# ---------------------------------------------------------------------------------------------
# Args


def _q(v) -> str:
    return f'"{v}"' if isinstance(v, str) else repr(v)


def parse_args(args) -> tuple:
    """Apply the v1 defaults (SetDefaults_PodTopologySpreadArgs: defaultingType "System")
    and validate (ValidatePodTopologySpreadArgs).  Returns ``(default_constraints,
    system_defaulted)``; raises ConfigError listing every invalid field
    (``pluginConfig[PodTopologySpread].args.<field>: ...``)."""
    ck = ArgsChecker(NAME, args, ("defaultConstraints", "defaultingType"))
    dtype = ck.get_str(ck.args, "defaultingType", "defaultingType") or SYSTEM_DEFAULTING
    raw = ck.get_list(ck.args, "defaultConstraints", "defaultConstraints")
    # validateDefaultingType
    if dtype not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        ck.add("defaultingType", f'Unsupported value: {_q(dtype)}: supported values: '
               f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"')
    elif dtype == SYSTEM_DEFAULTING and raw:
        ck.add("defaultingType", f'Invalid value: "{dtype}": when .defaultConstraints are not empty')
    constraints = []
    seen = []
    for i, c in enumerate(raw):
        p = f"defaultConstraints[{i}]"
        if not isinstance(c, dict):
            ck.add(p, f"{c!r} is not a mapping")
            continue
        for k in c:
            if k not in ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
                         "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy",
                         "matchLabelKeys"):
                ck.add(p, f"unknown field {k!r}")
        ok = True
        ms = c.get("maxSkew", 0)
        if isinstance(ms, bool) or not isinstance(ms, int) or ms <= 0:
            ck.add(f"{p}.maxSkew", f"Invalid value: {ms!r}: not in valid range (0, inf)")
            ok = False
        tk = c.get("topologyKey", "")
        if not isinstance(tk, str):
            ck.add(f"{p}.topologyKey", f"{tk!r} is not a string")
            ok = False
            tk = ""
        elif not tk:
            ck.add(f"{p}.topologyKey", "Required value: can not be empty")
            ok = False
        elif not is_qualified_name(tk):
            ck.add(f"{p}.topologyKey", f"Invalid value: {_q(tk)}: must be a qualified name "
                   "(an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, "
                   "'-', '_' or '.', starting and ending alphanumeric)")
            ok = False
        wu = c.get("whenUnsatisfiable", "")
        if not wu:
            ck.add(f"{p}.whenUnsatisfiable", "Required value: can not be empty")
            ok = False
        elif wu not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            ck.add(f"{p}.whenUnsatisfiable", f'Unsupported value: {_q(wu)}: supported values: '
                   f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"')
            ok = False
        if c.get("labelSelector") is not None:
            ck.add(f"{p}.labelSelector", "Forbidden: constraint must not define a selector, "
                   "as they deduced for each pod")
            ok = False
        # validateConstraintNotRepeat
        if (tk, wu) in seen:
            ck.add(p, f'Duplicate value: "{{{tk}, {wu}}}"')
            ok = False
        seen.append((tk, wu))
        md = c.get("minDomains")
        if md is not None and (isinstance(md, bool) or not isinstance(md, int) or md < 1):
            ck.add(f"{p}.minDomains", f"Invalid value: {md!r}: must be greater than 0")
            ok = False
        nap = c.get("nodeAffinityPolicy") or HONOR
        ntp = c.get("nodeTaintsPolicy") or IGNORE
        for fname, fv in (("nodeAffinityPolicy", nap), ("nodeTaintsPolicy", ntp)):
            if fv not in (HONOR, IGNORE):
                ck.add(f"{p}.{fname}", f'Unsupported value: {_q(fv)}: supported values: '
                       f'"{HONOR}", "{IGNORE}"')
                ok = False
        mlk = c.get("matchLabelKeys") or []
        if not isinstance(mlk, list) or not all(isinstance(k, str) for k in mlk):
            ck.add(f"{p}.matchLabelKeys", f"{mlk!r} is not a list of strings")
            ok = False
        if ok:
            constraints.append(V1TopologySpreadConstraint(
                max_skew=ms, topology_key=tk, when_unsatisfiable=wu, selector=None,
                min_domains=md, node_affinity_policy=nap, node_taints_policy=ntp,
                match_label_keys=tuple(mlk)))
    ck.raise_if_any()
    if dtype == SYSTEM_DEFAULTING:
        return SYSTEM_DEFAULT_CONSTRAINTS, True
    return tuple(constraints), False


_FEATURES = {
    "MinDomainsInPodTopologySpread": "enable_min_domains",
    "NodeInclusionPolicyInPodTopologySpread": "enable_node_inclusion_policy",
    "MatchLabelKeysInPodTopologySpread": "enable_match_label_keys",
}


def new(args, handle, features=None) -> PodTopologySpread:
    """podtopologyspread.New: the plugin factory ``(args, handle)``.  ``features`` optionally
    maps the v1.28 gate names above to booleans (all default to on)."""
    default_constraints, system_defaulted = parse_args(args)
    kw = {}
    for gate, attr in _FEATURES.items():
        if features and gate in features:
            kw[attr] = bool(features[gate])
    return PodTopologySpread(handle, default_constraints, system_defaulted, **kw)
