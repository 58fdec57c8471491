"""Template filters of the session page."""
import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

register = template.Library()

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


@register.filter(needs_autoescape=True)
def camelbreak(value, autoescape=True):
    """``value`` escaped, with a line-break opportunity (``<wbr>``) inside CamelCase words:
    long plugin and criterion names (minNumPDBViolatingVictims) can wrap in a narrow table
    header without changing the text."""
    text = conditional_escape(value) if autoescape else str(value)
    return mark_safe(_CAMEL.sub("<wbr>", str(text)))


_NOT_IDENT = re.compile(r"[^A-Za-z0-9_-]")


@register.filter
def transition_name(key):
    """A CSS ``view-transition-name`` for a pod key (unique per pod, a valid identifier): the
    page gives it to the one element that shows the pod, so a View Transition animates the pod
    from its old place (a queue, in flight, a node) to its new one."""
    text = str(key)
    digest = format(sum((i + 1) * ord(c) for i, c in enumerate(text)) % 65521, "x")
    return f"pod-{_NOT_IDENT.sub('_', text)}-{digest}"
