"""The narrative renderer: a few Markdown constructs, and nothing from the text as HTML."""
import pytest

from visualizer.markdown import render


@pytest.mark.parametrize(("text", "html"), [
    ("plain text", "<p>plain text</p>"),
    ("a `x < y` b", "<p>a <code>x &lt; y</code> b</p>"),
    ("**bold** and *em* and _em_", "<p><strong>bold</strong> and <em>em</em> and <em>em</em></p>"),
    ("snake_case_name stays", "<p>snake_case_name stays</p>"),
    ("# Title", "<h3>Title</h3>"),
    ("- one\n- two", "<ul><li>one</li><li>two</li></ul>"),
    ("1. one\n2. two", "<ol><li>one</li><li>two</li></ol>"),
    ("line one\nline two\n\nnext", "<p>line one line two</p>\n<p>next</p>"),
    ("```\n<pod>\n```", "<pre><code>&lt;pod&gt;</code></pre>"),
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
])
def test_nothing_from_the_text_becomes_markup(text):
    html = render(text)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "javascript:" not in html.split('href="')[-1] or 'href="' not in html
    assert 'onmouseover="' not in html


def test_empty_text():
    assert render("") == "" and render(None) == ""
