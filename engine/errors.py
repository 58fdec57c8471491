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
    file (or "<input>").  ``str()`` gives one paragraph fit for a terminal.  The text is
    bounded: at most ``MAX_PROBLEMS`` problems (then a line counting the others), each cut to
    ``MAX_PROBLEM_CHARS`` characters.
    """

    MAX_PROBLEMS = 100          # problems kept (the rest are counted in a last line)
    MAX_PROBLEM_CHARS = 1000    # characters kept of each problem

    def __init__(self, problems, source: str = "<input>"):
        if isinstance(problems, str):
            problems = [problems]
        problems = list(problems)
        kept = [p if len(p) <= self.MAX_PROBLEM_CHARS else
                f"{p[:self.MAX_PROBLEM_CHARS]}… ({len(p) - self.MAX_PROBLEM_CHARS} more characters)"
                for p in problems[:self.MAX_PROBLEMS]]
        if len(problems) > self.MAX_PROBLEMS:
            kept.append(f"… and {len(problems) - self.MAX_PROBLEMS} more problems")
        self.problems = kept
        self.source = source if len(source) <= 300 else source[:300] + "…"
        super().__init__(self.describe())

    def describe(self) -> str:
        n = len(self.problems)
        head = f"{self.source}: {n} problem{'s' if n != 1 else ''}"
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)


class ConfigError(ScenarioError):
    """The scheduler configuration (profiles, plugins, pluginConfig) is invalid."""


class PluginValidationError(EngineError, TypeError):
    """A plugin was enabled at an extension point it does not implement, or is malformed."""
