"""The served docs (/docs/<page>/): every link of every page leads somewhere, the menu is in
reading order, and the Markdown's own relative links still work where it is read as files
(GitHub)."""
import posixpath
import re
from html import unescape
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

from visualizer import markdown

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.stem for p in DOCS.glob("*.md"))
SERVED = ["/docs/"] + [f"/docs/{name}/" for name in PAGES if name != "README"] + ["/docs/examples/", "/docs/images/"]

# README first (the menu's heading, /docs/), then a user's reading order; docs/README.md's
# table lists them in this order and the menu follows it.
READING_ORDER = ["ui-tour", "scenario-format", "lessons", "cli", "import-export", "why-pending", "state-and-trace", "extenders",
                 "writing-plugins", "api", "architecture", "limits", "benchmarks"]

_LINK = re.compile(r'<(a|img|link|script)\b[^>]*?\s(?:href|src)="([^"]*)"')
_ID = re.compile(r'\sid="([^"]*)"')


def _internal_links(html):
    """The hrefs and srcs of ``html`` that stay in the app: a path (``/...``) or relative."""
    for _tag, href in _LINK.findall(html):
        href = unescape(href)
        if href.startswith("//") or urlsplit(href).scheme:
            continue
        yield href


def test_every_internal_link_of_every_served_docs_page_resolves(client):
    pages, broken, checked = {}, [], set()

    def get(url):
        if url not in pages:
            response = client.get(url)
            pages[url] = (response.status_code, response.content.decode("utf-8", "replace")
                          if response.get("Content-Type", "").startswith("text/html") else "")
        return pages[url]

    for page in SERVED:
        status, html = get(page)
        assert status == 200, page
        for href in _internal_links(html):
            url, fragment = urldefrag(urljoin(f"http://testserver{page}", href))
            url = url.removeprefix("http://testserver")
            if (page, href) in checked:
                continue
            checked.add((page, href))
            status, target = get(url)
            if status >= 400:
                broken.append(f"{page}: {href} -> {url}: {status}")
            elif fragment and url.startswith("/docs/") and fragment not in _ID.findall(target):
                broken.append(f"{page}: {href} -> {url}: no id {fragment!r}")
    assert len(checked) > 100          # the pages were read, and their links followed
    assert not broken, "\n".join(broken)


def test_links_to_repository_files_the_app_does_not_serve_are_text_not_links(client):
    html = client.get("/docs/lessons/").content.decode()
    # the lessons' directory is the library, which lists them
    assert '<a href="/#library" rel="noopener noreferrer"><code>fixtures/</code></a>' in html
    # tests are not served: their path, as code, instead of a dead link
    assert "../tests" not in html and 'href="/docs/tests' not in html
    assert "<code>tests/fixtures/</code>" in html
    assert "<code>tests/fixtures/test_backoff_growth.py</code>:" in html
    tour = client.get("/docs/ui-tour/").content.decode()
    assert "README.md#" not in tour and "in <code>README.md</code>)" in tour


@pytest.mark.parametrize(("href", "html"), [
    ("cli.md#flags", '<a href="/docs/cli/#flags" rel="noopener noreferrer">x</a>'),
    ("README.md", '<a href="/docs/" rel="noopener noreferrer">x</a>'),
    ("examples/gpu.yaml", '<a href="/docs/examples/gpu.yaml" rel="noopener noreferrer">x</a>'),
    ("examples/", '<a href="/docs/examples/" rel="noopener noreferrer">x</a>'),
    ("../fixtures/02-backoff-growth.yaml", '<a href="/#library" rel="noopener noreferrer">x</a>'),
    ("../engine/queue.py", "x (<code>engine/queue.py</code>)"),
    ("../tests/", "x (<code>tests/</code>)"),
    ("nope.md", "x (<code>docs/nope.md</code>)"),                  # no such page
    ("examples/nope.yaml", "x (<code>docs/examples/nope.yaml</code>)"),
    ("examples/../../manage.py", "x (<code>manage.py</code>)"),
    ("../../outside", "x (<code>../../outside</code>)"),   # outside the repository: as written
    ("https://kubernetes.io/", '<a href="https://kubernetes.io/" rel="noopener noreferrer">x</a>'),
    ("#anchor", '<a href="#anchor" rel="noopener noreferrer">x</a>'),
])
def test_a_docs_link_is_rewritten_to_where_the_app_serves_it(href, html):
    rendered, _ = markdown.render_document(f"[x]({href})")
    assert str(rendered).strip() == f"<p>{html}</p>"


def test_a_code_link_to_an_unserved_file_shows_its_repository_path():
    rendered, _ = markdown.render_document("see [`test_a.py`](../tests/fixtures/test_a.py) and [**b**](../b.py).")
    assert str(rendered).strip() == "<p>see <code>tests/fixtures/test_a.py</code> and <strong>b</strong> (<code>b.py</code>).</p>"


def test_the_docs_menu_is_in_reading_order(client):
    assert markdown.doc_pages() == READING_ORDER
    html = client.get("/docs/limits/").content.decode()
    nav = html.split('class="docs-nav"', 1)[1].split("</nav>", 1)[0]
    assert 'href="/docs/"' in nav                         # the index (docs/README.md) heads the menu
    items = re.findall(r'<li><a href="/docs/([a-z-]+)/"', nav)
    assert items == READING_ORDER + ["examples"]       # then the examples folder
    assert nav.index('href="/docs/"') < nav.index('href="/docs/ui-tour/"')


def test_the_menu_follows_the_index_and_lists_unlisted_pages_last(tmp_path):
    (tmp_path / "README.md").write_text("[b](b.md) then [a](a.md#x) and [b again](b.md)\n", encoding="utf-8")
    for name in ("a", "b", "c", "0-extra"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    assert markdown.doc_pages(tmp_path) == ["b", "a", "0-extra", "c"]


def test_the_markdown_links_work_as_files_too():
    """Read on GitHub, a relative link is a path from the page: it must name a file or folder
    of the repository (the served rendering, not the Markdown, adapts them to the app)."""
    missing = []
    for path in sorted(DOCS.glob("*.md")):
        tokens = markdown._MD.parse(path.read_text(encoding="utf-8"))
        for token in tokens:
            for child in token.children or []:
                href = child.attrGet("href") if child.type == "link_open" else (
                    child.attrGet("src") if child.type == "image" else None)
                if not href or href.startswith("#") or urlsplit(href).scheme:
                    continue
                target = posixpath.normpath(posixpath.join("docs", href.split("#", 1)[0]))
                if not (ROOT / target).exists():
                    missing.append(f"{path.name}: {href}")
    assert not missing, missing
