"""The client's exceptions: every failure it reports is a ``ClientError``."""
from __future__ import annotations


class ClientError(Exception):
    """Anything the client could not do (the base of the exceptions below)."""


class ApiError(ClientError):
    """The API answered with an error: its HTTP ``status`` and the ``title`` and ``problems`` of
    its JSON error body (docs/api.md: every error is ``{"title": ..., "problems": [...]}``).
    An answer that is not such a body (a proxy's page, a server error) keeps its status, with
    the HTTP reason as ``title`` and the start of the body as the one problem."""

    def __init__(self, status: int, title: str, problems=(), *, method: str = "", url: str = ""):
        self.status = status
        self.title = title
        self.problems = list(problems)
        self.method = method
        self.url = url
        where = f" ({method} {url})" if url else ""
        detail = "; ".join(self.problems)
        super().__init__(f"{status} {title}{': ' + detail if detail else ''}{where}")


class ServerUnreachable(ClientError, ConnectionError):
    """No answer from the server at all: nothing listens there, the name does not resolve, the
    connection broke, or it did not answer in time. ``url`` is what the client tried."""

    def __init__(self, url: str, reason):
        self.url = url
        self.reason = reason
        super().__init__(f"cannot reach the visualizer at {url}: {reason} "
                         f"(is it running? `bash scripts/run.sh` serves http://127.0.0.1:8000)")


class StreamError(ClientError):
    """The JSON stream (``/ws/json/...``) was refused or broke. ``status`` is the HTTP status
    of a refused handshake (403: no session has this token under this prefix, or the Origin is
    not an allowed host), ``code`` the WebSocket close code of a broken connection."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None, code: int | None = None):
        self.url = url
        self.status = status
        self.code = code
        super().__init__(message)
