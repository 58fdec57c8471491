"""The scheduler cache and node tree (upstream ``pkg/scheduler/internal/cache``, v1.28).

The cache holds one NodeInfo per node with the pods bound or assumed to it.  ``assume_pod``
puts a pod on its node as soon as a cycle picks the node, before binding finishes;
``forget_pod`` undoes that when binding fails; ``add_pod`` confirms it when the bind is
observed (upstream updates the assumed pod, which removes and re-adds it, so it moves to the
end of the node's pod list).

The node tree orders nodes as upstream's snapshot lists them: zones (region + zone labels) in
the order first seen, one node from each zone in turn, nodes within a zone in creation order.
"""
from __future__ import annotations

from .framework.handle import Snapshot
from .framework.types import NodeInfo

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


def get_zone_key(node) -> str:
    """utilnode.GetZoneKey: "" without zone or region labels."""
    labels = node.labels
    zone = labels.get(ZONE_LABELS[0]) or labels.get(ZONE_LABELS[1]) or ""
    region = labels.get(REGION_LABELS[0]) or labels.get(REGION_LABELS[1]) or ""
    if not zone and not region:
        return ""
    return region + ":\x00:" + zone


class NodeTree:
    def __init__(self):
        self.tree: dict = {}
        self.zones: list = []
        self.num_nodes = 0

    def add_node(self, node) -> None:
        zone = get_zone_key(node)
        names = self.tree.get(zone)
        if names is not None:
            if node.name in names:
                return
            names.append(node.name)
        else:
            self.zones.append(zone)
            self.tree[zone] = [node.name]
        self.num_nodes += 1

    def remove_node(self, node) -> None:
        zone = get_zone_key(node)
        names = self.tree.get(zone)
        if names is None or node.name not in names:
            return
        names.remove(node.name)
        if not names:
            del self.tree[zone]
            self.zones.remove(zone)
        self.num_nodes -= 1

    def update_node(self, old, new) -> None:
        if old is not None and get_zone_key(old) == get_zone_key(new):
            return
        if old is not None:
            self.remove_node(old)
        self.add_node(new)

    def list(self) -> list:
        out = []
        zones = [self.tree[z] for z in self.zones]
        i = 0
        while len(out) < self.num_nodes:
            for names in zones:
                if i < len(names):
                    out.append(names[i])
            i += 1
        return out


class Cache:
    def __init__(self):
        self.nodes: dict = {}          # name -> NodeInfo (node may be None for pods on unknown nodes)
        self.node_tree = NodeTree()
        self.pod_states: dict = {}     # key -> Pod as placed in the cache
        self.assumed_pods: set = set()
        self._list = None
        self._snapshot = None
        # cache.imageStates: image name -> [size, set of node names holding it]
        self.image_states: dict = {}
        # nodes whose pods changed since the snapshot's node table last looked
        self._dirty: set = set()

    # --------------------------------------------------------------- node image states

    def add_node_image_states(self, node, ni: NodeInfo) -> None:
        """addNodeImageStates (v1.28 internal/cache/cache.go): record the node's images in the
        cache-wide image states and give the NodeInfo a summary per image: the size the cache
        first recorded for that image and the number of nodes holding it *now*. Later nodes
        with the same image do not update this node's summary: it stays as counted here until
        this node itself is added or updated again (UPSTREAM-v1.28.md 11.3a)."""
        summary = {}
        for name, size in node.images.items():
            state = self.image_states.get(name)
            if state is None:
                state = self.image_states[name] = [size, {node.name}]
            else:
                state[1].add(node.name)
            if name not in summary:
                summary[name] = (state[0], len(state[1]))
        ni.image_states = summary

    def remove_node_image_states(self, node) -> None:
        """removeNodeImageStates: forget the node in the image states; an image no node holds
        any more is dropped.  Other nodes' summaries are left as they are."""
        if node is None:
            return
        for name in node.images:
            state = self.image_states.get(name)
            if state is not None:
                state[1].discard(node.name)
                if not state[1]:
                    del self.image_states[name]

    # --------------------------------------------------------------- nodes

    def add_node(self, node) -> NodeInfo:
        ni = self.nodes.get(node.name)
        if ni is None:
            ni = NodeInfo(node)
            self.nodes[node.name] = ni
        else:
            self.remove_node_image_states(ni.node)
            ni.set_node(node)
        self.node_tree.add_node(node)
        self.add_node_image_states(node, ni)
        self._list = None
        return ni

    def update_node(self, old, new) -> NodeInfo:
        ni = self.nodes.get(new.name)
        if ni is None:
            ni = NodeInfo(new)
            self.nodes[new.name] = ni
            self.node_tree.add_node(new)
        else:
            self.remove_node_image_states(ni.node)
            self.node_tree.update_node(old, new)
            ni.set_node(new)
        self.add_node_image_states(new, ni)
        self._list = None
        return ni

    def remove_node(self, node) -> None:
        ni = self.nodes.get(node.name)
        if ni is None:
            return
        self.remove_node_image_states(node)
        self.node_tree.remove_node(node)
        if ni.pods:
            ni.node = None   # pods still reference it until they are removed
        else:
            del self.nodes[node.name]
        self._list = None

    # --------------------------------------------------------------- pods

    def _node_info_for(self, node_name: str) -> NodeInfo:
        ni = self.nodes.get(node_name)
        if ni is None:
            ni = NodeInfo(None)
            self.nodes[node_name] = ni
        return ni

    def _add(self, pod) -> None:
        self._node_info_for(pod.node_name).add_pod(pod)
        self._dirty.add(pod.node_name)
        self.pod_states[pod.key] = pod
        if self._snapshot is not None and pod.has_affinity:
            self._snapshot.invalidate_affinity_lists()

    def _remove(self, pod) -> None:
        if self._snapshot is not None and pod.has_affinity:
            self._snapshot.invalidate_affinity_lists()
        ni = self.nodes.get(pod.node_name)
        if ni is not None:
            ni.remove_pod(pod)
            self._dirty.add(pod.node_name)
            if ni.node is None and not ni.pods:
                del self.nodes[pod.node_name]
        self.pod_states.pop(pod.key, None)

    def assume_pod(self, pod) -> None:
        """AssumePod: the pod (with spec.nodeName set) counts on its node from now on.

        Upstream keys the cache by UID; here a stale assumption of an earlier pod with the
        same name (deleted while its bind was in flight) is dropped when the new one is assumed.
        """
        stale = self.pod_states.get(pod.key)
        if stale is not None and stale.uid != pod.uid:
            self._remove(stale)
            self.assumed_pods.discard(pod.key)
        self._add(pod)
        self.assumed_pods.add(pod.key)

    def forget_pod(self, pod) -> None:
        """ForgetPod: undo an assume (binding failed)."""
        if pod.key in self.assumed_pods:
            self._remove(self.pod_states[pod.key])
            self.assumed_pods.discard(pod.key)

    def is_assumed_pod(self, key: str, uid: str | None = None) -> bool:
        """IsAssumedPod; with ``uid``, only if the assumed pod is that very pod (upstream keys
        the cache by UID, so a re-created pod of the same name is not assumed)."""
        if key not in self.assumed_pods:
            return False
        return uid is None or self.pod_states[key].uid == uid

    def add_pod(self, pod) -> None:
        """AddPod: a bound pod observed; confirms an assumed one (remove, then add: it goes last)."""
        current = self.pod_states.get(pod.key)
        if current is not None:
            self._remove(current)
            self.assumed_pods.discard(pod.key)
        self._add(pod)

    def update_pod(self, old, new) -> None:
        current = self.pod_states.get(old.key, old)
        self._remove(current)
        self._add(new)

    def remove_pod(self, pod) -> None:
        current = self.pod_states.get(pod.key)
        if current is not None:
            self._remove(current)
        self.assumed_pods.discard(pod.key)

    def get_pod(self, key: str):
        return self.pod_states.get(key)

    # --------------------------------------------------------------- snapshot

    def node_info_list(self) -> list:
        if self._list is None:
            self._list = [self.nodes[n] for n in self.node_tree.list()]
        return self._list

    def snapshot(self) -> Snapshot:
        """The Snapshot over the live NodeInfos, rebuilt only when the node list changed
        (the cycle is evaluated at one instant, so the live NodeInfos are its snapshot)."""
        lst = self.node_info_list()
        if self._snapshot is None or self._snapshot.node_info_list is not lst:
            if self._snapshot is not None:
                # only the current snapshot keeps a node table: the marks of changed nodes are
                # its to consume (an older one asked for its table would take them)
                self._snapshot.retire()
            self._dirty = set()
            self._snapshot = Snapshot(lst, {ni.name: ni for ni in lst}, self._dirty)
        return self._snapshot
