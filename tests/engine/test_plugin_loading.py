"""Loading out-of-tree plugins (engine.plugins.loader) and the CLI's --plugins (issue 9).

Every plugin file here is written by the test into a temporary folder, as a plugin author's
file outside the project would be.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.plugins import loader, registry
from engine.plugins.loader import PluginLoadError

ROOT = Path(__file__).resolve().parents[2]

NO_SPOT = '''
"""NoSpot keeps pods off spot nodes.

More text.
"""
from engine.framework import Code, Status
from engine.framework.interface import FilterPlugin


class NoSpot(FilterPlugin):
    """Refuses nodes labelled lifecycle=spot."""
    name = "NoSpot"

    def filter(self, state, pod, node_info):
        if node_info.node.labels.get("lifecycle") == "spot":
            return Status(Code.UnschedulableAndUnresolvable, ["node(s) are spot instances"])
        return None


PLUGINS = {"NoSpot": lambda args, handle: NoSpot()}
'''

SCENARIO = '''
kind: Scenario
metadata: {name: spot}
scheduler:
  profiles:
    - plugins:
        filter:
          enabled: [{name: NoSpot}]
objects:
  - {apiVersion: v1, kind: Node, metadata: {name: spot-1, labels: {lifecycle: spot}}, status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: od-1}, status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
'''


@pytest.fixture
def unload():
    """Unload whatever a test loaded."""
    before = {m.source for m in loader.loaded_modules()}
    yield
    for m in loader.loaded_modules():
        if m.source not in before:
            loader.unload(m.source)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def cli(*args, cwd=None, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=120)


# ----------------------------------------------------------------------------- the loader

def test_load_a_file_registers_its_plugins(tmp_path, unload):
    p = write(tmp_path, "no_spot.py", NO_SPOT)
    [lp] = loader.load(str(p))
    assert (lp.name, lp.extension_points) == ("NoSpot", [])     # a lambda factory does not say
    assert lp.summary == "NoSpot keeps pods off spot nodes."      # falls back to the module docstring
    assert lp.file == str(p) and len(lp.digest) == 16
    assert registry.get("NoSpot") is not None and registry.origin("NoSpot") == str(p)
    assert not registry.is_in_tree("NoSpot") and registry.is_in_tree("NodeResourcesFit")
    assert loader.load(str(p)) == [lp]                            # loading twice is a no-op


def test_class_factory_tells_its_extension_points_and_docstring(tmp_path, unload):
    p = write(tmp_path, "cls.py", NO_SPOT.replace('PLUGINS = {"NoSpot": lambda args, handle: NoSpot()}',
                                                   'PLUGINS = {"NoSpot": NoSpot}\nNoSpot.__init__ = lambda self, args, handle: None'))
    [lp] = loader.load(str(p))
    assert lp.extension_points == ["Filter"]
    assert lp.summary == "Refuses nodes labelled lifecycle=spot."


def test_load_a_dotted_module(tmp_path, unload, monkeypatch):
    pkg = tmp_path / "acme_plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "spot.py").write_text(NO_SPOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    [lp] = loader.load("acme_plugins.spot")
    assert lp.module == "acme_plugins.spot" and lp.source == "acme_plugins.spot"


@pytest.mark.parametrize("text,reason", [
    ("x = 1\n", "defines no PLUGINS mapping"),
    ("PLUGINS = [1]\n", "PLUGINS must be a mapping of name to factory, not list"),
    ("PLUGINS = {}\n", "PLUGINS is empty"),
    ("PLUGINS = {'A': 3}\n", "PLUGINS['A']: the factory is not callable"),
    ("PLUGINS = {'': print}\n", "PLUGINS: '' is not a plugin name (a non-empty string)"),
    ("def f(:\n", "SyntaxError: invalid syntax (line 1)"),
    ("import no_such_module_xyz\n", "importing it raised ModuleNotFoundError: No module named 'no_such_module_xyz'"),
    ("raise RuntimeError('boom')\n", "importing it raised RuntimeError: boom (at "),
    ("PLUGINS = {'NodeResourcesFit': print}\n", "a plugin named 'NodeResourcesFit' already exists (an in-tree plugin)"),
])
def test_load_errors_name_the_file_and_the_reason(tmp_path, unload, text, reason):
    p = write(tmp_path, "bad.py", text)
    with pytest.raises(PluginLoadError) as info:
        loader.load(str(p))
    assert info.value.source == str(p)
    assert reason in info.value.reason
    assert not [n for n in registry.out_of_tree_names() if n in ("A", "")]


def test_a_name_loaded_twice_from_two_files_is_refused(tmp_path, unload):
    a = write(tmp_path, "a.py", NO_SPOT)
    b = write(tmp_path, "b.py", NO_SPOT)
    loader.load(str(a))
    with pytest.raises(PluginLoadError) as info:
        loader.load(str(b))
    assert f"a plugin named 'NoSpot' already exists (already loaded from {a})" in info.value.reason


def test_missing_file_and_bad_module_name(unload):
    with pytest.raises(PluginLoadError, match="no such file"):
        loader.load("/nonexistent/plugin.py")
    with pytest.raises(PluginLoadError, match="no module named 'no_such_pkg_abc'"):
        loader.load("no_such_pkg_abc.mod")
    with pytest.raises(PluginLoadError, match="neither a .py file nor a dotted module name"):
        loader.load("not a module!")


def test_reload_picks_up_a_changed_file_and_keeps_the_old_on_failure(tmp_path, unload):
    p = write(tmp_path, "no_spot.py", NO_SPOT)
    [old] = loader.load(str(p))
    assert loader.changed_sources() == []
    p.write_text(NO_SPOT.replace("node(s) are spot instances", "spot, no thanks"))
    assert loader.changed_sources() == [str(p)]
    [new] = loader.reload([str(p)])
    assert new.digest != old.digest and loader.changed_sources() == []
    assert registry.get("NoSpot") is new.factory
    p.write_text("def broken(:\n")
    with pytest.raises(PluginLoadError, match="SyntaxError"):
        loader.reload([str(p)])
    assert registry.get("NoSpot") is new.factory                  # the previous code stays
    assert loader.digests() [str(p)] == new.digest


def test_split_env():
    assert loader.split_env(" a.py, b.mod ,,") == ["a.py", "b.mod"]
    assert loader.split_env("") == [] and loader.split_env(None) == []


# ----------------------------------------------------------------------------- the CLI

def test_cli_runs_a_plugin_file_nobody_in_the_project_wrote(tmp_path):
    p = write(tmp_path, "no_spot.py", NO_SPOT)
    sc = write(tmp_path, "s.yaml", SCENARIO)
    r = cli("run", str(sc), "--plugins", str(p), "--trace", "-")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    spot = [e for e in events if e.get("plugin") == "NoSpot" and e["point"] == "Filter"]
    assert [(e["node"], e["code"]) for e in spot] == [("spot-1", "UnschedulableAndUnresolvable"), ("od-1", "Success")]
    assert [e["node"] for e in events if e["type"] == "Bound"] == ["od-1"]
    v = cli("validate", str(sc), "--plugins", str(p))
    assert v.returncode == 0 and "valid" in v.stdout


def test_cli_without_the_plugin_names_the_way_to_load_it(tmp_path):
    sc = write(tmp_path, "s.yaml", SCENARIO)
    r = cli("validate", str(sc))
    assert r.returncode == 2
    assert "'NoSpot' is not a known plugin" in r.stderr


def test_cli_plugin_load_error_is_exit_2_with_file_and_reason(tmp_path):
    p = write(tmp_path, "bad.py", "x = 1\n")
    sc = write(tmp_path, "s.yaml", SCENARIO)
    r = cli("run", str(sc), "--plugins", str(p))
    assert r.returncode == 2
    assert r.stderr.strip() == f"python -m engine: error: --plugins {p}: defines no PLUGINS mapping (PLUGINS = {{\"Name\": factory}})"
    assert "Traceback" not in r.stderr


def test_cli_loads_a_module_name_from_pythonpath(tmp_path):
    (tmp_path / "acme_spot.py").write_text(NO_SPOT)
    sc = write(tmp_path, "s.yaml", SCENARIO)
    r = cli("run", str(sc), "--plugins", "acme_spot", "--state", "-",
            env_extra={"PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pods"]["default/web"]["nodeName"] == "od-1"


def test_gpu_only_example_loads_through_plugins():
    r = cli("run", "docs/examples/gpu.yaml", "--plugins", "docs/examples/gpu_only.py", "--state", "-")
    assert r.returncode == 0, r.stderr
    pods = json.loads(r.stdout)["pods"]
    assert {k: v["nodeName"] for k, v in pods.items()} == {
        "default/train": "gpu-b", "default/train-big": "gpu-c", "default/web": "cpu-1"}
