"""``python -m engine explain`` (issue 25): what happened to every pod pending at the start."""
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from engine.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["explain", *map(str, argv)])
    return code, out.getvalue(), err.getvalue()


def node(name, cpu="2", taints=None):
    n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
         "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
    if taints:
        n["spec"] = {"taints": taints}
    return n


def pod(name, cpu="500m", node_name=None, scheduler=None, ns="default"):
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
    if node_name:
        p["spec"]["nodeName"] = node_name
    if scheduler:
        p["spec"]["schedulerName"] = scheduler
    return p


GPU_TAINT = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]

SCENARIO = {
    "kind": "Scenario",
    "metadata": {"name": "explain"},
    "simulation": {"bindDuration": "1s"},
    "objects": [
        node("gpu-1", cpu="16", taints=GPU_TAINT), node("n1"), node("n2"),
        pod("running", node_name="n1"),
        pod("web-1"), pod("web-2"),
        pod("big", cpu="3"),
        pod("theirs", scheduler="my-scheduler"),
    ],
}

# FitError.Error() (pkg/scheduler/framework/types.go, v1.28.0): "0/%v nodes are available" +
# ":" then " %v." with the Filter reasons' histogram, each "<count> <reason>", sorted as strings
# and joined with ", ", then " %v." with the PostFilter message; types_test.go's
# TestFitError_Error ("nodes failed two Filter plugins with a non-empty PostFilterMsg") wants
# "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter
# plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter.". The reasons here are
# TaintToleration's "node(s) had untolerated taint {%s: %s}" (taint_toleration.go) and
# NodeResourcesFit's "Insufficient cpu" (fit.go); DefaultPreemption's PostFilter message is
# "preemption: " + the same format over its own statuses (preemption.go: "Preemption is not
# helpful for scheduling" for an UnschedulableAndUnresolvable node, "No preemption victims found
# for incoming pod" for the others).
# The " %v." after the PostFilter message follows DefaultPreemption's own FitError message,
# which ends with "." already: kube-scheduler's message ends with ".." (test_explain_dump.py).
BIG_MESSAGE = ("0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}, 2 Insufficient cpu. "
               "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
               "2 No preemption victims found for incoming pod..")


def scenario_file(tmp_path, data=SCENARIO):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return f


def test_explain_json_lists_each_pending_pod_with_its_outcome(tmp_path):
    code, out, err = run(scenario_file(tmp_path), "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert list(doc) == ["total", "counts", "until", "pods"]
    assert doc["total"] == 4 and doc["until"] is None
    assert doc["counts"] == {"bound": 2, "binding": 0, "pending": 1, "deleted": 0, "not-ours": 1}
    pods = {p["pod"]: p for p in doc["pods"]}
    assert list(pods) == ["default/web-1", "default/web-2", "default/big", "default/theirs"]  # not default/running
    for p in doc["pods"]:
        assert list(p) == ["pod", "outcome", "schedulerName", "node", "time", "attempts", "scores", "message",
                           "plugins", "unblocking_events", "nominated_node", "victims", "deleted", "waiting_on"]
        assert p["waiting_on"] is None
    w1 = pods["default/web-1"]
    assert w1["outcome"] == "bound" and w1["node"] in ("gpu-1", "n1", "n2") and w1["time"] == 1.0
    assert w1["message"] is None and w1["plugins"] == []
    # the top scores of its last cycle, best first, the chosen node first (ties: evaluation order)
    assert 1 <= len(w1["scores"]) <= 3 and w1["scores"][0]["node"] == w1["node"]
    assert [s["score"] for s in w1["scores"]] == sorted((s["score"] for s in w1["scores"]), reverse=True)
    big = pods["default/big"]
    assert big["outcome"] == "pending" and big["node"] is None and big["attempts"] >= 1
    assert big["message"] == BIG_MESSAGE
    assert big["plugins"] == ["NodeResourcesFit", "TaintToleration"]
    # Fit.EventsToRegister: Pod/Delete, Node/Add|Update; TaintToleration: Node/Add|Update
    assert big["unblocking_events"] == ["Pod/Delete", "Node/Add|Update"]
    assert big["nominated_node"] is None and big["victims"] == []
    theirs = pods["default/theirs"]
    assert theirs["outcome"] == "not-ours" and theirs["schedulerName"] == "my-scheduler"


def test_explain_text(tmp_path):
    code, out, err = run(scenario_file(tmp_path))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "4 pods pending at the start: 2 bound, 1 pending, 1 not-ours"
    assert "default/big: still pending after 1 attempt" in lines
    assert f"  {BIG_MESSAGE}" in lines
    assert "  rejected by: NodeResourcesFit, TaintToleration" in lines
    assert "  would be retried on: Pod/Delete, Node/Add|Update" in lines
    # web-1 goes first to the emptier n2; web-2 then ties n1 and n2 and takes n1, the first in
    # evaluation order (HostSelected's ties), listed first among the equal totals
    i = lines.index("default/web-1: bound to n2 at 1s")
    assert lines[i + 1] == "  top scores: n2 473, n1 447"
    i = lines.index("default/web-2: bound to n1 at 1s")
    assert lines[i + 1] == "  top scores: n1 447, n2 447"
    assert lines[-2:] == ["not ours (1):", "  default/theirs: not ours (my-scheduler)"]


def test_explain_pod_and_until(tmp_path):
    f = scenario_file(tmp_path)
    code, out, _ = run(f, "--pod", "default/big", "--json")
    doc = json.loads(out)
    assert code == 0 and [p["pod"] for p in doc["pods"]] == ["default/big"] and doc["total"] == 1
    assert doc["counts"]["pending"] == 1 and doc["counts"]["bound"] == 0
    # at 0.5 s the binds (bindDuration 1s) have not taken effect yet
    code, out, _ = run(f, "--until", "0.5", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["until"] == 0.5
    assert {p["pod"]: p["outcome"] for p in doc["pods"]}["default/web-1"] == "binding"
    code, out, _ = run(f, "--until", "0.5")
    assert out.splitlines()[0].startswith("4 pods pending at the start (run until 0.5s): 0 bound, 2 binding")


def test_explain_errors_exit_2(tmp_path):
    f = scenario_file(tmp_path)
    code, out, err = run(f, "--pod", "default/running")
    assert code == 2 and out == ""
    assert "--pod default/running: no such pod pending at the start" in err
    code, out, err = run(f, "--until", "soon")
    assert code == 2 and "--until" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Scenario\nobjects:\n  - {kind: Pod, metadata: {name: p}, spec: oops}\n")
    code, out, err = run(bad)
    assert code == 2 and out == "" and str(bad) in err and "spec" in err
    code, out, err = run(tmp_path / "missing.yaml")
    assert code == 2 and "missing.yaml" in err


def test_explain_preemption_states_nomination_and_victims():
    code, out, _ = run(ROOT / "docs/examples/preemption.yaml", "--json")
    assert code == 0
    (urgent,) = json.loads(out)["pods"]
    assert urgent["pod"] == "default/urgent" and urgent["outcome"] == "bound" and urgent["node"] == "n3"
    assert urgent["nominated_node"] == "n3" and urgent["victims"] == ["default/f"]


def test_explain_reads_a_kubectl_dump(tmp_path):
    """For an imported dump, exactly the pods pending in the dump are listed."""
    dump = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
        node("gpu-1", cpu="16", taints=GPU_TAINT), node("n1"), node("n2"),
        {**pod("api-0", node_name="n1", ns="shop"), "status": {"phase": "Running"}},
        {**pod("api-1", ns="shop"), "status": {"phase": "Pending"}},
        {**pod("batch-0", cpu="3", ns="jobs"), "status": {"phase": "Pending"}},
        {**pod("done-0", node_name="n2", ns="jobs"), "status": {"phase": "Succeeded"}},
        {**pod("theirs-0", scheduler="volcano", ns="jobs"), "status": {"phase": "Pending"}},
    ]}
    f = tmp_path / "dump.json"
    f.write_text(json.dumps(dump))
    code, out, err = run(f, "--json")
    assert code == 0 and err == ""
    got = {p["pod"]: p["outcome"] for p in json.loads(out)["pods"]}
    assert got == {"shop/api-1": "bound", "jobs/batch-0": "pending", "jobs/theirs-0": "not-ours"}
    big = next(p for p in json.loads(out)["pods"] if p["pod"] == "jobs/batch-0")
    assert big["message"] == BIG_MESSAGE


def test_explain_a_pending_pod_deleted_during_the_run(tmp_path):
    data = {**SCENARIO, "actions": [{"at": "2s", "delete": {"kind": "Pod", "name": "big"}}]}
    code, out, _ = run(scenario_file(tmp_path, data), "--pod", "default/big", "--json")
    (big,) = json.loads(out)["pods"]
    assert code == 0 and big["outcome"] == "deleted"
    assert big["deleted"] == {"time": 2.0, "reason": "Deleted", "preemptor": None}
    code, out, _ = run(scenario_file(tmp_path, data), "--pod", "default/big")
    assert out.splitlines()[2] == "default/big: deleted at 2s"


def test_explain_the_realistic_dump_lists_exactly_its_pending_pods(tmp_path):
    """tests/engine/importers/data/cluster-dump.yaml.gz (21 nodes): every pod pending in the dump
    (no nodeName, not terminal, not being deleted, which skipPodSchedule skips) and no other."""
    import gzip
    text = gzip.decompress((ROOT / "tests/engine/importers/data/cluster-dump.yaml.gz").read_bytes()).decode()
    f = tmp_path / "cluster-dump.yaml"
    f.write_text(text)
    items = yaml.safe_load(text)["items"]
    pending = [p for p in items if p["kind"] == "Pod" and not p["spec"].get("nodeName")
               and p["status"]["phase"] not in ("Succeeded", "Failed")
               and not p["metadata"].get("deletionTimestamp")]
    code, out, err = run(f, "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    by_key = {p["pod"]: p for p in doc["pods"]}
    assert sorted(by_key) == sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pending)
    for p in pending:
        got = by_key[f"{p['metadata']['namespace']}/{p['metadata']['name']}"]
        if p["spec"]["schedulerName"] != "default-scheduler":
            assert got["outcome"] == "not-ours" and got["schedulerName"] == p["spec"]["schedulerName"]
        elif p["spec"].get("schedulingGates"):
            assert got["outcome"] == "pending" and got["plugins"] == ["SchedulingGates"] and got["message"] is None
        else:
            assert got["outcome"] in ("bound", "pending")
            if got["outcome"] == "pending":
                assert got["message"].startswith("0/21 nodes are available: ") and got["plugins"]
    trainer = by_key["default/ml-trainer"]
    assert trainer["outcome"] == "pending" and "NodeResourcesFit" in trainer["plugins"]
    assert ", 15 Insufficient cpu, " in f", {trainer['message'].split(': ', 1)[1]}"


@pytest.mark.usefixtures("lesson_plugins_unloaded_after")
def test_explain_a_pod_waiting_on_permit():
    """The gang lesson at 5 s: train-0 and train-1 are assumed on n1 and n2 and wait on
    Coscheduling's Permit (the state's phase Waiting, waitingPods[...].plugins); the JSON outcome
    stays "binding", waiting_on names the plugins; the text says what it waits for."""
    args = (ROOT / "fixtures/20-gang-scheduling.yaml", "--plugins", ROOT / "docs/examples/coscheduling.py",
            "--until", "5")
    code, out, err = run(*args, "--json")
    assert code == 0 and err == ""
    pods = {p["pod"]: p for p in json.loads(out)["pods"]}
    for name, node_name in (("default/train-0", "n1"), ("default/train-1", "n2")):
        assert pods[name]["outcome"] == "binding" and pods[name]["node"] == node_name
        assert pods[name]["waiting_on"] == ["Coscheduling"] and pods[name]["time"] == 0.0
    assert pods["default/train-2"]["outcome"] == "pending" and pods["default/train-2"]["waiting_on"] is None
    code, out, err = run(*args)
    lines = out.splitlines()
    assert lines[0] == "3 pods pending at the start (run until 5s): 0 bound, 2 binding, 1 pending"
    assert "default/train-0: waiting on Permit (Coscheduling) on n1 (assumed at 0s, not bound yet)" in lines
    assert "default/train-1: waiting on Permit (Coscheduling) on n2 (assumed at 0s, not bound yet)" in lines
    # once the third member completes the quorum at 25 s, all three are bound: nothing waits
    code, out, _ = run(*args[:3], "--json")
    assert {p["outcome"] for p in json.loads(out)["pods"]} == {"bound"}
    assert all(p["waiting_on"] is None for p in json.loads(out)["pods"])


def test_explain_a_pod_binding_without_permit_has_no_waiting_on(tmp_path):
    code, out, _ = run(scenario_file(tmp_path), "--until", "0.5", "--json")
    web1 = next(p for p in json.loads(out)["pods"] if p["pod"] == "default/web-1")
    assert web1["outcome"] == "binding" and web1["waiting_on"] is None
    code, out, _ = run(scenario_file(tmp_path), "--until", "0.5", "--pod", "default/web-1")
    assert out.splitlines()[2].startswith("default/web-1: binding to ")


FLAKY_PLUGIN = '''
from engine.framework.interface import FilterPlugin


class Flaky(FilterPlugin):
    name = "Flaky"

    def filter(self, state, pod, node_info):
        return {"b": None}[pod.name]


PLUGINS = {"Flaky": lambda args, handle: Flaky()}
'''


def test_explain_with_failing_plugin_calls_reports_and_exits_3(tmp_path):
    """As `run` does: the report is written, the failed out-of-tree calls summed up, exit 3."""
    import os
    import subprocess
    import sys
    (tmp_path / "flaky.py").write_text(FLAKY_PLUGIN)
    sc = {"kind": "Scenario", "metadata": {"name": "t"},
          "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Flaky"}]}}}]},
          "objects": [node("n1"), pod("a"), pod("b")]}
    (tmp_path / "s.yaml").write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "engine", "explain", "s.yaml", "--plugins", "flaky.py", "--json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 3, r.stderr
    pods = {p["pod"]: p for p in json.loads(r.stdout)["pods"]}
    assert pods["default/b"]["outcome"] == "bound" and pods["default/a"]["outcome"] == "pending"
    assert "out-of-tree plugin call" in r.stderr.splitlines()[0]
    assert "Flaky Filter: KeyError: 'a'" in r.stderr
