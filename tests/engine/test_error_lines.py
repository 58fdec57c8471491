"""A plugin error's traceback carries each frame's source line (issue 26, "a sharper debugging
page"): ``error.lines`` in the trace, parallel to ``error.frames``, read when the error happens."""
import json
import importlib.util
import sys
import textwrap

from engine import Engine, Scenario, Trace
from engine.framework import guard
from engine.framework.guard import MAX_LINE, PluginCallError, source_line
from engine.plugins import registry


def _nodes(*names):
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for n in names]


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
       "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}

PLUGIN_SRC = '''\
from engine.framework.interface import FilterPlugin, ScorePlugin


def lookup(labels):
    return labels["topology.kubernetes.io/zone"]


class Bug(FilterPlugin):
    name = "Bug"

    def filter(self, state, pod, node_info):
        zone = lookup(node_info.node.labels)     # raises KeyError
        return None


class Wrong(FilterPlugin):
    name = "Wrong"

    def filter(self, state, pod, node_info):
        return False
'''


def _load(tmp_path, name="buggy_mod"):
    path = tmp_path / f"{name}.py"
    path.write_text(PLUGIN_SRC)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return path, mod


def _run(cls, objects):
    registry.register(cls.name, lambda args, handle: cls())
    try:
        d = {"kind": "Scenario", "metadata": {"name": "t"},
             "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": cls.name}]}}}]},
             "objects": objects}
        events = []
        tr = Trace()
        tr.add_sink(events.append)
        Engine(Scenario.from_dict(d), tr).run(0)
        return events
    finally:
        registry.unregister(cls.name)


def _result(events, plugin):
    return [e for e in events if e["type"] == "PluginResult" and e["plugin"] == plugin and e["code"] == "Error"][0]


def test_each_frame_has_its_source_line_innermost_last(tmp_path):
    path, mod = _load(tmp_path)
    try:
        err = _result(_run(mod.Bug, _nodes("n1") + [POD]), "Bug")["error"]
    finally:
        sys.modules.pop("buggy_mod", None)
    assert [f.rsplit(" in ", 1)[1] for f in err["frames"]] == ["filter", "lookup"]
    assert err["lines"] == ["zone = lookup(node_info.node.labels)     # raises KeyError",
                            'return labels["topology.kubernetes.io/zone"]']
    # frames exactly as before: "file:line in function"
    assert err["frames"][0].endswith(":12 in filter") and err["frames"][1].endswith(":5 in lookup")
    assert list(err) == ["type", "message", "frames", "lines"]


def test_the_line_is_read_when_the_error_happens_not_later(tmp_path):
    path, mod = _load(tmp_path, "buggy_mod2")
    try:
        events = _run(mod.Bug, _nodes("n1") + [POD])
    finally:
        sys.modules.pop("buggy_mod2", None)
    before = json.dumps(_result(events, "Bug")["error"])
    path.write_text("# rewritten\n" * 20)        # the file changes afterwards (a reload)
    assert json.loads(before)["lines"][0].startswith("zone = lookup(")


def test_invalid_return_has_the_def_line(tmp_path):
    path, mod = _load(tmp_path, "buggy_mod3")
    try:
        err = _result(_run(mod.Wrong, _nodes("n1") + [POD]), "Wrong")["error"]
    finally:
        sys.modules.pop("buggy_mod3", None)
    assert err["type"] == "InvalidReturn"
    assert err["frames"][0].endswith(" in filter")
    assert err["lines"] == ["def filter(self, state, pod, node_info):"]


def test_lines_are_bounded_and_unreadable_lines_are_null(tmp_path):
    p = tmp_path / "long.py"
    p.write_text("x = '" + "y" * 500 + "'\n\n")
    line = source_line(str(p), 1)
    assert len(line) == MAX_LINE + 1 and line.endswith("…")
    assert source_line(str(p), 2) is None              # blank
    assert source_line(str(p), 99) is None             # past the end
    assert source_line(str(tmp_path / "gone.py"), 1) is None
    assert source_line("<string>", 1) is None


def test_lines_stay_parallel_to_frames():
    e = PluginCallError("P", "Filter", "KeyError", "x", ["a.py:1 in f", "b.py:2 in g"], lines=["f()"])
    assert e.to_json()["lines"] == ["f()", None]
    assert PluginCallError("P", "Filter", "KeyError", "x").to_json() == {
        "type": "KeyError", "message": "x", "frames": [], "lines": []}
    old = PluginCallError("P", "Filter", "KeyError", "x", ["a.py:1 in f"])
    object.__delattr__(old, "lines")                      # unpickled from before "lines" existed
    assert old.to_json()["lines"] == [None]


def test_frames_function_is_unchanged():
    assert guard.plugin_frames(None) == []


def test_a_loaded_plugin_shows_the_lines_of_the_code_that_runs_not_of_a_file_edited_since(tmp_path):
    from engine.plugins import loader
    path = tmp_path / "edited_mod.py"
    path.write_text(PLUGIN_SRC + '\nPLUGINS = {"EditedBug": lambda args, handle: Bug()}\n')
    loader.load(str(path))
    try:
        # the file is edited (lines shifted) but not reloaded: the old code still runs
        path.write_text("# a comment that shifts every line\n" * 3 + PLUGIN_SRC.replace("# raises KeyError", "# fixed?"))
        d = {"kind": "Scenario", "metadata": {"name": "t"},
             "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "EditedBug"}]}}}]},
             "objects": _nodes("n1") + [POD]}
        events = []
        tr = Trace()
        tr.add_sink(events.append)
        Engine(Scenario.from_dict(d), tr).run(0)
        err = [e for e in events if e["type"] == "PluginResult" and e["code"] == "Error"][0]["error"]
        assert err["frames"][0].endswith(":12 in filter")
        assert err["lines"] == ["zone = lookup(node_info.node.labels)     # raises KeyError",
                                'return labels["topology.kubernetes.io/zone"]']
    finally:
        loader.unload(str(path))
    assert guard.source_line(str(path), 1) == "# a comment that shifts every line"   # forgotten: the file now
