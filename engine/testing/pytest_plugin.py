"""The ``scheduler_sim`` pytest fixture (a pytest plugin).

Installed with the project (``pip install -e .``), pytest finds it through the ``pytest11``
entry point; otherwise add ``pytest_plugins = ["engine.testing.pytest_plugin"]`` to your
``conftest.py``.  A test then reads::

    def test_my_filter(scheduler_sim):
        scheduler_sim.load("my_plugin.py")
        result = scheduler_sim.run(scheduler_sim.scenario(
            nodes=[scheduler_sim.make_node("n1").capacity(cpu="4", memory="8Gi")],
            pods=[scheduler_sim.make_pod("p").req(cpu="1")],
            plugins={"filter": ["MyFilter"]}))
        assert result.node_of("p") == "n1"

Plugins a test loads are unloaded when it ends, so tests do not see each other's plugins.
Nothing from the engine is imported until the fixture is used.
"""
from __future__ import annotations

import pytest


class SchedulerSim:
    """What the ``scheduler_sim`` fixture gives a test: ``load``, ``scenario``, ``run`` and the
    builders ``make_pod`` / ``make_node``."""

    def __init__(self, base_dir):
        from . import make_node, make_pod, scenario
        self.make_pod = make_pod
        self.make_node = make_node
        self.scenario = scenario
        self._base_dir = base_dir
        self._loaded: list = []

    def load(self, source) -> list:
        """Load a plugin module (a ``.py`` path, relative to the test file's folder if it is not
        found from the working directory, or a dotted module name); returns its plugins."""
        import os

        from ..plugins import loader
        s = str(source)
        if loader._is_path(s) and not os.path.isabs(s) and not os.path.exists(s):
            candidate = os.path.join(str(self._base_dir), s)
            if os.path.exists(candidate):
                s = candidate
        already = s in {m.source for m in loader.loaded_modules()}
        plugins = loader.load(s)
        if not already:
            self._loaded.append(s)
        return plugins

    def run(self, scenario_or_path, *, plugins=(), until=None):
        """``engine.testing.run`` with ``plugins`` loaded through :meth:`load` first."""
        from . import run
        for p in plugins:
            self.load(p)
        return run(scenario_or_path, until=until)

    def close(self) -> None:
        from ..plugins import loader
        for s in reversed(self._loaded):
            loader.unload(s)
        self._loaded.clear()


@pytest.fixture
def scheduler_sim(request):
    """Load plugins, build scenarios and run them through the engine (engine.testing)."""
    sim = SchedulerSim(request.path.parent)
    try:
        yield sim
    finally:
        sim.close()
