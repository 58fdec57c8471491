"""The public API of ``engine`` (its ``__all__``) is exactly the documented one."""
import engine

DOCUMENTED = {
    # the classes of engine/__init__'s example
    "Scenario", "Engine", "Trace",
    # the error hierarchy drawn in engine/errors.py
    "EngineError", "ScenarioError", "ConfigError", "PluginValidationError",
    # loading and units
    "load_scenario", "parse_quantity", "parse_duration", "US",
}


def test_all_is_exactly_the_documented_names():
    assert sorted(engine.__all__) == sorted(DOCUMENTED)
    assert len(engine.__all__) == len(set(engine.__all__)), "duplicates in __all__"


def test_every_public_name_resolves():
    for name in engine.__all__:
        assert hasattr(engine, name), name


def test_star_import_gives_exactly_all():
    ns = {}
    exec("from engine import *", ns)
    assert set(ns) - {"__builtins__"} == DOCUMENTED


def test_error_hierarchy():
    assert issubclass(engine.ScenarioError, engine.EngineError)
    assert issubclass(engine.ScenarioError, ValueError)
    assert issubclass(engine.ConfigError, engine.ScenarioError)
    assert issubclass(engine.PluginValidationError, engine.EngineError)
    assert issubclass(engine.PluginValidationError, TypeError)
    assert issubclass(engine.EngineError, Exception)


def test_us_is_microseconds():
    assert engine.US == 1_000_000
    assert engine.parse_duration("1s") == engine.US


def test_the_docstring_example_runs():
    sc = engine.Scenario.from_text(
        "kind: Scenario\nmetadata: {name: example}\nobjects:\n"
        "  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '1', pods: '9'}}}\n"
        "  - {apiVersion: v1, kind: Pod, metadata: {name: p}}\n")
    events = []
    trace = engine.Trace()
    trace.add_sink(events.append)
    eng = engine.Engine(sc, trace)
    eng.run(until=10 * 1_000_000)
    state = eng.state()
    assert state["time"] == 10.0
    assert state["pods"]["default/p"]["phase"] == "Running"
    assert events and events[0]["seq"] == 0
