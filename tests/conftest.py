"""Suite-wide test ordering.

Browser tests (marked ``browser``) run last: sync Playwright leaves an event loop running in
the main thread, which breaks async tests and pytest-django's database handling after it
(see the shared ECOSYSTEM notes).
"""


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
