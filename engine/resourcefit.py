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
(``schedule_one.filter_screened``) and the preemption dry run (``engine.preemption``) use it where
they would otherwise clone a NodeInfo and a CycleState per node; every other case (any other
plugin, a node a node-only plugin might reject, extended resources, a PreFilter extension)
takes the per-node path.
"""
from __future__ import annotations

import numpy as np

from .framework.interface import Code, Status
from .nodetable import VictimColumns  # noqa: F401 - the dry run's columns, kept by the node table
from .preemption import Candidate
from .util import LIMIT


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


class TableVictims:
    """DefaultPreemption's SelectVictimsOnNode (engine.plugins.defaultpreemption) evaluated for
    every node of the node table at once, where it is NodeResourcesFit's arithmetic
    (``Framework.victims_on_table``), as it would run on a clone of each node:

    remove the pods of lower priority (none: UnschedulableAndUnresolvable, "No preemption
    victims found for incoming pod"); check the preemptor fits, with the pods nominated to the
    node of its priority or higher and then without (run_filter_plugins_with_nominated_pods;
    failing: Fit's status); put the victims back one by one, most important first, each kept
    only where the preemptor still fits both ways, else a victim. Without PDBs none violates.

    ``select(node_info)`` gives one node's (victims, 0, status); the nodes a node-only plugin
    might reject or whose requests are out of range (``per_node``) are evaluated by the
    plugin's own select_victims_on_node on clones, as the per-node loop does.
    """

    def __init__(self, ev, pod, pdbs, rf, vc):
        self.ev = ev
        self.pod = pod
        self.pdbs = pdbs
        self.rf = rf
        self.vc = vc
        t = rf.table
        self.row = t.row
        # each node after removing every potential victim: pod count, cpu, memory, eph. requested
        node = (t.num_pods - vc.cnt, t.req_cpu - vc.sum_cpu, t.req_mem - vc.sum_mem, t.req_eph - vc.sum_eph)
        # Fit's codes where the preemptor does not fit even without the victims
        self.codes = rf.codes_with_nominated(*node)
        fits = (self.codes == 0) & (vc.cnt > 0)
        self.fits = fits
        victim = np.zeros((len(t.node_infos), vc.k), dtype=bool)
        for k in range(vc.k):
            trying = fits & (vc.cnt > k)
            if not trying.any():
                break
            back = tuple(a + b for a, b in zip(node, (1, vc.cpu[:, k], vc.mem[:, k], vc.eph[:, k])))
            ok = ~rf.fails_with_nominated(*back)
            keep = trying & ok
            node = tuple(np.where(keep, b, a) for a, b in zip(node, back))
            victim[:, k] = trying & ~ok
        self.victim = victim
        per_node = (vc.bad | rf.node_only) if rf.node_only is not None else vc.bad
        self.per_node = per_node if per_node.any() else None

    def _outcome(self, i: int):
        """Row i's (victims, 0, status), the row evaluated on the table."""
        if self.fits[i]:
            return self._victims(i), 0, Status(Code.Success)
        if self.vc.cnt[i] == 0:
            return None, 0, Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS])
        return None, 0, self.rf.statuses((int(self.codes[i]),))[0]

    def _victims(self, i: int) -> list:
        """Row i's victims, in reprieve order (those put back that did not fit)."""
        return [p for p, v in zip(self.vc.pods[i], self.victim[i].tolist()) if v]

    def select(self, ni):
        i = self.row[ni.name]
        if self.per_node is not None and self.per_node[i]:
            return self.ev.interface.select_victims_on_node(self.ev.state.clone(), self.pod, ni.clone(),
                                                            self.pdbs)
        return self._outcome(i)

    def dry_run(self, potential, offset, num_candidates):
        """Evaluator.dry_run_preemption's loop when every node is evaluated on the table (the
        trace off; no PDBs, so every candidate violates none): the nodes from ``offset`` are
        examined until the numCandidates-th candidate; the others examined get their status,
        in examining order (a node whose victims were all reprieved: an Error)."""
        n = len(potential)
        row = self.row
        rows = np.fromiter((row[ni.name] for ni in potential), dtype=np.int64, count=n)
        o = offset % n
        if o:
            rows = np.concatenate((rows[o:], rows[:o]))
            potential = potential[o:] + potential[:o]
        cand = (self.fits & self.victim.any(axis=1))[rows]
        end = n
        at = np.flatnonzero(cand)
        candidates = []
        if num_candidates > 0:      # with none to find, none is kept and every node examined
            if num_candidates <= len(at):
                end = int(at[num_candidates - 1]) + 1
            for j in at[at < end].tolist():
                candidates.append(Candidate(potential[j].name, self._victims(int(rows[j])), 0))
        statuses = {}
        errs = []
        others = np.flatnonzero(~cand[:end])
        if len(others):
            r = rows[others]
            codes = self.codes[r]
            names = [potential[j].name for j in others.tolist()]
            fits = self.fits[r].tolist()
            no_victims = (self.vc.cnt[r] == 0).tolist()
            fit_statuses = iter(self.rf.statuses(codes[~self.fits[r] & (self.vc.cnt[r] != 0)].tolist()))
            for name, f, nv in zip(names, fits, no_victims):
                if f:
                    st = Status(Code.Error, [f'expected at least one victim pod on node "{name}"'])
                    errs.append(st)
                elif nv:
                    st = Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS])
                else:
                    st = next(fit_statuses)
                statuses[name] = st
        err = Status(Code.Error, [e.message() for e in errs]) if errs else None
        return candidates, statuses, err


NO_VICTIMS = "No preemption victims found for incoming pod"
