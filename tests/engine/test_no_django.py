"""engine/ is pure Python: no Django, no wall clock, no global random (STYLE.md, engine/__init__)."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
SOURCES = sorted(ENGINE.rglob("*.py"))

# Calls that read the wall clock or the global random state.
WALL_CLOCK = {
    ("time", "time"), ("time", "time_ns"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "localtime"), ("time", "gmtime"),
    ("time", "sleep"),
    ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
}
RANDOM_OK = {"Random"}   # a seeded instance is fine; the module-level functions are not
# The one place the engine package names a clock: the CLI, a process entry point like the web
# server, hands time.perf_counter to the scheduler extenders' HTTP transport (engine/extender.py),
# which only times each HTTP call (its latency, recorded data in the trace, replayed from a
# record); no decision reads it.
WALL_CLOCK_OK = {("engine/cli.py", "time.perf_counter")}


def rel(path):
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def parse(path):
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def dotted(node):
    """'a.b.c' for an attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def test_there_are_sources_to_scan():
    assert len(SOURCES) > 20
    assert ENGINE / "scheduler.py" in SOURCES


@pytest.mark.parametrize("path", SOURCES, ids=rel)
def test_no_django_import(path):
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and dotted(node.func) in ("__import__", "importlib.import_module"):
            names = [a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        else:
            continue
        for name in names:
            assert name.split(".")[0] not in ("django", "channels", "daphne", "visualizer"), \
                f"{rel(path)}:{node.lineno} imports {name}"


@pytest.mark.parametrize("path", SOURCES, ids=rel)
def test_no_global_random_or_wall_clock(path):
    tree = parse(path)
    problems = []
    # names bound by "from time import time", "from random import choice", "from datetime import datetime"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            for a in node.names:
                if a.name not in RANDOM_OK:
                    problems.append(f"{node.lineno}: from random import {a.name}")
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            for a in node.names:
                if ("time", a.name) in WALL_CLOCK:
                    problems.append(f"{node.lineno}: from time import {a.name}")
        if isinstance(node, ast.Attribute):
            name = dotted(node)
            if name is None:
                continue
            parts = name.split(".")
            if len(parts) >= 2 and parts[-2] == "random" and parts[-1] not in RANDOM_OK:
                problems.append(f"{node.lineno}: {name}")
            if len(parts) >= 2 and (parts[-2], parts[-1]) in WALL_CLOCK and (rel(path), name) not in WALL_CLOCK_OK:
                problems.append(f"{node.lineno}: {name}")
    assert not problems, f"{rel(path)}: " + "; ".join(problems)


def test_the_scan_catches_what_it_should(tmp_path):
    """The checks above find each forbidden use (guards against a scan that finds nothing)."""
    bad = tmp_path / "bad.py"
    bad.write_text("import random\nimport time\nfrom datetime import datetime\nimport django.conf\n"
                   "x = random.choice([1])\ny = time.time()\nz = datetime.now()\n"
                   "from random import shuffle\nr = random.Random(0)\n")
    with pytest.raises(AssertionError) as e:
        test_no_global_random_or_wall_clock(bad)
    for needle in ("random.choice", "time.time", "datetime.now", "from random import shuffle"):
        assert needle in str(e.value)
    assert "random.Random" not in str(e.value)
    with pytest.raises(AssertionError, match="imports django.conf"):
        test_no_django_import(bad)


def test_importing_engine_loads_no_django():
    code = ("import sys, engine, engine.cli, engine.stepper, engine.plugins.registry\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'channels', 'daphne', 'visualizer'))\n"
            "print(','.join(bad))\n")
    env = dict(os.environ)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_running_a_scenario_loads_no_django():
    code = ("import sys\n"
            "from engine import Scenario, Engine, Trace\n"
            "sc = Scenario.from_text('kind: Scenario\\nmetadata: {name: x}\\nobjects:\\n"
            "  - {apiVersion: v1, kind: Node, metadata: {name: n}, status: {allocatable: {cpu: 1, pods: 9}}}\\n"
            "  - {apiVersion: v1, kind: Pod, metadata: {name: p}}\\n')\n"
            "ev = []; t = Trace(); t.add_sink(ev.append)\n"
            "e = Engine(sc, t); e.run(); e.state()\n"
            "assert ev\n"
            "print('django' in sys.modules)\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
