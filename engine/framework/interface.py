"""The scheduling framework's public interface: status codes, extension points, events.

Upstream: ``pkg/scheduler/framework/interface.go`` and ``framework/types.go`` (ClusterEvent,
ActionType, QueueingHint), v1.28.0.  One small abstract class per extension point; a plugin
implements the ones it needs and is enabled at those points by a profile.  Plugins never
report their own results: the runtime (``framework.runtime.Framework``) wraps every call and
records a ``PluginResult`` trace event.

Writing a plugin::

    from engine.framework import FilterPlugin, Status, Code

    class GPUOnly(FilterPlugin):
        name = "GPUOnly"
        def filter(self, state, pod, node_info):
            if "gpu" not in node_info.node.labels:
                return Status(Code.UnschedulableAndUnresolvable, ["node(s) had no GPU"])
            return None      # None means Success, as a nil *Status does upstream

and register it with ``engine.plugins.registry.register(name, factory)`` (the factory gets
``(args, handle)``), then enable it in a profile of the scenario's ``scheduler`` section.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ..objects import Pod
    from .cycle_state import CycleState
    from .types import NodeInfo


class Code(enum.IntEnum):
    """framework.Code.  Success(0) Error(1) Unschedulable(2) UnschedulableAndUnresolvable(3)
    Wait(4) Skip(5) Pending(6)."""
    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5
    Pending = 6


class Status:
    """framework.Status: a code, reasons, and the plugin that produced it (``failed_plugin``).

    ``None`` is accepted wherever a Status is expected and means Success.
    """
    __slots__ = ("code", "reasons", "failed_plugin", "err")

    def __init__(self, code: Code = Code.Success, reasons: Sequence[str] | str | None = None,
                 failed_plugin: str = "", err: Exception | None = None):
        self.code = code if code.__class__ is Code else Code(code)
        if isinstance(reasons, str):
            reasons = [reasons]
        self.reasons = list(reasons or [])
        self.failed_plugin = failed_plugin
        self.err = err

    # Constructors named as upstream's helpers.
    @classmethod
    def success(cls):
        return cls(Code.Success)

    @classmethod
    def error(cls, message: str):
        return cls(Code.Error, [message])

    def is_success(self) -> bool:
        return self.code == Code.Success

    def is_unschedulable(self) -> bool:
        return self.code in (Code.Unschedulable, Code.UnschedulableAndUnresolvable)

    def is_skip(self) -> bool:
        return self.code == Code.Skip

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_failed_plugin(self, name: str) -> "Status":
        self.failed_plugin = name
        return self

    def __repr__(self):
        return f"Status({self.code.name}, {self.reasons!r}, plugin={self.failed_plugin!r})"


def code_of(status: Optional[Status]) -> Code:
    return Code.Success if status is None else status.code


def is_success(status: Optional[Status]) -> bool:
    return status is None or status.code == Code.Success


# ---------------------------------------------------------------------------------------------
# Cluster events (framework/types.go)

class ActionType(enum.IntFlag):
    Add = 1
    Delete = 2
    UpdateNodeAllocatable = 4
    UpdateNodeLabel = 8
    UpdateNodeTaint = 16
    UpdateNodeCondition = 32
    All = 63
    Update = 60


class GVK:
    Pod = "Pod"
    Node = "Node"
    PersistentVolume = "PersistentVolume"
    PersistentVolumeClaim = "PersistentVolumeClaim"
    StorageClass = "storage.k8s.io/StorageClass"
    CSINode = "storage.k8s.io/CSINode"
    CSIDriver = "storage.k8s.io/CSIDriver"
    CSIStorageCapacity = "storage.k8s.io/CSIStorageCapacity"
    WildCard = "*"


@dataclass(frozen=True)
class ClusterEvent:
    """framework.ClusterEvent: (Resource, ActionType, Label)."""
    resource: str
    action_type: int
    label: str = ""

    def is_wildcard(self) -> bool:
        return self.resource == GVK.WildCard and self.action_type == ActionType.All


class QueueingHint(enum.IntEnum):
    """v1.28 framework.QueueingHint."""
    QueueSkip = 0
    QueueAfterBackoff = 1
    QueueImmediately = 2


@dataclass(frozen=True)
class ClusterEventWithHint:
    """framework.ClusterEventWithHint: an event a plugin registers for, with an optional
    QueueingHintFn ``(pod, old_obj, new_obj) -> QueueingHint`` (used only when the
    SchedulerQueueingHints gate is on)."""
    event: ClusterEvent
    queueing_hint_fn: object = None


# Predefined events (internal/queue/events.go).
AssignedPodAdd = ClusterEvent(GVK.Pod, ActionType.Add, "AssignedPodAdd")
AssignedPodUpdate = ClusterEvent(GVK.Pod, ActionType.Update, "AssignedPodUpdate")
AssignedPodDelete = ClusterEvent(GVK.Pod, ActionType.Delete, "AssignedPodDelete")
NodeAdd = ClusterEvent(GVK.Node, ActionType.Add, "NodeAdd")
NodeSpecUnschedulableChange = ClusterEvent(GVK.Node, ActionType.UpdateNodeTaint, "NodeSpecUnschedulableChange")
NodeAllocatableChange = ClusterEvent(GVK.Node, ActionType.UpdateNodeAllocatable, "NodeAllocatableChange")
NodeLabelChange = ClusterEvent(GVK.Node, ActionType.UpdateNodeLabel, "NodeLabelChange")
NodeTaintChange = ClusterEvent(GVK.Node, ActionType.UpdateNodeTaint, "NodeTaintChange")
NodeConditionChange = ClusterEvent(GVK.Node, ActionType.UpdateNodeCondition, "NodeConditionChange")
WildCardEvent = ClusterEvent(GVK.WildCard, ActionType.All, "WildCardEvent")
UnschedulableTimeout = ClusterEvent(GVK.WildCard, ActionType.All, "UnschedulableTimeout")

# Queue-internal event labels (metrics and trace).
PodAdd = "PodAdd"
ScheduleAttemptFailure = "ScheduleAttemptFailure"
BackoffComplete = "BackoffComplete"
ForceActivate = "ForceActivate"
PodUpdate = "PodUpdate"


# ---------------------------------------------------------------------------------------------
# Results passed between extension points

@dataclass
class PreFilterResult:
    """framework.PreFilterResult: ``node_names`` None means all nodes are eligible."""
    node_names: Optional[set] = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: Optional["PreFilterResult"]) -> "PreFilterResult":
        if self.all_nodes() and (other is None or other.all_nodes()):
            return PreFilterResult(None)
        if self.all_nodes():
            return PreFilterResult(set(other.node_names))
        if other is None or other.all_nodes():
            return PreFilterResult(set(self.node_names))
        return PreFilterResult(self.node_names & other.node_names)


MODE_NOOP = 0
MODE_OVERRIDE = 1


@dataclass
class NominatingInfo:
    """framework.NominatingInfo: Override sets (or, with an empty name, clears) the pod's
    nominated node; Noop keeps whatever the pod's status says."""
    nominated_node_name: str = ""
    mode: int = MODE_NOOP


@dataclass
class PostFilterResult:
    nominating_info: Optional[NominatingInfo] = None


class NodeScore:
    """framework.NodeScore: a node's score from one plugin."""
    __slots__ = ("name", "score")

    def __init__(self, name: str, score: int):
        self.name = name
        self.score = score

    def __eq__(self, other):
        return isinstance(other, NodeScore) and (self.name, self.score) == (other.name, other.score)

    def __repr__(self):
        return f"NodeScore({self.name!r}, {self.score})"


# ---------------------------------------------------------------------------------------------
# Plugin interfaces

class Plugin:
    """Every plugin has a ``name``; a factory ``(args, handle) -> plugin`` creates it."""
    name: str = ""


class PreEnqueuePlugin(Plugin):
    """Runs before a pod enters activeQ; a non-Success keeps it in unschedulablePods (gated)."""
    def pre_enqueue(self, pod: "Pod") -> Optional[Status]:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    """Orders activeQ.  ``less(a, b)`` takes two QueuedPodInfos."""
    def less(self, a, b) -> bool:
        raise NotImplementedError


class EnqueueExtensions:
    """Optional: the cluster events that may make a pod rejected by this plugin schedulable.
    Plugins without it are registered for every event (upstream's default)."""
    def events_to_register(self) -> list:
        raise NotImplementedError


class PreFilterExtensions:
    """Incremental updates of PreFilter state when preemption adds or removes pods."""
    def add_pod(self, state: "CycleState", pod_to_schedule: "Pod", pod_info_to_add, node_info: "NodeInfo") -> Optional[Status]:
        raise NotImplementedError

    def remove_pod(self, state: "CycleState", pod_to_schedule: "Pod", pod_info_to_remove, node_info: "NodeInfo") -> Optional[Status]:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    """Runs once per cycle before Filter.  Returns ``(PreFilterResult | None, Status | None)``.
    Skip means this plugin's Filter is not run this cycle."""
    def pre_filter(self, state: "CycleState", pod: "Pod"):
        raise NotImplementedError

    def pre_filter_extensions(self) -> Optional[PreFilterExtensions]:
        return None


class FilterPlugin(Plugin):
    """Runs per node; Success, Unschedulable or UnschedulableAndUnresolvable (anything else is
    an Error)."""
    def filter(self, state: "CycleState", pod: "Pod", node_info: "NodeInfo") -> Optional[Status]:
        raise NotImplementedError


class PostFilterPlugin(Plugin):
    """Runs when no node passed Filter (e.g. preemption).  Gets the node -> Status map of the
    failed filtering; returns ``(PostFilterResult | None, Status)``."""
    def post_filter(self, state: "CycleState", pod: "Pod", filtered_node_status_map: dict):
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: "CycleState", pod: "Pod", nodes: list) -> Optional[Status]:
        raise NotImplementedError


class ScoreExtensions:
    def normalize_score(self, state: "CycleState", pod: "Pod", scores: list) -> Optional[Status]:
        """Rewrite ``scores`` (a list of NodeScore) in place into [0, 100]."""
        raise NotImplementedError


class ScorePlugin(Plugin):
    """``score(state, pod, node_name) -> (int, Status | None)``.

    ``score_nodes(state, pod, node_infos) -> (list of int, Status | None)`` scores every
    feasible node in one call; the runtime uses it.  Its default calls ``score`` per node;
    a plugin may override it for speed, and must then return exactly what ``score`` would.
    """
    def score(self, state: "CycleState", pod: "Pod", node_name: str):
        raise NotImplementedError

    def score_nodes(self, state: "CycleState", pod: "Pod", node_infos: list):
        out = []
        for ni in node_infos:
            s, status = self.score(state, pod, ni.name)
            if status is not None and status.code != Code.Success:
                return None, status
            out.append(s)
        return out, None

    def score_extensions(self) -> Optional[ScoreExtensions]:
        return None


class ReservePlugin(Plugin):
    def reserve(self, state, pod, node_name) -> Optional[Status]:
        raise NotImplementedError

    def unreserve(self, state, pod, node_name) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    """Returns ``(Status | None, timeout_seconds)``."""
    def permit(self, state, pod, node_name):
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state, pod, node_name) -> Optional[Status]:
        raise NotImplementedError


class BindPlugin(Plugin):
    """Skip passes the pod to the next bind plugin."""
    def bind(self, state, pod, node_name) -> Optional[Status]:
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state, pod, node_name) -> None:
        raise NotImplementedError


EXTENSION_POINTS = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
