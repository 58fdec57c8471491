"""The framework runtime: one instance per profile (upstream ``framework/runtime/framework.go``).

It builds the profile's plugins, runs each extension point in the configured order, applies
upstream's combination rules (Filter stops at the first rejection; PreFilter results are
intersected; scores are normalised, checked to lie in [0, 100] and weighted), and records a
``PluginResult`` trace event for every plugin call.  Calls made by preemption's dry run on
cloned state are marked ``dryRun: true``.
"""
from __future__ import annotations

from array import array
from itertools import repeat
from operator import add as _add, mul as _mul

from ..errors import ConfigError, PluginValidationError
from ..trace import NO_REASONS, Cycle, EventBatch, RepeatEach, ResultRows, ScoreTable, Segment
from ..plugins import registry
from ..resourcefit import table_names
from ..nodetable import Rejections
from .cycle_state import CycleState
from .handle import Snapshot
from .interface import (EXTENSION_POINTS, MAX_NODE_SCORE, MIN_NODE_SCORE, ActionType,
                        ClusterEvent, Code, EnqueueExtensions, GVK, NodeScore, PreFilterResult,
                        Status)
from ..config import expand_plugins
from .guard import GuardedPlugin, PluginCallError, guard, plugin_frames
from .waiting_pods import MAX_PERMIT_TIMEOUT_US, PermitTimer, WaitingPod, WaitingPodsMap

_POINT_LABEL = {"preEnqueue": "PreEnqueue", "queueSort": "QueueSort", "preFilter": "PreFilter",
                "filter": "Filter", "postFilter": "PostFilter", "preScore": "PreScore",
                "score": "Score", "reserve": "Reserve", "permit": "Permit", "preBind": "PreBind",
                "bind": "Bind", "postBind": "PostBind"}
_ALL_EVENT = ClusterEvent(GVK.WildCard, ActionType.All)
_SUCCESS = Code.Success


def unknown_plugin_hint(name: str) -> str:
    """What follows "'X' is not a known plugin": a close name if there is one, the out-of-tree
    plugins loaded, and how to load one (kept on one line: one problem, one line)."""
    import difflib
    close = difflib.get_close_matches(name, registry.names(), n=1, cutoff=0.75)
    mean = f"did you mean {close[0]!r}? " if close else ""
    loaded = registry.out_of_tree_names()
    have = (f"out-of-tree plugins loaded: {', '.join(loaded)}" if loaded
            else "no out-of-tree plugin is loaded")
    return (f" ({mean}{have}; load a plugin module with --plugins FILE.py or MODULE on the CLI, "
            f"or SCHEDULER_PLUGINS=FILE.py,... for the server: see docs/writing-plugins.md)")


_RESULT_KEYS = ("pod", "cycle", "point", "plugin", "node", "code", "reasons", "score", "dryRun")
_NORMALIZED_KEYS = ("pod", "cycle", "point", "plugin", "node", "code", "reasons", "score", "weight",
                    "weightedScore", "dryRun")
_HOST_SELECTED = frozenset(("HostSelected",))
_SCORE_INTS = frozenset({"score"})
_NORMALIZED_INTS = frozenset({"score", "weightedScore"})
_NO_REASONS: list = []   # shared by batches; EventBatch hands out copies
# points whose PluginResults (one per plugin) are handed to the trace as one ResultRows: those
# no trace sink reads the engine's state at (visualizer/moment.py's quiet points)
_ROWS_POINTS = frozenset(("PreFilter", "PreScore"))


class PassedRun:
    """Filter rows of consecutive nodes that passed every plugin: for each node, a row
    (plugin, node, Success) per plugin in ``plugins``."""
    __slots__ = ("plugins", "node_names")

    def __init__(self, plugins: list, node_names: list):
        self.plugins = plugins
        self.node_names = node_names

    def columns(self):
        """The rows' plugin and node columns (engine.trace.Cycle and RepeatEach: list-like,
        and kept by the compact store as the plugin names and the node names once)."""
        return Cycle(self.plugins, len(self.node_names)), RepeatEach(self.node_names, len(self.plugins))

    def rows(self) -> list:
        return [(p, node, None) for node in self.node_names for p in self.plugins]


def _code_name(status) -> str:
    return "Success" if status is None else status.code.name


def _reasons(status) -> list:
    return [] if status is None else list(status.reasons)


def _call_error(status):
    """The PluginCallError of a guarded plugin's failed call, or None."""
    if status is None:
        return None
    err = status.err
    return err if isinstance(err, PluginCallError) else None


class ScoreResults(list):
    """run_score_plugins' ``(node, total, None)`` rows, with the node names and totals as
    columns (``names``, ``totals``) and, when the trace is on, what HostSelected's ``scores``
    and ``detail`` are built from (``table``: the cycle's ScoreSegment and the extenders'
    columns after it, engine.trace.ScoreTable)."""
    __slots__ = ("table", "names", "totals")


def _score_column(col):
    """An in-tree plugin's scores (ints) kept compactly: bytes when they are all in 0..255
    (every normalized score is: [MIN_NODE_SCORE, MAX_NODE_SCORE]), else an integer array."""
    try:
        return bytes(col)
    except ValueError:
        try:
            return array("i", col)
        except OverflowError:
            return array("q", col)


def host_selected_reason(best, tied: int) -> str:
    """HostSelected's ``reason`` (schedule_one.select_host)."""
    return f"highest total score {best}" + (
        f"; {tied} nodes tie, and the simulator takes the first in evaluation order "
        f"(upstream picks one of them at random)" if tied > 1 else "")


class ScoreSegment(Segment):
    """A cycle's Score phase as the trace keeps it (RunScorePlugins, runtime/framework.go,
    with the trace on): for each plugin in the order they ran, a batch of its Score
    PluginResults and, when it has NormalizeScore, a batch of its NormalizeScore ones (with
    ``weight`` and ``weightedScore``), and, once ``select`` is called (selectHost without
    extenders: schedule_one.select_host), the cycle's HostSelected, its ``scores``, ``detail``
    and ``ties`` ScoreTables reading the segment; kept as the columns they are made of and
    expanded only when read. The node column is ``names`` (a node table's names, ``table_names``) at
    ``rows``, or ``names`` itself when ``rows`` is None; ``plugins`` is ``(plugin, weight,
    normalized, in tree)`` per plugin and ``cols``, plugin after plugin, its raw scores and then,
    if it has NormalizeScore, its normalized ones (an in-tree plugin's as ``_score_column``
    keeps them; an out-of-tree plugin's lists as they are). HostSelected's ScoreTables read it
    (``columns()``)."""
    __slots__ = ("pod_key", "cycle", "names", "rows", "plugins", "cols", "host", "best", "tied")
    batch_types = frozenset(("PluginResult",))
    deferred = True

    def __init__(self, pod_key, cycle, names, rows, plugins, cols, time):
        self.start, self.time = None, time
        self.pod_key, self.cycle, self.names, self.rows = pod_key, cycle, names, rows
        self.plugins, self.cols = plugins, cols
        self.n = (len(rows) if rows is not None else len(names)) * len(cols)
        self.host = self.best = self.tied = None

    @property
    def single_types(self):
        return _HOST_SELECTED if self.host is not None else frozenset()

    def select(self, host: str, best, tied: int) -> None:
        """The cycle's HostSelected is the segment's last event: ``host`` chosen among
        ``tied`` nodes with the highest total, ``best``."""
        self.host, self.best, self.tied = host, best, tied
        self.n += 1

    def nbytes(self) -> int:
        return 200 + 8 * len(self.cols) + sum(map(len, self.cols)) + (
            self.rows.nbytes if self.rows is not None else 8 * len(self.names))

    def _node_names(self) -> list:
        names = self.names
        return list(names) if self.rows is None else [names[i] for i in self.rows.tolist()]

    def columns(self):
        """(node names, [(plugin, raw scores, normalized scores, weight)]) as lists."""
        cols = iter(self.cols)
        plugins = []
        for name, w, normalized, _in_tree in self.plugins:
            raw = list(next(cols))
            plugins.append((name, raw, list(next(cols)) if normalized else raw, w))
        return self._node_names(), plugins

    def records(self):
        names = self._node_names()
        n = len(names)
        start, t = self.start, self.time
        cols = iter(self.cols)
        for name, w, normalized, in_tree in self.plugins:
            const = {"pod": self.pod_key, "cycle": self.cycle, "point": "Score", "plugin": name,
                     "code": "Success", "reasons": _NO_REASONS, "dryRun": False}
            yield EventBatch(start, t, "PluginResult", _RESULT_KEYS, const,
                             {"node": names, "score": list(next(cols))}, n, _SCORE_INTS if in_tree else ())
            start += n
            if normalized:
                scores = list(next(cols))
                weighted = scores if w == 1 else list(map(_mul, scores, repeat(w)))
                yield EventBatch(start, t, "PluginResult", _NORMALIZED_KEYS,
                                 dict(const, point="NormalizeScore", weight=w),
                                 {"node": names, "score": scores, "weightedScore": weighted}, n,
                                 _NORMALIZED_INTS if in_tree else ())
                start += n
        if self.host is not None:
            yield {"seq": start, "time": t, "type": "HostSelected", "pod": self.pod_key, "cycle": self.cycle,
                   "node": self.host, "scores": ScoreTable("scores", self, []),
                   "detail": ScoreTable("detail", self, []), "ties": ScoreTable("ties", self, []),
                   "reason": host_selected_reason(self.best, self.tied)}


class Framework:
    """framework.Framework for one profile.  Also the ``handle`` given to its plugins."""

    def __init__(self, profile, *, trace, nominator=None, pdb_lister=None, snapshot_fn=None,
                 global_percentage: int = 0):
        self.profile_name = profile.scheduler_name
        self.trace = trace
        self._frows = None      # Filter results waiting to reach the trace as one batch
        self._frows_key = None
        self._frows_time = 0.0
        self._flush_frows_fn = self._flush_frows
        self._srows = None      # PreFilter / PreScore results waiting to reach the trace as one
        self._srows_key = None  # ResultRows segment
        self._srows_time = 0.0
        self._flush_srows_fn = self._flush_srows
        self.nominator = nominator
        self._pdb_lister = pdb_lister
        self._snapshot_fn = snapshot_fn
        self.parallelism = 16
        self.percentage_of_nodes_to_score = (profile.percentage_of_nodes_to_score
                                             if profile.percentage_of_nodes_to_score is not None else None)
        self.global_percentage = global_percentage
        self.cycle = 0          # set by the scheduler for trace events
        self.extenders = ()     # the scheduler's extenders (engine/extender.py), set by the Engine
        self.pod_key = ""
        self._snapshot: Snapshot | None = None
        # Errors of out-of-tree plugins' calls (framework.guard), in the order they happened.
        self.plugin_errors: list = []
        # Pods waiting on Permit (waitingPodsMap), by UID.
        self.waiting_pods = WaitingPodsMap()

        def implements(name, point):
            return isinstance(self._instance(name, profile), EXTENSION_POINTS[point])

        self._instances: dict = {}
        try:
            per_point, weights = expand_plugins(profile, implements)
        except PluginValidationError as e:
            raise ConfigError([str(e)]) from None
        for point, names in per_point.items():
            for n in names:
                inst = self._instance(n, profile)
                if not isinstance(inst, EXTENSION_POINTS[point]):
                    raise ConfigError([f"{profile.place}.plugins.{point}: plugin {n!r} does not extend {_POINT_LABEL[point]}"])
        self.plugins = {p: [self._instances[n] for n in names] for p, names in per_point.items()}
        if len(self.plugins["queueSort"]) != 1:
            raise ConfigError([f"{profile.place}.plugins.queueSort: exactly one queue sort plugin is required, "
                               f"got {len(self.plugins['queueSort'])}"])
        if not self.plugins["bind"]:
            raise ConfigError([f"{profile.place}.plugins.bind: at least one bind plugin is required"])
        for n in profile.plugin_config:
            if n not in self._instances and registry.get(n) is None:
                raise ConfigError([f"{profile.place}.pluginConfig: {n!r} is not a known plugin{unknown_plugin_hint(n)}"])
        self.score_plugin_weight = weights
        self.pre_enqueue_plugins = self.plugins["preEnqueue"]
        self.queue_sort = self.plugins["queueSort"][0]
        self.pre_filter_plugins = self.plugins["preFilter"]
        self.filter_plugins = self.plugins["filter"]
        self.post_filter_plugins = self.plugins["postFilter"]
        self.pre_score_plugins = self.plugins["preScore"]
        self.score_plugins = self.plugins["score"]
        self.reserve_plugins = self.plugins["reserve"]
        self.permit_plugins = self.plugins["permit"]
        self.pre_bind_plugins = self.plugins["preBind"]
        self.bind_plugins = self.plugins["bind"]
        self.post_bind_plugins = self.plugins["postBind"]
        self._pre_filter_ext = [(p, p.pre_filter_extensions()) for p in self.pre_filter_plugins]
        self._pre_filter_ext = [(p, e) for p, e in self._pre_filter_ext if e is not None]

    def _instance(self, name, profile):
        inst = self._instances.get(name)
        if inst is not None:
            return inst
        factory = registry.get(name)
        if factory is None:
            from ..config import NOT_MODELLED_VOLUME_PLUGINS
            why = (" (EBSLimits, GCEPDLimits and AzureDiskLimits, the non-CSI attach limits, are not modelled; "
                   "NodeVolumeLimits counts CSI volumes)"
                   if name in NOT_MODELLED_VOLUME_PLUGINS else unknown_plugin_hint(name))
            raise ConfigError([f"{profile.place}.plugins: {name!r} is not a known plugin{why}"])
        args = profile.plugin_config.get(name) or {}
        try:
            inst = factory(args, self)
        except ConfigError as e:
            raise ConfigError([p if p.startswith(profile.place) else f"{profile.place}.{p}" for p in e.problems]) from None
        except Exception as e:  # a plugin's own bug or refusal must not look like an engine crash
            raise ConfigError([f"{profile.place}.plugins: building plugin {name!r} failed: "
                               f"{type(e).__name__}: {e}"]) from None
        if not getattr(inst, "name", None):
            raise ConfigError([f"{profile.place}.plugins: the plugin built for {name!r} has no name"])
        if not registry.is_in_tree(name):
            inst = guard(inst, self)
        self._instances[name] = inst
        return inst

    # ------------------------------------------------------------------ handle API

    def snapshot(self) -> Snapshot:
        if self._snapshot is None and self._snapshot_fn is not None:
            self._snapshot = self._snapshot_fn()
        return self._snapshot

    def set_snapshot(self, snap: Snapshot) -> None:
        self._snapshot = snap

    def victims_on_table(self, evaluator, pod, pdbs):
        """DefaultPreemption's SelectVictimsOnNode for every node at once on the node table
        (``engine.resourcefit.TableVictims``), for ``evaluator``'s dry run, when it reduces to
        NodeResourcesFit's arithmetic (the cycle's Filter is Fit plus node-only plugins and no
        PreFilter extension is active), the plugin is DefaultPreemption itself (not a subclass)
        and no PodDisruptionBudget exists; None otherwise (the dry run goes node by node).
        Not upstream's: the framework offers it, so that neither the evaluator nor the plugin
        depends on the fast path that mirrors them."""
        from ..plugins.defaultpreemption import DefaultPreemption
        from ..resourcefit import ResourceFilter, TableVictims
        if pdbs or type(evaluator.interface) is not DefaultPreemption:
            return None
        snap = self.snapshot()
        table = snap.node_table() if snap is not None else None
        rf = ResourceFilter.for_cycle(self, evaluator.state, pod, table)
        if rf is None:
            return None
        return TableVictims(evaluator, pod, pdbs, rf, table.victims(pod.priority, self.now()))

    def pdbs(self) -> list:
        return self._pdb_lister() if self._pdb_lister else []

    def enqueue_extensions(self) -> list:
        """(plugin name, [ClusterEventWithHint]) for every plugin of the profile."""
        out = []
        for name, inst in self._instances.items():
            if isinstance(inst, EnqueueExtensions):
                if isinstance(inst, GuardedPlugin):
                    try:
                        events = inst.events_to_register()
                    except Exception as e:
                        frames = plugin_frames(e.__traceback__)
                        where = f" at {frames[-1].split(' in ')[0]}" if frames else ""
                        raise ConfigError([f"plugin {name!r}: EventsToRegister failed: {type(e).__name__}: {e}{where}"]) from None
                else:
                    events = inst.events_to_register() or []
                out.append((name, [(e.event, e.queueing_hint_fn) for e in events]))
            else:
                out.append((name, [(_ALL_EVENT, None)]))
        return out

    def hint_map(self) -> list:
        """buildQueueingHintMap: [(registered event, [(plugin, hint fn)])] grouped by event."""
        grouped: dict = {}
        for name, events in self.enqueue_extensions():
            for ev, fn in events:
                k = (ev.resource, int(ev.action_type), ev.label)
                grouped.setdefault(k, (ev, []))[1].append((name, fn))
        return list(grouped.values())

    def _emit(self, pod, point, plugin, node, status, score=None, dry_run=False):
        if status is not None and status.err is not None and isinstance(status.err, PluginCallError):
            self.trace.emit("PluginResult", pod=pod.key, cycle=self.cycle, point=point, plugin=plugin,
                            node=node, code=_code_name(status), reasons=_reasons(status), score=score,
                            dryRun=dry_run, error=status.err.to_json())
            return
        if point in _ROWS_POINTS:
            # buffered (Trace.pend) and handed over as one ResultRows: the same events, in the
            # same order (any other event emitted meanwhile hands them over first)
            tr = self.trace
            key = (pod.key, self.cycle)
            rows = self._srows
            if rows is None or self._srows_key != key or tr._pending is not self._flush_srows_fn:
                tr.flush()
                self._srows = rows = []
                self._srows_key = key
                self._srows_time = tr.now()
                tr.pend(self._flush_srows_fn)
            rows.extend((point, plugin, node, "Success" if status is None else status.code.name,
                         NO_REASONS if status is None or not status.reasons else tuple(status.reasons),
                         score, dry_run))
            return
        self.trace.emit("PluginResult", pod=pod.key, cycle=self.cycle, point=point, plugin=plugin,
                        node=node, code=_code_name(status), reasons=_reasons(status), score=score,
                        dryRun=dry_run)

    def _flush_srows(self):
        rows, self._srows = self._srows, None
        if rows:
            pod_key, cycle = self._srows_key
            self.trace.emit_segment(ResultRows(pod_key, cycle, rows, self._srows_time))

    def _filter_rows(self, pod, dry_run) -> list:
        """Where Filter PluginResults are buffered: consecutive Filter results of one pod,
        cycle and dry-run flag reach the trace as one EventBatch (the same events, in the same
        order, as one ``_emit`` per result). Any other event emitted meanwhile hands the rows
        over first (Trace.pend)."""
        rows = self._frows
        key = (pod.key, self.cycle, dry_run)
        if rows is None or self._frows_key != key:
            if rows is not None:
                self.trace.flush()
            self._frows = rows = []
            self._frows_key = key
            self._frows_time = self.trace.now()
            self.trace.pend(self._flush_frows_fn)
        return rows

    def _flush_frows(self):
        rows, self._frows = self._frows, None
        if not rows:
            return
        pod_key, cycle, dry_run = self._frows_key
        const = {"pod": pod_key, "cycle": cycle, "point": "Filter", "score": None, "dryRun": dry_run}
        if len(rows) == 1 and rows[0].__class__ is PassedRun:
            plugins, nodes = rows[0].columns()     # the usual case: every result a Success
            const["code"], const["reasons"] = "Success", _NO_REASONS
            cols = {"plugin": plugins, "node": nodes}
            self.trace.emit_batch("PluginResult", _RESULT_KEYS, const, cols, len(plugins), time=self._frows_time)
            return
        if any(r.__class__ is PassedRun for r in rows):
            rows = [t for r in rows for t in (r.rows() if r.__class__ is PassedRun else (r,))]
        cols = {"plugin": [r[0] for r in rows], "node": [r[1] for r in rows]}
        statuses = [r[2] for r in rows]
        if statuses.count(None) == len(rows):       # every result a Success
            const["code"], const["reasons"] = "Success", _NO_REASONS
        else:
            cols["code"] = ["Success" if st is None else st.code.name for st in statuses]
            cols["reasons"] = [_NO_REASONS if st is None else list(st.reasons) for st in statuses]
        self.trace.emit_batch("PluginResult", _RESULT_KEYS, const, cols, len(rows), time=self._frows_time)

    def add_passed_filter_rows(self, pod, plugins: list, node_names: list) -> None:
        """Filter rows for nodes that passed every plugin, each node's plugins in order (the
        rows the per-node loop would append, kept as one run until the batch is built)."""
        if node_names:
            rows = self._filter_rows(pod, False)
            if rows and rows[-1].__class__ is PassedRun and rows[-1].plugins == plugins:
                rows[-1].node_names.extend(node_names)
            else:
                rows.append(PassedRun(plugins, list(node_names)))

    def add_rejected_filter_rows(self, pod, plugins: list, node_name: str, status) -> None:
        """Filter rows for a node that passed ``plugins`` but the last, which rejected it with
        ``status`` (the rows the per-node loop would append; a screen's known status,
        Framework.filter_suspects)."""
        rows = self._filter_rows(pod, False)
        last = len(plugins) - 1
        rows.extend((name, node_name, None) for name in plugins[:last])
        rows.append((plugins[last], node_name, status))

    def note_plugin_error(self, err: PluginCallError, pod=None, emit=False) -> None:
        """Called by a guarded plugin when one of its calls failed.  ``emit`` records a
        ``PluginError`` trace event, for calls that have no PluginResult of their own."""
        self.plugin_errors.append((err, pod.key if pod is not None else None, self.cycle))
        if emit and self.trace.enabled:
            self.trace.emit("PluginError", pod=pod.key if pod is not None else None, cycle=self.cycle,
                            point=err.point, plugin=err.plugin, node=err.node, error=err.to_json())

    # ------------------------------------------------------------------ PreEnqueue

    def run_pre_enqueue_plugin(self, pl, pod):
        status = pl.pre_enqueue(pod)
        if self.trace.enabled:
            err = _call_error(status)
            extra = {"error": err.to_json()} if err is not None else {}
            self.trace.emit("PluginResult", pod=pod.key, cycle=None, point="PreEnqueue", plugin=pl.name,
                            node=None, code=_code_name(status), reasons=_reasons(status), score=None,
                            dryRun=False, **extra)
        return status

    # ------------------------------------------------------------------ PreFilter

    def run_pre_filter_plugins(self, state: CycleState, pod):
        """RunPreFilterPlugins: returns (PreFilterResult | None, Status | None)."""
        result = None
        plugins_with_nodes = []
        skip = set()
        tr = self.trace.enabled
        rec = state.recorder        # the CycleState inspector's, or None
        for pl in self.pre_filter_plugins:
            if rec is not None:
                rec.enter(state, "PreFilter", pl.name)
            r, status = pl.pre_filter(state, pod)
            if tr:
                self._emit(pod, "PreFilter", pl.name, None, status)
            if status is not None and status.code == Code.Skip:
                skip.add(pl.name)
                continue
            if status is not None and status.code != _SUCCESS:
                status.failed_plugin = pl.name
                if status.is_unschedulable():
                    return None, status
                return None, Status(Code.Error, [f"running PreFilter plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
            if r is not None and not r.all_nodes():
                plugins_with_nodes.append(pl.name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                msg = (f"node(s) didn't satisfy plugin(s) {plugins_with_nodes} simultaneously"
                       if len(plugins_with_nodes) > 1 else f"node(s) didn't satisfy plugin {plugins_with_nodes[0]}")
                return None, Status(Code.Unschedulable, [msg])
        state.skip_filter_plugins = skip
        return result, None

    def run_pre_filter_extension_add_pod(self, state, pod, pod_to_add, node_info, dry_run=False):
        for pl, ext in self._pre_filter_ext:
            if pl.name in state.skip_filter_plugins:
                continue
            status = ext.add_pod(state, pod, pod_to_add, node_info)
            if status is not None and status.code != _SUCCESS:
                return Status(Code.Error, [f"running AddPod on PreFilter plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
        return None

    def run_pre_filter_extension_remove_pod(self, state, pod, pod_to_remove, node_info, dry_run=False):
        for pl, ext in self._pre_filter_ext:
            if pl.name in state.skip_filter_plugins:
                continue
            status = ext.remove_pod(state, pod, pod_to_remove, node_info)
            if status is not None and status.code != _SUCCESS:
                return Status(Code.Error, [f"running RemovePod on PreFilter plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
        return None

    # ------------------------------------------------------------------ Filter

    def run_filter_plugins(self, state, pod, node_info, dry_run=False):
        """RunFilterPlugins: the first non-Success stops the node's evaluation."""
        skip = state.skip_filter_plugins
        rows = self._filter_rows(pod, dry_run) if self.trace.enabled else None
        for pl in self.filter_plugins:
            if skip and pl.name in skip:
                continue
            status = pl.filter(state, pod, node_info)
            if rows is not None:
                if status is not None and status.err is not None and isinstance(status.err, PluginCallError):
                    self._emit(pod, "Filter", pl.name, node_info.name, status, None, dry_run)  # flushes rows
                    rows = self._filter_rows(pod, dry_run)
                else:
                    if rows is not self._frows:     # the plugin's call emitted an event: new rows
                        rows = self._filter_rows(pod, dry_run)
                    rows.append((pl.name, node_info.name, status))
            if status is not None and status.code != _SUCCESS:
                return self._filter_failure(status, pl.name)
        return None

    def node_filter(self, state, pod):
        """``run_filter_plugins(state, pod, node_info)`` as a function of the node alone, with
        the plugins to run resolved once: what the Filter loop calls for each node that has no
        nominated pods (the same statuses, and with the trace on the same rows in the same
        order). None when the trace is on and a Filter plugin is out of tree: such a plugin's
        call may emit events or fail with a PluginCallError, which run_filter_plugins handles."""
        skip = state.skip_filter_plugins
        plugins = [pl for pl in self.filter_plugins if not (skip and pl.name in skip)]
        calls = [(pl.filter, pl.name) for pl in plugins]
        if not self.trace.enabled:
            def check(node_info):
                for fn, name in calls:
                    status = fn(state, pod, node_info)
                    if status is not None and status.code != _SUCCESS:
                        return self._filter_failure(status, name)
                return None
            return check
        if any(isinstance(pl, GuardedPlugin) for pl in plugins):
            return None
        filter_rows = self._filter_rows

        def check_traced(node_info):
            rows = filter_rows(pod, False)
            node = node_info.name
            for fn, name in calls:
                status = fn(state, pod, node_info)
                rows.append((name, node, status))
                if status is not None and status.code != _SUCCESS:
                    return self._filter_failure(status, name)
            return None
        return check_traced

    def filter_suspects(self, state, pod, table):
        """The nodes of ``table`` (engine.nodetable.NodeTable) that some Filter plugin might
        reject, as a bool array, screened by the plugins' ``_filter_suspects``, and the
        statuses the screens know: ``(suspects, known)``, ``suspects`` None when no node can be
        rejected; False when a plugin cannot screen (an out-of-tree plugin, a subclass, or a
        pod the screen does not cover), and then every node is a suspect.

        Only in-tree plugins screen (``_filter_suspects`` defined by the plugin's own class),
        and only what their Filter would compute from the same NodeInfo: a node outside the
        suspects passes every plugin, so the Filter loop counts it feasible without calling
        them (in-tree Filters have no side effects); a suspect is evaluated as before, unless
        ``known`` has its status. A screen returning an engine.nodetable.Rejections knows its
        plugin's status on every node: a node it rejects that no earlier plugin might reject
        fails with that status (``RunFilterPlugins`` stops at the first plugin that does not
        succeed, and the earlier ones succeed). ``known``: None, or ``(kinds, rows)``,
        ``rows[i]`` k > 0 for such a node i and ``kinds[k]`` the ``(code, reasons, plugin
        name, the plugin's position among those run)`` of its status."""
        skip = state.skip_filter_plugins
        out = None
        known = None
        kinds = [None]
        i = -1
        for pl in self.filter_plugins:
            if skip and pl.name in skip:
                continue
            i += 1
            screen = type(pl).__dict__.get("_filter_suspects")
            if screen is None:
                return False
            m = screen(pl, state, pod, table)
            if m is None:
                continue
            if m is False:
                return False
            if m.__class__ is Rejections:
                rej = m
                m = rej.codes > 0
                first = m if out is None else m & ~out
                if first.any():
                    k = rej.codes.astype("int32")
                    k += len(kinds) - 1
                    k *= first
                    known = k if known is None else known + k   # rows apart: an earlier one is in out
                    kinds.extend((code, reasons, pl.name, i) for code, reasons in rej.statuses)
            out = m if out is None else (out | m)
        return out, (kinds, known) if known is not None else None

    @staticmethod
    def _filter_failure(status, name):
        if not status.is_unschedulable():
            return Status(Code.Error, [f"running {name!r} filter plugin: {status.message()}"], name, err=status.err)
        status.failed_plugin = name
        return status

    def run_filter_plugins_with_nominated_pods(self, state, pod, node_info, dry_run=False):
        """RunFilterPluginsWithNominatedPods: first with the pods nominated to the node whose
        priority is >= the pod's (if any), then without them; both must pass."""
        status = None
        pods_added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                pods_added, state_to_use, info_to_use, err = self._add_nominated_pods(state, pod, node_info, dry_run)
                if err is not None:
                    return err
            elif not pods_added or status is not None:
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use, dry_run)
            if status is not None and not status.is_unschedulable() and status.code != _SUCCESS:
                return status
        return status

    def _add_nominated_pods(self, state, pod, node_info, dry_run):
        """addNominatedPods."""
        if self.nominator is None or node_info.node is None:
            return False, state, node_info, None
        nominated = self.nominator.nominated_pods.get(node_info.name)
        if not nominated:
            return False, state, node_info, None
        node_out = None
        state_out = None
        prio = pod.priority
        for p in nominated:
            if p.priority >= prio and p.key != pod.key:
                if node_out is None:
                    node_out = node_info.clone()
                    state_out = state.clone()
                node_out.add_pod(p)
                err = self.run_pre_filter_extension_add_pod(state_out, pod, p, node_out, dry_run)
                if err is not None:
                    return False, state, node_info, err
        if node_out is None:
            return False, state, node_info, None
        return True, state_out, node_out, None

    # ------------------------------------------------------------------ PostFilter

    def run_post_filter_plugins(self, state, pod, filtered_node_status_map):
        """RunPostFilterPlugins: the first Success wins; otherwise the reasons are merged."""
        statuses = []
        result = None
        failed_plugin = ""
        rec = state.recorder
        for pl in self.post_filter_plugins:
            if rec is not None:
                rec.enter(state, "PostFilter", pl.name)
            r, status = pl.post_filter(state, pod, filtered_node_status_map)
            if self.trace.enabled:
                self._emit(pod, "PostFilter", pl.name, None, status)
            if status is None or status.code == _SUCCESS:
                return r, status
            if status.code == Code.UnschedulableAndUnresolvable:
                status.failed_plugin = pl.name
                return r, status
            if not status.is_unschedulable():
                return None, Status(Code.Error, status.reasons, pl.name)
            if r is not None and r.nominating_info is not None and r.nominating_info.mode != 0:
                result = r
            statuses.append(status)
            if not failed_plugin:
                failed_plugin = pl.name
        reasons = []
        for s in statuses:
            reasons.extend(s.reasons)
        return result, Status(Code.Unschedulable, reasons, failed_plugin)

    # ------------------------------------------------------------------ Score

    def out_of_tree_scoring(self) -> bool:
        """Whether a PreScore or Score plugin is out of tree (a GuardedPlugin)."""
        for pl in self.pre_score_plugins:
            if isinstance(pl, GuardedPlugin):
                return True
        for pl in self.score_plugins:
            if isinstance(pl, GuardedPlugin):
                return True
        return False

    def run_pre_score_plugins(self, state, pod, nodes):
        skip = set()
        rec = state.recorder
        for pl in self.pre_score_plugins:
            if rec is not None:
                rec.enter(state, "PreScore", pl.name)
            status = pl.pre_score(state, pod, nodes)
            if self.trace.enabled:
                self._emit(pod, "PreScore", pl.name, None, status)
            if status is not None and status.code == Code.Skip:
                skip.add(pl.name)
                continue
            if status is not None and status.code != _SUCCESS:
                return Status(Code.Error, [f"running PreScore plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
        state.skip_score_plugins = skip
        return None

    def run_score_plugins(self, state, pod, nodes):
        """RunScorePlugins: Score per node, NormalizeScore per plugin, check [0, 100], weight, sum.

        Returns (list of (node name, total, None), Status), the list a ``ScoreResults``. With
        the trace on, the Score and NormalizeScore PluginResults are one ScoreSegment, handed
        to the trace before its next event, and the list's ``table`` is ``(the segment, [])``,
        from which HostSelected's ``scores``, ``detail`` and ``ties`` are built when read
        (engine.trace.ScoreTable).
        """
        skip = state.skip_score_plugins
        plugins = [pl for pl in self.score_plugins if pl.name not in skip] if skip else list(self.score_plugins)
        tr = self.trace.enabled
        names = [ni.name for ni in nodes]
        n = len(names)
        totals = [0] * n
        score_plugins, cols = [], []     # the trace's: ScoreSegment's plugins and columns
        rec = state.recorder
        for pl in plugins:
            if rec is not None:
                rec.enter(state, "Score", pl.name)
            values, status = pl.score_nodes(state, pod, nodes)
            if status is not None and status.code != _SUCCESS:
                err = _call_error(status)
                if tr and err is not None:
                    self._emit(pod, "Score", pl.name, err.node, status)
                return None, Status(Code.Error, [f"running Score plugins: plugin {pl.name!r} failed with: {status.message()}"], pl.name, err=status.err)
            in_tree = not isinstance(pl, GuardedPlugin)
            if tr:      # the raw scores (an in-tree plugin's are ints; an out-of-tree one's as given)
                cols.append(_score_column(values) if in_tree else list(values))
            ext = pl.score_extensions()
            # an in-tree plugin's NormalizeScore over plain scores (no NodeScore objects);
            # only the plugin's own class's, so a subclass that overrides it goes the long way
            fast = type(ext).__dict__.get("_normalize_values") if ext is not None else None
            if fast is not None:
                values = fast(ext, state, pod, values)
            elif ext is not None:
                scores = [NodeScore(names[i], values[i]) for i in range(n)]
                status = ext.normalize_score(state, pod, scores)
                if status is not None and status.code != _SUCCESS:
                    err = _call_error(status)
                    if tr and err is not None:
                        self._emit(pod, "NormalizeScore", pl.name, err.node, status)
                    return None, Status(Code.Error, [f"running Normalize on Score plugins: plugin {pl.name!r} failed with: {status.message()}"], pl.name, err=status.err)
                values = [ns.score for ns in scores]
            w = self.score_plugin_weight.get(pl.name, 1)
            if max(values, default=0) > MAX_NODE_SCORE or min(values, default=0) < MIN_NODE_SCORE:
                s = next(v for v in values if v > MAX_NODE_SCORE or v < MIN_NODE_SCORE)
                return None, Status(Code.Error, [f"applying score defaultWeights on Score plugins: plugin {pl.name!r} returns an invalid score {s}, it should in the range of [0, 100] after normalizing"], pl.name)
            if w == 1:
                totals = list(map(_add, totals, values))
            else:
                totals = list(map(_add, totals, map(_mul, values, repeat(w))))
            if tr:
                score_plugins.append((pl.name, w, ext is not None, in_tree))
                if ext is not None:
                    cols.append(_score_column(values) if in_tree else values)
        out = ScoreResults(zip(names, totals, repeat(None)))
        out.names, out.totals, out.table = names, totals, None
        if tr:
            # the batches of the Score and NormalizeScore PluginResults, as one segment, handed
            # over before the next event (Trace.pend), so HostSelected may join it
            table = getattr(nodes, "table", None)
            trace = self.trace
            seg = ScoreSegment(pod.key, self.cycle, *((table_names(table), nodes.rows.astype("i4"))
                                                      if table is not None else (names, None)),
                               tuple(score_plugins), cols, trace.now())
            trace.pend(lambda: trace.emit_segment(seg))
            out.table = (seg, [])
        return out, None

    # ------------------------------------------------------------------ Reserve .. PostBind

    def run_reserve_plugins_reserve(self, state, pod, node_name):
        rec = state.recorder
        for pl in self.reserve_plugins:
            if rec is not None:
                rec.enter(state, "Reserve", pl.name)
            status = pl.reserve(state, pod, node_name)
            if self.trace.enabled:
                self._emit(pod, "Reserve", pl.name, node_name, status)
            if status is not None and status.code != _SUCCESS:
                status.failed_plugin = pl.name
                if status.is_unschedulable():
                    return status
                return Status(Code.Error, [f"running Reserve plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
        return None

    def run_reserve_plugins_unreserve(self, state, pod, node_name):
        rec = state.recorder
        for pl in reversed(self.reserve_plugins):
            if rec is not None:
                rec.enter(state, "Unreserve", pl.name)
            pl.unreserve(state, pod, node_name)

    def run_permit_plugins(self, state, pod, node_name):
        """RunPermitPlugins: the first rejection (Unschedulable) or error ends the run; plugins
        that return ``Wait`` (timeout in seconds, capped at 15 minutes) park the pod in the
        waiting-pods map once every plugin has run, and ``Wait`` is returned.

        Returns ``(Status | None, WaitingPod | None)``."""
        waits = None
        rec = state.recorder
        for pl in self.permit_plugins:
            if rec is not None:
                rec.enter(state, "Permit", pl.name)
            status, timeout = pl.permit(state, pod, node_name)
            if self.trace.enabled:
                self._emit(pod, "Permit", pl.name, node_name, status)
            if status is None or status.code == _SUCCESS:
                continue
            if status.is_unschedulable():
                status.failed_plugin = pl.name
                return status, None
            if status.code == Code.Wait:
                # a Go time.Duration: a missing timeout is the zero duration (the timer fires at
                # once); negative ones too; longer than maxTimeout is cut to 15 minutes
                us = (MAX_PERMIT_TIMEOUT_US if timeout >= MAX_PERMIT_TIMEOUT_US / 1_000_000
                      else round(timeout * 1_000_000)) if timeout else 0
                if waits is None:
                    waits = {}
                waits[pl.name] = min(max(us, 0), MAX_PERMIT_TIMEOUT_US)
                continue
            return Status(Code.Error, [f"running Permit plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err), None
        if waits is not None:
            now = self.now()
            wp = WaitingPod(self, pod, {}, now)
            for name, us in waits.items():
                wp.pending_plugins[name] = PermitTimer(wp, name, now + us, us)
            self.waiting_pods.add(wp)
            for name, timer in wp.pending_plugins.items():
                self.trace.emit("PermitWait", pod=pod.key, cycle=self.cycle, plugin=name, node=node_name,
                                timeout=timer.wait / 1_000_000)
            if self.host is not None:
                self.host.start_permit_timers(wp)
            return Status(Code.Wait, [f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"']), wp
        return None, None

    # ------------------------------------------------------------------ waiting pods (handle API)

    def get_waiting_pod(self, uid):
        """GetWaitingPod: the WaitingPod of the pod with this UID, or None."""
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, callback) -> None:
        """IterateOverWaitingPods: ``callback(waiting_pod)`` for every waiting pod of this profile,
        in the order they started waiting."""
        self.waiting_pods.iterate(callback)

    def reject_waiting_pod(self, uid) -> bool:
        """RejectWaitingPod: reject the pod (plugin "", message "removed"); True if it was waiting."""
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def _stop_permit_timer(self, timer) -> None:
        if not timer.stopped:
            timer.stopped = True
            if self.host is not None:
                self.host.stop_permit_timer(timer)

    def _permit_event(self, kind, wp, plugin, **fields) -> None:
        self.trace.emit(kind, pod=wp.pod.key, plugin=plugin or None, node=wp.node_name, **fields)

    def _waiting_pod_signalled(self, wp) -> None:
        """The signal is in the channel: the binding cycle blocked in WaitOnPermit wakes up (the
        engine does it as a completion at this instant), and the pod leaves the map then."""
        if self.host is not None:
            self.host.permit_signalled(wp)
        else:
            self.waiting_pods.remove(wp.pod.uid)

    def run_pre_bind_plugins(self, state, pod, node_name):
        rec = state.recorder
        for pl in self.pre_bind_plugins:
            if rec is not None:
                rec.enter(state, "PreBind", pl.name)
            status = pl.pre_bind(state, pod, node_name)
            if self.trace.enabled:
                self._emit(pod, "PreBind", pl.name, node_name, status)
            if status is not None and status.code != _SUCCESS:
                status.failed_plugin = pl.name
                if status.is_unschedulable():
                    return status
                return Status(Code.Error, [f"running PreBind plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
        return None

    def run_bind_plugins(self, state, pod, node_name):
        status = Status(Code.Skip)
        rec = state.recorder
        for pl in self.bind_plugins:
            if rec is not None:
                rec.enter(state, "Bind", pl.name)
            status = pl.bind(state, pod, node_name)
            if self.trace.enabled:
                self._emit(pod, "Bind", pl.name, node_name, status)
            if status is not None and status.code == Code.Skip:
                continue
            if status is not None and status.code != _SUCCESS:
                status.failed_plugin = pl.name
                if status.is_unschedulable():
                    return status
                return Status(Code.Error, [f"running Bind plugin {pl.name!r}: {status.message()}"], pl.name, err=status.err)
            return status
        return status

    def run_post_bind_plugins(self, state, pod, node_name):
        rec = state.recorder
        for pl in self.post_bind_plugins:
            if rec is not None:
                rec.enter(state, "PostBind", pl.name)
            status = pl.post_bind(state, pod, node_name)
            if self.trace.enabled:
                self._emit(pod, "PostBind", pl.name, node_name, status if _call_error(status) else None)

    def num_feasible_nodes_to_find(self, num_all_nodes: int) -> int:
        """numFeasibleNodesToFind: every node below 100; else the adaptive percentage
        (50 - n/125, at least 5) or the configured one, and never fewer than 100."""
        if num_all_nodes < 100:
            return num_all_nodes
        pct = self.percentage_of_nodes_to_score
        if pct is None:
            pct = self.global_percentage
        if pct == 0:
            pct = 50 - num_all_nodes // 125
            if pct < 5:
                pct = 5
        n = num_all_nodes * pct // 100
        return max(n, 100)


def _host_delegate(name):
    def method(self, *args, **kwargs):
        return getattr(self.host, name)(*args, **kwargs)
    method.__name__ = name
    return method


# Handle methods served by the engine that owns the framework (set as ``Framework.host``).
Framework.host = None
Framework.get_pod = _host_delegate("get_pod")
Framework.list_pods = _host_delegate("list_pods")
Framework.get_object = _host_delegate("get_object")
Framework.list_objects = _host_delegate("list_objects")
Framework.delete_victim = _host_delegate("delete_victim")
Framework.clear_nominated_node_name = _host_delegate("clear_nominated_node_name")
Framework.now = lambda self: self.host.now if self.host is not None else 0
