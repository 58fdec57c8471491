"""Loading out-of-tree plugins: one mechanism, three doors.

A plugin module declares its factories in a module-level mapping::

    PLUGINS = {"GPUOnly": new}        # name -> factory (args: dict, handle) -> plugin

and is loaded by

- the CLI: ``python -m engine run|validate SCENARIO --plugins PATH_OR_MODULE`` (repeatable);
- the web server: the environment variable ``SCHEDULER_PLUGINS`` (the same values, separated by
  commas), read at start;
- installed packages: an entry point in the group :data:`ENTRY_POINT_GROUP` whose object is a
  plugin module (or a ``PLUGINS``-style mapping).

A value ending in ``.py`` (or naming an existing file) is a file path; anything else is a dotted
module name imported from ``sys.path``.  Every problem (a module that fails to import, has no
``PLUGINS``, maps a name that already exists, a factory that is not callable) raises
:class:`PluginLoadError` naming the file or module and the reason.  Plugin code is only ever
loaded from the machine's own configuration; nothing here accepts code over a network.

Each loaded module is remembered with a digest of its source, so a run can say which plugin
code it ran with, and :func:`reload` loads changed files again (a plugin author's edit loop).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import EngineError, PluginValidationError
from ..framework.interface import EXTENSION_POINTS, EnqueueExtensions
from . import registry

ENTRY_POINT_GROUP = "kube_scheduler_visualizer.plugins"
ENV_VAR = "SCHEDULER_PLUGINS"

_POINT_LABEL = {"preEnqueue": "PreEnqueue", "queueSort": "QueueSort", "preFilter": "PreFilter",
                "filter": "Filter", "postFilter": "PostFilter", "preScore": "PreScore",
                "score": "Score", "reserve": "Reserve", "permit": "Permit", "preBind": "PreBind",
                "bind": "Bind", "postBind": "PostBind"}


class PluginLoadError(EngineError):
    """A plugin module could not be loaded.  ``source`` names the file or module."""

    def __init__(self, source: str, reason: str):
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


@dataclass
class LoadedPlugin:
    """One out-of-tree plugin name and where it came from."""
    name: str
    factory: object
    source: str                 # what was asked for: a path, a module name, an entry point
    module: str                 # the module's name
    file: str | None            # the module's file, when it has one
    digest: str                 # sha256 of the module's source (first 16 hex digits)
    extension_points: list = field(default_factory=list)   # upstream labels, e.g. ["PreFilter", "Filter"]
    summary: str = ""           # the first line of the factory's (or the module's) docstring

    def to_json(self) -> dict:
        return {"name": self.name, "source": self.source, "module": self.module, "file": self.file,
                "digest": self.digest, "extensionPoints": list(self.extension_points),
                "summary": self.summary}


@dataclass
class LoadedModule:
    source: str
    module: object
    file: str | None
    digest: str
    names: list
    # the module's source text as loaded (what a reload's diff compares against; None when the
    # file is larger than MAX_SOURCE_TEXT, not UTF-8 text, or changed while it was loaded)
    text: str | None = None


MAX_SOURCE_TEXT = 512 * 1024    # bytes of a module's source kept for "what changed"


_MODULES: dict = {}            # source -> LoadedModule
_PLUGINS: dict = {}            # name -> LoadedPlugin


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or os.path.isfile(spec)


def _digest_file(path: str | None) -> str:
    if not path or not os.path.isfile(path):
        return ""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def _source_text(path: str | None, digest: str) -> str | None:
    """The text of ``path`` if it is still the version whose digest is ``digest``."""
    if not path or not digest or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SOURCE_TEXT + 1)
    except OSError:
        return None
    if len(data) > MAX_SOURCE_TEXT or hashlib.sha256(data).hexdigest()[:16] != digest:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _first_line(doc) -> str:
    if not doc:
        return ""
    for line in inspect.cleandoc(doc).splitlines():
        if line.strip():
            return line.strip()
    return ""


def extension_points_of(factory) -> list:
    """The extension points a factory's plugins implement, when the factory tells: a class (the
    factory is the plugin class) or a function annotated to return one.  Else []."""
    cls = factory if isinstance(factory, type) else None
    if cls is None:
        try:
            ret = inspect.signature(factory).return_annotation
        except (TypeError, ValueError):
            ret = None
        if isinstance(ret, type):
            cls = ret
    if cls is None:
        return []
    out = [_POINT_LABEL[p] for p, iface in EXTENSION_POINTS.items() if issubclass(cls, iface)]
    if issubclass(cls, EnqueueExtensions):
        out.append("EnqueueExtensions")
    return out


def _summary(factory, module) -> str:
    doc = factory.__doc__ if isinstance(factory, type) or inspect.isfunction(factory) else None
    if isinstance(factory, type) and doc == type.__doc__:
        doc = None
    return _first_line(doc) or _first_line(getattr(module, "__doc__", None))


def _frames_of(exc) -> str:
    from ..framework.guard import plugin_frames
    frames = plugin_frames(exc.__traceback__)
    return f" (at {frames[-1].split(' in ')[0]})" if frames else ""


def _import(spec: str):
    """Import a file path or a dotted module name as a fresh module object."""
    if _is_path(spec):
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise PluginLoadError(spec, "no such file")
        stem = os.path.splitext(os.path.basename(path))[0]
        digest = _digest_file(path)
        mod_name = f"_scheduler_plugin_{''.join(c if c.isalnum() else '_' for c in stem)}_{digest[:8]}"
        mspec = importlib.util.spec_from_file_location(mod_name, path)
        if mspec is None or mspec.loader is None:
            raise PluginLoadError(spec, "cannot be imported as a Python module")
        module = importlib.util.module_from_spec(mspec)
        sys.modules[mod_name] = module
        try:
            mspec.loader.exec_module(module)
        except SyntaxError as e:
            sys.modules.pop(mod_name, None)
            raise PluginLoadError(spec, f"SyntaxError: {e.msg} (line {e.lineno})") from None
        except Exception as e:
            sys.modules.pop(mod_name, None)
            raise PluginLoadError(spec, f"importing it raised {type(e).__name__}: {e}{_frames_of(e)}") from None
        return module, path, digest
    if not all(part.isidentifier() for part in spec.split(".")):
        raise PluginLoadError(spec, "is neither a .py file nor a dotted module name")
    try:
        if spec in sys.modules:
            module = importlib.reload(sys.modules[spec])
        else:
            module = importlib.import_module(spec)
    except ModuleNotFoundError as e:
        raise PluginLoadError(spec, f"no module named {e.name!r} (is it installed, or on PYTHONPATH?)") from None
    except SyntaxError as e:
        raise PluginLoadError(spec, f"SyntaxError: {e.msg} ({e.filename}, line {e.lineno})") from None
    except Exception as e:
        raise PluginLoadError(spec, f"importing it raised {type(e).__name__}: {e}{_frames_of(e)}") from None
    path = getattr(module, "__file__", None)
    return module, path, _digest_file(path)


def _plugins_mapping(source: str, obj):
    plugins = getattr(obj, "PLUGINS", None) if not isinstance(obj, Mapping) else obj
    if plugins is None:
        raise PluginLoadError(source, "defines no PLUGINS mapping (PLUGINS = {\"Name\": factory})")
    if not isinstance(plugins, Mapping):
        raise PluginLoadError(source, f"PLUGINS must be a mapping of name to factory, not {type(plugins).__name__}")
    if not plugins:
        raise PluginLoadError(source, "PLUGINS is empty")
    for name, factory in plugins.items():
        if not isinstance(name, str) or not name:
            raise PluginLoadError(source, f"PLUGINS: {name!r} is not a plugin name (a non-empty string)")
        if not callable(factory):
            raise PluginLoadError(source, f"PLUGINS[{name!r}]: the factory is not callable "
                                          f"(a class or function taking (args, handle))")
    return plugins


def _register_module(source: str, module, path, digest, plugins) -> list:
    names = list(plugins)
    for name in names:
        if registry.get(name) is not None:
            where = registry.origin(name)
            what = "an in-tree plugin" if where == registry.IN_TREE else f"already loaded from {where}"
            raise PluginLoadError(source, f"PLUGINS[{name!r}]: a plugin named {name!r} already exists ({what})")
    loaded = []
    for name in names:
        factory = plugins[name]
        try:
            registry.register(name, factory, origin=source)
        except PluginValidationError as e:
            for n in [lp.name for lp in loaded]:
                registry.unregister(n)
                _PLUGINS.pop(n, None)
            raise PluginLoadError(source, str(e)) from None
        lp = LoadedPlugin(name=name, factory=factory, source=source,
                          module=getattr(module, "__name__", str(module)), file=path, digest=digest,
                          extension_points=extension_points_of(factory), summary=_summary(factory, module))
        _PLUGINS[name] = lp
        loaded.append(lp)
    _MODULES[source] = LoadedModule(source, module, path, digest, names, _source_text(path, digest))
    remember_running(_MODULES[source])
    return loaded


def remember_running(m: LoadedModule) -> None:
    """Tracebacks of a plugin show the lines of the code that runs (the module's text as it was
    loaded), not of a file edited since (framework.guard.source_line)."""
    from ..framework.guard import forget_source, remember_source
    if m.file and m.text is not None:
        remember_source(m.file, m.text)
    elif m.file:
        forget_source(m.file)


def load(spec: str) -> list:
    """Load one plugin module (a ``.py`` path or a dotted module name) and register its
    ``PLUGINS``.  Loading the same source twice is a no-op.  Returns its LoadedPlugins."""
    spec = spec.strip()
    if not spec:
        raise PluginLoadError("(empty)", "an empty plugin path or module name")
    registry.names()                     # the in-tree plugins first: their names are taken
    if spec in _MODULES:
        return [_PLUGINS[n] for n in _MODULES[spec].names]
    module, path, digest = _import(spec)
    return _register_module(spec, module, path, digest, _plugins_mapping(spec, module))


def load_all(specs) -> list:
    """Load several sources in order; the first failure raises."""
    out = []
    for spec in specs:
        out.extend(load(spec))
    return out


def split_env(value: str | None) -> list:
    """The sources listed in ``SCHEDULER_PLUGINS`` (comma-separated)."""
    if not value:
        return []
    return [p.strip() for p in value.split(",") if p.strip()]


def load_entry_points(group: str = ENTRY_POINT_GROUP) -> tuple:
    """Load the plugin modules installed packages advertise in ``group``.

    Returns (loaded plugins, [PluginLoadError]): one broken package does not stop the others."""
    from importlib.metadata import entry_points
    loaded, errors = [], []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        source = f"entry point {ep.name} = {ep.value}"
        if source in _MODULES:
            loaded.extend(_PLUGINS[n] for n in _MODULES[source].names)
            continue
        try:
            try:
                obj = ep.load()
            except Exception as e:
                raise PluginLoadError(source, f"loading it raised {type(e).__name__}: {e}{_frames_of(e)}") from None
            module = obj if not isinstance(obj, Mapping) else sys.modules.get(ep.module)
            path = getattr(module, "__file__", None)
            loaded.extend(_register_module(source, module, path, _digest_file(path), _plugins_mapping(source, obj)))
        except PluginLoadError as e:
            errors.append(e)
    return loaded, errors


def loaded_plugins() -> list:
    """Every out-of-tree plugin loaded through this module, by name."""
    return [_PLUGINS[n] for n in sorted(_PLUGINS)]


def loaded_modules() -> list:
    return list(_MODULES.values())


def digests() -> dict:
    """source -> digest of every loaded module: what plugin code a run used."""
    return {m.source: m.digest for m in _MODULES.values()}


def changed_sources() -> list:
    """Loaded file sources whose file changed since it was loaded."""
    return [m.source for m in _MODULES.values() if m.file and _digest_file(m.file) != m.digest]


def unload(source: str) -> None:
    """Forget a loaded module and unregister its plugins."""
    m = _MODULES.pop(source, None)
    if m is None:
        return
    if m.file and not any(o.file == m.file for o in _MODULES.values()):
        from ..framework.guard import forget_source
        forget_source(m.file)
    for n in m.names:
        if registry.get(n) is not None and registry.origin(n) == source:
            registry.unregister(n)
        _PLUGINS.pop(n, None)


def reload(sources=None) -> list:
    """Load ``sources`` (default: every loaded module) again from their current code.

    All or nothing: if a new version fails to load, the old one stays registered and the
    PluginLoadError is raised.  Returns the LoadedPlugins of the reloaded modules."""
    sources = list(_MODULES) if sources is None else list(sources)
    saved = {s: _MODULES[s] for s in sources if s in _MODULES}
    saved_plugins = {n: _PLUGINS[n] for m in saved.values() for n in m.names if n in _PLUGINS}
    for s in saved:
        unload(s)
    out = []
    try:
        for s in sources:
            if s.startswith("entry point "):
                raise PluginLoadError(s, "plugins from installed packages are reloaded by restarting the server")
            out.extend(load(s))
    except PluginLoadError:
        for s in sources:
            unload(s)
        for s, m in saved.items():
            _MODULES[s] = m
            remember_running(m)
            for n in m.names:
                lp = saved_plugins[n]
                registry.register(n, lp.factory, origin=s)
                _PLUGINS[n] = lp
        raise
    return out
