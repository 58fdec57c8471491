"""NodeResourcesFit's Filter for every node at once, with pods added or removed (issue 12).

Not an upstream structure. When the Filter plugins a cycle runs (those PreFilter did not skip)
are NodeResourcesFit and plugins whose verdict depends on the node and the pod alone
(NodeUnschedulable, NodeName, TaintToleration: their exact classes, marked
``_filter_node_only``), and no PreFilter extension (AddPod/RemovePod) is active, then on a
node none of the node-only plugins might reject (their ``_filter_suspects``) the outcome of
``Framework.run_filter_plugins_with_nominated_pods`` is Fit's ``fits_request`` arithmetic:

- with the pods nominated to the node whose priority is >= the pod's (addNominatedPods), their
  requests added to the node's and their number to its pod count; if that fails, its status;
- otherwise without them.

``ResourceFilter`` computes that over the node table's columns (engine.nodetable) with the
same integer comparisons, and builds the same Status (reasons in fits_request's order,
``failed_plugin`` Fit's name) for the nodes that fail. The Filter loop
(``Engine._filter_screened``) and the preemption dry run (``engine.preemption``) use it where
they would otherwise clone a NodeInfo and a CycleState per node; every other case (any other
plugin, a node a node-only plugin might reject, extended resources, a PreFilter extension)
takes the per-node path.
"""
from __future__ import annotations

import numpy as np

from .framework.interface import Code, Status
from .nodetable import LIMIT
from .preemption import sort_more_important


# the node count from which cycles use the table this way (tests set it out of reach to compare)
MIN_NODES = 1


class ResourceFilter:
    """One cycle's Fit verdicts over a node table, for the pod ``pod`` (see the module)."""

    __slots__ = ("table", "s", "fit_name", "node_only", "has_nom", "nom_cnt", "nom_cpu",
                 "nom_mem", "nom_eph")

    @classmethod
    def for_cycle(cls, fwk, state, pod, table):
        """A ResourceFilter when the cycle's Filter is Fit plus node-only plugins (see the
        module), else None."""
        if table is None or len(table.node_infos) < MIN_NODES:
            return None
        last = table.resource_filter
        if last is not None and last[0] is state and last[1] is pod:
            return last[2]          # the same cycle's Filter and then its preemption
        rf = cls._build(fwk, state, pod, table)
        table.resource_filter = (state, pod, rf)
        return rf

    @classmethod
    def _build(cls, fwk, state, pod, table):
        from .plugins.noderesources.fit import Fit, PRE_FILTER_STATE_KEY
        skip = state.skip_filter_plugins
        fit = None
        node_only = None
        for pl in fwk.filter_plugins:
            if skip and pl.name in skip:
                continue
            cls_ = type(pl)
            if cls_ is Fit:
                if fit is not None:
                    return None
                fit = pl
                continue
            if not cls_.__dict__.get("_filter_node_only"):
                return None
            m = cls_.__dict__["_filter_suspects"](pl, state, pod, table)
            if m is False:
                return None
            if m is not None:
                node_only = m if node_only is None else (node_only | m)
        if fit is None:
            return None
        for pl, _ext in fwk._pre_filter_ext:
            if not (skip and pl.name in skip):
                return None         # an AddPod/RemovePod that could fail or change the state
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None or s.scalars or (s.has_restartable_init_container and not fit.enable_sidecar_containers):
            return None
        if s.cpu > LIMIT or s.memory > LIMIT or s.ephemeral_storage > LIMIT:
            return None
        self = cls.__new__(cls)
        self.table = table
        self.s = s
        self.fit_name = fit.name
        self.node_only = node_only
        if not self._nominated(fwk.nominator, pod):
            return None
        return self

    def _nominated(self, nominator, pod) -> bool:
        """The columns of what addNominatedPods would add to each node; False when a sum is
        out of the table's range."""
        n = len(self.table.node_infos)
        self.has_nom = None
        self.nom_cnt = self.nom_cpu = self.nom_mem = self.nom_eph = 0
        nominated = nominator.nominated_pods if nominator is not None else None
        if not nominated:
            return True
        row = self.table.row
        prio = pod.priority
        key = pod.key
        rows, cnt, cpu, mem, eph = [], [], [], [], []
        for name, pods in nominated.items():
            if not pods:
                continue
            i = row.get(name)
            if i is None:
                continue
            k = c = m = e = 0
            for p in pods:
                if p.priority >= prio and p.key != key:
                    r = p.requests
                    k += 1
                    c += r.get("cpu", 0)
                    m += r.get("memory", 0)
                    e += r.get("ephemeral-storage", 0)
            if k:
                if not (0 <= c <= LIMIT and 0 <= m <= LIMIT and 0 <= e <= LIMIT):
                    return False
                rows.append(i)
                cnt.append(k)
                cpu.append(c)
                mem.append(m)
                eph.append(e)
        if not rows:
            return True
        self.has_nom = np.zeros(n, dtype=bool)
        self.has_nom[rows] = True
        for attr, values in (("nom_cnt", cnt), ("nom_cpu", cpu), ("nom_mem", mem), ("nom_eph", eph)):
            col = np.zeros(n, dtype=np.int64)
            col[rows] = values
            setattr(self, attr, col)
        return True

    def _short(self, count, cpu, mem, eph, rows=None):
        """fits_request's comparisons for nodes holding ``count`` pods that request ``cpu`` /
        ``mem`` / ``eph`` (arrays over the table's rows, or over ``rows``, an index array, when
        given): (bit, bool array of the nodes short of it) for each resource it checks, in its
        order (the bits of ``REASONS``)."""
        s = self.s
        t = self.table
        col = (lambda c: c) if rows is None else (lambda c: c[rows])
        out = [(0, count + 1 > col(t.alloc_pods))]
        if not s.empty:
            if s.cpu > 0:
                out.append((1, s.cpu > col(t.alloc_cpu) - cpu))
            if s.memory > 0:
                out.append((2, s.memory > col(t.alloc_mem) - mem))
            if s.ephemeral_storage > 0:
                out.append((3, s.ephemeral_storage > col(t.alloc_eph) - eph))
        return out

    def fails(self, count, cpu, mem, eph):
        """fits_request's "some resource is short" (see ``_short``), as a bool array."""
        short = self._short(count, cpu, mem, eph)
        f = short[0][1]
        for _bit, m in short[1:]:
            f = f | m
        return f

    def fails_with_nominated(self, count, cpu, mem, eph):
        """run_filter_plugins_with_nominated_pods' "fails": with the nominated pods added or
        without them."""
        f = self.fails(count, cpu, mem, eph)
        if self.has_nom is None:
            return f
        return f | self.fails(count + self.nom_cnt, cpu + self.nom_cpu, mem + self.nom_mem, eph + self.nom_eph)

    def codes(self, count, cpu, mem, eph, rows=None):
        """What fits_request finds short (see ``_short``), as bits (``REASONS``): 0 where the
        pod fits."""
        c = None
        for bit, m in self._short(count, cpu, mem, eph, rows):
            b = m.astype(np.int8) << bit if bit else m.astype(np.int8)
            c = b if c is None else (c | b)
        return c

    def codes_with_nominated(self, count, cpu, mem, eph, rows=None):
        """run_filter_plugins_with_nominated_pods' verdict as ``codes``: the codes with the
        nominated pods added where that fails, else those without them."""
        c0 = self.codes(count, cpu, mem, eph, rows)
        if self.has_nom is None:
            return c0
        if rows is None:
            has, nc, ncpu, nmem, neph = self.has_nom, self.nom_cnt, self.nom_cpu, self.nom_mem, self.nom_eph
        else:
            has, nc, ncpu, nmem, neph = (self.has_nom[rows], self.nom_cnt[rows], self.nom_cpu[rows],
                                         self.nom_mem[rows], self.nom_eph[rows])
        c1 = self.codes(count + nc, cpu + ncpu, mem + nmem, eph + neph, rows)
        return np.where(has & (c1 != 0), c1, c0)

    def statuses(self, codes) -> list:
        """Fit's Status for each (non-zero) code, as the Filter framework returns it: the
        reasons in fits_request's order, ``failed_plugin`` Fit's name."""
        name = self.fit_name
        unsched = Code.Unschedulable
        return [Status(unsched, REASONS[c], name) for c in codes]

    # ------------------------------------------------------------------ the Filter loop

    def filter_failures(self):
        """The rows whose run_filter_plugins_with_nominated_pods fails where no node-only plugin
        might reject the node (a bool array)."""
        t = self.table
        return self.fails_with_nominated(t.num_pods, t.req_cpu, t.req_mem, t.req_eph)

    def filter_codes(self, rows):
        """Fit's ``codes`` (see ``statuses``) for those rows (an index array) in the Filter."""
        t = self.table
        return self.codes_with_nominated(t.num_pods[rows], t.req_cpu[rows], t.req_mem[rows],
                                         t.req_eph[rows], rows)


# fits_request's reasons for each combination of ResourceFilter.codes' bits, in its order
REASONS = tuple(tuple(r for bit, r in enumerate(("Too many pods", "Insufficient cpu", "Insufficient memory",
                                                  "Insufficient ephemeral-storage")) if code >> bit & 1)
                for code in range(16))


# ---------------------------------------------------------------------- preemption's dry run

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
