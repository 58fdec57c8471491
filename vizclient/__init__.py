"""A Python client for the visualizer's REST API (``/api/``) and JSON stream (``/ws/json/``).

    from vizclient import Client
    client = Client("http://127.0.0.1:8000")
    session = client.create_session(fixture="11-preemption-reprieve.yaml")
    session.step_cycle()
    with session.stream() as stream:
        ...

HTTP uses the standard library only; the stream needs the ``websockets`` package (imported
when ``Stream`` is first used). See docs/api.md, "Python client".
"""
from vizclient.errors import ApiError, ClientError, ServerUnreachable, StreamError
from vizclient.http import DEFAULT_URL, EXPORTS, Client, Session, parse_link
from vizclient.trace import QUEUE_TRANSITION, format_queue_transition, is_queue_transition

__all__ = ["ApiError", "Client", "ClientError", "DEFAULT_URL", "EXPORTS", "QUEUE_TRANSITION", "ServerUnreachable",
           "Session", "Stream", "StreamError", "format_queue_transition", "is_queue_transition", "parse_link"]


def __getattr__(name):
    if name == "Stream":        # websockets is imported only for the stream
        from vizclient.stream import Stream
        return Stream
    raise AttributeError(f"module 'vizclient' has no attribute {name!r}")
