"""NodeResourcesFit's Filter for every node at once, with pods added or removed (issue 12).

Not an upstream structure. When the Filter plugins a cycle runs (those PreFilter did not skip)
are NodeResourcesFit and plugins whose verdict depends on the node and the pod alone
(NodeUnschedulable, NodeName, TaintToleration, NodeAffinity: their exact classes, marked
``_filter_node_only``; VolumeBinding and NodeVolumeLimits in the cycles their
``_filter_node_only(state, pod, table)`` says so), and no PreFilter extension (AddPod/RemovePod) is active, then on a
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

import weakref
from itertools import chain

import numpy as np

from .framework.interface import Code, Status
from .nodetable import VictimColumns  # noqa: F401 - the dry run's columns, kept by the node table
from .preemption import Candidate
from .trace import EventBatch, Segment
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
            only = cls_.__dict__.get("_filter_node_only")
            if not (only is True or (only and only(pl, state, pod, table))):
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

    def packed_codes(self, rows):
        """For the trace (FilterSegment, check_runs): the codes of those rows (an index array)
        in the Filter, without the nominated pods in the low 4 bits and with them in the high 4
        (0 where none take part), as uint8; and the rows where some take part (None: none)."""
        t = self.table
        args = (t.num_pods[rows], t.req_cpu[rows], t.req_mem[rows], t.req_eph[rows])
        c0 = self.codes(*args, rows).astype(np.uint8)
        if self.has_nom is None:
            return c0, None
        has = self.has_nom[rows]
        if not has.any():
            return c0, None
        count, cpu, mem, eph = args
        c1 = self.codes(count + self.nom_cnt[rows], cpu + self.nom_cpu[rows], mem + self.nom_mem[rows],
                        eph + self.nom_eph[rows], rows)
        return c0 | (np.where(has, c1, 0).astype(np.uint8) << 4), has

    def statuses(self, codes) -> list:
        """Fit's Status for each (non-zero) code, as the Filter framework returns it: the
        reasons in fits_request's order, ``failed_plugin`` Fit's name. The nodes of one code
        share one Status (their readers, the diagnosis and the dry run, only read them): a
        cycle where no node fits makes a few statuses, not one per node."""
        name = self.fit_name
        unsched = Code.Unschedulable
        made = {}
        for c in set(codes):
            made[c] = Status(unsched, REASONS[c], name)
        return list(map(made.__getitem__, codes))

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

    With the trace on, Fit's codes of every check are kept (``steps``: the check without the
    victims, then each victim put back; with the pods nominated to the node added and without
    them, as run_filter_plugins_with_nominated_pods runs them), so that ``traced_dry_run``
    can record the dry run's events as those columns (engine.preemption.DryRunSegment).
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
        # with the trace on: Fit's codes of each check, without (low 4 bits) and with the
        # nominated pods (high 4 bits), a column per check
        steps = [] if ev.handle.trace.enabled else None
        self.steps = steps
        # Fit's codes where the preemptor does not fit even without the victims
        if steps is None:
            self.codes = rf.codes_with_nominated(*node)
        else:
            self.codes = self._traced_codes(node)
        fits = (self.codes == 0) & (vc.cnt > 0)
        self.fits = fits
        victim = np.zeros((len(t.node_infos), vc.k), dtype=bool)
        for k in range(vc.k):
            trying = fits & (vc.cnt > k)
            if not trying.any():
                break
            back = tuple(a + b for a, b in zip(node, (1, vc.cpu[:, k], vc.mem[:, k], vc.eph[:, k])))
            ok = ~rf.fails_with_nominated(*back) if steps is None else (self._traced_codes(back) == 0)
            keep = trying & ok
            node = tuple(np.where(keep, b, a) for a, b in zip(node, back))
            victim[:, k] = trying & ~ok
        self.victim = victim
        per_node = (vc.bad | rf.node_only) if rf.node_only is not None else vc.bad
        self.per_node = per_node if per_node.any() else None

    def _traced_codes(self, node):
        """``rf.codes_with_nominated(*node)``, keeping both codes in ``steps`` (see the class)."""
        rf = self.rf
        c0 = rf.codes(*node)
        if rf.has_nom is None:
            self.steps.append(c0.astype(np.uint8))
            return c0
        count, cpu, mem, eph = node
        c1 = rf.codes(count + rf.nom_cnt, cpu + rf.nom_cpu, mem + rf.nom_mem, eph + rf.nom_eph)
        c1 = np.where(rf.has_nom, c1, 0)
        self.steps.append(c0.astype(np.uint8) | (c1.astype(np.uint8) << 4))
        return np.where(c1 != 0, c1, c0)

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
        """Evaluator.dry_run_preemption's loop when every node is evaluated on the table (no
        PDBs, so every candidate violates none): the nodes from ``offset`` are examined until
        the numCandidates-th candidate; the others examined get their status, in examining
        order (a node whose victims were all reprieved: an Error)."""
        return self._dry_run(potential, offset, num_candidates)[:3]

    def traced_dry_run(self, potential, offset, num_candidates, plugins, fit, cycle):
        """``dry_run`` and the events the per-node loop would have emitted, as a
        DryRunSegment (``plugins``: the names of the Filter plugins the cycle runs, in order;
        ``fit``: NodeResourcesFit's index among them)."""
        candidates, statuses, err, potential, rows, end = self._dry_run(potential, offset, num_candidates)
        ex = rows[:end]
        fits = self.fits[ex]
        has = self.rf.has_nom
        steps = self.steps
        codes = np.stack(steps, axis=1)[ex] if len(steps) > 1 else steps[0][ex][:, None]
        # the pods as flat lists (a few objects per dry run, not one per node: what the trace
        # keeps must not burden the garbage collector)
        node_pods = [ni.pods for ni in potential[:end]]
        vpods = self.vc.pods
        seg = DryRunSegment(
            self.pod, cycle, tuple(plugins), fit, table_names(self.rf.table), ex,
            list(chain.from_iterable(node_pods)), np.fromiter(map(len, node_pods), dtype=np.int32, count=end),
            list(chain.from_iterable([vpods[r] for r in ex[fits].tolist()])),
            self.vc.cnt[ex], fits, has[ex] if has is not None else None, self.victim[ex], codes,
            (end, len(potential), num_candidates, len(candidates)) if end < len(potential) and num_candidates > 0
            and len(candidates) >= num_candidates else None)
        return candidates, statuses, err, seg

    def _dry_run(self, potential, offset, num_candidates):
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
            no_victims_status = Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS])   # shared: only read
            for name, f, nv in zip(names, fits, no_victims):
                if f:
                    st = Status(Code.Error, [f'expected at least one victim pod on node "{name}"'])
                    errs.append(st)
                elif nv:
                    st = no_victims_status
                else:
                    st = next(fit_statuses)
                statuses[name] = st
        err = Status(Code.Error, [e.message() for e in errs]) if errs else None
        return candidates, statuses, err, potential, rows, end




NO_VICTIMS = "No preemption victims found for incoming pod"

# ---------------------------------------------------------------------- the trace, as columns

_FILTER_KEYS = ("pod", "cycle", "point", "plugin", "node", "code", "reasons", "score", "dryRun")
_NO_REASONS: list = []      # shared by batches; EventBatch hands out copies


def check_runs(plugins: tuple, fit: int, v: int, has: bool):
    """The Filter results run_filter_plugins_with_nominated_pods records for one node on the
    table, where every plugin but NodeResourcesFit (``plugins[fit]``) passes: ``v`` packs Fit's
    codes without the nominated pods (low 4 bits) and with them (high 4 bits; ``has``: the
    node has pods nominated to it that take part). Returns ([(plugin names, Fit's code)], the
    status's code): each run's plugins in order up to Fit if it fails (its code then on the
    last), first with the nominated pods and, if that passes, without them."""
    c0 = v & 15
    if has:
        c1 = v >> 4
        if c1:
            return ((plugins[:fit + 1], c1),), c1
        return ((plugins, 0), (plugins[:fit + 1] if c0 else plugins, c0)), c0
    return ((plugins[:fit + 1] if c0 else plugins, c0),), c0


def _run_counts(np_codes, has_nom, p: int, fit: int):
    """The number of Filter results of each check in ``np_codes`` (packed as check_runs')."""
    f = fit + 1
    rows = np.where((np_codes & 15) != 0, f, p)
    if has_nom is not None:
        both = np.where((np_codes >> 4) != 0, f, p + rows)
        rows = np.where(has_nom if np_codes.ndim == 1 else has_nom[:, None], both, rows)
    return rows


def _filter_batch(seq, time, pod_key, cycle, dry_run, checks):
    """One EventBatch of Filter PluginResults: ``checks`` is [(node, runs)] (runs as
    check_runs gives them), in order."""
    plugin, node = [], []
    code = reasons = None
    for name, runs in checks:
        for names, c in runs:
            k = len(plugin)
            plugin.extend(names)
            node.extend([name] * len(names))
            if c:
                if code is None:
                    code = ["Success"] * k
                    reasons = [_NO_REASONS] * k
                code.extend(["Success"] * (len(names) - 1))
                reasons.extend([_NO_REASONS] * (len(names) - 1))
                code.append("Unschedulable")
                reasons.append(list(REASONS[c]))
            elif code is not None:
                code.extend(["Success"] * len(names))
                reasons.extend([_NO_REASONS] * len(names))
    const = {"pod": pod_key, "cycle": cycle, "point": "Filter", "score": None, "dryRun": dry_run}
    cols = {"plugin": plugin, "node": node}
    if code is None:
        const["code"], const["reasons"] = "Success", _NO_REASONS
    else:
        cols["code"], cols["reasons"] = code, reasons
    return EventBatch(seq, time, "PluginResult", _FILTER_KEYS, const, cols, len(plugin))


_TABLE_NAMES = weakref.WeakKeyDictionary()


def table_names(table) -> tuple:
    """The names of a node table's nodes, by row (kept for the table: its rows never change)."""
    names = _TABLE_NAMES.get(table)
    if names is None:
        names = _TABLE_NAMES[table] = tuple(ni.name for ni in table.node_infos)
    return names


class FilterSegment(Segment):
    """The Filter results of a cycle's node search on the table (schedule_one.filter_on_table
    with the trace on), as the table's columns: one batch of PluginResults when read, the
    rows the per-node search records (Framework.run_filter_plugins and
    run_filter_plugins_with_nominated_pods) for each node visited: the ``visited`` nodes of
    ``names`` (the table's, by row) from row ``first`` on, wrapping around; ``codes`` (packed
    as check_runs'; None: every node passes) and ``has_nom`` (None: no node visited has pods
    nominated to it that take part)."""

    __slots__ = ("pod_key", "cycle", "plugins", "fit", "names", "first", "visited", "codes", "has_nom")
    batch_types = frozenset(("PluginResult",))

    def __init__(self, pod_key, cycle, plugins, fit, names, first, visited, codes, has_nom):
        self.start = self.time = None
        self.pod_key, self.cycle, self.plugins, self.fit = pod_key, cycle, plugins, fit
        self.names, self.first, self.visited = names, first, visited
        if codes is not None and not codes.any():
            codes = None
        self.codes, self.has_nom = codes, has_nom
        if codes is None and has_nom is None:
            self.n = visited * len(plugins)
        else:
            if codes is None:
                codes = np.zeros(visited, dtype=np.uint8)
            self.n = int(_run_counts(codes, has_nom, len(plugins), fit).sum())

    def nbytes(self) -> int:
        return 250 + (self.codes.nbytes if self.codes is not None else 0) + (
            self.has_nom.nbytes if self.has_nom is not None else 0)

    def records(self):
        plugins, fit = self.plugins, self.fit
        names, n, k = self.names, len(self.names), self.visited
        at = self.first
        visited = names[at:at + k] + names[:max(0, at + k - n)]
        has = self.has_nom.tolist() if self.has_nom is not None else [False] * k
        codes = self.codes.tolist() if self.codes is not None else [0] * k
        checks = [(name, check_runs(plugins, fit, v, h)[0]) for name, v, h in zip(visited, codes, has)]
        yield _filter_batch(self.start, self.time, self.pod_key, self.cycle, False, checks)


class DryRunSegment(Segment):
    """The events of ``Evaluator.dry_run_preemption`` run on the node table
    (TableVictims.traced_dry_run), recorded as the columns the table computed and expanded
    only when read, into exactly the events the per-node loop emits
    (DefaultPreemption.select_victims_on_node on each node examined, then the dry run's own):

    - a node without lower-priority pods: ``PreemptionNodeResult`` (UnschedulableAndUnresolvable);
    - else ``ReprieveStart``; the Filter results of the check without the victims (a batch:
      check_runs); ``ReprieveFits``; where the preemptor fits, for each victim most important
      first the Filter results with it put back and ``ReprieveStep``; then
      ``PreemptionCandidate`` or ``PreemptionNodeResult``;
    - ``PreemptionDryRunStop`` when numCandidates were found before the last node.

    Per node examined (in examining order): its ``rows`` in the node table (``names``: the
    table's node names by row); ``node_pods``, the pods of each node in its order when
    examined, one after the other (``pod_counts`` of each); ``victims``, the potential victims
    of each node where the preemptor fits without them, most important first, one after the
    other (``cnt`` of each); and rows of ``cnt``, ``fits``, ``has_nom``, ``victim`` (which of
    the node's victims stay victims) and ``codes`` (Fit's codes, packed as check_runs', of
    the check and of each put-back); ``stop``: (examined, potential nodes, numCandidates,
    found) or None. The Filter plugins the cycle runs other than Fit pass on every node
    examined (the table is used only then). Pods' keys and priorities never change."""

    __slots__ = ("preemptor", "priority", "cycle", "plugins", "fit", "names", "rows", "node_pods",
                 "pod_counts", "victims", "cnt", "fits", "has_nom", "victim", "codes", "stop", "single_types")
    batch_types = frozenset(("PluginResult",))

    def __init__(self, pod, cycle, plugins, fit, names, rows, node_pods, pod_counts, victims, cnt, fits,
                 has_nom, victim, codes, stop):
        self.start = self.time = None
        self.preemptor = pod.key
        self.priority = pod.priority
        self.cycle = cycle
        self.plugins = plugins
        self.fit = fit
        self.names = names
        self.rows = rows
        self.node_pods = node_pods
        self.pod_counts = pod_counts
        self.victims = victims
        self.cnt = cnt
        self.fits = fits
        self.has_nom = has_nom
        self.victim = victim
        self.codes = codes
        self.stop = stop
        rows = _run_counts(codes, has_nom, len(plugins), fit)
        some = cnt > 0
        # per node: ReprieveStart, the check's rows, ReprieveFits, the result; or the result
        n = int(((rows[:, 0] + 3) * some).sum()) + int((~some).sum())
        k = rows.shape[1] - 1
        if k:
            done = (np.arange(k)[None, :] < cnt[:, None]) & fits[:, None]
            n += int(((rows[:, 1:] + 1) * done).sum())      # each put-back's rows, ReprieveStep
        self.n = n + (stop is not None)
        types = set()
        if not some.all() or not fits.all():
            types.add("PreemptionNodeResult")
        if some.any():
            types.update(("ReprieveStart", "ReprieveFits"))
        if fits.any():
            types.update(("ReprieveStep", "PreemptionCandidate"))
        if stop is not None:
            types.add("PreemptionDryRunStop")
        self.single_types = frozenset(types)

    def nbytes(self) -> int:
        arrays = sum(a.nbytes for a in (self.rows, self.pod_counts, self.cnt, self.fits, self.victim,
                                         self.codes)) + (self.has_nom.nbytes if self.has_nom is not None else 0)
        return 300 + 7 * 112 + 2 * 56 + arrays + 8 * (len(self.node_pods) + len(self.victims))

    def records(self):
        seq, t = self.start, self.time
        pk, cycle, prio = self.preemptor, self.cycle, self.priority
        plugins, fit = self.plugins, self.fit
        fit_name = plugins[fit]
        cnt = self.cnt.tolist()
        has = self.has_nom.tolist() if self.has_nom is not None else [False] * len(cnt)
        codes = self.codes.tolist()
        victim = self.victim.tolist()

        def event(type_, **fields):
            nonlocal seq
            d = {"seq": seq, "time": t, "type": type_}
            d.update(fields)
            seq += 1
            return d

        def check(node, v, h):
            nonlocal seq
            runs, code = check_runs(plugins, fit, v, h)
            b = _filter_batch(seq, t, pk, cycle, True, ((node, runs),))
            seq += b.n
            return b, code

        names = self.names
        node_pods, victims_all = self.node_pods, self.victims
        at = vat = 0
        for j, (r, npods) in enumerate(zip(self.rows.tolist(), self.pod_counts.tolist())):
            node = names[r]
            pods = node_pods[at:at + npods]
            at += npods
            if cnt[j] == 0:
                yield event("PreemptionNodeResult", preemptor=pk, node=node, candidate=False,
                            code="UnschedulableAndUnresolvable", cycle=cycle, reason=NO_VICTIMS)
                continue
            removed = [p.key for p in pods if p.priority < prio]
            yield event("ReprieveStart", preemptor=pk, node=node, cycle=cycle, removed=removed,
                        message=f"removed all {len(removed)} pod(s) with priority lower than {prio}; "
                                f"checking whether the preemptor fits without them")
            b, code = check(node, codes[j][0], has[j])
            yield b
            if code:
                reasons = REASONS[code]
                yield event("ReprieveFits", preemptor=pk, node=node, cycle=cycle, fits=False,
                            plugin=fit_name, reasons=list(reasons))
                yield event("PreemptionNodeResult", preemptor=pk, node=node, candidate=False,
                            code="Unschedulable", cycle=cycle, reason=f"{fit_name}: {', '.join(reasons)}")
                continue
            yield event("ReprieveFits", preemptor=pk, node=node, cycle=cycle, fits=True, plugin=None, reasons=[])
            victims = []
            mine = victims_all[vat:vat + cnt[j]]
            vat += cnt[j]
            for k, p in enumerate(mine):
                b, code = check(node, codes[j][1 + k], has[j])
                yield b
                if bool(victim[j][k]) != bool(code):     # pragma: no cover - the table's own
                    raise RuntimeError(f"dry run on {node}: victim {p.key} recorded inconsistently")
                if code:
                    victims.append(p.key)
                    reasons = REASONS[code]
                    yield event("ReprieveStep", preemptor=pk, node=node, victim=p.key, reprieved=False,
                                pdbViolating=False, plugin=fit_name, reasons=list(reasons), cycle=cycle,
                                message=f"with {p.key} (priority {p.priority}) put back, {fit_name} says "
                                        f"{', '.join(reasons)!r}: it stays a victim")
                else:
                    yield event("ReprieveStep", preemptor=pk, node=node, victim=p.key, reprieved=True,
                                pdbViolating=False, plugin=None, reasons=[], cycle=cycle,
                                message=f"with {p.key} (priority {p.priority}) put back, the preemptor "
                                        f"still fits: it is reprieved")
            if victims:
                yield event("PreemptionCandidate", preemptor=pk, node=node, victims=victims, pdbViolations=0,
                            cycle=cycle)
            else:
                yield event("PreemptionNodeResult", preemptor=pk, node=node, candidate=False, code="Error",
                            cycle=cycle, reason=f'expected at least one victim pod on node "{node}"')
        if self.stop is not None:
            examined, n, num_candidates, found = self.stop
            yield event("PreemptionDryRunStop", preemptor=pk, cycle=cycle, examined=examined, potentialNodes=n,
                        numCandidates=num_candidates,
                        reason=f"found {found} candidate(s) (at least one violating no PodDisruptionBudget), "
                               f"which reaches numCandidates={num_candidates}")
