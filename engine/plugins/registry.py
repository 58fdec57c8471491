"""The plugin registry (``pkg/scheduler/framework/plugins/registry.go``, runtime/registry.go).

Maps a plugin name to a factory ``(args: dict, handle) -> plugin``.  Registering a name twice
is refused, as upstream's ``Registry.Register`` does.  Out-of-tree plugins come in through
``engine.plugins.loader`` (``--plugins``, ``SCHEDULER_PLUGINS``, entry points) or register here
before a scenario is loaded (``engine.plugins.registry.register("MyPlugin", MyPlugin)``).

Every name remembers where it came from (``origin``): ``"in-tree"`` for the plugins that come
with the engine, else a description of the file or module.  Only out-of-tree plugins are run
behind the framework's guard (``framework.guard``).
"""
from __future__ import annotations

from ..errors import PluginValidationError

IN_TREE = "in-tree"
_REGISTRY: dict = {}
_ORIGIN: dict = {}


def register(name: str, factory, *, origin: str = "registered in code") -> None:
    if origin != IN_TREE:
        _ensure_in_tree()
    if not isinstance(name, str) or not name:
        raise PluginValidationError(f"a plugin name must be a non-empty string, got {name!r}")
    if name in _REGISTRY:
        raise PluginValidationError(f"a plugin named {name!r} already exists ({_ORIGIN.get(name, 'registered in code')})")
    if not callable(factory):
        raise PluginValidationError(f"the factory of plugin {name!r} is not callable")
    _REGISTRY[name] = factory
    _ORIGIN[name] = origin


def unregister(name: str) -> None:
    if name not in _REGISTRY:
        raise PluginValidationError(f"no plugin named {name!r} exists")
    del _REGISTRY[name]
    _ORIGIN.pop(name, None)


def origin(name: str):
    """Where a registered plugin came from (``"in-tree"`` or a file/module), or None."""
    _ensure_in_tree()
    return _ORIGIN.get(name)


def is_in_tree(name: str) -> bool:
    _ensure_in_tree()
    return _ORIGIN.get(name) == IN_TREE


def out_of_tree_names() -> list:
    _ensure_in_tree()
    return sorted(n for n in _REGISTRY if _ORIGIN.get(n) != IN_TREE)


def get(name: str):
    _ensure_in_tree()
    return _REGISTRY.get(name)


def names() -> list:
    _ensure_in_tree()
    return sorted(_REGISTRY)


_loaded = [False]


def _ensure_in_tree() -> None:
    """Import the in-tree plugins once (each module registers itself)."""
    if _loaded[0]:
        return
    _loaded[0] = True
    from .in_tree import new_in_tree_registry
    for name, factory in new_in_tree_registry():
        register(name, factory, origin=IN_TREE)
