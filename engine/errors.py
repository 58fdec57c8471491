"""Errors the engine raises.

Hierarchy (each subclasses the nearest built-in, so callers can catch broadly)::

    EngineError(Exception)
    ├── ScenarioError(EngineError, ValueError)   a scenario file or action is invalid;
    │                                            .problems lists every "place: message"
    ├── ConfigError(ScenarioError)               the scheduler configuration is invalid
    └── PluginValidationError(EngineError, TypeError)
                                                 a plugin does not implement the extension
                                                 point it was enabled at

Expected scheduling outcomes (a pod that does not fit) are never exceptions: they are
``framework.Status`` values, as upstream's are.
"""
from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class ScenarioError(EngineError, ValueError):
    """A scenario (or an injected action) is invalid.

    ``problems`` holds every problem found, each ``"<place>: <message>"``; ``source`` names the
    file (or "<input>").  ``str()`` gives one paragraph fit for a terminal.
    """

    def __init__(self, problems, source: str = "<input>"):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        self.source = source
        super().__init__(self.describe())

    def describe(self) -> str:
        n = len(self.problems)
        head = f"{self.source}: {n} problem{'s' if n != 1 else ''}"
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)


class ConfigError(ScenarioError):
    """The scheduler configuration (profiles, plugins, pluginConfig) is invalid."""


class PluginValidationError(EngineError, TypeError):
    """A plugin was enabled at an extension point it does not implement, or is malformed."""
