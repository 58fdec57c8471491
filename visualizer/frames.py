"""The panels of a session as a page receives them (the WebSocket's frames): the live session
(``visualizer.runner``) drawn by ``visualizer.presenters``. Above both, so that the runner
needs nothing of the presenters."""
from __future__ import annotations

from visualizer import presenters
from engine.timeline import collector_paused
from visualizer.runner import open_live


def render_frame(session_id, log_filter=None, view=None):
    """(version, [(panel id, html)]) of the session as it is now.

    With the cyclic collector paused: a frame makes tens of thousands of short-lived objects
    (the state of 10,000 pods alone is 30,000), whose allocation would set off collections in
    the middle of the frame (a tenth of a second now and then at 5,000 nodes); nearly all are
    freed by reference counting before the collector runs again."""
    with open_live(session_id) as live, collector_paused():
        return live.version, presenters.render_panels(live, log_filter=log_filter, view=view)


def render_log(session_id, log_filter):
    with open_live(session_id) as live, collector_paused():
        return live.version, presenters.render_panels(live, names=("log",), log_filter=log_filter)


def render_own(session_id, log_filter, view):
    """The panels one page sees differently from the group's frame: its filtered log, and the
    panels its own view (queue pages, Filter matrix page, node overview search and selection)
    changes; all of one moment."""
    names = (("log",) if log_filter else ()) + (presenters.VIEW_PANELS if view else ())
    if not names:
        return None, []
    with open_live(session_id) as live, collector_paused():     # (see render_frame)
        return live.version, presenters.render_panels(live, names=names, log_filter=log_filter, view=view)
