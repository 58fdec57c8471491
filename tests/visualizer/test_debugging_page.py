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


# ---------------------------------------------------------------------- 2. what changed: the source diff, times, one banner per file

import textwrap  # noqa: E402

import pytest  # noqa: E402

from engine.plugins import loader  # noqa: E402
from visualizer import changes, runner  # noqa: E402
from visualizer.models import Session  # noqa: E402
from visualizer.templatetags.changes_tags import readable_time, utc_text  # noqa: E402

TWO_PLUGINS = '''
from engine.framework import Code, Status
from engine.framework.interface import FilterPlugin, ScorePlugin


class AvoidNode(FilterPlugin):
    """Keeps pods off one node."""
    name = "AvoidNode"

    def filter(self, state, pod, node_info):
        if node_info.node.name == "{node}":
            return Status(Code.Unschedulable, ["AvoidNode avoids {node}"])
        return None


class Flat(ScorePlugin):
    name = "Flat"

    def score(self, state, pod, node_name):
        return 1, None


PLUGINS = {{"AvoidNode": lambda args, handle: AvoidNode(), "Flat": lambda args, handle: Flat()}}
'''

TWO_SCENARIO = textwrap.dedent("""\
    kind: Scenario
    metadata: {name: avoid2, title: Avoid a node}
    scheduler:
      profiles:
        - plugins: {multiPoint: {enabled: [{name: AvoidNode}, {name: Flat}]}}
    objects:
      - {kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - {kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "4", pods: "10"}}}
      - kind: Pod
        metadata: {name: a}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
    """)


@pytest.fixture
def two(tmp_path):
    path = tmp_path / "avoid_two.py"
    path.write_text(TWO_PLUGINS.format(node="n2"))
    loader.load(str(path))
    yield path
    loader.unload(str(path))


def test_a_unified_diff_with_line_numbers_bounded():
    d = changes.source_diff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nX\ne\nf\ng\nh\nnew\n")
    assert (d["added"], d["removed"], d["hidden"]) == (2, 1, 0)
    kinds = [(r["kind"], r["old"], r["new"], r["text"]) for r in d["rows"]]
    assert kinds[0][0] == "hunk" and kinds[0][3] == "@@ -1,8 +1,9 @@"
    assert ("del", 4, None, "d") in kinds and ("add", None, 4, "X") in kinds and ("add", None, 9, "new") in kinds
    assert ("ctx", 5, 5, "e") in kinds
    big = changes.source_diff("", "\n".join(f"line {i} " + "x" * 400 for i in range(1000)))
    assert len(big["rows"]) == changes.MAX_DIFF_LINES and big["hidden"] == 1001 - changes.MAX_DIFF_LINES
    assert all(len(r["text"]) <= changes.MAX_DIFF_LINE + 1 for r in big["rows"])
    assert changes.source_diff("same", "same")["identical"]
    assert changes.source_diff(None, "x")["unavailable"].startswith("the old source was not kept")


def test_times_read_as_utc_text_in_a_time_element():
    assert utc_text("2026-11-26T14:44:03.187035+00:00") == "14:44:03 UTC, 26 Nov 2026"
    html = str(readable_time("2026-11-26T14:44:03.187035+00:00"))
    assert html == ('<time datetime="2026-11-26T14:44:03Z" data-local-time title="14:44:03 UTC, 26 Nov 2026">'
                    '14:44:03 UTC, 26 Nov 2026</time>')
    assert str(readable_time("not a time")) == "not a time"


@pytest.mark.django_db
def test_the_changes_page_shows_the_source_diff_and_a_readable_time(two, client):
    session = runner.create_session(TWO_SCENARIO, "")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    two.write_text(TWO_PLUGINS.format(node="n1"))
    changes.reload_session(session.pk)
    row = Session.objects.get(pk=session.pk)
    [d] = row.baseline["diffs"]
    assert d["file"] == "avoid_two.py" and d["plugins"] == ["AvoidNode", "Flat"]
    assert (d["added"], d["removed"]) == (2, 2)                    # the two lines naming the node
    assert {(r["kind"], r["text"].strip()) for r in d["rows"] if r["kind"] != "ctx"} >= {
        ("del", 'if node_info.node.name == "n2":'), ("add", 'if node_info.node.name == "n1":')}
    page = client.get(f"/s/{session.presenter_token}/changes/").content.decode()
    assert 'data-source-diff="avoid_two.py"' in page
    assert re.search(r'<tr class="diff-del" data-diff-line="del"><td class="ln">\d+</td><td class="ln"></td>'
                     r'<td class="sign"[^>]*>−</td><td class="src"><code>\s*if node_info.node.name == &quot;n2&quot;:',
                     page)
    assert re.search(r'<tr class="diff-add" data-diff-line="add"><td class="ln"></td><td class="ln">\d+</td>', page)
    assert "+00:00" not in page and re.search(r'<time datetime="[0-9T:-]+Z" data-local-time', page)
    assert re.search(r"\d\d:\d\d:\d\d UTC, \d+ [A-Z][a-z]{2} \d{4}</time>", page)
    assert "js/local-time.js" in page


@pytest.mark.django_db
def test_a_baseline_from_before_diffs_still_renders(two, client):
    session = runner.create_session(TWO_SCENARIO, "")
    two.write_text(TWO_PLUGINS.format(node="n1"))
    changes.reload_session(session.pk)
    row = Session.objects.get(pk=session.pk)
    row.baseline.pop("diffs")
    row.save(update_fields=["baseline"])
    page = client.get(f"/s/{session.presenter_token}/changes/")
    assert page.status_code == 200 and "data-source-diffs" not in page.content.decode()


@pytest.mark.django_db
def test_the_other_code_banner_comes_once_per_file(two, client):
    session = runner.create_session(TWO_SCENARIO, "")
    old = loader.digests()[str(two)]
    two.write_text(TWO_PLUGINS.format(node="n1"))
    loader.reload([str(two)])                      # as a server restarted with the new file
    runner.reset()
    new = loader.digests()[str(two)]
    notes = changes.code_notes(Session.objects.get(pk=session.pk).plugin_code)
    assert notes == [f"This session was recorded with AvoidNode, Flat from avoid_two.py@{old[:8]}; the server now "
                     f"runs @{new[:8]}. The run shown is replayed with the server's code: Reload plugins to adopt "
                     f"it as this session's code."]
    page = client.get(f"/s/{session.presenter_token}/").content.decode()
    assert page.count("This session was recorded with") == 1
    loader.unload(str(two))
    notes = changes.code_notes(Session.objects.get(pk=session.pk).plugin_code)
    assert notes == [f"This session was recorded with AvoidNode, Flat from avoid_two.py@{old[:8]}; "
                     f"the server has none of AvoidNode, Flat loaded now."]
    loader.load(str(two))


# ---------------------------------------------------------------------- 3. plugin cards: extension points and a clean description

from visualizer import plugins as vplugins  # noqa: E402

CARDS = '''"""Cards: plugins built in several ways, for the library's cards.

This second paragraph must never show.
"""
from engine.framework.interface import FilterPlugin, ScorePlugin, PermitPlugin


class Fancy(FilterPlugin, ScorePlugin):
    """Keeps ``zone`` pods on :class:`~engine.framework.NodeInfo` nodes of their zone, e.g. zone
    ``a``; see `the docs <https://example.com>`_ and **more**.

    Details that never show.
    """
    name = "Fancy"

    def __init__(self, args, handle):
        self.handle = handle


class Plain(PermitPlugin):
    name = "Plain"


def make_fancy(args, handle):
    """The factory: ``args`` is this plugin's pluginConfig args."""
    assert handle is not None and args == {}
    return Fancy(args, handle)


def documented(args, handle):
    """Lets every pod in, *always*."""
    return Plain()


def broken(args, handle):
    raise RuntimeError("needs a database")


PLUGINS = {"FancyByFunction": make_fancy, "PlainByLambda": lambda args, handle: Plain(),
           "Documented": documented, "Broken": broken, "FancyClass": Fancy}
'''


@pytest.fixture
def cards(tmp_path):
    path = tmp_path / "cards.py"
    path.write_text(CARDS)
    loader.load(str(path))
    yield path
    loader.unload(str(path))


def test_cards_list_extension_points_of_function_and_lambda_factories(cards):
    by = {p["name"]: p for p in vplugins.loaded()}
    assert by["FancyByFunction"]["extension_points"] == ["Filter", "Score"]
    assert by["FancyClass"]["extension_points"] == ["Filter", "Score"]
    assert by["PlainByLambda"]["extension_points"] == ["Permit"]
    assert by["Broken"]["extension_points"] == []
    assert by["Broken"]["build_error"] == "could not be built to inspect: RuntimeError: needs a database"
    assert by["FancyByFunction"]["build_error"] == ""


def test_cards_have_a_clean_one_line_description(cards):
    by = {p["name"]: p["summary"] for p in vplugins.loaded()}
    fancy = "Keeps zone pods on NodeInfo nodes of their zone, e.g. zone a; see the docs and more."
    assert by["FancyByFunction"] == by["FancyClass"] == fancy          # the class's, not the factory's
    assert by["Documented"] == "Lets every pod in, always."             # a function factory's own
    # no docstring of its own (Plain has none): the module's first sentence, whole
    assert by["PlainByLambda"] == "Cards: plugins built in several ways, for the library's cards."
    assert by["Broken"] == by["PlainByLambda"]


def test_the_library_page_shows_the_cards(cards, client):
    html = client.get("/").content.decode()
    card = re.search(r'<li class="plugin" data-loaded-plugin="PlainByLambda">.*?</li>', html, re.S).group(0)
    assert '<span class="badge">Permit</span>' in card
    broken = re.search(r'<li class="plugin" data-loaded-plugin="Broken">.*?</li>', html, re.S).group(0)
    assert "could not be built to inspect: RuntimeError: needs a database" in broken
    assert "``" not in html and ":class:" not in html


@pytest.mark.parametrize("doc,want", [
    ("Uses ``Status`` and :class:`~engine.framework.Status`.", "Uses Status and Status."),
    (":func:`engine.testing.run` runs it.", "engine.testing.run runs it."),
    ("See :ref:`the guide <guide>` and [docs](https://x.y).", "See the guide and docs."),
    ("A *very* **bold** `claim` here", "A very bold claim here"),
    ("First line\n    continues here. Second sentence.", "First line continues here."),
    ("Version v1.28 i.e. this one. Next.", "Version v1.28 i.e. this one."),
    ("Example::\n\n    code", "Example:"),
    ("", ""),
])
def test_first_sentence(doc, want):
    assert vplugins.first_sentence(doc) == want


# ---------------------------------------------------------------------- 4. a lesson whose plugin is not loaded

from pathlib import Path  # noqa: E402

from visualizer.scenarios import list_scenarios, plugin_names  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GANG = ROOT / "fixtures" / "20-gang-scheduling.yaml"
COSCHEDULING = ROOT / "docs" / "examples" / "coscheduling.py"


def test_a_scenario_names_the_out_of_tree_plugins_its_profiles_enable():
    doc = {"scheduler": {"profiles": [
        {"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}, {"name": "NodeResourcesFit"}]},
                     "filter": {"enabled": [{"name": "ZonePin"}, {"name": "Coscheduling"}],
                                "disabled": [{"name": "Gone"}, {"name": "*"}]}}},
        {"plugins": "junk"}, "junk"]}}
    assert plugin_names(doc) == ("Coscheduling", "ZonePin")
    assert plugin_names({"scheduler": None}) == () and plugin_names([]) == ()


@pytest.fixture
def gang_only(tmp_path, settings):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / GANG.name).write_text(GANG.read_text())
    (lib / "07-move-request-cycle.yaml").write_text((ROOT / "fixtures" / "07-move-request-cycle.yaml").read_text())
    settings.SCENARIO_FIXTURES_DIR = lib
    return lib


@pytest.mark.django_db
def test_the_gang_lesson_without_its_plugin_says_so_and_cannot_start(gang_only, client):
    [gang] = [e for e in list_scenarios(gang_only) if e.name == "gang-scheduling"]
    assert gang.plugins == ("Coscheduling",) and gang.missing_plugins == ["Coscheduling"]
    assert gang.plugin_hint == "SCHEDULER_PLUGINS=docs/examples/coscheduling.py bash scripts/run.sh"
    html = client.get("/").content.decode()
    card = re.search(r'<li class="scenario scenario--needs-plugin" data-scenario="gang-scheduling".*?</li>',
                     html, re.S).group(0)
    assert 'data-missing-plugins="Coscheduling"' in card
    assert re.search(r'<button type="submit" data-action="start" disabled aria-describedby="needs-\d+" '
                     r'title="Cannot start: needs the plugin Coscheduling, not loaded on this server">', card)
    assert "<code>Coscheduling</code>, which this server has not loaded: it cannot be started here." in card
    assert ("<code data-plugin-hint>SCHEDULER_PLUGINS=docs/examples/coscheduling.py bash scripts/run.sh</code>"
            in card)
    # the other lesson starts as before
    other = re.search(r'<li class="scenario" data-scenario="move-request-cycle".*?</li>', html, re.S).group(0)
    assert 'data-action="start">' in other and "data-needs-plugin" not in other


@pytest.mark.django_db
def test_with_its_plugin_loaded_the_gang_lesson_starts(gang_only, client):
    loader.load(str(COSCHEDULING))
    try:
        [gang] = [e for e in list_scenarios(gang_only) if e.name == "gang-scheduling"]
        assert gang.missing_plugins == [] and gang.plugin_hint == ""
        html = client.get("/").content.decode()
        card = re.search(r'<li class="scenario" data-scenario="gang-scheduling".*?</li>', html, re.S).group(0)
        assert 'data-action="start">' in card and "data-needs-plugin" not in card
        r = client.post("/sessions/", {"fixture": GANG.name})
        assert r.status_code == 302
    finally:
        loader.unload(str(COSCHEDULING))


def test_a_plugin_beside_the_scenario_is_named_in_the_hint(tmp_path, settings):
    (tmp_path / "zone_pin.py").write_text('PLUGINS = {"ZonePin": None}\n')
    (tmp_path / "z.yaml").write_text(textwrap.dedent("""\
        kind: Scenario
        metadata: {name: z}
        scheduler: {profiles: [{plugins: {filter: {enabled: [{name: ZonePin}, {name: Nowhere}]}}}]}
        """))
    [e] = list_scenarios(tmp_path)
    assert e.missing_plugins == ["ZonePin", "Nowhere"]
    assert e.plugin_hint == "SCHEDULER_PLUGINS=path/to/plugin.py bash scripts/run.sh"   # not every file known
    (tmp_path / "z.yaml").write_text("kind: Scenario\nmetadata: {name: z}\n"
                                     "scheduler: {profiles: [{plugins: {filter: {enabled: [{name: ZonePin}]}}}]}\n")
    [e] = list_scenarios(tmp_path)
    assert e.plugin_hint == f"SCHEDULER_PLUGINS={(tmp_path / 'zone_pin.py').resolve()} bash scripts/run.sh"
