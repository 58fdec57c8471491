"""The headless CLI (SPEC.md §2), run as a subprocess: exit codes, messages, outputs,
determinism."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# A scenario with a little of everything: zones, spread, anti-affinity, taints, a PDB,
# priority classes, preemption, timed actions, gates and a second profile.
RICH = {
    "kind": "Scenario",
    "metadata": {"name": "rich", "title": "Everything at once"},
    "scheduler": {"profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "second"}]},
    "simulation": {"bindDuration": "200ms", "schedulingCycleDuration": "100ms"},
    "objects": [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 1,
         "globalDefault": True},
        *[{"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": f"n{i}", "labels": {"topology.kubernetes.io/zone": f"z{i % 2}",
                                                    "kubernetes.io/hostname": f"n{i}", f"extra-{i}": "x"}},
           "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]} if i == 3 else {},
           "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}} for i in range(4)],
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "old"}}}},
        *[{"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"old-{i}", "labels": {"app": "old", f"k{i}": "v"}},
           "spec": {"nodeName": f"n{i % 3}", "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1500m"}}}]}} for i in range(3)],
        *[{"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"web-{i}", "labels": {"app": "web", "idx": str(i)}},
           "spec": {"priorityClassName": "high",
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                   "whenUnsatisfiable": "ScheduleAnyway",
                                                   "labelSelector": {"matchLabels": {"app": "web"}}}],
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                           "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}} for i in range(4)],
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
         "spec": {"schedulingGates": [{"name": "wait"}], "containers": [{"name": "c"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "second-1"},
         "spec": {"schedulerName": "second", "containers": [{"name": "c"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nobody"},
         "spec": {"schedulerName": "nobody", "containers": [{"name": "c"}]}},
    ],
    "actions": [
        {"at": "2s", "create": {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": "n9", "labels": {"topology.kubernetes.io/zone": "z1"}},
                                "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"}}}},
        {"at": "3s", "update": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
                                "spec": {"containers": [{"name": "c"}]}}},
        {"at": "4s", "delete": {"kind": "Pod", "name": "never-was"}},
        {"at": "5s", "delete": {"kind": "Node", "name": "n0"}},
    ],
}

VALID = {
    "kind": "Scenario", "metadata": {"name": "valid"},
    "objects": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}},
    ],
    "actions": [{"at": "5s", "create": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"},
                                        "spec": {"containers": [{"name": "c"}]}}}],
}

INVALID_TEXT = """\
kind: Scenario
metadata: {name: bad}
objects:
  - {apiVersion: v1, kind: Node, metadata: {name: n1}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2}}
  - {apiVersion: v1, kind: Node, metadata: {name: n3}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec:
      containers:
        - name: c
          resources: {requests: {cpu: 12x}}
"""


def cli(*args, env=None, cwd=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "engine", *map(str, args)], capture_output=True, text=True,
                          env=e, cwd=cwd or ROOT, timeout=120)


def write_yaml(path, data):
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def assert_clean_error(r):
    """Exit 2, one paragraph on stderr, no traceback, nothing on stdout."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.strip(), "no message"
    assert "\n\n" not in r.stderr.strip(), "more than one paragraph"
    assert r.stdout == ""


@pytest.fixture
def valid(tmp_path):
    return write_yaml(tmp_path / "valid.yaml", VALID)


@pytest.fixture
def invalid(tmp_path):
    p = tmp_path / "invalid.yaml"
    p.write_text(INVALID_TEXT)
    return p


# ------------------------------------------------------------------------------ validate

def test_validate_a_valid_file(valid):
    r = cli("validate", valid)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert str(valid) in r.stdout and "valid" in r.stdout


def test_validate_an_invalid_file(invalid):
    r = cli("validate", invalid)
    assert_clean_error(r)
    assert str(invalid) in r.stderr
    assert 'objects[3].spec.containers[0].resources.requests.cpu: "12x" is not a quantity' in r.stderr


def test_validate_reports_every_problem(tmp_path):
    p = tmp_path / "many.yaml"
    p.write_text("kind: Scenario\nmetadata: {name: Many}\nsimulation: {bindDuration: 5x}\n"
                 "objects:\n  - {apiVersion: v1, kind: Widget}\n")
    r = cli("validate", p)
    assert_clean_error(r)
    assert "3 problems" in r.stderr
    for place in ("metadata.name", "simulation.bindDuration", "objects[0].kind"):
        assert place in r.stderr


def test_invalid_yaml_names_line_and_column(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("kind: Scenario\nmetadata: {name: x\n")
    for cmd in ("validate", "run"):
        r = cli(cmd, p)
        assert_clean_error(r)
        assert str(p) in r.stderr and "line 3, column 1" in r.stderr


@pytest.mark.parametrize("cmd", ["validate", "run"])
def test_unknown_plugin_is_refused_naming_the_file_and_profile(tmp_path, cmd):
    p = write_yaml(tmp_path / "plug.yaml", {
        "kind": "Scenario", "metadata": {"name": "plug"},
        "scheduler": {"profiles": [{"schedulerName": "default-scheduler"},
                                   {"schedulerName": "second",
                                    "plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}]}})
    r = cli(cmd, p)
    assert_clean_error(r)
    assert str(p) in r.stderr
    assert "scheduler.profiles[1]" in r.stderr and "NoSuchPlugin" in r.stderr


@pytest.mark.parametrize("cmd", ["validate", "run"])
def test_missing_file(tmp_path, cmd):
    p = tmp_path / "nowhere.yaml"
    r = cli(cmd, p)
    assert_clean_error(r)
    assert str(p) in r.stderr
    assert "No such file or directory" in r.stderr


def test_bad_arguments_exit_2(valid):
    for args in ([], ["frobnicate", valid], ["run"], ["run", valid, "--bogus"]):
        r = cli(*args)
        assert r.returncode == 2, args
        assert "Traceback" not in r.stderr


# ------------------------------------------------------------------------------ run

def test_run_writes_state_and_trace_files(valid, tmp_path):
    state, trace = tmp_path / "state.json", tmp_path / "trace.jsonl"
    r = cli("run", valid, "--state", state, "--trace", trace)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    s = json.loads(state.read_text())
    assert set(s) >= {"time", "schedulingCycle", "moveRequestCycle", "queues", "pods", "deletedPods", "metrics"}
    assert s["pods"]["default/a"]["phase"] == "Running" and s["pods"]["default/a"]["nodeName"] == "n1"
    assert s["pods"]["default/b"]["queue"] == "unschedulablePods"
    assert s["queues"]["unschedulablePods"] == ["default/b"]
    assert s["pods"]["default/c"]["phase"] == "Running"
    assert s["time"] == 5.0
    lines = trace.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all({"seq", "time", "type"} <= set(e) for e in events)
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)
    assert {"QueueTransition", "CycleStart", "PluginResult", "CycleEnd", "Bound"} <= {e["type"] for e in events}


def test_run_state_to_stdout(valid):
    r = cli("run", valid, "--state", "-")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["pods"]["default/a"]["phase"] == "Running"


def test_run_trace_to_stdout(valid, tmp_path):
    state = tmp_path / "state.json"
    r = cli("run", valid, "--trace", "-", "--state", state)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events and events[0]["seq"] == 0
    assert json.loads(state.read_text())["time"] == 5.0


def test_run_without_outputs_prints_its_summary(valid):
    # issue 25: with neither --state nor --trace, run prints the one-screen summary
    # (tests/engine/test_cli_run_summary.py has the details)
    r = cli("run", valid)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines()[0] == "3 pods: 2 bound (2 by this run), 1 pending, 0 deleted (0 preempted), 0 not ours"


def test_state_and_trace_cannot_both_be_stdout(valid):
    r = cli("run", valid, "--state", "-", "--trace", "-")
    assert_clean_error(r)


def test_until(valid):
    r = cli("run", valid, "--until", "2", "--state", "-")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["time"] == 2.0
    assert "default/c" not in s["pods"]          # created at 5s
    r = cli("run", valid, "--until", "5s", "--state", "-")
    s = json.loads(r.stdout)
    assert s["pods"]["default/c"]["phase"] == "Running"   # scheduling at T is included


@pytest.mark.parametrize("until", ["soon", "-1", "5x", ""])
def test_bad_until(valid, until):
    r = cli("run", valid, "--until", until)
    assert_clean_error(r)
    assert "--until" in r.stderr


def test_unwritable_output_exits_2(valid, tmp_path):
    r = cli("run", valid, "--state", tmp_path / "no" / "such" / "dir" / "s.json")
    assert_clean_error(r)
    assert "No such file or directory" in r.stderr
    assert "error: :" not in r.stderr


def test_json_scenario(tmp_path):
    p = tmp_path / "valid.json"
    p.write_text(json.dumps(VALID))
    assert cli("validate", p).returncode == 0
    r = cli("run", p, "--state", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pods"]["default/a"]["phase"] == "Running"


def test_json_and_yaml_give_the_same_run(tmp_path):
    y = write_yaml(tmp_path / "rich.yaml", RICH)
    j = tmp_path / "rich.json"
    j.write_text(json.dumps(RICH))
    outs = []
    for p in (y, j):
        r = cli("run", p, "--state", tmp_path / f"{p.suffix}.state", "--trace", tmp_path / f"{p.suffix}.trace")
        assert r.returncode == 0, r.stderr
        outs.append(((tmp_path / f"{p.suffix}.state").read_bytes(), (tmp_path / f"{p.suffix}.trace").read_bytes()))
    assert outs[0] == outs[1]


# ------------------------------------------------------------------------------ determinism

def _run_rich(tmp_path, tag, hashseed):
    scenario = tmp_path / "rich.yaml"
    if not scenario.exists():
        write_yaml(scenario, RICH)
    state, trace = tmp_path / f"{tag}.state.json", tmp_path / f"{tag}.trace.jsonl"
    r = cli("run", scenario, "--until", "40", "--state", state, "--trace", trace,
            env={"PYTHONHASHSEED": str(hashseed)})
    assert r.returncode == 0, r.stderr
    return state.read_bytes(), trace.read_bytes()


def test_rich_scenario_really_exercises_the_engine(tmp_path):
    _, trace = _run_rich(tmp_path, "x", 0)
    types = {json.loads(line)["type"] for line in trace.decode().splitlines()}
    assert {"PreemptionCandidate", "PodDeleted", "Bound", "ActionSkipped", "HostSelected"} <= types


def test_same_scenario_twice_is_byte_identical(tmp_path):
    a = _run_rich(tmp_path, "a", 0)
    b = _run_rich(tmp_path, "b", 0)
    assert a == b


def test_byte_identical_whatever_the_hash_seed(tmp_path):
    runs = [_run_rich(tmp_path, f"s{seed}", seed) for seed in (1, 2, 12345, 4294967295)]
    for other in runs[1:]:
        assert other[0] == runs[0][0], "state differs between hash seeds"
        assert other[1] == runs[0][1], "trace differs between hash seeds"
