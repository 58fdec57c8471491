"""Markdown for scenario narratives, cues and the documentation pages the app serves.

Rendered by markdown-it-py (CommonMark plus GitHub-style pipe tables and strikethrough) with
raw HTML turned off, so markup in the text stays text; the HTML is then cleaned by nh3 (the
Ammonia sanitizer) with an allow-list of tags and attributes, and links keep only http(s),
mailto, relative and ``#`` targets. Both steps are needed: the parser never emits the text's
HTML, and the sanitizer guarantees it whatever a future parser option does.

In narratives and cues a heading is demoted two levels (``#`` becomes h3) to sit under the
panel's own headings; tables are wrapped in ``div.table-wrap`` (they scroll sideways on a
narrow screen instead of widening the page).
"""
from __future__ import annotations

import functools
import re

import nh3
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

_TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
         "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "div", "span"}
_ATTRIBUTES = {"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "div": {"class"}, "ol": {"start"},
               "h1": {"id"}, "h2": {"id"}, "h3": {"id"}, "h4": {"id"}, "code": {"class"}}
_URL_SCHEMES = {"http", "https", "mailto"}
_ALIGN = re.compile(r"^text-align:\s*(left|right|center)$")


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    return md


_MD = _parser()


def _clean(html: str) -> str:
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_URL_SCHEMES,
                     link_rel="noopener noreferrer", attribute_filter=_keep_attribute)


def _keep_attribute(tag, attribute, value):
    """Only a text-align style on table cells, and only our own class names, survive."""
    if attribute == "style":
        return value if _ALIGN.match(value.strip().rstrip(";")) else None
    if attribute == "class":
        return value if value in ("table-wrap",) or value.startswith("language-") else None
    return value


def _tokens(text: str, shift: int):
    tokens = _MD.parse(text or "")
    for token in tokens:
        if token.type in ("heading_open", "heading_close") and shift:
            token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
        elif token.type == "table_open":
            token.attrSet("data-wrap", "1")
        elif token.type in ("th_open", "td_open") and token.attrGet("style"):
            token.attrSet("style", token.attrGet("style").replace(":", ": "))
    return tokens


def _html(tokens) -> str:
    html = _MD.renderer.render(tokens, _MD.options, {})
    html = html.replace('<table data-wrap="1">', '<div class="table-wrap"><table>').replace(
        "</table>", "</table></div>")
    return _clean(html).strip()


def render(text: str, shift: int = 2) -> str:
    """Safe HTML for ``text`` (headings demoted by ``shift`` levels)."""
    if not text:
        return mark_safe("")
    if len(text) > 65536:   # keep the cache small whatever is uploaded
        return mark_safe(_html(_tokens(text, shift)))
    return mark_safe(_render_cached(text, shift))


@functools.lru_cache(maxsize=512)
def _render_cached(text: str, shift: int) -> str:
    """A scenario's narrative and cues are rendered on every frame: once is enough."""
    return _html(_tokens(text, shift))


def block_count(text: str) -> int:
    """How many top-level blocks (paragraphs, lists, tables, code blocks...) ``text`` has."""
    return sum(1 for t in _MD.parse(text or "") if t.level == 0 and t.nesting >= 0 and t.type != "inline")


def first_paragraph(text: str) -> str:
    """HTML of the first paragraph of ``text`` (its first block if it has no paragraph): a
    summary of a long narrative."""
    tokens = _tokens(text, 2)
    if not tokens:
        return mark_safe("")
    start = next((i for i, t in enumerate(tokens) if t.type == "paragraph_open" and t.level == 0), 0)
    end = start
    while end < len(tokens) and not (tokens[end].level == 0 and tokens[end].nesting <= 0
                                     and (end > start or tokens[end].nesting == 0)):
        end += 1
    return mark_safe(_html(tokens[start:end + 1]))


# ---------------------------------------------------------------------- documentation pages

_DOC_LINK = re.compile(r"^(?P<name>[a-z0-9][a-z0-9-]*)\.md(?P<anchor>#[-a-z0-9_]*)?$")
_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)


def _slug(text: str, seen: dict) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces become hyphens."""
    base = _SLUG_DROP.sub("", text.strip().lower()).replace(" ", "-")
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}-{n}"


def doc_href(href: str) -> str:
    """A link of a docs/ page as the app serves it: ``cli.md#x`` → ``/docs/cli/#x``,
    ``examples/a.yaml`` → ``/docs/examples/a.yaml``, ``images/a.png`` → ``/docs/images/a.png``."""
    m = _DOC_LINK.match(href)
    if m:
        return f"/docs/{'' if m['name'] == 'README' else m['name'] + '/'}{m['anchor'] or ''}"
    if href.startswith(("examples/", "images/")) and ".." not in href:
        return "/docs/" + href
    return href


def render_document(text: str) -> tuple[str, str]:
    """(safe HTML, title) of a documentation page: headings keep their level and get GitHub's
    anchors, links to other pages and files of docs/ point to where the app serves them, and
    images may show the screenshots of docs/images/."""
    tokens = _MD.parse(text or "")
    seen, title = {}, ""
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            content = tokens[i + 1].content
            token.attrSet("id", _slug(content, seen))
            if not title:
                title = content
        elif token.type == "table_open":
            token.attrSet("data-wrap", "1")
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "link_open":
                    child.attrSet("href", doc_href(child.attrGet("href") or ""))
                elif child.type == "image":
                    child.attrSet("src", doc_href(child.attrGet("src") or ""))
    html = _MD.renderer.render(tokens, _MD.options, {})
    html = html.replace('<table data-wrap="1">', '<div class="table-wrap"><table>').replace(
        "</table>", "</table></div>")
    attributes = dict(_ATTRIBUTES, img={"src", "alt", "title"})
    html = nh3.clean(html, tags=_TAGS | {"img"}, attributes=attributes, url_schemes=_URL_SCHEMES,
                     link_rel="noopener noreferrer", attribute_filter=_keep_doc_attribute)
    return mark_safe(html), title


def _keep_doc_attribute(tag, attribute, value):
    if tag == "img" and attribute == "src":
        return value if value.startswith("/docs/images/") and ".." not in value else None
    return _keep_attribute(tag, attribute, value)
