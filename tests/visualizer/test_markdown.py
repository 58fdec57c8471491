"""The narrative renderer (markdown-it-py, then the nh3 sanitizer): Markdown becomes HTML,
and nothing from the text becomes markup."""
import pytest

from visualizer import markdown


def render(text):
    """The rendered HTML without the line breaks between block tags (markdown-it's layout)."""
    return str(markdown.render(text)).replace(">\n<", "><")


@pytest.mark.parametrize(("text", "html"), [
    ("plain text", "<p>plain text</p>"),
    ("a `x < y` b", "<p>a <code>x &lt; y</code> b</p>"),
    ("**bold** and *em* and _em_", "<p><strong>bold</strong> and <em>em</em> and <em>em</em></p>"),
    ("snake_case_name stays", "<p>snake_case_name stays</p>"),
    ("# Title", "<h3>Title</h3>"),
    ("- one\n- two", "<ul><li>one</li><li>two</li></ul>"),
    ("1. one\n2. two", "<ol><li>one</li><li>two</li></ol>"),
    ("line one\nline two\n\nnext", "<p>line one\nline two</p><p>next</p>"),
    ("```\n<pod>\n```", '<pre tabindex="0"><code>&lt;pod&gt;\n</code></pre>'),
    ("[docs](https://kubernetes.io/docs)", '<p><a href="https://kubernetes.io/docs" rel="noopener noreferrer">docs</a></p>'),
])
def test_markdown_subset(text, html):
    assert render(text) == html


@pytest.mark.parametrize("text", [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    '[x](https://a" onmouseover="alert(1))',
    "**<b>bold</b>**",
    '<a href="javascript:alert(1)">x</a>',
    "[x](  javascript:alert(1) )",
    "[x](JaVaScRiPt:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "![img](https://example.org/x.png)",
    '<div style="position:fixed">x</div>',
])
def test_nothing_from_the_text_becomes_markup(text):
    elements = _elements(render(text))
    assert {tag for tag, _ in elements} <= {"p", "a", "strong", "em"}, elements
    for tag, attrs in elements:
        assert set(attrs) <= {"href", "rel"}, (tag, attrs)
        assert not attrs.get("href", "https:").lower().lstrip().startswith(("javascript", "data")), attrs


def _elements(html):
    """Every (tag, attributes) of ``html``, read by a real HTML parser."""
    from html.parser import HTMLParser

    found = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Collect().feed(html)
    return found


def test_empty_text():
    assert render("") == "" and render(None) == ""


# ---------------------------------------------------------------------- pipe tables

TABLE = """\
| pod | asks for | priority |
|---|---|---|
| `web` | 2 CPUs | **1000** |
| `batch` | 500m | 0 |"""


def test_a_pipe_table_renders_as_a_table_with_header_and_body_cells():
    assert render(TABLE) == (
        '<div class="table-wrap" tabindex="0"><table>'
        "<thead><tr><th>pod</th><th>asks for</th><th>priority</th></tr></thead>"
        "<tbody><tr><td><code>web</code></td><td>2 CPUs</td><td><strong>1000</strong></td></tr>"
        "<tr><td><code>batch</code></td><td>500m</td><td>0</td></tr></tbody>"
        "</table></div>")


def test_table_cells_take_inline_markup():
    html = render("| a | b |\n|---|---|\n| *em* and [docs](https://kubernetes.io) | `x < y` |")
    assert "<td><em>em</em> and <a href=\"https://kubernetes.io\" rel=\"noopener noreferrer\">docs</a></td>" in html
    assert "<td><code>x &lt; y</code></td>" in html


@pytest.mark.parametrize("cell", [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[x](javascript:alert(1))",
])
def test_markup_in_a_table_cell_stays_escaped(cell):
    html = render(f"| name | note |\n|---|---|\n| evil | {cell} |\n| <th>head</th> | x |")
    assert "<table>" in html
    assert "<script" not in html and "<img" not in html and "<th>head</th>" not in html
    assert "&lt;th&gt;head&lt;/th&gt;" in html
    assert 'href="javascript' not in html
    if cell.startswith("<script"):
        assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in html


def test_the_delimiter_row_sets_column_alignment():
    html = render("| l | c | r | n |\n|:---|:---:|---:|---|\n| 1 | 2 | 3 | 4 |")
    assert '<th style="text-align: left">l</th><th style="text-align: center">c</th>' in html
    assert '<td style="text-align: right">3</td><td>4</td>' in html


def test_outer_pipes_are_optional_and_an_escaped_pipe_stays_in_its_cell():
    html = render(r"a \| b | c" "\n---|---\n1 | 2")
    assert "<thead><tr><th>a | b</th><th>c</th></tr></thead>" in html
    assert "<tbody><tr><td>1</td><td>2</td></tr></tbody>" in html


def test_short_rows_are_padded_and_long_rows_cut_to_the_header():
    html = render("| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |")
    assert "<tr><td>1</td><td></td></tr><tr><td>1</td><td>2</td></tr>" in html


@pytest.mark.parametrize("text", [
    "| a | b |\n| c | d |",                 # no delimiter row
    "| a | b |\n|---|\n| c | d |",           # the delimiter row has fewer cells than the header
    "| a | b |\n|-x-|---|",                  # not a delimiter cell
    "a | b\n\n|---|---|",                    # a blank line between header and delimiter
])
def test_a_malformed_table_is_no_table(text):
    html = render(text)
    assert "<table" not in html and "<th" not in html and "<td" not in html
    assert "|" in html


def test_a_pipe_in_a_code_block_is_no_table():
    assert "<table" not in render("```\n| a | b |\n|---|---|\n```")


def test_every_lesson_renders_its_tables():
    """Every description and cue in fixtures/ renders without a leftover delimiter row or a
    paragraph holding a table's pipes, and with one <table> per delimiter row."""
    import re
    from pathlib import Path

    import yaml

    fixtures = sorted((Path(__file__).resolve().parents[2] / "fixtures").glob("*.yaml"))
    assert fixtures
    tables = 0
    for path in fixtures:
        scenario = yaml.safe_load(path.read_text(encoding="utf-8"))
        texts = [scenario["metadata"].get("description") or ""]
        texts += [cue.get("text") or "" for cue in scenario.get("cues") or []]
        for text in texts:
            html = str(markdown.render(text))
            delimiters = len(re.findall(r"^\s*\|?\s*:?-{3,}:?\s*\|", text, re.MULTILINE))
            assert html.count("<table>") == delimiters, path.name
            assert not re.search(r"\|\s*:?-{3,}", html), f"{path.name}: a delimiter row is left as text"
            for paragraph in re.findall(r"<p>.*?</p>", html, re.DOTALL):
                assert not re.search(r"(^|\s)\|\s", paragraph), f"{path.name}: {paragraph[:80]}"
            tables += delimiters
    assert tables >= 6


# ---------------------------------------------------------------------- the first paragraph

def first_paragraph(text):
    return str(markdown.first_paragraph(text)).replace(">\n<", "><")


@pytest.mark.parametrize(("text", "html"), [
    ("**Mechanism: backoff.**\n\nMore text.\n\n| a |\n|---|", "<p><strong>Mechanism: backoff.</strong></p>"),
    ("# Title\n\nFirst *para*\ngoes on.\n\nSecond.", "<p>First <em>para</em>\ngoes on.</p>"),
    ("- only\n- a list", "<ul><li>only</li><li>a list</li></ul>"),
    ("<b>x</b>\n\ny", "<p>&lt;b&gt;x&lt;/b&gt;</p>"),
    ("", ""),
])
def test_first_paragraph(text, html):
    assert first_paragraph(text) == html
