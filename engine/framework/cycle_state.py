"""framework.CycleState (``pkg/scheduler/framework/cycle_state.go``): per-cycle plugin data.

Values stored must offer ``clone()`` (StateData.Clone) so preemption can try nodes on a copy.

``recorder`` (not upstream's) is None, or the CycleState inspector's record of this cycle
(engine/framework/recorder.py), told of every write and delete. A clone has none: writes made
on a copy (preemption's dry run) are not recorded.
"""
from __future__ import annotations


class CycleState:
    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "record_plugin_metrics",
                 "pods_to_activate", "recorder")

    def __init__(self, recorder=None):
        self._data: dict = {}
        self.recorder = recorder
        # PodsToActivate: plugins put pods here (key -> Pod) to have them moved to activeQ at
        # the end of a successful scheduling cycle and of the binding cycle.
        self.pods_to_activate: dict = {}
        self.skip_filter_plugins: set = set()
        self.skip_score_plugins: set = set()
        self.record_plugin_metrics = False

    def read(self, key: str):
        """Returns the stored value; raises KeyError if absent (upstream ErrNotFound)."""
        return self._data[key]

    def get(self, key: str, default=None):
        return self._data.get(key, default)

    def write(self, key: str, value) -> None:
        self._data[key] = value
        if self.recorder is not None:
            self.recorder.write(key, value)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)
        if self.recorder is not None:
            self.recorder.delete(key)

    def clone(self) -> "CycleState":
        c = CycleState()
        for k, v in self._data.items():
            c._data[k] = v.clone() if hasattr(v, "clone") else v
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.record_plugin_metrics = self.record_plugin_metrics
        c.pods_to_activate = self.pods_to_activate
        return c
