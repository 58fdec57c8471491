"""The trace: every queue transition, plugin result, preemption step and binding, in order.

Each event is a dict with ``seq``, ``time`` (seconds), ``type`` and the fields of SPEC.md §5.
Sinks are attached from outside (a list, a file writer, the web runner); with no sink and
``enabled`` False the engine skips building events altogether, which is what the headless
benchmark's "trace off" mode measures.
"""
from __future__ import annotations

import json
from .quantity import US


class Trace:
    __slots__ = ("enabled", "seq", "_clock", "_sinks", "cycle_context")

    def __init__(self, clock=None, enabled: bool = True):
        self.enabled = enabled
        self.seq = 0
        self._clock = clock or (lambda: 0)
        self._sinks: list = []

    def add_sink(self, sink) -> None:
        """``sink(event_dict)`` is called for every event, in order."""
        self._sinks.append(sink)
        self.enabled = True

    def emit(self, type_: str, **fields) -> None:
        if not self.enabled:
            return
        event = {"seq": self.seq, "time": self._clock() / US, "type": type_}
        event.update(fields)
        self.seq += 1
        for s in self._sinks:
            s(event)


class JsonLinesWriter:
    """A sink writing one compact JSON object per line (keys in the order the event has them)."""

    def __init__(self, fh):
        self._fh = fh

    def __call__(self, event: dict) -> None:
        self._fh.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False))
        self._fh.write("\n")
