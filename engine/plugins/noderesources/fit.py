"""NodeResourcesFit (upstream ``noderesources/fit.go``, v1.28.0).

Filter: the node must have room for the pod (pod count, cpu, memory, ephemeral storage and
scalar resources, against allocatable minus what its pods request).  Score: one of the
LeastAllocated / MostAllocated / RequestedToCapacityRatio strategies over configured
resources.  Feature gates as v1.28 defaults them: InPlacePodVerticalScaling and
SidecarContainers off.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code,
                                    EnqueueExtensions, FilterPlugin, GVK, PreFilterPlugin,
                                    Status)
from ...util import LIMIT
from ..helper import ArgsChecker, is_extended_resource_name, is_qualified_name
from .resource_allocation import (ResourceAllocationScorePlugin, DEFAULT_RESOURCES, MAX_CUSTOM_PRIORITY_SCORE,
                                  REQUESTED_TO_CAPACITY_RATIO, SCORING_STRATEGY_TYPES,
                                  LEAST_ALLOCATED, ResourceAllocationScorer, new_scorer)

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ErrReasonRestartableInitContainer = ("Pod has a restartable init container and the "
                                     "SidecarContainers feature is disabled")

_FIXED = ("cpu", "memory", "ephemeral-storage")


@dataclass
class InsufficientResource:
    """InsufficientResource: one resource the node lacks for the pod."""
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


class _PreFilterState:
    """preFilterState: the pod's framework.Resource request, split for the Filter hot path.

    ``scalars`` holds the non-zero scalar requests, sorted by name (Go iterates a map there,
    so its order is random upstream), without those the plugin's ignoredResources /
    ignoredResourceGroups exclude.  ``empty`` is upstream's "requests nothing" test.
    """
    __slots__ = ("cpu", "memory", "ephemeral_storage", "scalars", "empty",
                 "has_restartable_init_container")

    def __init__(self, cpu, memory, ephemeral_storage, scalars, empty, restartable):
        self.cpu = cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.scalars = scalars
        self.empty = empty
        self.has_restartable_init_container = restartable

    def clone(self):
        return self


def has_restartable_init_container(pod) -> bool:
    """hasRestartableInitContainer: an init container with ``restartPolicy: Always``."""
    spec = pod.manifest.get("spec") if isinstance(pod.manifest, dict) else None
    if not isinstance(spec, dict):
        return False
    inits = spec.get("initContainers")
    if not isinstance(inits, list):
        return False
    for c in inits:
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            return True
    return False


def compute_pod_resource_request(pod, ignored_resources=frozenset(),
                                 ignored_resource_groups=frozenset()) -> _PreFilterState:
    """computePodResourceRequest (PodRequests + SetMaxResource: ``Pod.requests`` already
    holds it), arranged for ``fits_request``; ignored extended resources are dropped here
    rather than per node."""
    req = pod.requests
    cpu = req.get("cpu", 0)
    mem = req.get("memory", 0)
    eph = req.get("ephemeral-storage", 0)
    scalar_names = [k for k in req if k not in _FIXED]
    empty = cpu == 0 and mem == 0 and eph == 0 and not scalar_names
    scalars = []
    for name in sorted(scalar_names):
        q = req[name]
        if q == 0:
            continue
        if is_extended_resource_name(name):
            prefix = name.split("/")[0] if ignored_resource_groups else ""
            if name in ignored_resources or prefix in ignored_resource_groups:
                continue
        scalars.append((name, q))
    return _PreFilterState(cpu, mem, eph, tuple(scalars), empty, has_restartable_init_container(pod))


def fits_request(s: _PreFilterState, node_info) -> list:
    """fitsRequest: every resource the node lacks, in upstream's order (pods, cpu, memory,
    ephemeral-storage, then scalar resources)."""
    out = []
    alloc = node_info.node.allocatable
    allowed_pods = alloc.get("pods", 0)
    n_pods = len(node_info.pods)
    if n_pods + 1 > allowed_pods:
        out.append(InsufficientResource("pods", "Too many pods", 1, n_pods, allowed_pods))
    if s.empty:
        return out
    requested = node_info.requested
    if s.cpu > 0:
        a, u = alloc.get("cpu", 0), requested.get("cpu", 0)
        if s.cpu > a - u:
            out.append(InsufficientResource("cpu", "Insufficient cpu", s.cpu, u, a))
    if s.memory > 0:
        a, u = alloc.get("memory", 0), requested.get("memory", 0)
        if s.memory > a - u:
            out.append(InsufficientResource("memory", "Insufficient memory", s.memory, u, a))
    if s.ephemeral_storage > 0:
        a, u = alloc.get("ephemeral-storage", 0), requested.get("ephemeral-storage", 0)
        if s.ephemeral_storage > a - u:
            out.append(InsufficientResource("ephemeral-storage", "Insufficient ephemeral-storage",
                                            s.ephemeral_storage, u, a))
    for name, q in s.scalars:
        a, u = alloc.get(name, 0), requested.get(name, 0)
        if q > a - u:
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a))
    return out


def fits(pod, node_info) -> list:
    """noderesources.Fits: the InsufficientResources of the pod on the node, with nothing
    ignored (used by the queue's preCheckForNode)."""
    return fits_request(compute_pod_resource_request(pod), node_info)


class Fit(PreFilterPlugin, FilterPlugin, ResourceAllocationScorePlugin, EnqueueExtensions):
    name = NAME
    pre_score_state_key = PRE_SCORE_STATE_KEY

    def __init__(self, handle=None, ignored_resources=frozenset(), ignored_resource_groups=frozenset(),
                 scorer: ResourceAllocationScorer | None = None,
                 enable_in_place_pod_vertical_scaling: bool = False,
                 enable_sidecar_containers: bool = False):
        self.handle = handle
        self.ignored_resources = frozenset(ignored_resources)
        self.ignored_resource_groups = frozenset(ignored_resource_groups)
        self.scorer = scorer if scorer is not None else new_scorer(LEAST_ALLOCATED, DEFAULT_RESOURCES)
        self.enable_in_place_pod_vertical_scaling = enable_in_place_pod_vertical_scaling
        self.enable_sidecar_containers = enable_sidecar_containers

    @property
    def resources(self):
        return self.scorer.resources

    def events_to_register(self) -> list:
        """Fit.EventsToRegister: Pod/Delete (Pod/Update too only with InPlacePodVerticalScaling,
        off in v1.28); Node/Add|Update."""
        pod_action = ActionType.Delete
        if self.enable_in_place_pod_vertical_scaling:
            pod_action |= ActionType.Update
        return [
            ClusterEventWithHint(ClusterEvent(GVK.Pod, pod_action)),
            ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.Update)),
        ]

    # PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(self, state, pod):
        """Fit.PreFilter: compute and store the pod's request."""
        state.write(PRE_FILTER_STATE_KEY,
                    compute_pod_resource_request(pod, self.ignored_resources, self.ignored_resource_groups))
        return None, None

    def pre_filter_extensions(self):
        return None

    def filter(self, state, pod, node_info):
        """Fit.Filter: with SidecarContainers off a pod with a restartable init container is
        UnschedulableAndUnresolvable; otherwise Unschedulable with one reason per lacking
        resource (``Too many pods``, ``Insufficient cpu``, ...)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not self.enable_sidecar_containers:
            restartable = (s.has_restartable_init_container if s is not None
                           else has_restartable_init_container(pod))
            if restartable:
                return Status(Code.UnschedulableAndUnresolvable, ErrReasonRestartableInitContainer)
        if s is None:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        insufficient = fits_request(s, node_info)
        if insufficient:
            return Status(Code.Unschedulable, [r.reason for r in insufficient])
        return None

    def _filter_suspects(self, state, pod, table):
        """The nodes ``fits_request`` finds short of something, computed over the node table's
        columns with the same comparisons (Framework.filter_suspects); False (cannot screen)
        for a pod Filter rejects everywhere or a request beyond the table's range."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None or (s.has_restartable_init_container and not self.enable_sidecar_containers):
            return False
        m = table.num_pods + 1 > table.alloc_pods
        if s.empty:
            return m
        if s.cpu > 0:
            if s.cpu > LIMIT:
                return False
            m |= s.cpu > table.alloc_cpu - table.req_cpu
        if s.memory > 0:
            if s.memory > LIMIT:
                return False
            m |= s.memory > table.alloc_mem - table.req_mem
        if s.ephemeral_storage > 0:
            if s.ephemeral_storage > LIMIT:
                return False
            m |= s.ephemeral_storage > table.alloc_eph - table.req_eph
        for name, q in s.scalars:
            cols = table.scalar(name)
            if cols is None or q > LIMIT:
                return False
            m |= q > cols[0] - cols[1]
        return m

# ---------------------------------------------------------------------------------------------
# Arguments


def parse_resource_specs(ck: ArgsChecker, container: dict, key: str, field: str) -> list:
    """A ``[]ResourceSpec`` with the v1 default for a zero (or missing) weight: 1."""
    out = []
    for i, r in enumerate(ck.get_list(container, key, field)):
        p = f"{field}[{i}]"
        if not isinstance(r, dict):
            ck.add(p, f"{r!r} is not a mapping")
            continue
        for k in r:
            if k not in ("name", "weight"):
                ck.add(p, f"unknown field {k!r} (known: name, weight)")
        name = ck.get_str(r, "name", f"{p}.name")
        if not name:
            if name == "":
                ck.add(f"{p}.name", "is required")
            continue
        w = ck.get_int(r, "weight", f"{p}.weight", default=0)
        if w is None:
            continue
        out.append((name, 1 if w == 0 else w))
    return out


def new(args, handle, enable_in_place_pod_vertical_scaling: bool = False,
        enable_sidecar_containers: bool = False) -> Fit:
    """NewFit with the v1 defaults (SetDefaults_NodeResourcesFitArgs) and
    ValidateNodeResourcesFitArgs.

    Args: ``ignoredResources`` (resource names), ``ignoredResourceGroups`` (domain prefixes,
    no '/'), ``scoringStrategy`` {``type`` LeastAllocated | MostAllocated |
    RequestedToCapacityRatio, ``resources`` [{name, weight 1..100}] (default cpu and memory,
    weight 1), ``requestedToCapacityRatio`` {``shape`` [{utilization 0..100, score 0..10}]}}.
    Without ``scoringStrategy``: LeastAllocated over cpu and memory.
    """
    ck = ArgsChecker(NAME, args, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"))
    a = ck.args
    ignored = []
    for i, r in enumerate(ck.get_list(a, "ignoredResources", "ignoredResources")):
        p = f"ignoredResources[{i}]"
        if not isinstance(r, str) or not is_qualified_name(r):
            ck.add(p, f"{r!r} is not a valid resource name")
            continue
        ignored.append(r)
    groups = []
    for i, g in enumerate(ck.get_list(a, "ignoredResourceGroups", "ignoredResourceGroups")):
        p = f"ignoredResourceGroups[{i}]"
        if not isinstance(g, str):
            ck.add(p, f"{g!r} is not a string")
            continue
        if "/" in g:
            ck.add(p, f'"{g}": resource group name can\'t contain \'/\'')
            continue
        if not is_qualified_name(g):
            ck.add(p, f'"{g}" is not a valid resource group name')
            continue
        groups.append(g)

    strategy_type = LEAST_ALLOCATED
    resources = list(DEFAULT_RESOURCES)
    shape = None
    ss = ck.get_map(a, "scoringStrategy", "scoringStrategy")
    if ss is not None:
        for k in ss:
            if k not in ("type", "resources", "requestedToCapacityRatio"):
                ck.add("scoringStrategy", f"unknown field {k!r} (known: type, resources, requestedToCapacityRatio)")
        strategy_type = ck.get_str(ss, "type", "scoringStrategy.type")
        if strategy_type is not None and strategy_type not in SCORING_STRATEGY_TYPES:
            ck.add("scoringStrategy.type",
                   f'"{strategy_type}" is not one of {", ".join(SCORING_STRATEGY_TYPES)}')
        resources = parse_resource_specs(ck, ss, "resources", "scoringStrategy.resources") or list(DEFAULT_RESOURCES)
        for i, (name, w) in enumerate(resources):
            if w <= 0 or w > 100:
                ck.add(f"scoringStrategy.resources[{i}].weight",
                       f"resource weight of {name} not in valid range (0, 100]")
        rtcr = ck.get_map(ss, "requestedToCapacityRatio", "scoringStrategy.requestedToCapacityRatio")
        if rtcr is not None:
            for k in rtcr:
                if k != "shape":
                    ck.add("scoringStrategy.requestedToCapacityRatio", f"unknown field {k!r} (known: shape)")
            shape = parse_shape(ck, rtcr, "scoringStrategy.requestedToCapacityRatio.shape")
        elif strategy_type == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream dereferences the missing parameters (a panic); refuse it instead.
            ck.add("scoringStrategy.requestedToCapacityRatio.shape", "at least one point must be specified")
    ck.raise_if_any()
    scorer = new_scorer(strategy_type, resources, shape)
    return Fit(handle, ignored, groups, scorer, enable_in_place_pod_vertical_scaling,
               enable_sidecar_containers)


def parse_shape(ck: ArgsChecker, container: dict, field: str):
    """validateFunctionShape: at least one point; utilizations strictly increasing within
    [0, 100]; scores within [0, 10]."""
    raw = ck.get_list(container, "shape", field)
    if not raw:
        ck.add(field, "at least one point must be specified")
        return None
    pts = []
    for i, pt in enumerate(raw):
        p = f"{field}[{i}]"
        if not isinstance(pt, dict):
            ck.add(p, f"{pt!r} is not a mapping")
            return None
        for k in pt:
            if k not in ("utilization", "score"):
                ck.add(p, f"unknown field {k!r} (known: utilization, score)")
        u = ck.get_int(pt, "utilization", f"{p}.utilization", default=0)
        s = ck.get_int(pt, "score", f"{p}.score", default=0)
        if u is None or s is None:
            return None
        pts.append((u, s))
    for i in range(1, len(pts)):
        if pts[i - 1][0] >= pts[i][0]:
            ck.add(f"{field}[{i}].utilization", "utilization values must be sorted in increasing order")
            break
    for i, (u, s) in enumerate(pts):
        if u < 0 or u > 100:
            ck.add(f"{field}[{i}].utilization", f"{u}: not in valid range [0, 100]")
        if s < 0 or s > MAX_CUSTOM_PRIORITY_SCORE:
            ck.add(f"{field}[{i}].score", f"{s}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    return pts
