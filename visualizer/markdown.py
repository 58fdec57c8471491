"""A small, safe Markdown renderer for scenario narratives and cues.

Everything is HTML-escaped first, so no markup from the text survives; then a handful of
Markdown constructs become tags: paragraphs, headings (``#`` becomes h3, ``##`` h4, ...),
lists (``-``, ``*``, ``1.``), fenced code blocks, GitHub-style pipe tables, ``inline code``,
**strong**, *emphasis* and [links](https://example.org) whose target is http(s), a relative
path or an anchor.

A pipe table is a header row, a delimiter row with one ``---`` cell per header cell (``:---``,
``---:`` and ``:---:`` align the column) and body rows, each line holding at least one ``|``;
the leading and trailing pipes are optional, ``\\|`` is a pipe inside a cell, and cells take
inline markup. The table ends at the first line without a ``|``. A header row whose cell
count differs from the delimiter row's is no table: the lines stay a paragraph.
"""
from __future__ import annotations

import html
import re

from django.utils.safestring import mark_safe

_CODE = re.compile(r"`([^`\n]+)`")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"(?<![\w*])[*_](?=\S)(.+?)(?<=\S)[*_](?![\w*])")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_SAFE_URL = re.compile(r"^(https?://|/|#)", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_DELIMITER_CELL = re.compile(r"^:?-+:?$")
_PIPE = re.compile(r"(?<!\\)\|")


def _inline(text: str) -> str:
    """Inline markup of already-escaped text; code spans are kept verbatim."""
    codes = []

    def keep(m):
        codes.append(m.group(1))
        return f"\x00{len(codes) - 1}\x00"

    text = _CODE.sub(keep, text)

    def link(m):
        label, url = m.group(1), m.group(2)
        if not _SAFE_URL.match(html.unescape(url)):
            return m.group(0)
        return f'<a href="{url}" rel="noopener noreferrer">{label}</a>'

    text = _LINK.sub(link, text)
    text = _STRONG.sub(r"<strong>\1</strong>", text)
    text = _EM.sub(r"<em>\1</em>", text)
    return re.sub("\x00(\\d+)\x00", lambda m: f"<code>{codes[int(m.group(1))]}</code>", text)


# ---------------------------------------------------------------------- pipe tables

def _cells(line: str) -> list[str] | None:
    """The cells of a table row (escaped text, ``\\|`` made a pipe), or None if the line has
    no unescaped pipe."""
    text = line.strip()
    if not _PIPE.search(text):
        return None
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(text)]


def _alignments(line: str) -> list[str] | None:
    """The column alignments of a delimiter row (``|---|:---:|``), or None if it is not one."""
    cells = _cells(line)
    if not cells or not all(_DELIMITER_CELL.match(c) for c in cells):
        return None
    aligns = []
    for c in cells:
        left, right = c.startswith(":"), c.endswith(":")
        aligns.append("center" if left and right else "right" if right else "left" if left else "")
    return aligns


def _table_start(lines: list[str], i: int):
    """(header cells, alignments) if a pipe table starts at line ``i``, else None."""
    if i + 1 >= len(lines):
        return None
    header = _cells(lines[i])
    aligns = _alignments(lines[i + 1])
    if header is None or aligns is None or len(header) != len(aligns):
        return None
    return header, aligns


def _table(header: list[str], aligns: list[str], rows: list[list[str]]) -> str:
    def cell(tag, text, align):
        style = f' style="text-align: {align}"' if align else ""
        return f"<{tag}{style}>{_inline(text)}</{tag}>"

    width = len(header)
    head = "<tr>" + "".join(cell("th", h, a) for h, a in zip(header, aligns)) + "</tr>"
    body = "".join(
        "<tr>" + "".join(cell("td", c, a) for c, a in zip((row + [""] * width)[:width], aligns)) + "</tr>"
        for row in rows)
    return (f'<div class="table-wrap"><table><thead>{head}</thead>'
            + (f"<tbody>{body}</tbody>" if body else "") + "</table></div>")


# ---------------------------------------------------------------------- blocks

def blocks(text: str) -> list[tuple[str, str]]:
    """The blocks of ``text`` as ``(kind, html)`` pairs, kind one of ``p``, ``h``, ``ul``,
    ``ol``, ``pre`` and ``table``; every character of the input was escaped first."""
    lines = html.escape(text or "", quote=True).replace("\r\n", "\n").split("\n")
    out: list[tuple[str, str]] = []
    para: list[str] = []
    items: list[str] = []
    list_tag = ""

    def flush_para():
        if para:
            out.append(("p", f"<p>{_inline(' '.join(s.strip() for s in para))}</p>"))
            para.clear()

    def flush_list():
        nonlocal list_tag
        if items:
            out.append((list_tag, f"<{list_tag}>" + "".join(f"<li>{_inline(i)}</li>" for i in items)
                        + f"</{list_tag}>"))
            items.clear()
        list_tag = ""

    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            flush_para()
            flush_list()
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            out.append(("pre", "<pre><code>" + "\n".join(code) + "</code></pre>"))
            i += 1
            continue
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        numbered = _NUMBERED.match(line)
        table = None if (heading or bullet or numbered or not line.strip()) else _table_start(lines, i)
        if table:
            flush_para()
            flush_list()
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip():
                row = _cells(lines[i])
                if row is None:
                    break
                rows.append(row)
                i += 1
            out.append(("table", _table(*table, rows)))
            continue
        if not line.strip():
            flush_para()
            flush_list()
        elif heading:
            flush_para()
            flush_list()
            level = len(heading.group(1)) + 2
            out.append(("h", f"<h{level}>{_inline(heading.group(2))}</h{level}>"))
        elif bullet or numbered:
            flush_para()
            tag = "ul" if bullet else "ol"
            if list_tag and list_tag != tag:
                flush_list()
            list_tag = tag
            items.append((bullet or numbered).group(1))
        elif items and line.startswith((" ", "\t")):
            items[-1] += " " + line.strip()
        else:
            flush_list()
            para.append(line)
        i += 1
    flush_para()
    flush_list()
    return out


def render(text: str) -> str:
    """HTML for ``text`` (a SafeString: every character of the input was escaped)."""
    return mark_safe("\n".join(block for _, block in blocks(text)))


def first_paragraph(text: str) -> str:
    """HTML of the first paragraph of ``text`` (its first block if it has no paragraph), as
    ``render`` makes it: a summary of a long narrative."""
    found = blocks(text)
    first = next((block for kind, block in found if kind == "p"), found[0][1] if found else "")
    return mark_safe(first)
