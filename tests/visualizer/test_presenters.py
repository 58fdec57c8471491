"""Engine state and trace events as plain template context (no engine objects leak out)."""
import re

import pytest

from visualizer import frames, presenters, runner

pytestmark = pytest.mark.django_db


@pytest.fixture
def start(scenario_text):
    def start(name, *controls):
        session = runner.create_session(scenario_text(name))
        for action, fields in controls:
            runner.control(session.pk, {"action": action, **fields})
        return session
    return start


def context(session, **kw):
    with runner.open_live(session.pk) as live:
        return presenters.context(live, **kw)


def queue(ctx, name):
    return next(c for c in ctx["queues"]["columns"] if c["name"] == name)


def keys(ctx, name):
    return [p["key"] for p in queue(ctx, name)["pods"]]


def test_queues_follow_the_revealed_events_inside_an_engine_step(start):
    # the first engine step loads the cluster: two PodAdds; after one event only one is revealed
    session = start("too-big.yaml", ("step-event", {}), ("step-event", {}))
    ctx = context(session)
    assert ctx["header"]["partial_unit"]
    assert keys(ctx, "activeQ") == ["default/small"]
    runner.control(session.pk, {"action": "step-point"})
    runner.control(session.pk, {"action": "step-point"})
    assert keys(context(session), "activeQ") == ["default/small", "default/big"]


def test_a_failed_pod_is_shown_in_unschedulable_pods_with_its_rejecting_plugin(start):
    session = start("too-big.yaml", ("run-until", {"until": 0}))
    ctx = context(session)
    assert keys(ctx, "activeQ") == [] and keys(ctx, "backoffQ") == []
    [big] = queue(ctx, "unschedulablePods")["pods"]
    assert big["key"] == "default/big" and big["plugins"] == ["NodeResourcesFit"] and not big["gated"]
    [node] = ctx["nodes"]["cards"]
    assert node["name"] == "n1" and [p["key"] for p in node["pods"]] == ["default/small"]
    cpu = next(r for r in node["resources"] if r["name"] == "cpu")
    assert (cpu["requested"], cpu["allocatable"], cpu["percent"]) == ("1", "2", 50)


def test_backoff_shows_the_remaining_time(start):
    session = start("backoff.yaml", ("run-until", {"until": 0.5}))
    [big] = queue(context(session), "backoffQ")["pods"]
    assert (big["backoff_expiry"], big["backoff_remaining"]) == ("1", "0.5")


def test_current_cycle_has_the_filter_matrix_and_the_outcome(start):
    session = start("too-big.yaml", ("step-cycle", {}), ("step-cycle", {}))
    cycle = context(session)["cycle"]
    assert (cycle["pod"], cycle["cycle"]) == ("default/big", 2)
    [row] = cycle["filter"]["rows"]
    assert row["node"] == "n1" and not row["passed"]
    failed = [c for c in row["cells"] if c and not c["ok"]]
    assert [(c["plugin"], c["reasons"]) for c in failed] == [("NodeResourcesFit", ["Insufficient cpu"])]
    assert cycle["end"]["result"] == "Unschedulable"
    assert {p["name"] for p in cycle["points"] if p["done"]} == {"PreFilter", "Filter", "PostFilter"}


def test_preemption_shows_candidates_the_pick_criteria_and_reprieves(start):
    session = start("preemption.yaml", ("step-cycle", {}))
    p = context(session)["preemption"]
    assert p["preemptor"] == "default/urgent" and p["is_current"]
    n1 = next(n for n in p["nodes"] if n["node"] == "n1")
    assert [(s["victim"], s["reprieved"]) for s in n1["steps"]] == [
        ("default/a", True), ("default/c", False), ("default/b", False)]
    assert n1["candidate"]["victims"] == ["default/c", "default/b"]
    pick = p["pick"]
    assert pick["node"] == "n3" and pick["criterion"] == "minHighestPriorityVictim"
    assert [r["name"] for r in pick["rows"] if r["deciding"]] == ["minHighestPriorityVictim"]
    assert [c["node"] for c in pick["columns"] if c["chosen"]] == ["n3"]
    # the real priority of n3's most important victim (the engine's score is -10)
    deciding = next(r for r in pick["rows"] if r["deciding"])
    assert [(c["real"], c["state"]) for c in deciding["cells"] if c["node"] == "n3"] == [(10, "win")]
    n5 = next(n for n in p["nodes"] if n["node"] == "n5")
    assert n5["fits"]["fits"] is False and n5["result"]["reason"]


def test_nodes_show_nominated_pods_and_terminating_victims_with_their_grace(start):
    session = start("preemption.yaml", ("run-until", {"until": 2}))
    n3 = next(c for c in context(session)["nodes"]["cards"] if c["name"] == "n3")
    assert [p["key"] for p in n3["nominated"]] == ["default/urgent"]
    victim = next(p for p in n3["pods"] if p["key"] == "default/f")
    assert victim["phase"] == "Terminating" and victim["grace_remaining"] == "3"


def test_the_log_is_filterable_by_pod_node_and_type(start):
    session = start("preemption.yaml", ("step-cycle", {}))
    every = context(session)["log"]
    assert every["matched"] == every["total"] > 50
    by_type = context(session, log_filter={"type": "ReprieveStep"})["log"]
    assert {r["type"] for r in by_type["rows"]} == {"ReprieveStep"} and by_type["matched"] == 7
    by_pod = context(session, log_filter={"pod": "default/f"})["log"]
    assert by_pod["rows"] and all("default/f" in r["pods"] for r in by_pod["rows"])
    by_node = context(session, log_filter={"node": "n4", "type": "PluginResult"})["log"]
    assert by_node["rows"] and all(r["nodes"] == ["n4"] for r in by_node["rows"])
    assert all(r["message"] for r in every["rows"])
    assert every["rows"][0]["position"] == every["rows"][0]["seq"] + 1


def test_cues_appear_when_reached_and_the_narrative_is_escaped(start):
    session = start("too-big.yaml", ("step-cycle", {}))
    narrative = context(session)["narrative"]
    assert narrative["cues"] == []
    assert "&lt;b&gt;HTML&lt;/b&gt;" in narrative["description"]
    runner.control(session.pk, {"action": "step-cycle"})   # ends with CycleEnd ...
    assert context(session)["narrative"]["cues"] == []
    runner.control(session.pk, {"action": "step-event"})   # ... then big's QueueTransition
    [cue] = context(session)["narrative"]["cues"]
    assert cue["title"] == "Parked" and cue["latest"] and "<code>big</code>" in cue["text"]


def test_metrics_count_pods_per_queue_over_time(start):
    session = start("backoff.yaml", ("run-until", {"until": 4}))
    m = context(session)["metrics"]
    assert m["pending"] == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
    lines = {line["name"]: line for line in m["chart"]["lines"]}
    assert lines["unschedulablePods"]["last"] == 1 and lines["activeQ"]["last"] == 0
    assert dict(m["incoming"])["backoff/AssignedPodDelete"] == 2


@pytest.mark.parametrize(("resource", "amount", "text"), [
    ("cpu", 2000, "2"), ("cpu", 1500, "1500m"), ("memory", 4 * 2**30, "4Gi"), ("memory", 3 * 2**19, "1.5Mi"),
    ("pods", 110, "110"), ("memory", 512, "512"),
])
def test_quantities_read_as_kubernetes_writes_them(resource, amount, text):
    assert presenters.quantity(resource, amount) == text


def test_every_panel_renders_with_one_root_element_carrying_its_id(start):
    session = start("preemption.yaml", ("step-cycle", {}))
    with runner.open_live(session.pk) as live:
        panels = presenters.render_panels(live)
    assert [pid for pid, _ in panels] == [f"panel-{name}" for name in presenters.PANELS]
    for pid, html in panels:
        assert html.lstrip().startswith("<") and f'id="{pid}"' in html.split(">", 1)[0]


def test_rendering_the_page_never_changes_the_run(scenario_text):
    """Presenters only read the engine: a run rendered after every control ends exactly like
    one never rendered."""
    controls = [{"action": "run-until", "until": "1"},
                {"action": "inject", "form": "node-add", "name": "n2", "cpu": "8", "memory": "8Gi", "pods": "110"},
                {"action": "step-event"}, {"action": "step-point"}, {"action": "run-until", "until": "2"}]

    def run(render):
        runner.reset()
        session = runner.create_session(scenario_text("too-big.yaml"))
        for msg in controls:
            runner.control(session.pk, msg)
            if render:
                frames.render_frame(session.pk)
        with runner.open_live(session.pk) as live:
            return live.revealed(), live.stepper.state()

    assert run(render=True) == run(render=False)
    assert run(render=True)[1]["pods"]["default/big"]["nodeName"] == "n2"


def test_a_gated_pod_is_marked_in_unschedulable_pods(start):
    session = start("gates.yaml", ("run-until", {"until": 1}))
    [gated] = queue(context(session), "unschedulablePods")["pods"]
    assert gated["key"] == "default/gated" and gated["gated"] and gated["plugins"] == ["SchedulingGates"]
    with runner.open_live(session.pk) as live:
        html = dict(presenters.render_panels(live, names=("queues",)))["panel-queues"]
    assert "data-gated" in html and "gated" in html.split('data-pod="default/gated"')[1]
    runner.control(session.pk, {"action": "run-until", "until": 3})
    ctx = context(session)
    assert queue(ctx, "unschedulablePods")["pods"] == []
    assert [p["key"] for p in ctx["nodes"]["cards"][0]["pods"]] == ["default/gated"]


def test_camelbreak_lets_long_names_wrap_and_escapes_the_rest():
    from visualizer.templatetags.visualizer_extras import camelbreak

    assert camelbreak("minNumPDBViolatingVictims") == "min<wbr>Num<wbr>PDBViolating<wbr>Victims"
    assert camelbreak("NodeResourcesFit") == "Node<wbr>Resources<wbr>Fit"
    assert camelbreak("<b>aB</b>") == "&lt;b&gt;a<wbr>B&lt;/b&gt;"


def test_each_queued_pod_carries_the_message_of_its_last_move(start):
    """Issue 5: the plain-language message of a queue transition shows on hover and focus."""
    session = start("too-big.yaml", ("run-until", {"until": 0}))
    [big] = queue(context(session), "unschedulablePods")["pods"]
    assert "waits in unschedulablePods" in big["why"] and "NodeResourcesFit" in big["why"]
    with runner.open_live(session.pk) as live:
        [(panel_id, html)] = presenters.render_panels(live, names=["queues"])
    assert panel_id == "panel-queues"
    # the pod just moved: its message is shown in its card
    assert big["just_moved"]
    assert re.search(r'data-pod="default/big".*?<span class="pod-why" data-why>the attempt failed \(rejected by NodeResourcesFit\)', html, re.S)
    # once it has not just moved, the message is a tooltip the pod is described by, shown on
    # hover and on keyboard focus (the pod is focusable)
    from django.template.loader import render_to_string
    calm = render_to_string("visualizer/partials/_queues.html", {"queues": {
        "columns": [{"name": "unschedulablePods", "label": "unschedulablePods", "total": 1, "pods": [{**big, "just_moved": False}]}],
        "in_flight": [], "waiting": []}})
    assert "data-why" not in calm
    assert re.search(r'data-pod="default/big" tabindex="0" aria-describedby="(why-[^"]+)".*?<span class="pod-why pod-why--hint" id="\1" role="tooltip">the attempt failed \(rejected by NodeResourcesFit\)', calm, re.S)


def test_the_chart_has_axes_ticks_in_virtual_seconds_and_hover_values():
    zero = dict.fromkeys(("activeQ", "backoffQ", "unschedulablePods"), 0)
    series = [(0.0, zero), (0.0, dict(zero, activeQ=3)), (2.5, dict(zero, activeQ=1, backoffQ=2)),
              (12.0, dict(zero, unschedulablePods=1))]
    chart = presenters._chart(series)
    assert [t["label"] for t in chart["x_ticks"]] == ["0 s", "2 s", "4 s", "6 s", "8 s", "10 s", "12 s"]
    assert [t["label"] for t in chart["y_ticks"]] == [0, 1, 2, 3]
    assert chart["y_ticks"][0]["y"] == chart["bottom_y"] and chart["y_ticks"][-1]["y"] == chart["top"]
    assert len({line["colour"] for line in chart["lines"]}) == 3
    assert {line["name"]: line["last"] for line in chart["lines"]} == {"activeQ": 0, "backoffQ": 0,
                                                                        "unschedulablePods": 1}
    assert 't = 2.5 s: activeQ 1, backoffQ 2, unschedulablePods 0' in str(chart["bands"])
    assert chart["x_label"] == "virtual time (s)"


def test_the_chart_of_one_instant_counts_the_changes():
    zero = dict.fromkeys(("activeQ", "backoffQ", "unschedulablePods"), 0)
    chart = presenters._chart([(0.0, zero), (0.0, dict(zero, activeQ=1)), (0.0, dict(zero, activeQ=2))])
    assert [t["label"] for t in chart["x_ticks"]] == ["0", "1", "2"]
    assert chart["x_label"] == "queue changes, all at 0 s"


def test_a_permit_wait_is_not_marked_failed_in_the_log():
    """Issue 24: Permit's Wait parks the pod (WaitOnPermit); the log marks only failures with ✗."""
    from visualizer.panels.log import log
    base = {"time": 1.0, "pod": "default/a", "cycle": 3, "point": "Permit", "node": "n1"}
    events = [dict(base, seq=0, type="PluginResult", plugin="Gang", code="Wait", message="waiting for 2 more"),
              dict(base, seq=1, type="PluginResult", plugin="Gang", code="Unschedulable", message="rejected"),
              dict(base, seq=2, type="PluginResult", plugin="Gang", code="Success", message="")]
    rows = log(events, 3)["rows"]
    assert [r["failed"] for r in rows] == [False, True, False]
    assert "✗" not in rows[0]["html"] and "✗" in rows[1]["html"]
