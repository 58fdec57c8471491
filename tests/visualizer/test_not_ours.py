"""Pods of another scheduler (issue 25): a pending pod whose ``spec.schedulerName`` is none of the
scenario's profiles is never queued by kube-scheduler. The queues panel lists it as *not ours
(its scheduler)* in a short list of its own, a page at a time, and no longer among the pods
between queues ("pending, in no queue yet")."""
import json
import re

import pytest
from django.template.loader import render_to_string

from visualizer import presenters, runner

pytestmark = pytest.mark.django_db

OTHERS = 12     # more than a page (QUEUE_PAGE)


def scenario_text() -> str:
    objects = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}},
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}]
    objects += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"task-{i:02d}", "namespace": "batch"},
                 "spec": {"schedulerName": "volcano", "containers": [{"name": "c"}]}} for i in range(OTHERS)]
    # one more of another scheduler, created later by an action
    actions = [{"at": "1s", "create": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late"},
                                       "spec": {"schedulerName": "my-scheduler", "containers": [{"name": "c"}]}}}]
    return json.dumps({"kind": "Scenario", "metadata": {"name": "not-ours"}, "objects": objects,
                       "actions": actions})


def context(session, view=None):
    with runner.open_live(session.pk) as live:
        return presenters.context(live, view=view)


def test_pods_of_another_scheduler_are_listed_as_not_ours_at_every_position():
    session = runner.create_session(scenario_text(), "not-ours.json")
    others = {f"batch/task-{i:02d}" for i in range(OTHERS)}
    seen_all = False
    for _ in range(200):
        runner.control(session.pk, {"action": "step-event"})
        ctx = context(session)
        q = ctx["queues"]
        waiting = {w["key"] for w in q["waiting"]}
        in_queues = {p["key"] for c in q["columns"] for p in c["pods"]}
        assert not waiting & (others | {"default/late"}) and not in_queues & others
        listed = q["not_ours"]
        assert listed["total"] <= OTHERS + 1 and len(listed["pods"]) <= 10
        assert all(p["scheduler"] == ("my-scheduler" if p["key"] == "default/late" else "volcano")
                   for p in listed["pods"])
        seen_all = seen_all or listed["total"] == OTHERS
        if ctx["header"]["finished"]:
            break
    assert seen_all
    runner.control(session.pk, {"action": "run-until", "until": "2"})
    q = context(session)["queues"]
    assert q["not_ours"]["total"] == OTHERS + 1 and q["not_ours"]["profiles"] == ["default-scheduler"]
    # a page at a time, in key order: batch/task-00 ... then default/late
    assert [p["key"] for p in q["not_ours"]["pods"]] == [f"batch/task-{i:02d}" for i in range(10)]
    second = context(session, presenters.normalize_view({"page-notOurs": "1"}))["queues"]["not_ours"]
    assert [p["key"] for p in second["pods"]] == ["batch/task-10", "batch/task-11", "default/late"]
    assert (second["pager"]["first"], second["pager"]["last"], second["pager"]["next"]) == (11, 13, None)
    assert q["waiting"] == []


def test_the_queues_panel_shows_them_in_their_own_collapsed_list():
    session = runner.create_session(scenario_text(), "not-ours.json")
    runner.control(session.pk, {"action": "run-until", "until": "2"})
    ctx = context(session)
    html = render_to_string("visualizer/partials/_queues.html", ctx)
    assert "no queue yet" not in html and "data-waiting-pod" not in html
    block = re.search(r"<details class=\"not-ours\" data-not-ours[^>]*>(.*?)</details>", html, re.S)
    assert block and " open" not in block.group(0).split(">")[0]          # collapsed until asked
    assert re.search(r"Not ours <span[^>]*data-not-ours-count>13</span>", block.group(1))
    assert re.findall(r'data-not-ours-pod="([^"]+)"', block.group(1)) == [f"batch/task-{i:02d}" for i in range(10)]
    assert "not ours (volcano)" in block.group(1) and "default-scheduler" in block.group(1)
    assert 'data-pager="notOurs"' in block.group(1) and "1–10 of 13" in block.group(1)
    # the In flight list is empty again: the pod of ours is bound
    between = html.split("data-between>")[1].split("</div>")[0]
    assert "no pod in a scheduling cycle" in between


def test_a_scenario_without_them_has_no_such_list(scenario_text):
    session = runner.create_session(scenario_text("too-big.yaml"), "too-big.yaml")
    runner.control(session.pk, {"action": "run-until", "until": "1"})
    ctx = context(session)
    assert ctx["queues"]["not_ours"]["total"] == 0
    assert "data-not-ours" not in render_to_string("visualizer/partials/_queues.html", ctx)


def test_the_page_of_the_list_is_part_of_a_pages_own_view():
    assert presenters.normalize_view({"page-notOurs": "2"}) == {"page-notOurs": 2}
    assert presenters.normalize_view({"page-notOurs": "x"}) == {}
