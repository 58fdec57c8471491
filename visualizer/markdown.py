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
import posixpath
import re
from pathlib import Path

import nh3
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

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


def _focusable_scrolls(html: str) -> str:
    """Sanitized HTML whose boxes that may scroll sideways (a code block, a wide table) can be
    reached and scrolled with the keyboard (tabindex; axe-core's scrollable-region-focusable).
    Added after sanitizing: raw HTML is off, so only the renderer's own tags match."""
    return html.replace('<div class="table-wrap">', '<div class="table-wrap" tabindex="0">').replace(
        "<pre>", '<pre tabindex="0">')


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
    return _focusable_scrolls(_clean(html)).strip()


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

DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"
DOC_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.(yaml|yml|py|json|png)$")   # what docs_file serves
_DOC_LINK = re.compile(r"^(?P<name>[a-z0-9][a-z0-9-]*|README)\.md(?P<anchor>#[-a-z0-9_]*)?$")
_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _slug(text: str, seen: dict) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces become hyphens."""
    base = _SLUG_DROP.sub("", text.strip().lower()).replace(" ", "-")
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}-{n}"


def _served_href(href: str, docs_dir: Path = DOCS_DIR):
    """Where the app serves a link of a docs/ page: ``(url, None)``, or ``(None, repository
    path)`` for a file of the repository that the app does not serve.

    The Markdown keeps links relative to docs/ (so that they work on GitHub); served at
    /docs/<page>/ they would resolve elsewhere. ``cli.md#x`` → ``/docs/cli/#x``,
    ``README.md`` → ``/docs/``, ``examples/a.yaml`` → ``/docs/examples/a.yaml``,
    ``images/a.png`` → ``/docs/images/a.png``, ``../fixtures/...`` (the lessons) → the library
    that lists them. External links, anchors and app paths are kept."""
    if not href or href.startswith(("#", "/")) or _SCHEME.match(href):
        return href, None
    path, _, anchor = href.partition("#")
    anchor = f"#{anchor}" if anchor else ""
    full = posixpath.normpath(posixpath.join("docs", path))
    shown = full + ("/" if path.endswith("/") and full != "." else "")
    if full.startswith("../") or full == "..":
        return None, href        # outside the repository: nothing to point at
    if full == "docs":
        return "/docs/" + anchor, None
    if full == "fixtures" or full.startswith("fixtures/"):
        return "/#library", None   # the lessons: the library lists them (one click starts one)
    if not full.startswith("docs/"):
        return None, shown
    rel = full[len("docs/"):]
    m = _DOC_LINK.match(rel)
    if m and (docs_dir / rel).is_file():
        return f"/docs/{'' if m['name'] == 'README' else m['name'] + '/'}{anchor}", None
    folder, _, filename = rel.partition("/")
    if folder in ("examples", "images") and "/" not in filename:
        if not filename:
            return f"/docs/{folder}/", None
        if DOC_FILE.match(filename) and (docs_dir / folder / filename).is_file():
            return f"/docs/{folder}/{filename}", None
    return None, shown


def doc_href(href: str) -> str:
    """A link of a docs/ page as the app serves it (see ``_served_href``); "" when the app does
    not serve its target."""
    url, _ = _served_href(href)
    return url or ""


def _unlink(children: list, i: int, repo_path: str) -> None:
    """Replace the link that opens at ``children[i]`` by its text: a link to a file the app does
    not serve reads as the file's path in the repository, never as a dead link. Link text that
    is one code span shows the path (`` `test_x.py` `` → ``tests/fixtures/test_x.py``); other
    text is kept and followed by the path in parentheses."""
    depth, end = 0, i
    for end in range(i, len(children)):
        depth += children[end].nesting
        if depth == 0:
            break
    inner = children[i + 1:end]
    if len(inner) == 1 and inner[0].type == "code_inline":
        inner[0].content = repo_path
        children[i:end + 1] = inner
        return
    code = Token("code_inline", "code", 0, content=repo_path, markup="`")
    children[i:end + 1] = inner + [Token("text", "", 0, content=" ("), code, Token("text", "", 0, content=")")]


def doc_pages(docs_dir: Path = DOCS_DIR) -> list:
    """The pages of docs/ (their names, README apart) in reading order: the order in which the
    index, docs/README.md, first links them; a page it does not link comes after, by name."""
    names = {p.stem for p in docs_dir.glob("*.md") if p.stem != "README"}
    index = docs_dir / "README.md"
    try:
        key = (str(index), index.stat().st_mtime_ns)
    except OSError:
        return sorted(names)
    listed = [n for n in _index_order(*key) if n in names]
    return listed + sorted(names - set(listed))


@functools.lru_cache(maxsize=4)
def _index_order(path: str, _mtime_ns: int) -> tuple:
    order = []
    for token in _MD.parse(Path(path).read_text(encoding="utf-8")):
        for child in token.children or []:
            m = _DOC_LINK.match(child.attrGet("href") or "") if child.type == "link_open" else None
            if m and m["name"] != "README" and m["name"] not in order:
                order.append(m["name"])
    return tuple(order)


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
            children = token.children or []
            j = 0
            while j < len(children):
                child = children[j]
                if child.type == "link_open":
                    url, repo_path = _served_href(child.attrGet("href") or "")
                    if url is None:
                        _unlink(children, j, repo_path)
                        continue
                    child.attrSet("href", url)
                elif child.type == "image":
                    child.attrSet("src", doc_href(child.attrGet("src") or ""))
                j += 1
    html = _MD.renderer.render(tokens, _MD.options, {})
    html = html.replace('<table data-wrap="1">', '<div class="table-wrap"><table>').replace(
        "</table>", "</table></div>")
    attributes = dict(_ATTRIBUTES, img={"src", "alt", "title"})
    html = nh3.clean(html, tags=_TAGS | {"img"}, attributes=attributes, url_schemes=_URL_SCHEMES,
                     link_rel="noopener noreferrer", attribute_filter=_keep_doc_attribute)
    return mark_safe(_focusable_scrolls(html)), title


def _keep_doc_attribute(tag, attribute, value):
    if tag == "img" and attribute == "src":
        return value if value.startswith("/docs/images/") and ".." not in value else None
    return _keep_attribute(tag, attribute, value)
