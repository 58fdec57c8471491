"""The plugin registry (``pkg/scheduler/framework/plugins/registry.go``, runtime/registry.go).

Maps a plugin name to a factory ``(args: dict, handle) -> plugin``.  Registering a name twice
is refused, as upstream's ``Registry.Register`` does.  Out-of-tree plugins register here
before a scenario is loaded (``engine.plugins.registry.register("MyPlugin", MyPlugin)``).
"""
from __future__ import annotations

from ..errors import PluginValidationError

_REGISTRY: dict = {}


def register(name: str, factory) -> None:
    if name in _REGISTRY:
        raise PluginValidationError(f"a plugin named {name!r} already exists")
    if not callable(factory):
        raise PluginValidationError(f"the factory of plugin {name!r} is not callable")
    _REGISTRY[name] = factory


def unregister(name: str) -> None:
    if name not in _REGISTRY:
        raise PluginValidationError(f"no plugin named {name!r} exists")
    del _REGISTRY[name]


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
    from . import in_tree  # noqa: F401
