"""The nominator (upstream ``nominator`` in ``internal/queue/scheduling_queue.go``, v1.28).

Remembers which pending pods are nominated to which node (``status.nominatedNodeName``, or
an in-memory nomination set by preemption before its status patch is seen).  Filters treat
pods nominated to a node with priority >= the incoming pod's as already running there
(``RunFilterPluginsWithNominatedPods``).  Pods are kept by key (upstream: by UID).
"""
from __future__ import annotations

from ..framework.interface import MODE_NOOP, MODE_OVERRIDE


class Nominator:
    # counts the changes of ``nominated_pods`` (a reader may keep what it built from them while
    # it stays the same; not upstream's)
    version = 0

    def __init__(self, pod_lister=None):
        self.nominated_pods: dict = {}        # node name -> [Pod] in nomination order
        self.nominated_pod_to_node: dict = {}  # pod key -> node name
        self._pod_lister = pod_lister          # key -> current Pod (or None)

    def add_nominated_pod(self, pod, nominating_info=None) -> None:
        """AddNominatedPod / addNominatedPodUnlocked."""
        self.delete_nominated_pod_if_exists(pod)
        if nominating_info is not None and nominating_info.mode == MODE_OVERRIDE:
            node_name = nominating_info.nominated_node_name
        else:
            if not pod.nominated_node_name:
                return
            node_name = pod.nominated_node_name
        if not node_name:
            return  # upstream stores the pod under ""; no node has that name
        if self._pod_lister is not None:
            current = self._pod_lister(pod.key)
            if current is None or current.node_name:
                return
        self.nominated_pod_to_node[pod.key] = node_name
        lst = self.nominated_pods.setdefault(node_name, [])
        for p in lst:
            if p.key == pod.key:
                return
        lst.append(pod)
        self.version += 1

    def delete_nominated_pod_if_exists(self, pod) -> None:
        """DeleteNominatedPodIfExists / delete: order-preserving removal."""
        node = self.nominated_pod_to_node.pop(pod.key, None)
        if node is None:
            return
        self.version += 1
        lst = self.nominated_pods.get(node, [])
        for i, p in enumerate(lst):
            if p.key == pod.key:
                del lst[i]
                break
        if not lst:
            self.nominated_pods.pop(node, None)

    def update_nominated_pod(self, old_pod, new_pod) -> None:
        """UpdateNominatedPod: keep an in-memory nomination when neither version of the pod
        carries one in its status."""
        info = None
        if not old_pod.nominated_node_name and not new_pod.nominated_node_name:
            nnn = self.nominated_pod_to_node.get(old_pod.key)
            if nnn is not None:
                from ..framework.interface import NominatingInfo
                info = NominatingInfo(nnn, MODE_OVERRIDE)
        self.delete_nominated_pod_if_exists(old_pod)
        self.add_nominated_pod(new_pod, info)

    def nominated_pods_for_node(self, node_name: str) -> list:
        return list(self.nominated_pods.get(node_name, ()))

    def nominated_node_of(self, pod_key: str):
        return self.nominated_pod_to_node.get(pod_key)
