"""Isolation of out-of-tree plugins: a plugin's bug is a finding, not a crash.

Upstream's framework turns an error a plugin returns into an ``Error`` status (for example
``RunFilterPlugins`` wraps it as ``running %q filter plugin: %w``), and the scheduling cycle then
fails and the pod goes back to the queue through ``handleSchedulingFailure``.  A Go plugin
reports errors by returning them; a Python plugin may instead raise, or return something its
extension point does not return (``False`` for a Status, a float score, a tuple of the wrong
length).  For plugins that do not come with the engine (anything not registered by
``engine.plugins.in_tree``), the framework puts a :class:`GuardedPlugin` in front of the plugin:
every call that raises or returns a malformed value becomes that call's ``Error`` status, whose
``err`` is a :class:`PluginCallError` with the exception type, message and the plugin's own
frames (``file:line``, no engine frames).  The runtime adds it to the call's ``PluginResult``
trace event as ``error``; calls that have no status (QueueSort's ``less``, ``unreserve``,
queueing hints) record a ``PluginError`` trace event instead and fall back as documented in
docs/writing-plugins.md.  In-tree plugins are not guarded: an exception there is a bug in the
engine, and the CLI reports it as one (exit 1).
"""
from __future__ import annotations

import linecache
import os
import traceback

from .interface import (EXTENSION_POINTS, ClusterEventWithHint, Code, EnqueueExtensions,
                        PostFilterResult, PreFilterExtensions, PreFilterResult, QueueingHint,
                        ScoreExtensions, ScorePlugin, Status)

_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MESSAGE = 2000
MAX_FRAMES = 30
MAX_LINE = 200          # characters of a frame's source line kept in the trace


def _short_path(path: str) -> str:
    """A frame's file, relative to the working directory when it lies under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


_RUNNING: dict = {}      # absolute file -> its lines as loaded (engine.plugins.loader)


def remember_source(path, text) -> None:
    """The source text of a plugin module as it was loaded (engine.plugins.loader calls this):
    the lines a traceback shows for it, even after the file is edited and before it is reloaded."""
    if path and isinstance(text, str):
        _RUNNING[os.path.abspath(path)] = text.splitlines()


def forget_source(path) -> None:
    if path:
        _RUNNING.pop(os.path.abspath(path), None)


def source_line(filename, lineno):
    """The stripped source text of ``filename``'s line ``lineno``: of the code that runs (a
    loaded plugin module's text as it was loaded: :func:`remember_source`), else as the file is
    now (``linecache``, checked against the file on disk); cut at :data:`MAX_LINE` characters;
    None when it cannot be read (no such file, a line past its end, a blank line)."""
    if not filename or not lineno:
        return None
    try:
        running = _RUNNING.get(os.path.abspath(filename))
        if running is not None:
            text = running[lineno - 1].strip() if 0 < lineno <= len(running) else ""
        else:
            linecache.checkcache(filename)
            text = linecache.getline(filename, lineno).strip()
    except Exception:       # an unreadable or undecodable file: no line, not a second error
        return None
    if not text:
        return None
    return text if len(text) <= MAX_LINE else text[:MAX_LINE] + "…"


def _plugin_frame_list(tb) -> list:
    out = []
    for fr in traceback.extract_tb(tb, limit=None):
        fn = os.path.abspath(fr.filename)
        if fn.startswith(_ENGINE_DIR + os.sep):
            continue
        out.append(fr)
    return out[-MAX_FRAMES:]


def plugin_frames(tb) -> list:
    """The frames of a traceback that are not the engine's: ``file:line in function``."""
    return [f"{_short_path(fr.filename)}:{fr.lineno} in {fr.name}" for fr in _plugin_frame_list(tb)]


def plugin_frames_and_lines(tb) -> tuple:
    """:func:`plugin_frames` and, in a parallel list, each frame's source line (or None), read
    now: the file may change later (a reload), the trace keeps the line that raised."""
    frs = _plugin_frame_list(tb)
    return ([f"{_short_path(fr.filename)}:{fr.lineno} in {fr.name}" for fr in frs],
            [source_line(fr.filename, fr.lineno) for fr in frs])


class PluginCallError:
    """What went wrong in one call of an out-of-tree plugin (the ``err`` of its Error status)."""
    __slots__ = ("plugin", "point", "type", "message", "frames", "node", "lines")

    def __init__(self, plugin, point, type_, message, frames=(), node=None, lines=None):
        self.plugin = plugin
        self.point = point
        self.type = type_
        msg = str(message)
        self.message = msg if len(msg) <= MAX_MESSAGE else msg[:MAX_MESSAGE] + "…"
        self.frames = list(frames)
        self.node = node
        lines = list(lines) if lines is not None else []
        # parallel to frames: one source line (or None) per frame
        self.lines = (lines + [None] * len(self.frames))[:len(self.frames)]

    @classmethod
    def from_exception(cls, plugin, point, exc, node=None):
        frames, lines = plugin_frames_and_lines(exc.__traceback__)
        return cls(plugin, point, type(exc).__name__, exc, frames, node, lines)

    def reason(self) -> str:
        """The one-line reason put in the Error status."""
        if self.type == "InvalidReturn":
            return self.message
        where = f" at {self.frames[-1].split(' in ')[0]}" if self.frames else ""
        return f"{self.type}: {self.message}{where}"

    def to_json(self) -> dict:
        frames = list(self.frames)
        lines = list(getattr(self, "lines", None) or [])     # a checkpoint from before "lines"
        return {"type": self.type, "message": self.message, "frames": frames,
                "lines": (lines + [None] * len(frames))[:len(frames)]}

    def __repr__(self):
        return f"PluginCallError({self.plugin!r}, {self.point!r}, {self.type!r}, {self.message!r})"


def _short(value) -> str:
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


def _describe(value) -> str:
    return f"{_short(value)} ({type(value).__name__})"


def _article(what: str) -> str:
    return what if what.startswith(("a ", "an ")) else ("an " if what[0] in "aeiouAEIOU" else "a ") + what


def _defined_at(fn) -> list:
    """``["file:line in name"]`` where a plugin's method is defined (for malformed returns)."""
    code = _code_of(fn)
    if code is None:
        return []
    return [f"{_short_path(code.co_filename)}:{code.co_firstlineno} in {code.co_name}"]


def _code_of(fn):
    return getattr(getattr(fn, "__func__", fn), "__code__", None)


def _defined_at_lines(fn) -> list:
    """The source line of :func:`_defined_at`'s frame (its ``def`` line), or ``[]``."""
    code = _code_of(fn)
    if code is None:
        return []
    return [source_line(code.co_filename, code.co_firstlineno)]


def _is_status(v) -> bool:
    return v is None or isinstance(v, Status)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _Recorder:
    """Builds Error statuses and reports errors to the framework that owns the plugin."""

    def __init__(self, plugin_name, owner):
        self.plugin_name = plugin_name
        self.owner = owner

    def error(self, point, exc=None, invalid=None, node=None, pod=None, emit=False, fn=None) -> Status:
        """An Error status for a call that raised ``exc`` or returned what ``invalid`` says;
        ``fn`` (the plugin's method) gives the file:line of a malformed return."""
        if exc is not None:
            err = PluginCallError.from_exception(self.plugin_name, point, exc, node)
        else:
            err = PluginCallError(self.plugin_name, point, "InvalidReturn", invalid, _defined_at(fn), node,
                                  _defined_at_lines(fn))
        if self.owner is not None:
            self.owner.note_plugin_error(err, pod, emit)
        return Status(Code.Error, [err.reason()], self.plugin_name, err=err)


class _GuardedExtensions(PreFilterExtensions, ScoreExtensions):
    """PreFilterExtensions / ScoreExtensions of a guarded plugin."""

    def __init__(self, inner, rec: _Recorder):
        self._inner = inner
        self._rec = rec

    def add_pod(self, state, pod_to_schedule, pod_info_to_add, node_info):
        return self._call_status("AddPod", self._inner.add_pod, pod_to_schedule,
                                 (state, pod_to_schedule, pod_info_to_add, node_info), node_info.name)

    def remove_pod(self, state, pod_to_schedule, pod_info_to_remove, node_info):
        return self._call_status("RemovePod", self._inner.remove_pod, pod_to_schedule,
                                 (state, pod_to_schedule, pod_info_to_remove, node_info), node_info.name)

    def normalize_score(self, state, pod, scores):
        try:
            r = self._inner.normalize_score(state, pod, scores)
        except Exception as e:
            return self._rec.error("NormalizeScore", exc=e, pod=pod)
        if not _is_status(r):
            return self._rec.error("NormalizeScore", invalid=f"NormalizeScore returned {_describe(r)}; "
                                   f"expected a Status or None", pod=pod, fn=self._inner.normalize_score)
        for ns in scores:
            if not _is_int(ns.score):
                return self._rec.error("NormalizeScore", invalid=f"NormalizeScore set node {ns.name}'s score "
                                       f"to {_describe(ns.score)}; expected an int", node=ns.name, pod=pod,
                                       fn=self._inner.normalize_score)
        return r

    def _call_status(self, point, fn, pod, args, node):
        # AddPod/RemovePod have no PluginResult of their own: record a PluginError event.
        try:
            r = fn(*args)
        except Exception as e:
            return self._rec.error(point, exc=e, node=node, pod=pod, emit=True)
        if not _is_status(r):
            return self._rec.error(point, invalid=f"{point} returned {_describe(r)}; expected a Status or None",
                                   node=node, pod=pod, emit=True, fn=fn)
        return r


class _BrokenScoreExtensions(ScoreExtensions):
    """Stands for score_extensions() when that call itself failed: normalizing reports it."""

    def __init__(self, status):
        self._status = status

    def normalize_score(self, state, pod, scores):
        return self._status


class GuardedPlugin:
    """Stands in front of an out-of-tree plugin; built by :func:`guard`."""

    def __init__(self, inner, owner=None):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_rec", _Recorder(inner.name, owner))

    @property
    def name(self):
        return self._inner.name

    @property
    def inner(self):
        """The plugin object itself."""
        return self._inner

    def __getattr__(self, attr):
        if attr in ("_inner", "_rec"):      # not set yet: an instance being unpickled (checkpoints)
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __getstate__(self):
        return {"_inner": self._inner, "_rec": self._rec}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, attr, value):
        setattr(self._inner, attr, value)

    def __repr__(self):
        return f"<guarded {self._inner!r}>"

    # -- helpers
    def _status_call(self, point, fn, args, pod, node=None):
        try:
            r = fn(*args)
        except Exception as e:
            return self._rec.error(point, exc=e, node=node, pod=pod)
        if not _is_status(r):
            return self._rec.error(point, invalid=f"{point} returned {_describe(r)}; expected a Status or None",
                                   node=node, pod=pod, fn=fn)
        return r

    def _pair_call(self, point, fn, args, pod, first_ok, first_what, node=None):
        try:
            r = fn(*args)
        except Exception as e:
            return None, self._rec.error(point, exc=e, node=node, pod=pod)
        if not isinstance(r, (tuple, list)) or len(r) != 2:
            return None, self._rec.error(point, invalid=f"{point} returned {_describe(r)}; expected a pair "
                                         f"({first_what}, Status or None)", node=node, pod=pod, fn=fn)
        a, st = r
        if not first_ok(a):
            return None, self._rec.error(point, invalid=f"{point} returned {_short(r)}: {_describe(a)} is not "
                                         f"{_article(first_what)}", node=node, pod=pod, fn=fn)
        if not _is_status(st):
            return None, self._rec.error(point, invalid=f"{point} returned {_short(r)}: {_describe(st)} is not "
                                         f"a Status or None", node=node, pod=pod, fn=fn)
        return a, st

    # -- PreEnqueue
    def pre_enqueue(self, pod):
        return self._status_call("PreEnqueue", self._inner.pre_enqueue, (pod,), pod)

    # -- QueueSort: no status to carry an error; a failed comparison orders nothing
    def less(self, a, b):
        try:
            r = self._inner.less(a, b)
        except Exception as e:
            self._rec.error("QueueSort", exc=e, pod=a.pod, emit=True)
            return False
        if not isinstance(r, bool):
            self._rec.error("QueueSort", invalid=f"Less returned {_describe(r)}; expected a bool", pod=a.pod, emit=True,
                            fn=self._inner.less)
            return False
        return r

    # -- EnqueueExtensions (called when the profile is built; failures refuse the profile)
    def events_to_register(self):
        events = self._inner.events_to_register()
        if events is None:
            return []
        if not isinstance(events, (list, tuple)) or not all(isinstance(e, ClusterEventWithHint) for e in events):
            raise TypeError(f"events_to_register returned {_describe(events)}; expected a list of "
                            f"ClusterEventWithHint")
        out = []
        for e in events:
            fn = e.queueing_hint_fn
            out.append(ClusterEventWithHint(e.event, self._guard_hint(fn) if fn is not None else None))
        return out

    def _guard_hint(self, fn):
        rec = self._rec

        def hint(pod, old_obj, new_obj):
            try:
                h = fn(pod, old_obj, new_obj)
            except Exception as e:
                rec.error("QueueingHint", exc=e, pod=pod, emit=True)
                return QueueingHint.QueueAfterBackoff
            if isinstance(h, QueueingHint):
                return h
            if _is_int(h) and h in QueueingHint._value2member_map_:
                return QueueingHint(h)
            rec.error("QueueingHint", invalid=f"the queueing hint returned {_describe(h)}; expected a "
                      f"QueueingHint", pod=pod, emit=True, fn=fn)
            return QueueingHint.QueueAfterBackoff
        return hint

    # -- PreFilter
    def pre_filter(self, state, pod):
        return self._pair_call("PreFilter", self._inner.pre_filter, (state, pod), pod,
                               lambda r: r is None or isinstance(r, PreFilterResult), "PreFilterResult or None")

    def pre_filter_extensions(self):
        ext = self._inner.pre_filter_extensions()
        if ext is None:
            return None
        return _GuardedExtensions(ext, self._rec)

    # -- Filter
    def filter(self, state, pod, node_info):
        return self._status_call("Filter", self._inner.filter, (state, pod, node_info), pod, node_info.name)

    # -- PostFilter
    def post_filter(self, state, pod, filtered_node_status_map):
        return self._pair_call("PostFilter", self._inner.post_filter, (state, pod, filtered_node_status_map), pod,
                               lambda r: r is None or isinstance(r, PostFilterResult), "PostFilterResult or None")

    # -- Score
    def pre_score(self, state, pod, nodes):
        return self._status_call("PreScore", self._inner.pre_score, (state, pod, nodes), pod)

    def score(self, state, pod, node_name):
        return self._pair_call("Score", self._inner.score, (state, pod, node_name), pod, _is_int, "int",
                               node=node_name)

    def score_nodes(self, state, pod, node_infos):
        if type(self._inner).score_nodes is ScorePlugin.score_nodes:
            out = []
            for ni in node_infos:
                s, st = self.score(state, pod, ni.name)
                if st is not None and st.code != Code.Success:
                    return None, st
                out.append(s)
            return out, None
        values, st = self._pair_call("Score", self._inner.score_nodes, (state, pod, node_infos), pod,
                                     lambda v: isinstance(v, (list, tuple)) or v is None, "list of int")
        if st is not None and st.code != Code.Success:
            return None, st
        if values is None or len(values) != len(node_infos) or not all(_is_int(v) for v in values):
            return None, self._rec.error("Score", invalid=f"score_nodes returned {_describe(values)}; expected "
                                         f"{len(node_infos)} ints, one per node", pod=pod, fn=self._inner.score_nodes)
        return list(values), st

    def score_extensions(self):
        try:
            ext = self._inner.score_extensions()
        except Exception as e:
            return _BrokenScoreExtensions(self._rec.error("NormalizeScore", exc=e))
        if ext is None:
            return None
        return _GuardedExtensions(ext, self._rec)

    # -- Reserve .. PostBind
    def reserve(self, state, pod, node_name):
        return self._status_call("Reserve", self._inner.reserve, (state, pod, node_name), pod, node_name)

    def unreserve(self, state, pod, node_name):
        try:
            self._inner.unreserve(state, pod, node_name)
        except Exception as e:
            self._rec.error("Unreserve", exc=e, node=node_name, pod=pod, emit=True)

    def permit(self, state, pod, node_name):
        """Permit returns (Status | None, timeout seconds)."""
        try:
            r = self._inner.permit(state, pod, node_name)
        except Exception as e:
            return self._rec.error("Permit", exc=e, node=node_name, pod=pod), None
        ok = (isinstance(r, (tuple, list)) and len(r) == 2 and _is_status(r[0])
              and (r[1] is None or (isinstance(r[1], (int, float)) and not isinstance(r[1], bool) and r[1] >= 0)))
        if not ok:
            return self._rec.error("Permit", invalid=f"Permit returned {_describe(r)}; expected a pair "
                                   f"(Status or None, timeout seconds or None)", node=node_name, pod=pod,
                                   fn=self._inner.permit), None
        return r[0], r[1]

    def pre_bind(self, state, pod, node_name):
        return self._status_call("PreBind", self._inner.pre_bind, (state, pod, node_name), pod, node_name)

    def bind(self, state, pod, node_name):
        return self._status_call("Bind", self._inner.bind, (state, pod, node_name), pod, node_name)

    def post_bind(self, state, pod, node_name):
        try:
            self._inner.post_bind(state, pod, node_name)
        except Exception as e:
            return self._rec.error("PostBind", exc=e, node=node_name, pod=pod)
        return None


_CLASSES: dict = {}
_INTERFACES = tuple(EXTENSION_POINTS.values()) + (EnqueueExtensions,)


def guard(inst, owner=None):
    """A :class:`GuardedPlugin` for ``inst`` that is an instance of the same extension-point
    interfaces (so profiles enable it exactly where they would enable the plugin)."""
    bases = tuple(c for c in _INTERFACES if isinstance(inst, c))
    cls = _CLASSES.get(bases)
    if cls is None:
        cls = type("GuardedPlugin", (GuardedPlugin,) + bases, {})
        _CLASSES[bases] = cls
    return cls(inst, owner)


def unguarded(plugin):
    """The plugin object behind a guard (or the plugin itself)."""
    return plugin.inner if isinstance(plugin, GuardedPlugin) else plugin
