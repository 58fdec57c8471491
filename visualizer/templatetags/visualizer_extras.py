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
