"""Fixtures for the visualizer's tests: our own small scenarios, and a clean runner."""
from pathlib import Path

import pytest

from visualizer import runner

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


@pytest.fixture
def scenario_text():
    """scenario_text("too-big.yaml"): the text of one of our test scenarios."""
    return lambda name: (SCENARIOS / name).read_text(encoding="utf-8")


@pytest.fixture
def scenarios_dir(settings):
    """The library reads tests/visualizer/scenarios/ instead of fixtures/."""
    settings.SCENARIO_FIXTURES_DIR = SCENARIOS
    return SCENARIOS


@pytest.fixture(autouse=True)
def fresh_runner():
    """No live engine leaks from one test to the next (as after a server restart)."""
    runner.reset()
    yield
    runner.reset()
