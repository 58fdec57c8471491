"""GPUOnly: an example out-of-tree plugin for the simulator (see docs/writing-plugins.md).

A pod that requests the GPU resource (``nvidia.com/gpu`` by default) may only run on nodes
that carry the accelerator label (``accelerator`` by default), and among those it prefers the
node with the most GPUs still free.  Pods that request no GPU are left alone: PreFilter and
PreScore return Skip for them, so this plugin's Filter and Score are not even called.

Extension points: PreFilter, Filter, PreScore, Score (with NormalizeScore), plus
EnqueueExtensions (which cluster events may help a pod this plugin rejected, with a queueing
hint function).

Args (``pluginConfig``): ``nodeLabel`` (string) and ``resourceName`` (string).

Register it before building an Engine::

    from engine.plugins import registry
    import gpu_only
    registry.register(gpu_only.NAME, gpu_only.new)

or load the file with ``--plugins docs/examples/gpu_only.py`` (CLI) or
``SCHEDULER_PLUGINS=docs/examples/gpu_only.py`` (server), which read ``PLUGINS`` below.
"""
from __future__ import annotations

from engine.errors import ConfigError
from engine.framework import (ActionType, ClusterEvent, ClusterEventWithHint, Code, QueueingHint,
                              Status)
from engine.framework.interface import (GVK, MAX_NODE_SCORE, EnqueueExtensions, FilterPlugin,
                                        PreFilterPlugin, PreScorePlugin, ScoreExtensions,
                                        ScorePlugin)

NAME = "GPUOnly"
STATE_KEY = "PreFilter" + NAME


class _State:
    """What PreFilter computed for this cycle.  CycleState values need ``clone()`` because
    preemption's dry run works on a copy of the cycle state; this one never changes after
    PreFilter, so sharing it is safe."""
    __slots__ = ("gpus",)

    def __init__(self, gpus: int):
        self.gpus = gpus

    def clone(self):
        return self


class GPUOnly(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions,
              EnqueueExtensions):
    name = NAME

    def __init__(self, handle, node_label: str, resource_name: str):
        self.handle = handle
        self.node_label = node_label
        self.resource_name = resource_name

    # EnqueueExtensions ------------------------------------------------------------------------
    def events_to_register(self):
        """A pod rejected by this plugin can only be helped by a new node or a node whose
        labels changed.  The hint function narrows that down further, but only when the
        scenario turns the SchedulerQueueingHints feature gate on."""
        return [ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                                     self.is_schedulable_after_node_change)]

    def is_schedulable_after_node_change(self, pod, old_node, new_node):
        """QueueingHintFn: only a node that now carries the label can help."""
        if new_node is not None and self.node_label in new_node.labels:
            return QueueingHint.QueueAfterBackoff
        return QueueingHint.QueueSkip

    # PreFilter --------------------------------------------------------------------------------
    def pre_filter(self, state, pod):
        gpus = pod.requests.get(self.resource_name, 0)
        if not gpus:
            return None, Status(Code.Skip)          # Filter will not be called this cycle
        state.write(STATE_KEY, _State(gpus))
        return None, None                           # (PreFilterResult: all nodes, Success)

    def pre_filter_extensions(self):
        return None                                 # nothing to update when pods come and go

    # Filter -----------------------------------------------------------------------------------
    def filter(self, state, pod, node_info):
        if self.node_label not in node_info.node.labels:
            # Removing pods from the node cannot help: tell preemption not to try here.
            return Status(Code.UnschedulableAndUnresolvable,
                          [f"node(s) didn't have the {self.node_label} label"])
        return None                                 # None means Success

    # PreScore / Score -------------------------------------------------------------------------
    def pre_score(self, state, pod, nodes):
        if state.get(STATE_KEY) is None:            # PreFilter skipped: the pod wants no GPU
            return Status(Code.Skip)                # Score will not be called this cycle
        return None

    def score(self, state, pod, node_name):
        node_info = self.handle.snapshot().get(node_name)
        free = node_info.allocatable.get(self.resource_name, 0) - node_info.requested.get(self.resource_name, 0)
        return max(free, 0), None

    def score_extensions(self):
        return self

    def normalize_score(self, state, pod, scores):
        """Scale the free-GPU counts onto [0, MAX_NODE_SCORE]: the node with the most free
        GPUs gets 100."""
        top = max((s.score for s in scores), default=0)
        for s in scores:
            s.score = s.score * MAX_NODE_SCORE // top if top else 0
        return None


def new(args, handle):
    """The factory: ``args`` is this plugin's pluginConfig args (a dict, maybe empty)."""
    problems = []
    for k in args:
        if k not in ("nodeLabel", "resourceName"):
            problems.append(f"pluginConfig[{NAME}].args: unknown field {k!r} (known: nodeLabel, resourceName)")
    node_label = args.get("nodeLabel", "accelerator")
    resource_name = args.get("resourceName", "nvidia.com/gpu")
    for field, v in (("nodeLabel", node_label), ("resourceName", resource_name)):
        if not isinstance(v, str) or not v:
            problems.append(f"pluginConfig[{NAME}].args.{field}: {v!r} is not a non-empty string")
    if problems:
        raise ConfigError(problems)
    return GPUOnly(handle, node_label, resource_name)
PLUGINS = {NAME: new}   # what --plugins and SCHEDULER_PLUGINS load
