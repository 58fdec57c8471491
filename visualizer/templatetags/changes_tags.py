"""Template filters of the "what changed" page (visualizer/changes.py): readable times."""
from __future__ import annotations

from datetime import datetime, timezone

from django import template
from django.utils.html import format_html

register = template.Library()


def _parse(value):
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value or ""))
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def utc_text(value) -> str:
    """``14:44:03 UTC, 26 Nov 2026`` for an ISO time (or a datetime); "" if it is none."""
    dt = _parse(value)
    if dt is None:
        return ""
    return f"{dt:%H:%M:%S} UTC, {dt.day} {dt:%b %Y}"


@register.filter
def readable_time(value):
    """A ``<time>`` element: the time in UTC as readable text, which static/js/local-time.js
    turns into the browser's local time (the UTC text stays as its title and as the fallback)."""
    dt = _parse(value)
    if dt is None:
        return str(value or "")
    iso = dt.isoformat(timespec="seconds").replace("+00:00", "Z")
    return format_html('<time datetime="{}" data-local-time title="{}">{}</time>', iso, utc_text(dt), utc_text(dt))
