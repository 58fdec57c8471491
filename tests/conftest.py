"""Suite-wide test ordering.

Browser tests (marked ``browser``) run last: sync Playwright leaves an event loop running in
the main thread, which breaks async tests and pytest-django's database handling after it
(see the shared ECOSYSTEM notes).
"""


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


# -- the example plugins the lessons need ----------------------------------------------------
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# A lesson may use an example plugin from docs/examples (the server loads them by default,
# scripts/run.sh); tests that run every lesson load them for their module and unload them after,
# so the rest of the suite sees the registry as it was.
LESSON_PLUGINS = {"Coscheduling": ROOT / "docs" / "examples" / "coscheduling.py"}


def load_lesson_plugins() -> list:
    """Load the lessons' example plugins that are not loaded yet; returns their sources."""
    from engine.plugins import loader, registry
    loaded = []
    for name, path in LESSON_PLUGINS.items():
        if registry.get(name) is None:
            loader.load(str(path))
            loaded.append(str(path))
    return loaded


def unload_lesson_plugins(sources) -> None:
    from engine.plugins import loader
    for s in sources:
        loader.unload(s)


@pytest.fixture(scope="module")
def lesson_plugins():
    sources = load_lesson_plugins()
    yield
    unload_lesson_plugins(sources)


@pytest.fixture
def lesson_plugins_unloaded_after():
    """For a test whose CLI run loads a lesson's example plugin (``--plugins``): the plugins it
    loaded are unloaded after, so later tests see the registry as it was."""
    from engine.plugins import loader, registry
    before = {name for name in LESSON_PLUGINS if registry.get(name) is not None}
    yield
    for name, path in LESSON_PLUGINS.items():
        if name not in before and registry.get(name) is not None:
            loader.unload(str(path))
