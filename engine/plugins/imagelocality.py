"""ImageLocality (upstream ``plugins/imagelocality/image_locality.go``, v1.28.0): prefers
nodes that already hold the pod's container images, weighting each image by how widely it
is spread over the cluster.

As upstream, it reads each node's ``ImageStates`` (``NodeInfo.image_states``): the image's size
and the number of nodes holding it, both as the scheduler cache recorded them when *that* node
was last added or updated (``Cache.add_node_image_states``, v1.28's ``addNodeImageStates``).
A node added later with the same image does not raise the count of nodes added before it, so
two nodes with the same image can see different spreads (UPSTREAM-v1.28.md 11.3a). The total
is the number of nodes in the cycle's snapshot.
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
    count and the number of nodes in the snapshot."""
    __slots__ = ("images", "num_containers", "total_num_nodes")

    def __init__(self, images, num_containers, total_num_nodes):
        self.images = images
        self.num_containers = num_containers
        self.total_num_nodes = total_num_nodes

    def clone(self):
        return self


def _num_containers(pod) -> int:
    spec = pod.manifest.get("spec") if isinstance(pod.manifest, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    return len(containers) if isinstance(containers, list) else len(pod.images)


def sum_image_scores(node_info, images, total_num_nodes) -> int:
    """sumImageScores: scaledImageScore of every container image the node's ImageStates hold."""
    states = node_info.image_states
    total = 0
    if states:
        for name in images:
            st = states.get(name)
            if st is not None:
                total += scaled_image_score(st[0], st[1], total_num_nodes)
    return total


class ImageLocality(ScorePlugin):
    name = NAME

    def __init__(self, handle=None):
        self.handle = handle

    def _cycle_images(self, state, pod, snapshot) -> _CycleImages:
        c = state.get(STATE_KEY)
        if c is not None:
            return c
        images = tuple(normalized_image_name(i) for i in pod.images)
        c = _CycleImages(images, _num_containers(pod), len(snapshot.node_info_list))
        state.write(STATE_KEY, c)
        return c

    def score(self, state, pod, node_name):
        """ImageLocality.Score: calculatePriority(sumImageScores(...), len(containers))."""
        snapshot = self.handle.snapshot()
        try:
            node_info = snapshot.get(node_name)
        except KeyError:
            return 0, Status.error(f'getting node "{node_name}" from Snapshot: '
                                   f'nodeinfo not found for node name "{node_name}"')
        c = self._cycle_images(state, pod, snapshot)
        return calculate_priority(sum_image_scores(node_info, c.images, c.total_num_nodes), c.num_containers), None

    def score_nodes(self, state, pod, node_infos):
        """Score for every node in one call (same results as ``score``)."""
        c = self._cycle_images(state, pod, self.handle.snapshot())
        zero = calculate_priority(0, c.num_containers)
        images, total, containers = c.images, c.total_num_nodes, c.num_containers
        return [calculate_priority(sum_image_scores(ni, images, total), containers) if ni.image_states else zero
                for ni in node_infos], None

    def score_extensions(self):
        return None


def new(args, handle) -> ImageLocality:
    """imagelocality.New."""
    return ImageLocality(handle)
