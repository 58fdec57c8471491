"""A sharper debugging page (issue 26): tracebacks with source lines, the plugin source diff
and readable times after a reload, plugin cards that list extension points and a clean
description, lessons whose plugin is not loaded."""
import re

from django.template.loader import render_to_string

from visualizer.panels.common import _result, traceback_frames


# ---------------------------------------------------------------------- 1. a traceback's source lines

def _error_event(lines):
    return {"seq": 9, "cycle": 2, "type": "PluginResult", "point": "Filter", "plugin": "ZonePin", "node": "edge-1",
            "code": "Error", "reasons": ["KeyError: 'zone' at zone_pin.py:22"],
            "error": {"type": "KeyError", "message": "'zone'",
                      "frames": ["zone_pin.py:22 in filter", "lib/zones.py:5 in lookup"], **lines}}


def test_the_traceback_reads_like_pythons_with_each_source_line():
    r = _result(_error_event({"lines": ['zone = lookup(node_info.node.labels)', 'return labels["zone"]']}))
    assert r["error"]["frames"] == ["zone_pin.py:22 in filter", "lib/zones.py:5 in lookup"]
    html = render_to_string("visualizer/partials/_plugin_error.html", {"r": r, "compact": True, "keyprefix": ""})
    frames = re.search(r"<ol [^>]*data-error-frames.*?</ol>", html, re.S).group(0)
    items = re.findall(r"<li.*?</li>", frames, re.S)
    assert len(items) == 2
    assert 'File "zone_pin.py", line 22, in filter' in items[0]
    assert '<code class="tb-source" data-frame-source>zone = lookup(node_info.node.labels)</code>' in items[0]
    assert 'File "lib/zones.py", line 5, in lookup' in items[1]
    assert "return labels[&quot;zone&quot;]" in items[1]           # escaped
    assert items[0].index("File ") < items[0].index("tb-source")
    assert 'data-frame="zone_pin.py:22 in filter"' in items[0]
    assert "Traceback (most recent call last)" in html


def test_a_trace_without_lines_still_shows_its_frames():
    r = _result(_error_event({}))                      # written before "lines" existed
    html = render_to_string("visualizer/partials/_plugin_error.html", {"r": r, "compact": False, "keyprefix": ""})
    assert 'File "zone_pin.py", line 22, in filter' in html and "tb-source" not in html


def test_null_lines_and_odd_frames():
    tb = traceback_frames(["a.py:3 in f", "weird frame", "C:\\x\\b.py:7 in g"], [None, "x", "y" * 300])
    assert tb[0] == {"frame": "a.py:3 in f", "file": "a.py", "line": 3, "function": "f", "source": None}
    assert tb[1]["file"] is None and tb[1]["source"] == "x"
    assert (tb[2]["file"], tb[2]["line"]) == ("C:\\x\\b.py", 7) and len(tb[2]["source"]) == 201
    assert traceback_frames(["a.py:1 in f"], "not a list")[0]["source"] is None
