"""A pod's history leads with kube-scheduler's summary (issue 25): the outcome of its latest cycle,
the FitError message of its last CycleEnd and the rejecting plugins, then the per-node tables, in
which long node names wrap at their dots and the plugin that rejected each node comes right
after the node. ``scenario_text`` and ``fit_error`` also serve the browser test
(tests/visualizer/browser/test_pod_history_summary.py)."""
import json
import re

import pytest
from django.utils.html import escape

from engine import Engine, Scenario, Trace
from visualizer import runner
from visualizer.templatetags.visualizer_extras import dotbreak

NODES = 40
TAINTED = range(3, NODES, 10)          # 4 nodes tainted gpu=true:NoSchedule


def node_name(i: int) -> str:
    return f"ip-10-0-0-{i + 10}.eu-west-1.compute.internal"


def scenario_text(nodes: int = NODES) -> str:
    """``nodes`` nodes of 4 CPUs and 16 GiB named like EC2's (every tenth, from the fourth,
    tainted gpu=true:NoSchedule), ``default/web`` that fits, ``default/huge`` (64 GiB) that fits
    nowhere, and ``batch/volcano-task-0`` of another scheduler."""
    objects = []
    for i in range(nodes):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node_name(i), "labels": {"kubernetes.io/hostname": node_name(i),
                                                              "topology.kubernetes.io/zone": f"eu-west-1{'abc'[i % 3]}"}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
        if i in TAINTED:
            node["spec"] = {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}
        objects.append(node)
    objects += [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "64Gi"}}}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "volcano-task-0", "namespace": "batch"},
         "spec": {"schedulerName": "volcano", "containers": [{"name": "c"}]}},
    ]
    description = ("Shaped like an imported cluster: its nodes named as EC2 names them, one pod too big "
                   "for any of them.\n\n| kind | kept |\n|---|---|\n"
                   + "".join(f"| Kind{k} | {k} |\n" for k in range(12)))
    return json.dumps({"kind": "Scenario", "metadata": {"name": "pending-huge", "title": "A pod too big for 40 nodes",
                                                        "description": description},
                       "objects": objects})


def fit_error(text: str, pod: str, until_us: int) -> dict:
    """The engine's own last CycleEnd of ``pod`` in a run of ``text`` to ``until_us`` (as
    engine/explain.py reads it)."""
    ends = []
    trace = Trace(enabled=False)
    trace.add_sink(lambda e: ends.append(e) if e.get("type") == "CycleEnd" and e.get("pod") == pod else None)
    Engine(Scenario.from_text(text, "pending-huge.json"), trace).run(until_us)
    return ends[-1]


def history(client, session, pod) -> str:
    return client.get(f"/s/{session.presenter_token}/history/", {"pod": pod}, HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db
def test_the_history_of_a_pending_pod_leads_with_its_fit_error_then_the_per_node_table(client):
    text = scenario_text()
    end = fit_error(text, "default/huge", 1_000_000)
    assert end["result"] == "Unschedulable"
    assert end["message"].startswith(f"0/{NODES} nodes are available: ")
    assert "4 node(s) had untolerated taint {gpu: true}" in end["message"] and "36 Insufficient memory" in end["message"]
    session = runner.create_session(text, "pending-huge.json")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    with runner.open_live(session.pk) as live:
        from visualizer.history import pod_history
        s = pod_history(live, "default/huge")["summary"]
    assert (s["outcome"], s["message"], s["plugins"]) == ("Unschedulable", end["message"], end["unschedulablePlugins"])
    html = history(client, session, "default/huge")
    # the summary is the first thing after the heading, before any table
    body = html.split("</header>", 1)[1].lstrip()
    assert body.startswith('<div class="history-summary history-summary--unschedulable" data-history-summary'
                           ' data-outcome="Unschedulable">')
    assert body.index("data-history-summary") < body.index("data-filter-matrix")
    message = re.search(r"<p class=\"history-message\" data-history-message>(.*?)</p>", body).group(1)
    assert message == escape(end["message"])
    assert re.search(r"data-history-plugins>NodeResourcesFit, TaintToleration<", body)
    # each node with the plugin that rejected it, right after the node; names wrap at dots
    rows = re.findall(r'<tr data-filter-node="([^"]+)".*?<th scope="row" class="node-cell" title="([^"]+)">.*?'
                      r'</th>\s*<td class="decided-by cell--fail" data-decided-by="(\w+)"', body, re.S)
    assert len(rows) == NODES
    assert {n: d for n, _t, d in rows} == {node_name(i): "TaintToleration" if i in TAINTED else "NodeResourcesFit"
                                           for i in range(NODES)}
    assert all(n == t for n, t, _d in rows)
    assert '<span class="name-part">ip-10-0-0-10.</span><wbr><span class="name-part">eu-west-1.</span>' in body


@pytest.mark.django_db
def test_a_bound_pod_a_pod_not_ours_and_a_pod_not_tried_yet(client):
    session = runner.create_session(scenario_text(nodes=3), "small.json")
    runner.control(session.pk, {"action": "step-event"})       # created, not tried yet
    html = history(client, session, "default/web")
    assert 'data-outcome="none"' in html and "No scheduling cycle yet." in html
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    bound = history(client, session, "default/web")
    assert 'data-outcome="bound"' in bound and "✓ Bound to ip-10-0-0-10.eu-west-1.compute.internal" in bound
    assert "data-history-message" not in bound
    assert re.search(r'<td class="decided-by decided-by--pass" data-decided-by="">✓ feasible</td>', bound)
    theirs = history(client, session, "batch/volcano-task-0")
    assert 'data-outcome="not-ours"' in theirs and "Not ours (volcano)" in theirs
    assert "default-scheduler" in theirs and "data-filter-matrix" not in theirs


def test_dotbreak_wraps_a_dotted_name_at_its_dots_and_escapes_it():
    assert dotbreak("ip-10-0-0-11.eu-west-1.compute.internal") == (
        '<span class="name-part">ip-10-0-0-11.</span><wbr><span class="name-part">eu-west-1.</span><wbr>'
        '<span class="name-part">compute.</span><wbr><span class="name-part">internal</span>')
    assert dotbreak("n1") == '<span class="name-part">n1</span>'
    assert dotbreak("<b>.x") == '<span class="name-part">&lt;b&gt;.</span><wbr><span class="name-part">x</span>'
    # a part too long to keep whole may break inside
    assert dotbreak("gke-cluster-default-pool-1234abcd-x9z") == "gke-cluster-default-pool-1234abcd-x9z"
