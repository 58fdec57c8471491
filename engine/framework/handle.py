"""What a plugin can reach: framework.Handle (``pkg/scheduler/framework/interface.go``).

A plugin factory receives ``(args, handle)``.  ``args`` is the plugin's ``pluginConfig`` args
as a plain dict (camelCase keys, as in KubeSchedulerConfiguration), possibly empty; the
factory applies upstream's defaults.  ``handle`` offers:

``handle.snapshot()``
    the cycle's Snapshot (``SharedLister``): ``node_info_list`` (every NodeInfo in upstream's
    node-tree order), ``have_pods_with_affinity_list()``,
    ``have_pods_with_required_anti_affinity_list()``, ``get(node_name)`` (KeyError if absent).
``handle.nominator``
    the PodNominator: ``nominated_pods_for_node(node_name)`` (pods, in nomination order).
``handle.pdbs()``
    the PodDisruptionBudgets, for preemption.
``handle.run_filter_plugins_with_nominated_pods(state, pod, node_info, dry_run)``,
``handle.run_pre_filter_extension_add_pod(...)``, ``..._remove_pod(...)``
    the framework's own runners, for PostFilter plugins that simulate (preemption).
``handle.trace``
    the trace sink (``emit(type, **fields)``), for PostFilter plugins that want their steps
    shown (PreemptionCandidate, ReprieveStep, ...).
``handle.get_pod(key)``, ``handle.list_pods(namespace=None)``
    the current version of a pod; every pod that exists, in key order (the pod lister).
``handle.get_object(api_version, kind, namespace, name)``, ``handle.list_objects(api_version, kind, namespace=None)``
    custom resources' manifests (copies).
``handle.get_waiting_pod(uid)``, ``handle.iterate_over_waiting_pods(callback)``,
``handle.reject_waiting_pod(uid)``
    pods waiting on Permit (``framework.waiting_pods.WaitingPod``: ``get_pod()``,
    ``get_pending_plugins()``, ``allow(plugin)``, ``reject(plugin, message)``).
``handle.profile_name``, ``handle.parallelism``
"""
from __future__ import annotations


class Snapshot:
    """The cluster as one cycle sees it (internal/cache/snapshot.go).

    The simulator evaluates a whole scheduling cycle at the instant it starts, so the
    scheduler cache itself serves as the snapshot: nothing changes while a cycle computes.
    """
    __slots__ = ("node_info_list", "_by_name", "_affinity", "_anti", "_table", "_dirty")

    def __init__(self, node_info_list: list, by_name: dict, dirty: set | None = None):
        self.node_info_list = node_info_list
        self._by_name = by_name
        self._affinity = None
        self._anti = None
        self._table = None
        # names of the nodes whose pods changed since the table last looked (the cache adds
        # to this set; None: a snapshot nobody keeps current, which has no table)
        self._dirty = dirty

    def __getstate__(self):
        # a checkpoint leaves the node table out: it is rebuilt from the NodeInfos when used
        return (self.node_info_list, self._by_name, self._dirty)

    def __setstate__(self, state):
        self.__init__(*state)

    def retire(self) -> None:
        """This snapshot is no longer the cache's current one: no node table from now on."""
        self._table = None
        self._dirty = None

    def node_table(self):
        """The nodes as columns (engine.nodetable.NodeTable), current; None when this snapshot
        is not kept current by a cache, or a quantity is too large for the arrays."""
        if self._dirty is None:
            return None
        t = self._table
        if t is None:
            from ..nodetable import NodeTable
            self._dirty.clear()
            t = self._table = NodeTable(self.node_info_list)
        elif self._dirty:
            t.sync(self._dirty)
            self._dirty.clear()
        return None if t.exact_only else t

    def invalidate_affinity_lists(self) -> None:
        self._affinity = None
        self._anti = None

    def get(self, name: str):
        return self._by_name[name]

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def have_pods_with_affinity_list(self) -> list:
        if self._affinity is None:
            self._affinity = [n for n in self.node_info_list if n.pods_with_affinity]
        return self._affinity

    def have_pods_with_required_anti_affinity_list(self) -> list:
        if self._anti is None:
            self._anti = [n for n in self.node_info_list if n.pods_with_required_anti_affinity]
        return self._anti
