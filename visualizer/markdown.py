"""A small, safe Markdown renderer for scenario narratives and cues.

Everything is HTML-escaped first, so no markup from the text survives; then a handful of
Markdown constructs become tags: paragraphs, headings (``#`` becomes h3, ``##`` h4, ...),
lists (``-``, ``*``, ``1.``), fenced code blocks, ``inline code``, **strong**, *emphasis* and
[links](https://example.org) whose target is http(s), a relative path or an anchor.
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


def render(text: str) -> str:
    """HTML for ``text`` (a SafeString: every character of the input was escaped)."""
    lines = html.escape(text or "", quote=True).replace("\r\n", "\n").split("\n")
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    list_tag = ""

    def flush_para():
        if para:
            out.append(f"<p>{_inline(' '.join(s.strip() for s in para))}</p>")
            para.clear()

    def flush_list():
        nonlocal list_tag
        if items:
            out.append(f"<{list_tag}>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + f"</{list_tag}>")
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
            out.append("<pre><code>" + "\n".join(code) + "</code></pre>")
            i += 1
            continue
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        numbered = _NUMBERED.match(line)
        if not line.strip():
            flush_para()
            flush_list()
        elif heading:
            flush_para()
            flush_list()
            level = len(heading.group(1)) + 2
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
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
    return mark_safe("\n".join(out))
