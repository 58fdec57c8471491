"""ImageLocality (upstream ``plugins/imagelocality/image_locality.go``, v1.28.0): prefers
nodes that already hold the pod's container images, weighting each image by how widely it
is spread over the cluster.

Upstream reads each node's ``ImageStates`` (size and the number of nodes holding the image);
here the size comes from ``Node.images`` and the node count is computed over the cycle's
snapshot once per cycle, for the pod's images only, and kept in CycleState.
"""
from __future__ import annotations

from ..framework.interface import MAX_NODE_SCORE, ScorePlugin, Status
from .helper import go_div

NAME = "ImageLocality"
STATE_KEY = "Score" + NAME

MB = 1024 * 1024
minThreshold = 23 * MB
maxContainerThreshold = 1000 * MB


def normalized_image_name(name: str) -> str:
    """normalizedImageName: add ``:latest`` when the reference has no tag (no ':' after the
    last '/').  Node image names are compared as reported, unnormalized."""
    if name.rfind(":") <= name.rfind("/"):
        name = name + ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """calculatePriority: clamp the summed image score into [minThreshold,
    maxContainerThreshold * containers] and map it linearly onto 0..MaxNodeScore."""
    max_threshold = maxContainerThreshold * num_containers
    if sum_scores < minThreshold:
        sum_scores = minThreshold
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - minThreshold), max_threshold - minThreshold)


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    """scaledImageScore: the image size times the share of nodes holding it."""
    spread = float(num_nodes) / float(total_num_nodes)
    return int(float(size) * spread)


class _CycleImages:
    """Per-cycle data: the pod's normalized image names (one per container), its container
    count and, per name, how many of the snapshot's nodes hold that image."""
    __slots__ = ("images", "num_containers", "num_nodes", "total_num_nodes")

    def __init__(self, images, num_containers, num_nodes, total_num_nodes):
        self.images = images
        self.num_containers = num_containers
        self.num_nodes = num_nodes
        self.total_num_nodes = total_num_nodes

    def clone(self):
        return self


def _num_containers(pod) -> int:
    spec = pod.manifest.get("spec") if isinstance(pod.manifest, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    return len(containers) if isinstance(containers, list) else len(pod.images)


class ImageLocality(ScorePlugin):
    name = NAME

    def __init__(self, handle=None):
        self.handle = handle

    def _cycle_images(self, state, pod, snapshot) -> _CycleImages:
        c = state.get(STATE_KEY)
        if c is not None:
            return c
        images = tuple(normalized_image_name(i) for i in pod.images)
        wanted = set(images)
        node_infos = snapshot.node_info_list
        index = getattr(snapshot, "image_node_counts", None)
        if index is not None:
            all_counts = index()
            counts = {name: all_counts.get(name, 0) for name in wanted}
        else:
            counts = dict.fromkeys(wanted, 0)
            for ni in node_infos if wanted else ():
                have = ni.node.images
                if not have:
                    continue
                for name in wanted:
                    if name in have:
                        counts[name] += 1
        c = _CycleImages(images, _num_containers(pod), counts, len(node_infos))
        state.write(STATE_KEY, c)
        return c

    def score(self, state, pod, node_name):
        """ImageLocality.Score: calculatePriority(sumImageScores(...), len(containers)), where
        sumImageScores adds scaledImageScore of every container image present on the node."""
        snapshot = self.handle.snapshot()
        try:
            node_info = snapshot.get(node_name)
        except KeyError:
            return 0, Status.error(f'getting node "{node_name}" from Snapshot: '
                                   f'nodeinfo not found for node name "{node_name}"')
        c = self._cycle_images(state, pod, snapshot)
        have = node_info.node.images
        total = 0
        if have:
            for name in c.images:
                size = have.get(name)
                if size is not None:
                    total += scaled_image_score(size, c.num_nodes[name], c.total_num_nodes)
        return calculate_priority(total, c.num_containers), None

    def score_nodes(self, state, pod, node_infos):
        """Score for every node in one call (same results as ``score``)."""
        c = self._cycle_images(state, pod, self.handle.snapshot())
        zero = calculate_priority(0, c.num_containers)
        out = []
        for ni in node_infos:
            have = ni.node.images
            if not have:
                out.append(zero)
                continue
            total = 0
            for name in c.images:
                size = have.get(name)
                if size is not None:
                    total += scaled_image_score(size, c.num_nodes[name], c.total_num_nodes)
            out.append(calculate_priority(total, c.num_containers))
        return out, None

    def score_extensions(self):
        return None


def new(args, handle) -> ImageLocality:
    """imagelocality.New."""
    return ImageLocality(handle)
