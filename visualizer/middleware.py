"""Debug pages only for the developer's own browser.

With ``DEBUG`` on (the development default), Django answers an exception or a 404 with a
technical page: settings, the URL patterns, local variables and the request. That must not
reach anyone but the developer, even if a development server is reachable from elsewhere
(bound to 0.0.0.0, behind a proxy). This module answers a client that is not on the
loopback interface with the plain production pages instead; with ``DEBUG`` off it does nothing:

- ``DebugPagesOnlyForLocalClients`` (middleware): a view's exception or ``Http404`` (an
  unmatched URL reaches the catch-all ``visualizer.views.not_found``, which raises ``Http404``);
- ``LocalOnlyExceptionReporter`` (``DEFAULT_EXCEPTION_REPORTER``): any other 500, e.g. from a
  middleware, gets a plain "Server Error (500)" instead of the traceback page.
"""
from __future__ import annotations

import ipaddress
import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, JsonResponse
from django.views import defaults
from django.views.debug import ExceptionReporter

log = logging.getLogger("django.request")


def is_local(request) -> bool:
    """Whether the request comes from this machine's loopback interface."""
    try:
        return ipaddress.ip_address((request.META.get("REMOTE_ADDR") or "").split("%")[0]).is_loopback
    except ValueError:
        return False


class DebugPagesOnlyForLocalClients:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not settings.DEBUG or is_local(request):
            return None
        if isinstance(exception, Http404):
            return defaults.page_not_found(request, exception)
        if isinstance(exception, PermissionDenied):
            return defaults.permission_denied(request, exception)
        if isinstance(exception, SuspiciousOperation):
            return defaults.bad_request(request, exception)
        log.error("Internal Server Error: %s", request.path, exc_info=exception)
        return defaults.server_error(request)


class LocalOnlyExceptionReporter(ExceptionReporter):
    """Django's exception reporter, which shows its report to loopback clients only."""

    def _remote(self) -> bool:
        return self.request is not None and not is_local(self.request)

    def get_traceback_html(self):
        if self._remote():
            return "<!doctype html><title>Server Error (500)</title><h1>Server Error (500)</h1>"
        return super().get_traceback_html()

    def get_traceback_text(self):
        if self._remote():
            return "Server Error (500)"
        return super().get_traceback_text()


class TooLargeRequestAsFormError:
    """A POST larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (e.g. a pasted scenario over the
    limit) gets the upload form with its error list (HTTP 413), before anything reads the body:
    otherwise the CSRF check reads it first and Django answers with its RequestDataTooBig page.
    Placed before ``CsrfViewMiddleware``; the library page it renders changes nothing."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST":
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
                from visualizer import views
                if request.path.startswith("/api/"):      # the REST API answers in JSON (docs/api.md)
                    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                    return JsonResponse({"title": "Too large", "problems": [
                        f"the request is too large: {length:,} bytes were sent, the limit is {limit:,} bytes "
                        f"({limit / 1048576:g} MiB)"]}, status=413)
                return views.request_too_large(request, length)
        return self.get_response(request)


class ContentSecurityPolicy:
    """Sets ``settings.CONTENT_SECURITY_POLICY`` on every response that has none (defence in
    depth: a script injected through some future bug could not load or send anything)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response
