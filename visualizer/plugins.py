"""Out-of-tree plugins in the server: loaded once at start, from the server's own configuration.

``load_configured()`` (called by ``VisualizerConfig.ready``) loads every source named in the
environment variable ``SCHEDULER_PLUGINS`` (comma-separated ``.py`` paths or dotted module
names) and every installed package's entry point in the group
``kube_scheduler_visualizer.plugins`` through ``engine.plugins.loader``.  A source that fails to
load (it does not import, has no ``PLUGINS``, maps a name that already exists, ...) is reported
on stderr with the file and the reason, kept for the library page, and skipped: the server
starts anyway, with the plugins that did load.

Plugin code only ever comes from here: no view or socket accepts code, paths or module names.
"""
from __future__ import annotations

import inspect
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from engine.plugins import loader


@dataclass(frozen=True)
class LoadProblem:
    """A plugin source that did not load: what was named (``source``) and why."""
    source: str
    reason: str
    via: str          # "SCHEDULER_PLUGINS" or "entry point"

    def __str__(self) -> str:
        return f"{self.via}: {self.source}: {self.reason}"


_lock = threading.Lock()
_done = [False]
_problems: list = []


def load_configured(env_value: str | None = None, entry_points: bool = True, stream=None) -> list:
    """Load the plugins named in ``SCHEDULER_PLUGINS`` (or ``env_value``) and the entry points,
    once per process.  Returns the problems (also written to ``stream``, stderr by default)."""
    with _lock:
        if _done[0]:
            return list(_problems)
        _done[0] = True
        value = os.environ.get(loader.ENV_VAR, "") if env_value is None else env_value
        found = []
        for spec in loader.split_env(value):
            try:
                loader.load(spec)
            except loader.PluginLoadError as e:
                found.append(LoadProblem(e.source, e.reason, loader.ENV_VAR))
        if entry_points:
            try:
                _loaded, errors = loader.load_entry_points()
            except Exception as e:   # a broken package metadata must not stop the server
                errors = [loader.PluginLoadError(f"group {loader.ENTRY_POINT_GROUP}",
                                                 f"listing the entry points failed: {type(e).__name__}: {e}")]
            found.extend(LoadProblem(e.source, e.reason, "entry point") for e in errors)
        _problems[:] = found
        out = stream if stream is not None else sys.stderr
        for problem in found:
            print(f"kube-scheduler visualizer: plugin not loaded: {problem}", file=out, flush=True)
        return list(found)


def watch_failed_files(sender, **kwargs) -> None:
    """``autoreload_started`` receiver: the development server (``runserver``, which
    scripts/run.sh starts) restarts when a plugin file that failed to load is saved, as it does
    for the files that loaded (every imported module is watched).  So fixing a SyntaxError is
    enough to see the plugin load."""
    for problem in _problems:
        src = problem.source
        if problem.via == loader.ENV_VAR and (src.endswith(".py") or os.sep in src) and os.path.isfile(src):
            sender.extra_files.add(Path(os.path.abspath(src)))


def problems() -> list:
    """The sources that failed to load at start."""
    return list(_problems)


def loaded() -> list:
    """The out-of-tree plugins loaded, as plain dicts for templates: each with its extension
    points (asked of a plugin built once when its factory is a function: :func:`inspect_plugin`)
    and a one-line description (:func:`description`)."""
    out = []
    for p in loader.loaded_plugins():
        seen = inspect_plugin(p)
        module = sys.modules.get(p.module)
        out.append({"name": p.name, "extension_points": seen["points"], "build_error": seen["error"],
                    "summary": description(p.factory, seen["cls"], module),
                    "file": p.file or "", "module": p.module, "source": p.source, "digest": p.digest})
    return out


# ---------------------------------------------------------------------- what a plugin card says

_inspected: dict = {}       # (name, digest, id(factory)) -> {"points", "error", "cls"}
_inspect_lock = threading.Lock()
_handle: list = []


def _inspection_handle():
    """The ``handle`` a factory gets when built to be inspected: the framework of the default
    profile, with an empty cluster (what the framework passes to every factory:
    ``factory(args, framework)``, engine/framework/runtime.py ``Framework._instance``)."""
    if not _handle:
        from engine import Scenario, Trace
        from engine.framework.runtime import Framework
        scenario = Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "plugin-card"}, "objects": []})
        _handle.append(Framework(scenario.scheduler.profiles[0], trace=Trace(enabled=False)))
    return _handle[0]


def inspect_plugin(lp) -> dict:
    """The extension points of a loaded plugin: read from its class when the factory is one,
    else from a plugin built once (``factory({}, handle)``, as the framework builds it for a
    profile without pluginConfig args), guarded: a factory that raises gives
    ``error`` "could not be built to inspect: <error>". Cached per plugin version."""
    key = (lp.name, lp.digest, id(lp.factory))
    with _inspect_lock:
        hit = _inspected.get(key)
        if hit is not None:
            return hit
        points, error, cls = list(lp.extension_points), "", _declared_class(lp.factory)
        if cls is None:
            try:
                inst = lp.factory({}, _inspection_handle())
            except (Exception, SystemExit) as e:
                msg = f"{type(e).__name__}: {e}"
                error = f"could not be built to inspect: {msg if len(msg) <= 300 else msg[:300] + '…'}"
            else:
                cls = type(inst)
                points = loader.extension_points_of(cls)
                if not points:
                    error = f"the object it builds ({cls.__name__}) implements no extension point"
        hit = {"points": points, "error": error, "cls": cls}
        _inspected[key] = hit
        return hit


def _declared_class(factory):
    """The plugin class a factory declares: itself when it is a class, or the class its
    return annotation names. Else None."""
    if isinstance(factory, type):
        return factory
    try:
        ret = inspect.signature(factory).return_annotation
    except (TypeError, ValueError):
        return None
    return ret if isinstance(ret, type) and ret is not inspect.Signature.empty else None


MAX_DESCRIPTION = 300

_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "Fig.", "No.")


def strip_markup(text: str) -> str:
    """reStructuredText and Markdown inline markup removed: ``code`` and `code` → code,
    :class:`X` → X (:func:`~a.b.f` → f, :ref:`text <target>` → text), `text <url>`_ → text,
    [text](url) → text, **bold** and *emphasis* → their text, a closing ``::`` → ``:``."""
    t = re.sub(r":[\w.+-]+:`(~?)([^`<]*?)\s*(?:<[^>`]*>)?`",
               lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    t = re.sub(r"``(.+?)``", r"\1", t)
    t = re.sub(r"`([^`<]+?)\s*<[^>`]+>`__?", r"\1", t)
    t = re.sub(r"`([^`]+)`_{0,2}", r"\1", t)
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", t)
    t = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: m.group(1) or m.group(2), t)
    t = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", t)
    t = re.sub(r"::\s*$", ":", t)
    return re.sub(r"\s+", " ", t).strip()


def first_sentence(doc) -> str:
    """The first sentence of a docstring's first paragraph (its lines joined), markup removed;
    the whole paragraph when it has no sentence end. Never cut mid-sentence, except a sentence
    longer than MAX_DESCRIPTION characters, cut at a word and marked with "…"."""
    if not doc or not isinstance(doc, str):
        return ""
    para = []
    for line in inspect.cleandoc(doc).splitlines():
        if line.strip():
            para.append(line.strip())
        elif para:
            break
    text = strip_markup(" ".join(para))
    pos = 0
    while True:
        m = re.search(r"[.!?](?=\s|$)", text[pos:])
        if m is None:
            sentence = text
            break
        end = pos + m.end()
        if any(text[:end].endswith(a) for a in _ABBREVIATIONS) or re.search(r"\b[A-Z]\.$", text[:end]):
            pos = end
            continue
        sentence = text[:end]
        break
    if len(sentence) > MAX_DESCRIPTION:
        sentence = sentence[:MAX_DESCRIPTION].rsplit(" ", 1)[0] + "…"
    return sentence


def _own_doc(obj):
    if isinstance(obj, type):
        return obj.__dict__.get("__doc__")
    if inspect.isfunction(obj) and obj.__name__ != "<lambda>":
        return obj.__doc__
    return None


_ABOUT_THE_FACTORY = re.compile(r"^(the |this )?(plugin )?(factory|builds?|creates?|makes?|constructs?|returns?|"
                                r"instantiates?)\b", re.I)


def description(factory, cls, module) -> str:
    """A plugin card's one-line description: the first sentence of the plugin class's
    docstring, else the factory function's (unless it documents the factory call itself: "The
    factory: args is ...", "Builds ..."), else the module's, else the factory's anyway."""
    text = first_sentence(_own_doc(cls))
    if text:
        return text
    own = first_sentence(_own_doc(factory))
    if own and not _ABOUT_THE_FACTORY.match(own):
        return own
    return first_sentence(getattr(module, "__doc__", None)) or own


def reset_for_tests() -> None:
    """Forget what load_configured did (tests only; it does not unload plugins)."""
    with _lock:
        _done[0] = False
        _problems.clear()


def plugin_code(scenario) -> dict:
    """The out-of-tree plugin code ``scenario`` uses, as loaded now: {plugin name: {"source",
    "file", "digest"}} for every loaded plugin its profiles enable (what a session records, so
    that a reload can tell what changed: visualizer/changes.py)."""
    from engine import compare as cmp
    from engine.errors import EngineError
    used = set()
    try:
        for names in cmp.profile_plugins(scenario).values():
            used.update(names["all"])
    except EngineError:
        return {}
    out = {}
    for lp in loader.loaded_plugins():
        if lp.name in used:
            out[lp.name] = {"source": lp.source, "file": os.path.basename(lp.file or lp.source) if (lp.file or lp.source) else "",
                            "digest": lp.digest}
    return out
