"""The cache's nodes as columns, for screening every node at once.

Not an upstream structure: kube-scheduler v1.28 calls each Filter plugin once per node (in 16
goroutines) and each Score plugin once per node. The simulator evaluates the same plugins in
one thread, so it keeps, next to the NodeInfos, a few of their numbers as NumPy arrays in the
snapshot's node order: allocatable and requested cpu, memory and ephemeral-storage, the
non-zero requests Score uses, the pod count, cordoned nodes and nodes with NoSchedule or
NoExecute taints. In-tree plugins use them to tell, for all nodes in a handful of array
operations, which nodes they might reject (``Framework.filter_suspects``) and to compute the
default resource scores; every node they might reject is still evaluated by the plugins,
unless a screen knows its plugin's status on every node (``Rejections``), so statuses, reasons
and the order of evaluation are exactly the per-node loop's.

The table belongs to one ``Snapshot`` (one node list). The cache records which nodes a pod
was added to or removed from since the table last looked (``dirty``); ``sync`` rereads those
rows. A value too large for int64 arithmetic with headroom (over ``LIMIT``) marks the table
``exact_only``: callers then take the per-node path.
"""
from __future__ import annotations

import numpy as np

from .util import LIMIT, sort_more_important

_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def _has_hard_taint(node) -> bool:
    for t in node.taints:
        if t.effect in _HARD_EFFECTS:
            return True
    return False


def _volume_refs(ni) -> tuple:
    refs = 0
    eph = False
    for p in ni.pods:
        vols = p.volumes
        if vols:
            refs += len(vols)
            eph = eph or any(v.kind == "ephemeral" for v in vols)
    return refs, eph


class NodeTable:
    """Columns over ``node_infos`` (a Snapshot's ``node_info_list``), row i = node i."""

    INT_COLUMNS = ("alloc_cpu", "alloc_mem", "alloc_eph", "alloc_pods", "req_cpu", "req_mem",
                   "req_eph", "non0_cpu", "non0_mem", "num_pods")

    def __init__(self, node_infos: list):
        self.node_infos = node_infos
        self.row = {ni.name: i for i, ni in enumerate(node_infos)}
        self._scalars: dict = {}   # resource name -> (allocatable, requested) columns
        self._victims: dict = {}   # priority -> VictimColumns, the newest last
        # (cycle state, pod, ResourceFilter or None): the last one built, which the same cycle's
        # preemption reuses (engine.resourcefit)
        self.resource_filter = None
        self._labels: dict = {}    # label key -> (codes, values, index), built on first use
        self._pairs: dict = {}     # label key -> [(key, value) by code]
        self._matches: dict = {}   # Requirement -> bool column, built on first use
        self._volumes = None       # (volume_refs, ephemeral) columns, built on first use
        self._soft_taints = None   # nodes with a PreferNoSchedule taint, built on first use
        self._groups = None        # PodGroups, built on first use
        cols = list(zip(*[self._values(ni) for ni in node_infos])) or [()] * 12
        ints = cols[:len(self.INT_COLUMNS)]
        self.exact_only = any(col and (max(col) > LIMIT or min(col) < -LIMIT) for col in ints)
        if self.exact_only:
            return      # no columns: the callers take the per-node path
        for name, col in zip(self.INT_COLUMNS, ints):
            setattr(self, name, np.array(col, dtype=np.int64))
        self.unschedulable = np.array(cols[10], dtype=bool)
        self.hard_taints = np.array(cols[11], dtype=bool)
        self.any_unschedulable = bool(self.unschedulable.any())
        self.any_hard_taints = bool(self.hard_taints.any())

    @staticmethod
    def _values(ni) -> tuple:
        node = ni.node
        alloc = node.allocatable
        req = ni.requested
        return (alloc.get("cpu", 0), alloc.get("memory", 0), alloc.get("ephemeral-storage", 0),
                alloc.get("pods", 0), req.get("cpu", 0), req.get("memory", 0),
                req.get("ephemeral-storage", 0), ni.non0_cpu, ni.non0_mem, len(ni.pods),
                bool(node.unschedulable), _has_hard_taint(node))

    def sync(self, dirty: set) -> None:
        """Reread the rows of the nodes in ``dirty`` (their pods changed)."""
        if self.exact_only:
            return
        row = self.row
        if self._groups is not None:
            self._groups.sync(self.node_infos, [row[name] for name in dirty if name in row])
        if self._volumes is not None:
            refs, eph = self._volumes
            for i in [row[name] for name in dirty if name in row]:
                refs[i], eph[i] = _volume_refs(self.node_infos[i])
        if self._victims:
            rows = [row[name] for name in dirty if name in row]
            for prio, v in list(self._victims.items()):
                if not v.sync(self.node_infos, rows):
                    del self._victims[prio]
        for name in dirty:
            i = row.get(name)
            if i is None:
                continue
            ni = self.node_infos[i]
            values = self._values(ni)
            for col, v in zip(self.INT_COLUMNS, values):
                if v > LIMIT or v < -LIMIT:
                    self.exact_only = True
                    return
                getattr(self, col)[i] = v
            for rname, (a, r) in self._scalars.items():
                v = ni.requested.get(rname, 0)
                if v > LIMIT:
                    self.exact_only = True
                    return
                r[i] = v
        # cordons and taints belong to the Node object: a change of node builds a new table

    def scalar(self, name: str):
        """(allocatable, requested) columns of an extended or hugepages resource, built on first
        use and kept current by ``sync``; None when a value is out of range."""
        cols = self._scalars.get(name)
        if cols is None:
            a = [ni.node.allocatable.get(name, 0) for ni in self.node_infos]
            r = [ni.requested.get(name, 0) for ni in self.node_infos]
            if (a and max(a) > LIMIT) or (r and max(r) > LIMIT):
                return None
            cols = self._scalars[name] = (np.array(a, dtype=np.int64), np.array(r, dtype=np.int64))
        return cols

    def labels(self, key: str):
        """``(codes, values, index)`` of the label ``key``: ``codes[i]`` is the index in
        ``values`` of node i's value, -1 when the node has no such label; ``index`` maps a value
        to its code. Built on first use; a node's labels belong to the Node object, and a
        change of node builds a new table."""
        c = self._labels.get(key)
        if c is None:
            index: dict = {}
            codes = np.fromiter(
                (-1 if v is None else index.setdefault(v, len(index))
                 for v in (ni.node.labels.get(key) for ni in self.node_infos)),
                dtype=np.int64, count=len(self.node_infos))
            c = self._labels[key] = (codes, list(index), index)
        return c

    def label_pairs(self, key: str) -> list:
        """``[(key, value), ...]`` by code (``labels(key)``'s values as topology pairs)."""
        p = self._pairs.get(key)
        if p is None:
            p = self._pairs[key] = [(key, v) for v in self.labels(key)[1]]
        return p

    def label_matches(self, req):
        """``req.matches(node.labels)`` of every node (``req``: an engine.labels.Requirement),
        as a bool column: the requirement evaluated once per value of its key (``labels``) and
        once for a node without the label, which is all it reads of the labels. Built on first
        use; a change of node builds a new table."""
        m = self._matches.get(req)
        if m is None:
            key = req.key
            codes, values, _index = self.labels(key)
            by_code = [req.matches({key: v}) for v in values]
            by_code.append(req.matches({}))         # code -1: no such label
            m = self._matches[req] = np.array(by_code, dtype=bool)[codes]
        return m

    def soft_taints(self):
        """Whether each node has a PreferNoSchedule taint (a bool column), built on first use;
        a node's taints belong to the Node object, and a change of node builds a new table."""
        if self._soft_taints is None:
            self._soft_taints = np.array([any(t.effect == "PreferNoSchedule" for t in ni.node.taints)
                                          for ni in self.node_infos], dtype=bool)
        return self._soft_taints

    def volume_refs(self):
        """``(refs, ephemeral)``: how many volumes the pods of each node declare (of any kind:
        at least as many as CSILimits can count attached there), and whether one of them is
        an ephemeral volume. Built on first use, kept current by ``sync``."""
        if self._volumes is None:
            cols = [_volume_refs(ni) for ni in self.node_infos]
            self._volumes = (np.array([c[0] for c in cols], dtype=np.int64),
                             np.array([c[1] for c in cols], dtype=bool))
        return self._volumes

    def pod_groups(self):
        """The nodes' pods grouped by what InterPodAffinity reads of them (``PodGroups``),
        kept current by ``sync``; None when there are too many groups for columns."""
        g = self._groups
        if g is None:
            g = self._groups = PodGroups(self.node_infos)
        return None if g.overflow else g

    # the victim columns of this many preemptor priorities are kept (the least recently used go)
    VICTIM_PRIORITIES = 4

    def victims(self, priority: int, now: int):
        """The potential victims of a preemptor of ``priority`` on every node
        (engine.VictimColumns), current for ``now``."""
        v = self._victims.pop(priority, None)
        if v is not None and not v.at(self.node_infos, now):
            v = None
        if v is None:
            v = VictimColumns(self.node_infos, priority, now)
            while len(self._victims) >= self.VICTIM_PRIORITIES:
                del self._victims[next(iter(self._victims))]
        self._victims[priority] = v
        return v

    def check(self) -> list:
        """The columns that differ from a table built afresh (for tests): names of columns."""
        fresh = NodeTable(self.node_infos)
        out = []
        for name in self.INT_COLUMNS + ("unschedulable", "hard_taints"):
            if not np.array_equal(getattr(self, name), getattr(fresh, name)):
                out.append(name)
        for name, (a, r) in self._scalars.items():
            fa, fr = fresh.scalar(name)
            if not (np.array_equal(a, fa) and np.array_equal(r, fr)):
                out.append(name)
        if self._volumes is not None:
            f = fresh.volume_refs()
            if not (np.array_equal(self._volumes[0], f[0]) and np.array_equal(self._volumes[1], f[1])):
                out.append("volume refs")
        if self._groups is not None and not self._groups.overflow:
            f = PodGroups(self.node_infos)
            mine = {k: c for k, c in self._groups.cols.items() if c.any()}
            theirs = {k: c for k, c in f.cols.items() if c.any()}
            if mine.keys() != theirs.keys() or any(not np.array_equal(c, theirs[k])
                                                   for k, c in mine.items()):
                out.append("pod groups")
        for prio, v in self._victims.items():
            f = VictimColumns(self.node_infos, prio, v.now)
            k = min(v.k, f.k)
            same = (v.pods == f.pods and np.array_equal(v.cnt, f.cnt) and np.array_equal(v.bad, f.bad)
                    and f.k <= v.k and v.timed == f.timed)
            for attr in ("cpu", "mem", "eph"):
                same = same and np.array_equal(getattr(v, attr)[:, :k], getattr(f, attr)[:, :k])
            for attr in ("sum_cpu", "sum_mem", "sum_eph"):
                same = same and np.array_equal(getattr(v, attr), getattr(f, attr))
            if not same:
                out.append(f"victims of priority {prio}")
        return out


class Rejections:
    """What a Filter screen (a plugin's ``_filter_suspects``) returns when it knows its
    plugin's Filter status on every node, not only which nodes it might reject: ``codes`` by
    row, 0 where the Filter passes and k > 0 where it rejects the node with ``statuses[k - 1]``
    (a ``(Code, reasons)`` pair). ``Framework.filter_suspects`` takes ``codes > 0`` as the
    plugin's suspects, and the Filter loop (``schedule_one.filter_screened``) gives a node the
    status of the first plugin rejecting it without calling the plugins, where no plugin
    before that one might reject it."""
    __slots__ = ("codes", "statuses")

    def __init__(self, codes, statuses: tuple):
        self.codes = codes
        self.statuses = statuses


class VictimColumns:
    """For preemptors of priority ``priority``: each node's potential victims (its pods of lower
    priority), in the order SelectVictimsOnNode reprieves them when no PodDisruptionBudget
    applies (``engine.preemption.sort_more_important`` of the node's pods in order), with
    their cpu/memory/ephemeral-storage requests as (rows x K) columns.

    Kept by the node table (``NodeTable.victims``) and reread for the rows whose pods changed.
    A row whose order would depend on the current time (some victims with a start time, some
    without) is built for the ``now`` it was asked with and rebuilt for another. A row with a
    request out of the table's range is marked ``bad`` (the dry run takes the per-node path
    there).
    """

    __slots__ = ("priority", "now", "pods", "cnt", "cpu", "mem", "eph", "sum_cpu", "sum_mem",
                 "sum_eph", "bad", "timed", "k")

    def __init__(self, node_infos: list, priority: int, now: int):
        self.priority = priority
        self.now = now
        n = len(node_infos)
        self.pods = [None] * n
        self.timed = set()      # rows whose order depends on now
        rows = [self._row(ni) for ni in node_infos]
        k = max((len(r[0]) for r in rows), default=0)
        self.k = max(k, 1)
        self.cnt = np.zeros(n, dtype=np.int64)
        self.bad = np.zeros(n, dtype=bool)
        for attr in ("cpu", "mem", "eph"):
            setattr(self, attr, np.zeros((n, self.k), dtype=np.int64))
        for attr in ("sum_cpu", "sum_mem", "sum_eph"):
            setattr(self, attr, np.zeros(n, dtype=np.int64))
        for i, r in enumerate(rows):
            self._store(i, r)

    def _row(self, ni):
        prio = self.priority
        vs = [p for p in ni.pods if p.priority < prio]
        timed = False
        if len(vs) > 1:
            with_start = sum(1 for p in vs if p.start_time is not None)
            timed = 0 < with_start < len(vs)
            vs = sort_more_important(vs, self.now)
        values = []
        bad = False
        for p in vs:
            r = p.requests
            v = (r.get("cpu", 0), r.get("memory", 0), r.get("ephemeral-storage", 0))
            if not (0 <= v[0] <= LIMIT and 0 <= v[1] <= LIMIT and 0 <= v[2] <= LIMIT):
                bad = True
            values.append(v)
        return vs, values, bad, timed

    def _store(self, i: int, r) -> bool:
        """Write row i; False when it has more victims than the columns hold."""
        vs, values, bad, timed = r
        if len(vs) > self.k:
            return False
        self.pods[i] = vs
        self.cnt[i] = len(vs)
        if timed:
            self.timed.add(i)
        else:
            self.timed.discard(i)
        self.bad[i] = bad
        cpu, mem, eph = self.cpu[i], self.mem[i], self.eph[i]
        cpu[:] = 0
        mem[:] = 0
        eph[:] = 0
        if bad:
            self.sum_cpu[i] = self.sum_mem[i] = self.sum_eph[i] = 0
            return True
        sc = sm = se = 0
        for j, (c, m, e) in enumerate(values):
            cpu[j] = c
            mem[j] = m
            eph[j] = e
            sc += c
            sm += m
            se += e
        self.sum_cpu[i] = sc
        self.sum_mem[i] = sm
        self.sum_eph[i] = se
        return True

    def sync(self, node_infos: list, rows) -> bool:
        """Reread ``rows``; False when this no longer fits its columns (drop it)."""
        for i in rows:
            if not self._store(i, self._row(node_infos[i])):
                return False
        return True

    def at(self, node_infos: list, now: int) -> bool:
        """Make the rows whose order depends on the time right for ``now``."""
        if now != self.now:
            self.now = now
            if self.timed:
                return self.sync(node_infos, sorted(self.timed))
        return True


def pod_signature(p) -> tuple:
    """What InterPodAffinity and PodTopologySpread read of an existing pod: its namespace
    and labels (which the incoming pod's terms and constraints match), its own affinity and
    anti-affinity terms (which are matched against the incoming pod) and whether it is
    terminating (PodTopologySpread does not count those). Two pods with the same signature
    count alike."""
    return (p.namespace, tuple(sorted(p.labels.items())), p.required_affinity_terms,
            p.required_anti_affinity_terms, p.preferred_affinity_terms,
            p.preferred_anti_affinity_terms, p.deletion_timestamp is None)


class PodGroups:
    """The pods of every node grouped by ``pod_signature``: for each group a representative
    pod (``rep``) and a count column (``cols``, pods of the group on node i), so that a term
    is matched once per group instead of once per pod (engine.plugins.interpodaffinity,
    engine.plugins.podtopologyspread).
    Kept by the node table and reread for the rows whose pods changed. More than
    ``MAX_GROUPS`` groups mark it ``overflow`` (the plugin then takes the per-pod path)."""

    MAX_GROUPS = 256

    __slots__ = ("n", "cols", "rep", "rows", "overflow", "gids", "sigs", "known")

    def __init__(self, node_infos: list):
        self.n = len(node_infos)
        self.cols: dict = {}
        self.rep: dict = {}
        self.rows: list = [None] * self.n       # row -> {group id: count}
        self.overflow = False
        self.gids: dict = {}                    # signature -> group id
        self.sigs: list = []                    # group id -> signature
        # row -> {id(pod): (pod, group id)}: a pod object never changes (an update is a new
        # object), so a row's pods are not signed again when the row is reread
        self.known: list = [None] * self.n
        for i, ni in enumerate(node_infos):
            if not self._store(i, ni):
                break

    def _store(self, i: int, ni) -> bool:
        prev = self.known[i] or {}
        seen: dict = {}
        new: dict = {}
        for p in ni.pods:
            e = prev.get(id(p))
            if e is not None and e[0] is p:
                gid = e[1]
            else:
                sig = pod_signature(p)
                gid = self.gids.get(sig)
                if gid is None:
                    if len(self.sigs) >= self.MAX_GROUPS:
                        self.overflow = True
                        return False
                    gid = self.gids[sig] = len(self.sigs)
                    self.sigs.append(sig)
                    self.rep[sig] = p
                    self.cols[sig] = np.zeros(self.n, dtype=np.int64)
            seen[id(p)] = (p, gid)
            new[gid] = new.get(gid, 0) + 1
        old = self.rows[i]
        cols = self.cols
        sigs = self.sigs
        if old:
            for gid in old:
                if gid not in new:
                    cols[sigs[gid]][i] = 0
        for gid, c in new.items():
            cols[sigs[gid]][i] = c
        self.rows[i] = new
        self.known[i] = seen
        return True

    def sync(self, node_infos: list, rows) -> None:
        if self.overflow:
            return
        for i in rows:
            if not self._store(i, node_infos[i]):
                return
