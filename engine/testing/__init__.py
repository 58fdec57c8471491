"""A small public API for testing scheduler plugins (and scenarios) with pytest.

Build a cluster with the builders (upstream's ``st.MakePod()`` style), run it through the real
engine with your plugin loaded, and query the outcome::

    from engine.testing import make_node, make_pod, run, scenario

    def test_gpu_pods_land_on_gpu_nodes():
        result = run(scenario(
            nodes=[make_node("cpu").capacity(cpu="8", memory="16Gi"),
                   make_node("gpu").capacity({"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"})
                   .label("accelerator", "a100")],
            pods=[make_pod("train").req({"cpu": "1", "nvidia.com/gpu": "1"})],
            plugins={"multiPoint": ["GPUOnly"]}),
            plugins=["gpu_only.py"])
        assert result.node_of("train") == "gpu"
        assert result.filter_code("train", "cpu", "GPUOnly") == "UnschedulableAndUnresolvable"

With pytest, the ``scheduler_sim`` fixture (``engine.testing.pytest_plugin``, registered as a
pytest plugin when the project is installed) does the same and unloads the plugins a test
loaded when the test ends.  docs/writing-plugins.md has the whole API.
"""
from __future__ import annotations

import copy
from pathlib import Path

from ..quantity import US, parse_duration
from .builders import NodeBuilder, PodBuilder, make_node, make_pod

__all__ = ["NodeBuilder", "PodBuilder", "RunResult", "make_node", "make_pod", "run", "scenario"]


def _manifest(obj) -> dict:
    if isinstance(obj, (PodBuilder, NodeBuilder)):
        return obj.manifest()
    if isinstance(obj, dict):
        return copy.deepcopy(obj)
    raise TypeError(f"expected a builder or a manifest dict, got {type(obj).__name__}")


def _plugin_set(value):
    """["A", {"name": "B", "weight": 2}] -> {"enabled": [{"name": "A"}, {"name": "B", "weight": 2}]}"""
    if isinstance(value, dict):
        return copy.deepcopy(value)
    out = []
    for v in value:
        out.append({"name": v} if isinstance(v, str) else dict(v))
    return {"enabled": out}


def scenario(nodes=(), pods=(), *, objects=(), plugins=None, plugin_config=None, profile=None,
             scheduler=None, actions=(), simulation=None, name="test") -> dict:
    """A scenario as a dict (docs/scenario-format.md).

    ``nodes`` and ``pods`` are builders or manifests; ``objects`` any other manifests
    (PriorityClasses, PDBs).  ``plugins`` is the default profile's ``plugins`` section, each
    extension point given as a list of names (or ``{"name", "weight"}``) or as a full
    ``{"enabled": [...], "disabled": [...]}``; ``plugin_config`` maps a plugin name to its args.
    ``profile`` (a dict) or ``scheduler`` (the whole section) replace those when given.
    ``actions`` are timeline actions (``{"at": "1s", "create": manifest}``; builders allowed as
    the object of create/update).
    """
    d = {"kind": "Scenario", "metadata": {"name": name}}
    if simulation:
        d["simulation"] = copy.deepcopy(simulation)
    if scheduler is not None:
        d["scheduler"] = copy.deepcopy(scheduler)
    elif profile is not None or plugins is not None or plugin_config is not None:
        prof = copy.deepcopy(profile) if profile is not None else {}
        if plugins is not None:
            prof["plugins"] = {point: _plugin_set(v) for point, v in plugins.items()}
        if plugin_config:
            prof["pluginConfig"] = [{"name": n, "args": copy.deepcopy(a)} for n, a in plugin_config.items()]
        d["scheduler"] = {"profiles": [prof]}
    d["objects"] = [_manifest(o) for o in nodes] + [_manifest(o) for o in objects] + [_manifest(o) for o in pods]
    acts = []
    for a in actions:
        a = dict(a)
        for verb in ("create", "update"):
            if verb in a:
                a[verb] = _manifest(a[verb])
        acts.append(a)
    if acts:
        d["actions"] = acts
    return d


def _key(pod: str) -> str:
    return pod if "/" in pod else f"default/{pod}"


class RunResult:
    """The outcome of :func:`run`: the final ``state`` (SPEC.md section 3), every ``trace``
    event (section 5), the ``engine`` itself and the failed out-of-tree plugin calls."""

    def __init__(self, engine, trace: list):
        self.engine = engine
        self.trace = trace
        self.state = engine.state()
        self.plugin_errors = engine.plugin_errors()

    # -- the state
    def pod(self, pod: str) -> dict:
        """A pod's entry of the state (``pod`` is ``name`` in default or ``namespace/name``)."""
        k = _key(pod)
        if k in self.state["pods"]:
            return self.state["pods"][k]
        if k in self.state.get("deletedPods", {}):
            return self.state["deletedPods"][k]
        raise KeyError(f"no pod {k} in the state (pods: {', '.join(sorted(self.state['pods'])) or 'none'})")

    def node_of(self, pod: str):
        """The node a pod is bound (or binding) to, or None."""
        return self.pod(pod).get("nodeName")

    def phase(self, pod: str) -> str:
        return self.pod(pod)["phase"]

    def queue_of(self, pod: str):
        return self.pod(pod).get("queue")

    # -- the trace
    def events(self, type: str | None = None, **match) -> list:
        """Trace events of a ``type`` whose fields equal ``match`` (``pod`` may be a bare name)."""
        if "pod" in match and match["pod"] is not None:
            match["pod"] = _key(match["pod"])
        return [e for e in self.trace
                if (type is None or e["type"] == type) and all(e.get(k) == v for k, v in match.items())]

    def plugin_results(self, plugin: str | None = None, point: str | None = None, pod: str | None = None,
                       node: str | None = None, dry_run: bool = False) -> list:
        """``PluginResult`` events (dry-run calls of preemption left out unless ``dry_run``)."""
        match = {"dryRun": dry_run}
        for k, v in (("plugin", plugin), ("point", point), ("pod", pod), ("node", node)):
            if v is not None:
                match[k] = v
        return self.events("PluginResult", **match)

    def filter_code(self, pod: str, node: str, plugin: str, cycle: int | None = None):
        """The code of ``plugin``'s Filter on ``node`` in the pod's last cycle (or ``cycle``)
        that ran it; None if it never ran there."""
        rs = self.plugin_results(plugin, "Filter", pod, node)
        if cycle is not None:
            rs = [r for r in rs if r["cycle"] == cycle]
        return rs[-1]["code"] if rs else None

    def scores(self, pod: str, plugin: str, cycle: int | None = None) -> dict:
        """node -> raw score of ``plugin`` in the pod's last scored cycle (or ``cycle``)."""
        rs = self.plugin_results(plugin, "Score", pod)
        if not rs:
            return {}
        c = cycle if cycle is not None else rs[-1]["cycle"]
        return {r["node"]: r["score"] for r in rs if r["cycle"] == c}

    def cycles(self, pod: str) -> list:
        """The pod's ``CycleEnd`` events, in order (result, node, message, ...)."""
        return self.events("CycleEnd", pod=pod)


def _load_plugins(plugins) -> None:
    from ..plugins.loader import load
    for p in plugins:
        load(str(p))


def run(scenario_or_path, *, plugins=(), until=None, extender_transport=None) -> RunResult:
    """Run a scenario (a dict, a YAML text, a path or a ``Scenario``) to the end, or ``until``
    (a duration such as ``"10s"`` or seconds), with the out-of-tree plugin modules in
    ``plugins`` loaded first (``.py`` paths or module names; loading one twice is a no-op).
    ``extender_transport``: how scheduler extenders are called (engine/extender.py, e.g.
    ``HTTPTransport(clock=time.perf_counter)``; without one their calls fail).
    Raises ``ScenarioError`` for an invalid scenario and ``PluginLoadError`` for a broken
    plugin module, with the messages the CLI prints."""
    from .. import Engine, Scenario, Trace
    _load_plugins(plugins)
    if isinstance(scenario_or_path, Scenario):
        sc = scenario_or_path
    elif isinstance(scenario_or_path, dict):
        sc = Scenario.from_dict(scenario_or_path, "<test scenario>")
    elif isinstance(scenario_or_path, Path) or (isinstance(scenario_or_path, str) and "\n" not in scenario_or_path):
        sc = Scenario.from_path(scenario_or_path)
    else:
        sc = Scenario.from_text(scenario_or_path, "<test scenario>")
    events: list = []
    trace = Trace()
    trace.add_sink(events.append)
    eng = Engine(sc, trace, extender_transport)
    if until is not None and not isinstance(until, int):
        until = parse_duration(str(until))
    elif isinstance(until, int):
        until = until * US
    eng.run(until)
    return RunResult(eng, events)
