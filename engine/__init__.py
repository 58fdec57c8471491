"""A deterministic, steppable re-implementation of kube-scheduler v1.28.

Python (with NumPy for the node table, engine/nodetable.py): no Django, no wall clock, no global
random.  Public API::

    from engine import Scenario, Engine, Trace
    sc = Scenario.from_path("fixtures/backoff.yaml")
    events = []
    trace = Trace(); trace.add_sink(events.append)
    eng = Engine(sc, trace)
    eng.run(until=10 * 1_000_000)        # virtual microseconds
    eng.state()                          # SPEC.md §3
"""
from .errors import ConfigError, EngineError, PluginValidationError, ScenarioError
from .quantity import US, parse_duration, parse_quantity
from .scenario import Scenario, load_scenario
from .scheduler import Engine
from .trace import Trace

__all__ = ["ConfigError", "Engine", "EngineError", "PluginValidationError", "Scenario",
           "ScenarioError", "Trace", "US", "load_scenario", "parse_duration", "parse_quantity"]
