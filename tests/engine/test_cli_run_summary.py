"""``python -m engine run FILE`` with neither ``--state`` nor ``--trace`` (issue 25): a
one-screen summary of every pod of the run, read from what the engine emits
(``engine.explain.explain(..., which="all")`` and ``format_summary``)."""
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from engine.cli import main
from engine.explain import explain, format_summary
from engine.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cli_explain import BIG_MESSAGE, FLAKY_PLUGIN, SCENARIO, node, pod  # noqa: E402


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["run", *map(str, argv)])
    return code, out.getvalue(), err.getvalue()


def write(tmp_path, data, name="s.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return f


# test_cli_explain's cluster (gpu-1 tainted, n1 and n2 with 2 cpus; running on n1; web-1, web-2
# fit; big asks 3 cpus; theirs is another scheduler's) and two pods created by actions: late
# fits, late-big does not, for the same reasons as big (the same FitError message).
WITH_ACTIONS = {**SCENARIO, "actions": [{"at": "3s", "create": pod("late")},
                                        {"at": "4s", "create": pod("late-big", cpu="3")}]}


def test_run_prints_the_summary_of_every_pod_of_the_run(tmp_path):
    code, out, err = run(write(tmp_path, WITH_ACTIONS))
    assert (code, err) == (0, "")
    # BIG_MESSAGE is derived from upstream's FitError.Error() in test_cli_explain.py
    assert out == (
        "7 pods: 4 bound (3 by this run), 2 pending, 0 deleted (0 preempted), 1 not ours\n"
        "pending (2):\n"
        f"  2 pods: {BIG_MESSAGE}\n"
        "    default/big, default/late-big\n"
        "not ours (1):\n"
        "  my-scheduler: default/theirs\n")


def test_a_single_pending_pod_is_one_line_and_binding_pods_are_listed(tmp_path):
    code, out, err = run(write(tmp_path, SCENARIO), "--until", "0.5")
    assert (code, err) == (0, "")
    assert out == (
        "5 pods (run until 0.5s): 1 bound (0 by this run), 2 binding, 1 pending, 0 deleted (0 preempted), "
        "1 not ours\n"
        "pending (1):\n"
        f"  default/big: {BIG_MESSAGE}\n"
        "binding (2): default/web-1, default/web-2\n"
        "not ours (1):\n"
        "  my-scheduler: default/theirs\n")


def test_the_summary_of_a_preemption_names_the_preemptor_its_node_and_victims():
    # docs/examples/preemption.yaml: urgent preempts f on n3; polite (created by an action,
    # preemptionPolicy Never) stays pending with DefaultPreemption's "not eligible" message
    code, out, err = run(ROOT / "docs/examples/preemption.yaml")
    assert (code, err) == (0, "")
    assert out == (
        "11 pods: 9 bound (1 by this run), 1 pending, 1 deleted (1 preempted), 0 not ours\n"
        "pending (1):\n"
        "  default/polite: 0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "4 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never..\n"
        "preemptions (1):\n"
        "  default/urgent -> n3: victims default/f\n")


@pytest.mark.usefixtures("lesson_plugins_unloaded_after")
def test_pods_waiting_on_permit_are_listed_as_such():
    code, out, err = run(ROOT / "fixtures/20-gang-scheduling.yaml", "--plugins", ROOT / "docs/examples/coscheduling.py",
                         "--until", "5")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "3 pods (run until 5s): 0 bound (0 by this run), 2 binding, 1 pending, 0 deleted (0 preempted), " \
                       "0 not ours"
    assert lines[-1] == "waiting on Permit (2): default/train-0, default/train-1"


def many_pods():
    """10 nodes of 2 cpus, node n<i> tainted k<i>; 12 pods asking 3 cpus that tolerate nothing
    (one message: every node's taint); 10 pods asking 3 cpus, odd-<i> tolerating k<i> (10
    different messages: Insufficient cpu on n<i>, the taints of the others); 30 pods of 5 other
    schedulers."""
    objs = [node(f"n{i}", taints=[{"key": f"k{i}", "effect": "NoSchedule"}]) for i in range(10)]
    objs += [pod(f"wide-{j:02}", cpu="3") for j in range(12)]
    for i in range(10):
        p = pod(f"odd-{i}", cpu="3")
        p["spec"]["tolerations"] = [{"key": f"k{i}", "operator": "Exists"}]
        objs.append(p)
    objs += [pod(f"other-{j:02}", scheduler=f"sched-{j % 5}") for j in range(30)]
    return {"kind": "Scenario", "metadata": {"name": "many"}, "objects": objs}


def taints_except(i=None):
    return ", ".join(f"1 node(s) had untolerated taint {{k{j}: }}" for j in range(10) if j != i)


def test_many_pods_are_grouped_by_message_and_cut_to_one_screen(tmp_path):
    code, out, err = run(write(tmp_path, many_pods()))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) <= 30
    assert lines[0] == "52 pods: 0 bound (0 by this run), 22 pending, 0 deleted (0 preempted), 30 not ours"
    assert lines[1] == "pending (22):"
    # the largest group first, with its size and its first 3 names
    assert lines[2] == (f"  12 pods: 0/10 nodes are available: {taints_except()}. "
                        "preemption: 0/10 nodes are available: 10 Preemption is not helpful for scheduling..")
    assert lines[3] == "    default/wide-00, default/wide-01, default/wide-02 and 9 more"
    # then single pods, in order, up to 5 groups in all; the rest counted
    for k, i in enumerate(range(4)):
        assert lines[4 + k] == (
            f"  default/odd-{i}: 0/10 nodes are available: 1 Insufficient cpu, {taints_except(i)}. "
            "preemption: 0/10 nodes are available: 1 No preemption victims found for incoming pod, "
            "9 Preemption is not helpful for scheduling..")
    assert lines[8] == "  and 6 more messages (6 pods)"
    assert lines[9:] == ["not ours (30):",
                         "  sched-0: default/other-00, default/other-05, default/other-10 and 3 more",
                         "  sched-1: default/other-01, default/other-06, default/other-11 and 3 more",
                         "  sched-2: default/other-02, default/other-07, default/other-12 and 3 more",
                         "  and 2 more schedulerNames (12 pods)"]


def test_many_preemptions_are_cut_too():
    """format_summary on a report with 8 preemptors of 4 victims each: 5 shown, the rest counted."""
    pods = []
    for i in range(8):
        pods.append({"pod": f"default/vip-{i}", "outcome": "bound", "schedulerName": "default-scheduler",
                     "node": f"n{i}", "time": 1.0, "attempts": 1, "scores": [], "message": None, "plugins": [],
                     "unblocking_events": [], "nominated_node": f"n{i}",
                     "victims": [f"default/low-{i}-{j}" for j in range(4)], "deleted": None, "waiting_on": None})
    report = {"total": 8, "counts": {"bound": 8, "binding": 0, "pending": 0, "deleted": 0, "not-ours": 0},
              "until": None, "pods": pods}
    lines = format_summary(report).splitlines()
    assert lines[1] == "preemptions (8):"
    assert lines[2] == "  default/vip-0 -> n0: victims default/low-0-0, default/low-0-1, default/low-0-2 and 1 more"
    assert len(lines) == 1 + 1 + 5 + 1
    assert lines[-1] == "  and 3 more (12 victims)"


def test_a_large_cluster_stays_within_one_screen(tmp_path):
    """200 nodes (20 with a taint of their own); 20 pods tolerating nothing and 300 tolerating
    one of the 20 taints each (21 different messages), all asking more cpu than any node has;
    40 pods of 40 other schedulers."""
    objs = [node(f"n{i:03}", taints=[{"key": f"k{i:02}", "effect": "NoSchedule"}] if i < 20 else None)
            for i in range(200)]
    objs += [pod(f"q{j:02}", cpu="3") for j in range(20)]
    for j in range(300):
        p = pod(f"p{j:03}", cpu="3")
        p["spec"]["tolerations"] = [{"key": f"k{j % 20:02}", "operator": "Exists"}]
        objs.append(p)
    objs += [pod(f"x{j:02}", scheduler=f"s{j:02}") for j in range(40)]
    code, out, err = run(write(tmp_path, {"kind": "Scenario", "metadata": {"name": "big"}, "objects": objs}))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) <= 30, out
    assert lines[0] == "360 pods: 0 bound (0 by this run), 320 pending, 0 deleted (0 preempted), 40 not ours"
    assert lines[1] == "pending (320):"
    # the histogram sorted as strings (sort.Strings): "1 node(s)..." before "180 Insufficient cpu"
    taints = ", ".join(f"1 node(s) had untolerated taint {{k{i:02}: }}" for i in range(20))
    assert lines[2] == (f"  20 pods: 0/200 nodes are available: {taints}, 180 Insufficient cpu. preemption: "
                        "0/200 nodes are available: 180 No preemption victims found for incoming pod, "
                        "20 Preemption is not helpful for scheduling..")
    assert lines[3] == "    default/q00, default/q01, default/q02 and 17 more"
    taints = ", ".join(f"1 node(s) had untolerated taint {{k{i:02}: }}" for i in range(1, 20))
    assert lines[4].startswith(f"  15 pods: 0/200 nodes are available: {taints}, 181 Insufficient cpu. ")
    assert lines[5] == "    default/p000, default/p020, default/p040 and 12 more"
    # 5 groups shown (20 + 4 x 15 pods), the 16 others counted: every pending pod once
    assert lines[12] == "  and 16 more messages (240 pods)"
    assert lines[13:] == ["not ours (40):", "  s00: default/x00", "  s01: default/x01", "  s02: default/x02",
                          "  and 37 more schedulerNames (37 pods)"]


def test_explain_all_reports_every_pod_explain_start_only_those_pending_at_the_start(tmp_path):
    sc = Scenario.from_path(str(write(tmp_path, WITH_ACTIONS)))
    start = [p["pod"] for p in explain(sc)["pods"]]
    assert start == ["default/web-1", "default/web-2", "default/big", "default/theirs"]
    every = {p["pod"]: p for p in explain(sc, which="all")["pods"]}
    # the scenario's pods in file order, then the ones its actions created
    assert list(every) == ["default/running", "default/web-1", "default/web-2", "default/big", "default/theirs",
                           "default/late", "default/late-big"]
    assert every["default/running"]["outcome"] == "bound" and every["default/running"]["time"] is None
    assert every["default/late"]["outcome"] == "bound" and every["default/late"]["time"] == 4.0
    assert every["default/late-big"]["message"] == BIG_MESSAGE
    # a pod whose action the run did not reach is not listed
    sc = Scenario.from_path(str(write(tmp_path, WITH_ACTIONS)))
    assert "default/late-big" not in [p["pod"] for p in explain(sc, until=3_500_000, which="all")["pods"]]


def test_state_and_trace_output_are_unchanged_and_print_no_summary(tmp_path):
    f = write(tmp_path, WITH_ACTIONS)
    code, out, err = run(f, "--state", tmp_path / "st.json")
    assert (code, out, err) == (0, "", "")
    code, out, err = run(f, "--trace", tmp_path / "tr.jsonl")
    assert (code, out, err) == (0, "", "")
    code, out, _ = run(f, "--state", "-")
    assert out == (tmp_path / "st.json").read_text()
    code, out, _ = run(f, "--trace", "-")
    assert out == (tmp_path / "tr.jsonl").read_text()
    assert json.loads(out.splitlines()[0])["seq"] == 0


def test_failing_plugin_calls_still_exit_3_after_the_summary(tmp_path):
    (tmp_path / "flaky.py").write_text(FLAKY_PLUGIN)
    sc = {"kind": "Scenario", "metadata": {"name": "t"},
          "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Flaky"}]}}}]},
          "objects": [node("n1"), pod("a"), pod("b")]}
    (tmp_path / "s.yaml").write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "engine", "run", "s.yaml", "--plugins", "flaky.py"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines()[0] == "2 pods: 1 bound (1 by this run), 1 pending, 0 deleted (0 preempted), 0 not ours"
    assert "out-of-tree plugin call" in r.stderr.splitlines()[0]


def test_an_invalid_scenario_still_exits_2_with_nothing_on_stdout(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Scenario\nobjects:\n  - {kind: Pod, metadata: {name: p}, spec: oops}\n")
    code, out, err = run(bad)
    assert code == 2 and out == "" and str(bad) in err
