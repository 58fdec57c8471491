"""Coscheduling: gang scheduling with a PodGroup, in the spirit of kubernetes-sigs/scheduler-plugins.

Written for this simulator from that project's design (pkg/coscheduling, the v0.27 line that
builds against kube-scheduler v1.28) and our own reading; it is an example, not a port.

A pod joins a gang with the label ``scheduling.x-k8s.io/pod-group: <name>``; the gang is a
``PodGroup`` object (``apiVersion: scheduling.x-k8s.io/v1alpha1``) in the pod's namespace with
``spec.minMember`` (how many pods must be placed together) and optionally
``spec.scheduleTimeoutSeconds`` (how long placed members wait for the others).

- **PreFilter** rejects a pod (UnschedulableAndUnresolvable, so preemption is not tried) when
  its PodGroup does not exist or the gang has fewer than ``minMember`` pods at all.
- **Permit**: when this pod completes the quorum (members already placed, i.e. assumed or
  bound, plus this one reach ``minMember``), it allows every waiting member and passes;
  otherwise it asks to **Wait** (the group's timeout, else ``permitWaitingTimeSeconds``), and
  the first member to wait asks to activate its pending siblings (PodsToActivate).
- **PostFilter**: when a member finds no node and the gang is short by more than 10 %, the
  members waiting on Permit are rejected at once ("optimistic rejection in PostFilter"), which
  releases the space they hold.
- **Unreserve** (a member timed out or was rejected): its waiting siblings are rejected too.
- **EventsToRegister**: a new pod, and a PodGroup added or updated.

Left out from the original: its QueueSort (by PodGroup creation time, so members pop together),
``minResources``, the group backoff and the caches of permitted and denied groups.

Args (``pluginConfig``): ``permitWaitingTimeSeconds`` (int, default 60).

    python -m engine run fixtures/20-gang-scheduling.yaml --plugins docs/examples/coscheduling.py --trace -
"""
from __future__ import annotations

from engine.errors import ConfigError
from engine.framework import ActionType, ClusterEvent, ClusterEventWithHint, Code, Status
from engine.framework.interface import (GVK, EnqueueExtensions, PermitPlugin, PostFilterPlugin,
                                        PreFilterPlugin, ReservePlugin)

NAME = "Coscheduling"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PG_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
# framework.GVK of a custom resource: <plural>.<version>.<group>
PG_GVK = "podgroups.v1alpha1.scheduling.x-k8s.io"


def pod_group_name(pod) -> str:
    return pod.labels.get(POD_GROUP_LABEL, "")


class Coscheduling(PreFilterPlugin, PostFilterPlugin, ReservePlugin, PermitPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, handle, permit_waiting_time: int):
        self.handle = handle
        self.permit_waiting_time = permit_waiting_time

    # -- helpers (scheduler-plugins' PodGroupManager) ----------------------------------------
    def pod_group(self, pod):
        """The PodGroup manifest of the pod's gang, or None (GetPodGroup)."""
        name = pod_group_name(pod)
        if not name:
            return None
        return self.handle.get_object(PG_API_VERSION, "PodGroup", pod.namespace, name)

    def assigned(self, group: str, namespace: str, pod) -> int:
        """CalculateAssignedPods: members placed on a node (bound or assumed) in the snapshot.
        The pod in its own cycle is left out: upstream's snapshot, taken when the cycle
        started, does not hold it; this simulator's already shows it assumed at Permit."""
        n = 0
        for ni in self.handle.snapshot().node_info_list:
            for p in ni.pods:
                if p.namespace == namespace and pod_group_name(p) == group and p.uid != pod.uid:
                    n += 1
        return n

    def siblings(self, pod) -> list:
        """The pods of the gang that exist (the pod lister with the group's label)."""
        group = pod_group_name(pod)
        return [p for p in self.handle.list_pods(pod.namespace) if pod_group_name(p) == group]

    @staticmethod
    def min_member(pg) -> int:
        return int(((pg.get("spec") or {}).get("minMember")) or 0)

    def wait_time(self, pg) -> int:
        t = (pg.get("spec") or {}).get("scheduleTimeoutSeconds")
        return int(t) if t else self.permit_waiting_time

    def reject_waiting_members(self, pod, message: str) -> None:
        group = pod_group_name(pod)

        def reject(wp):
            p = wp.get_pod()
            if p.namespace == pod.namespace and pod_group_name(p) == group:
                wp.reject(self.name, message)
        self.handle.iterate_over_waiting_pods(reject)

    # -- EnqueueExtensions --------------------------------------------------------------------
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.Add)),
                ClusterEventWithHint(ClusterEvent(PG_GVK, ActionType.Add | ActionType.Update))]

    # -- PreFilter ----------------------------------------------------------------------------
    def pre_filter(self, state, pod):
        if not pod_group_name(pod):
            return None, None
        pg = self.pod_group(pod)
        if pg is None:
            return None, Status(Code.UnschedulableAndUnresolvable,
                                [f'podGroup "{pod.namespace}/{pod_group_name(pod)}" not found'])
        total = len(self.siblings(pod))
        if total < self.min_member(pg):
            return None, Status(Code.UnschedulableAndUnresolvable,
                                [f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods "
                                 f"number: {total}, minMember of group: {self.min_member(pg)}"])
        return None, None

    def pre_filter_extensions(self):
        return None

    # -- PostFilter ---------------------------------------------------------------------------
    def post_filter(self, state, pod, filtered_node_status_map):
        pg = self.pod_group(pod)
        if pg is None:
            return None, Status(Code.Unschedulable, ["can not find pod group"])
        group = pod_group_name(pod)
        need = self.min_member(pg)
        placed = self.assigned(group, pod.namespace, pod)
        if placed >= need:
            return None, Status(Code.Unschedulable)      # the quorum stands without this pod
        if need and (need - placed) / need <= 0.1:
            return None, Status(Code.Unschedulable)      # a small gap: let later members try
        self.reject_waiting_members(pod, "optimistic rejection in PostFilter")
        return None, Status(Code.Unschedulable, [f"PodGroup {pod.namespace}/{group} gets rejected due to Pod "
                                                 f"{pod.name} is unschedulable even after PostFilter"])

    # -- Reserve ------------------------------------------------------------------------------
    def reserve(self, state, pod, node_name):
        return None

    def unreserve(self, state, pod, node_name):
        if self.pod_group(pod) is None:
            return
        self.reject_waiting_members(pod, "rejection in Unreserve")

    # -- Permit -------------------------------------------------------------------------------
    def permit(self, state, pod, node_name):
        group = pod_group_name(pod)
        if not group:
            return None, 0
        pg = self.pod_group(pod)
        if pg is None:
            return Status(Code.Unschedulable, ["PodGroup not found"]), 0
        placed = self.assigned(group, pod.namespace, pod)
        if placed + 1 >= self.min_member(pg):
            def allow(wp):
                p = wp.get_pod()
                if p.namespace == pod.namespace and pod_group_name(p) == group:
                    wp.allow(self.name)
            self.handle.iterate_over_waiting_pods(allow)
            return None, 0
        if placed == 0:
            # the first member to wait brings its pending siblings forward (ActivateSiblings)
            for p in self.siblings(pod):
                if p.uid != pod.uid:
                    state.pods_to_activate[p.key] = p
        return Status(Code.Wait), self.wait_time(pg)


def new(args: dict, handle):
    """The factory: ``args`` is this plugin's pluginConfig args (a dict, maybe empty)."""
    problems = [f"pluginConfig[{NAME}].args: unknown field {k!r} (known: permitWaitingTimeSeconds)"
                for k in args if k != "permitWaitingTimeSeconds"]
    t = args.get("permitWaitingTimeSeconds", 60)
    if not isinstance(t, int) or isinstance(t, bool) or t < 0:
        problems.append(f"pluginConfig[{NAME}].args.permitWaitingTimeSeconds: {t!r} is not a non-negative integer")
    if problems:
        raise ConfigError(problems)
    return Coscheduling(handle, t)


PLUGINS = {NAME: new}
