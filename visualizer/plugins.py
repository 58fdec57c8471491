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

import os
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
    """The out-of-tree plugins loaded, as plain dicts for templates."""
    out = []
    for p in loader.loaded_plugins():
        out.append({"name": p.name, "extension_points": list(p.extension_points), "summary": p.summary,
                    "file": p.file or "", "module": p.module, "source": p.source, "digest": p.digest})
    return out


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
