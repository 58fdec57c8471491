"""Builders for the engine's own tests.

The Pod and Node builders are the public ones of ``engine.testing.builders`` (upstream's
``st.MakePod()`` style); this module adds ``node_info(node, *pods)``, ``FakeHandle`` (what
plugins reach through ``handle``) and ``snapshot_handle(pods, nodes)``, which pivots pods onto
their nodes as upstream's ``cache.NewSnapshot`` does.
"""
from __future__ import annotations

from engine.framework.handle import Snapshot
from engine.framework.types import NodeInfo
from engine.testing.builders import NodeBuilder, PodBuilder, _res, make_node, make_pod  # noqa: F401


def node_info(node=None, *pods) -> NodeInfo:
    """framework.NewNodeInfo(pods...) + SetNode(node)."""
    ni = NodeInfo(node)
    for p in pods:
        ni.add_pod(p)
    return ni


class FakeHandle:
    """The part of framework.Handle the plugins use: ``snapshot()``."""

    def __init__(self, snapshot: Snapshot):
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        return self._snapshot


def snapshot_handle(pods=(), nodes=()) -> FakeHandle:
    """cache.NewSnapshot(pods, nodes): a NodeInfo per node, in the given order, holding the
    pods whose nodeName names it (pods on no listed node are dropped)."""
    infos = []
    by_name = {}
    for n in nodes:
        ni = NodeInfo(n)
        infos.append(ni)
        by_name[n.name] = ni
    for p in pods:
        ni = by_name.get(p.node_name)
        if ni is not None:
            ni.add_pod(p)
    # NewSnapshot's createImageExistenceMap / getNodeImageStates: every node's ImageStates count
    # the nodes holding each image among all the nodes given (no cache history).
    holders: dict = {}
    for n in nodes:
        for name in n.images:
            holders.setdefault(name, set()).add(n.name)
    for ni in infos:
        ni.image_states = {name: (size, len(holders[name])) for name, size in ni.node.images.items()}
    return FakeHandle(Snapshot(infos, by_name))
