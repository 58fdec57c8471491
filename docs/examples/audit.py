"""Audit: a PostBind plugin that adds its own event to the trace (see docs/writing-plugins.md).

    PYTHONPATH=. python docs/examples/audit.py

runs docs/examples/gates.yaml with Audit enabled at postBind and prints the events of the
binding.
"""
import json

from engine import Engine, Scenario, Trace
from engine.framework.interface import PostBindPlugin
from engine.plugins import registry


class Audit(PostBindPlugin):
    name = "Audit"

    def __init__(self, handle):
        self.handle = handle

    def post_bind(self, state, pod, node_name):
        if self.handle.trace.enabled:
            self.handle.trace.emit("AuditBound", pod=pod.key, node=node_name,
                                   profile=self.handle.profile_name, nowMicros=self.handle.now())


if __name__ == "__main__":
    registry.register("Audit", lambda args, handle: Audit(handle))
    base = Scenario.from_path("docs/examples/gates.yaml").raw
    scenario = Scenario.from_dict({**base, "scheduler": {"profiles": [
        {"plugins": {"postBind": {"enabled": [{"name": "Audit"}]}}}]}})
    events = []
    trace = Trace()
    trace.add_sink(events.append)
    Engine(scenario, trace).run()
    for e in events:
        if e["type"] in ("Bound", "AuditBound") or e.get("point") == "PostBind":
            print(json.dumps(e, separators=(",", ":")))
