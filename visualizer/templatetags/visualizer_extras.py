"""Template filters of the session page."""
import re
from functools import lru_cache
from pathlib import Path

from django import template
from django.utils.html import conditional_escape, format_html
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


NAME_PART_MAX = 20     # a part of a dotted name longer than this may break inside too


@register.filter(needs_autoescape=True)
def dotbreak(value, autoescape=True):
    """``value`` escaped, in parts that end at its dots, with a line-break opportunity
    (``<wbr>``) after each dot: a long node name (``ip-10-0-0-11.eu-west-1.compute.internal``)
    wraps in a narrow table column at its dots, never inside ``ip-10-0-0-11.``, without
    changing the text (a part longer than NAME_PART_MAX may still break inside)."""
    text = str(value)
    parts = re.findall(r"[^.]*\.|[^.]+$", text) or [text]
    out = []
    for part in parts:
        esc = conditional_escape(part) if autoescape else part
        out.append(f'<span class="name-part">{esc}</span>' if len(part) <= NAME_PART_MAX else str(esc))
    return mark_safe("<wbr>".join(out))


_NOT_IDENT = re.compile(r"[^A-Za-z0-9_-]")


@register.filter
def transition_name(key):
    """A CSS ``view-transition-name`` for a pod key (unique per pod, a valid identifier): the
    page gives it to the one element that shows the pod, so a View Transition animates the pod
    from its old place (a queue, in flight, a node) to its new one."""
    text = str(key)
    digest = format(sum((i + 1) * ord(c) for i, c in enumerate(text)) % 65521, "x")
    return f"pod-{_NOT_IDENT.sub('_', text)}-{digest}"


# Icons: a subset of Lucide (lucide-static 1.62.0, ISC licence; static/vendor/lucide/), inlined
# as SVG so they render the same with any fonts (a glyph such as ⓘ is an empty box with
# Debian's default fonts) and take the text colour.
ICON_DIR = Path(__file__).resolve().parents[2] / "static" / "vendor" / "lucide" / "icons"
_SVG_BODY = re.compile(r"<svg\b[^>]*>(.*)</svg>", re.S)


@lru_cache(maxsize=None)
def _icon_body(name: str) -> str:
    if not re.fullmatch(r"[a-z0-9-]+", name):
        raise template.TemplateSyntaxError(f"icon name {name!r}: lower-case letters, digits and '-' only")
    path = ICON_DIR / f"{name}.svg"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise template.TemplateSyntaxError(f"no icon {name!r} in {ICON_DIR} (vendor it from lucide-static)") from None
    body = _SVG_BODY.search(text)
    return " ".join(body.group(1).split()) if body else ""


@register.simple_tag
def icon(name, label=""):
    """``{% icon "play" %}``: the Lucide icon ``name`` as inline SVG, hidden from assistive
    technology (the control's text names it); ``{% icon "info" "more about this" %}`` gives it
    an accessible name instead, for an icon that stands alone."""
    body = _icon_body(str(name))
    if label:
        aria = f' role="img" aria-label="{conditional_escape(label)}"'
    else:
        aria = ' aria-hidden="true" focusable="false"'
    return mark_safe(
        f'<svg class="icon icon--{name}" viewBox="0 0 24 24" width="24" height="24" fill="none" '
        f'stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"{aria}>'
        f"{body}</svg>")


def is_extender(name) -> bool:
    """Whether a Filter or Score column is a scheduler extender's: the engine names an
    extender's results by its urlPrefix (an ``http://`` URL, which no plugin name can be)."""
    return isinstance(name, str) and name.startswith("http://")


def extender_label(url: str) -> str:
    """An extender's short name: its urlPrefix without the scheme (``127.0.0.1:8888/scheduler``)."""
    return url[len("http://"):].rstrip("/") if is_extender(url) else str(url)


@register.simple_tag
def plugin_column(name):
    """The header cell of a Filter-matrix or score-table column: the plugin's name, or for a
    scheduler extender its short name (host:port/path) after an "extender" mark, the whole URL
    in ``data-plugin`` and the title."""
    if not is_extender(name):
        return format_html('<th scope="col" class="plugin-col" data-plugin="{}" title="{}"><span>{}</span></th>',
                           name, name, name)
    return format_html('<th scope="col" class="plugin-col plugin-col--extender" data-plugin="{}" data-extender '
                       'title="scheduler extender {}"><span><span class="extender-mark">extender</span> {}</span></th>',
                       name, name, extender_label(name))
