"""NodeInfo, QueuedPodInfo and friends (upstream ``pkg/scheduler/framework/types.go``, v1.28).

Upstream wraps each pod in a PodInfo that caches its parsed affinity terms; here the parsed
terms live on ``objects.Pod`` itself, so ``NodeInfo.pods`` holds Pods directly and plays the
role of ``[]*PodInfo``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..objects import Node, Pod

_generation = [0]


def next_generation() -> int:
    _generation[0] += 1
    return _generation[0]


class NodeInfo:
    """framework.NodeInfo: a node plus the pods on it and the sums the filters need.

    Pod order matters (it breaks ties between equally important preemption victims) and is
    upstream's: ``add_pod`` appends; ``remove_pod`` moves the node's last pod into the freed
    slot (``removeFromSlice``).
    """
    __slots__ = ("node", "name", "pods", "pods_with_affinity", "pods_with_required_anti_affinity",
                 "used_ports", "requested", "non0_cpu", "non0_mem", "generation", "image_states")

    def __init__(self, node: Optional[Node] = None):
        self.node = node
        self.name = node.name if node is not None else ""
        self.pods: list = []
        self.pods_with_affinity: list = []
        self.pods_with_required_anti_affinity: list = []
        self.used_ports: dict = {}     # ip -> set((protocol, port))
        self.requested: dict = {}      # resource -> amount (cpu in millicores)
        self.non0_cpu = 0
        self.non0_mem = 0
        self.generation = next_generation()
        # NodeInfo.ImageStates: image name -> (size, NumNodes) as the cache recorded them when
        # this node was last added or updated (Cache.add_node_image_states).
        self.image_states: dict = {}

    @property
    def allocatable(self) -> dict:
        return self.node.allocatable if self.node else {}

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.generation = next_generation()

    def clone(self) -> "NodeInfo":
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = {ip: set(s) for ip, s in self.used_ports.items()}
        c.requested = dict(self.requested)
        c.non0_cpu = self.non0_cpu
        c.non0_mem = self.non0_mem
        c.generation = self.generation
        c.image_states = self.image_states
        return c

    def add_pod(self, pod: Pod) -> None:
        """NodeInfo.AddPod."""
        self.pods.append(pod)
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pod)
        self._update(pod, 1)

    def remove_pod(self, pod: Pod) -> bool:
        """NodeInfo.RemovePod: swap-with-last removal, by pod key."""
        key = pod.key
        if pod.has_affinity:
            _remove_from_slice(self.pods_with_affinity, key)
        if pod.has_required_anti_affinity:
            _remove_from_slice(self.pods_with_required_anti_affinity, key)
        pods = self.pods
        for i in range(len(pods)):
            if pods[i].key == key:
                old = pods[i]
                pods[i] = pods[-1]
                pods.pop()
                self._update(old, -1)
                return True
        return False

    def _update(self, pod: Pod, sign: int) -> None:
        req = self.requested
        for k, v in pod.requests.items():
            req[k] = req.get(k, 0) + sign * v
        self.non0_cpu += sign * pod.non0_cpu
        self.non0_mem += sign * pod.non0_mem
        for hp in pod.host_ports:
            if sign > 0:
                self.used_ports.setdefault(hp.ip, set()).add((hp.protocol, hp.port))
            else:
                s = self.used_ports.get(hp.ip)
                if s is not None:
                    s.discard((hp.protocol, hp.port))
                    if not s:
                        del self.used_ports[hp.ip]
        self.generation = next_generation()

    def ports_conflict(self, ip: str, protocol: str, port: int) -> bool:
        """HostPortInfo.CheckConflict."""
        if port <= 0:
            return False
        pp = (protocol or "TCP", port)
        ip = ip or "0.0.0.0"
        if ip == "0.0.0.0":
            for s in self.used_ports.values():
                if pp in s:
                    return True
            return False
        for k in ("0.0.0.0", ip):
            s = self.used_ports.get(k)
            if s is not None and pp in s:
                return True
        return False

    def __repr__(self):
        return f"NodeInfo({self.name}, pods={[p.key for p in self.pods]})"


def _remove_from_slice(lst: list, key: str) -> None:
    for i in range(len(lst)):
        if lst[i].key == key:
            lst[i] = lst[-1]
            lst.pop()
            return


@dataclass(eq=False)
class QueuedPodInfo:
    """framework.QueuedPodInfo: a pod in the scheduling queue.

    ``timestamp`` is when it was last added to the queue (refreshed by
    AddUnschedulableIfNotPresent); ``attempts`` is incremented by Pop;
    ``unschedulable_plugins`` are the plugins that rejected it in its last attempt (or the
    PreEnqueue plugin that gated it).  ``seq`` numbers the taking of ``timestamp`` across the
    queue (new with every new timestamp, kept by every move): the final key of activeQ's and
    podBackoffQ's order, so equal timestamps come in the order they were taken, as upstream's
    real clock would order them (SPEC.md section 4).
    """
    pod: Pod
    timestamp: int = 0
    attempts: int = 0
    initial_attempt_timestamp: Optional[int] = None
    unschedulable_plugins: set = field(default_factory=set)
    gated: bool = False
    seq: int = 0
    # bookkeeping for unschedulablePods ordering ("the order they entered")
    unsched_seq: int = 0

    @property
    def key(self) -> str:
        return self.pod.key


@dataclass
class Diagnosis:
    """framework.Diagnosis: why no node fit."""
    node_to_status_map: dict = field(default_factory=dict)
    unschedulable_plugins: set = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(Exception):
    """framework.FitError: no node fit the pod (an expected outcome, carried in a Status)."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis):
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__()

    def __str__(self) -> str:
        return self.message()      # built when asked for, as upstream's Error()

    def __reduce__(self):
        # rebuilt from its fields when an engine holding it is checkpointed (engine/checkpoint.py)
        return (FitError, (self.pod, self.num_all_nodes, self.diagnosis), self.__dict__)

    def message(self) -> str:
        """FitError.Error() (pkg/scheduler/framework/types.go, v1.28.0): ``"0/N nodes are
        available:"``, then each part that is not empty as ``SeparatorFormat`` (``" %v."``): the
        PreFilter message, or else the histogram of the nodes' reasons (``"<count> <reason>"``,
        sorted as strings, joined by ``", "``); then the PostFilter message. DefaultPreemption's
        message is itself a FitError's (``"preemption: 0/N nodes are available: ... ."``), so
        kube-scheduler's message ends in ``".."`` after a failed preemption, as in
        types_test.go's TestFitError_Error and the FailedScheduling events of real clusters."""
        d = self.diagnosis
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            # nodes often share a Status object (the table paths make one per kind): each
            # distinct one's reasons counted once, times its nodes
            statuses = d.node_to_status_map.values()
            by_id = dict(zip(map(id, statuses), statuses))
            hist: dict = {}
            for i, n in Counter(map(id, statuses)).items():
                for r in by_id[i].reasons:
                    hist[r] = hist.get(r, 0) + n
            if hist:
                msg += " " + ", ".join(sorted(f"{c} {r}" for r, c in hist.items())) + "."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}."
        return msg
