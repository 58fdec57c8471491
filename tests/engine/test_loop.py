"""The event loop's order within an instant and over time (SPEC.md §4)."""
import pytest

from engine import Engine, Scenario, Trace, US


def node(name, cpu="2"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name, cpu="1", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}}


def delete(kind, name):
    return {"kind": kind, "name": name}


def build(**fields):
    data = {"kind": "Scenario", "metadata": {"name": "loop"}}
    data.update(fields)
    events = []
    trace = Trace()
    trace.add_sink(events.append)
    return Engine(Scenario.from_dict(data), trace), events


def run(until=None, **fields):
    eng, events = build(**fields)
    eng.run(until)
    return eng, events


def index(events, pred, start=0):
    for i in range(start, len(events)):
        if pred(events[i]):
            return i
    raise AssertionError("no such event")


def qt(pod_key, event=None, to=None, frm=None):
    """A predicate for a QueueTransition of a pod."""
    def pred(e):
        return (e["type"] == "QueueTransition" and e["pod"] == pod_key
                and (event is None or e["event"] == event)
                and (to is None or e["to"] == to) and (frm is None or e["from"] == frm))
    return pred


def of_type(type_, **fields):
    def pred(e):
        return e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())
    return pred


def transitions(events, pod_key):
    return [(e["time"], e["from"], e["to"], e["event"]) for e in events if qt(pod_key)(e)]


# ------------------------------------------------------------------------------ within an instant

def test_actions_then_completions_then_flushes_then_pop():
    # At t=5 four things fall due: an action (create p3), a completion (p1's bind, started at
    # 0 with bindDuration 5s), the backoff flush (p2's 5s backoff from t=0 expires) and a Pop.
    eng, ev = run(
        scheduler={"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 10},
        simulation={"bindDuration": "5s"},
        objects=[node("n1"), pod("p1"), pod("p2", cpu="3")],
        actions=[{"at": 1, "create": node("n2", "4")},      # moves p2 unschedulablePods -> backoffQ
                 {"at": 5, "create": pod("p3")}])
    at5 = [i for i, e in enumerate(ev) if e["time"] == 5.0]
    first = at5[0]
    action = index(ev, of_type("Action", kind="Pod", name="default/p3"), first)
    bound = index(ev, of_type("Bound", pod="default/p1"), first)
    flush = index(ev, qt("default/p2", "BackoffComplete", to="activeQ"), first)
    pop = index(ev, lambda e: e["type"] == "QueueTransition" and e["event"] == "Pop", first)
    assert action == first
    assert action < bound < flush < pop
    # p2 (queue time 0) pops before p3 (queue time 5): equal priority, earlier timestamp first
    assert ev[pop]["pod"] == "default/p2"
    assert transitions(ev, "default/p2")[:4] == [
        (0.0, None, "activeQ", "PodAdd"), (0.0, "activeQ", None, "Pop"),
        (0.0, None, "unschedulablePods", "ScheduleAttemptFailure"),
        (1.0, "unschedulablePods", "backoffQ", "NodeAdd")]


def test_actions_at_one_instant_apply_in_file_order():
    eng, ev = run(objects=[node("n1", "8")],
                  actions=[{"at": 1, "create": pod("c")}, {"at": 1, "create": pod("a")},
                           {"at": 1, "create": pod("b")}])
    adds = [e["pod"] for e in ev if e["type"] == "QueueTransition" and e["event"] == "PodAdd"]
    assert adds == ["default/c", "default/a", "default/b"]
    # all three actions come before the first Pop at t=1
    last_action = max(i for i, e in enumerate(ev) if e["type"] == "Action")
    first_pop = index(ev, lambda e: e["type"] == "QueueTransition" and e["event"] == "Pop")
    assert last_action < first_pop


@pytest.mark.parametrize("delete_at, first, second", [
    # the termination (scheduled at t=0) before the bind (scheduled later at t=0 by the cycle)
    (0, "PodRemoved", "Bound"),
    # the bind (scheduled at t=0) before the termination (scheduled at t=1)
    (1, "Bound", "PodRemoved"),
])
def test_completions_at_one_instant_run_in_the_order_they_were_scheduled(delete_at, first, second):
    grace = 5 - delete_at
    eng, ev = run(simulation={"bindDuration": "5s"},
                  objects=[node("n1", "4"), pod("old", nodeName="n1", terminationGracePeriodSeconds=grace),
                           pod("new")],
                  actions=[{"at": delete_at, "delete": delete("Pod", "old")}])
    i = index(ev, of_type(first))
    j = index(ev, of_type(second))
    assert ev[i]["time"] == ev[j]["time"] == 5.0
    assert i < j


def test_a_bind_due_now_completes_before_the_next_pop():
    eng, ev = run(objects=[node("n1", "4"), pod("p1"), pod("p2")])   # bindDuration 0
    bound1 = index(ev, of_type("Bound", pod="default/p1"))
    pop2 = index(ev, qt("default/p2", "Pop"))
    assert bound1 < pop2


def test_a_termination_with_zero_grace_completes_before_the_next_pop():
    # old frees n1 at once; the pod created in the same instant fits where old was
    eng, ev = run(objects=[node("n1", "1"), pod("old", nodeName="n1", terminationGracePeriodSeconds=0)],
                  actions=[{"at": 1, "delete": delete("Pod", "old")}, {"at": 1, "create": pod("new")}])
    removed = index(ev, of_type("PodRemoved", pod="default/old"))
    pop = index(ev, qt("default/new", "Pop"))
    assert removed < pop
    assert eng.state()["pods"]["default/new"]["nodeName"] == "n1"
    assert eng.state()["deletedPods"]["default/old"] == {"deletedAt": 1.0, "reason": "Deleted", "preemptor": None}


def test_pending_pods_from_objects_come_after_nodes_and_bound_pods_in_file_order():
    seen = {}
    eng, ev = build(objects=[
        pod("pending-b", priority=1),
        pod("pending-a", priority=5),
        node("n1", "4"),
        pod("bound", nodeName="n1"),
        node("n2", "4"),
        pod("pending-c", priority=3),
    ])

    def sink(e):
        if e["type"] == "QueueTransition" and e["event"] == "PodAdd":
            seen[e["pod"]] = (sorted(eng.nodes), sorted(eng.pods))
    eng.trace.add_sink(sink)
    eng.step()   # loads the objects at t=0
    adds = [e["pod"] for e in ev if e["type"] == "QueueTransition" and e["event"] == "PodAdd"]
    assert adds == ["default/pending-b", "default/pending-a", "default/pending-c"]   # file order
    for key, (nodes, pods) in seen.items():
        assert nodes == ["n1", "n2"], key          # every node exists already
        assert "default/bound" in pods, key         # and every bound pod
    # the queue itself pops by priority
    assert eng.state()["queues"]["activeQ"] == ["default/pending-a", "default/pending-c", "default/pending-b"]


def test_one_event_moves_pods_in_the_order_they_entered_unschedulable_pods():
    eng, ev = run(objects=[node("n1", "1"),
                           pod("b", cpu="2", priority=3), pod("c", cpu="2", priority=2), pod("a", cpu="2", priority=1)],
                  actions=[{"at": 5, "create": node("n2", "8")}])
    moved = [e["pod"] for e in ev if e["type"] == "QueueTransition" and e["event"] == "NodeAdd"]
    assert moved == ["default/b", "default/c", "default/a"]


# ------------------------------------------------------------------------------ deletes

def test_deleting_a_missing_pod_is_skipped_with_a_reason():
    eng, ev = run(objects=[node("n1")],
                  actions=[{"at": 1, "delete": delete("Pod", "ghost")},
                           {"at": 2, "update": pod("ghost")},
                           {"at": 3, "delete": delete("Node", "nx")}])
    skipped = [e for e in ev if e["type"] == "ActionSkipped"]
    assert [(e["time"], e["action"], e["kind"], e["name"], e["reason"]) for e in skipped] == [
        (1.0, "delete", "Pod", "default/ghost", "pod default/ghost does not exist"),
        (2.0, "update", "Pod", "default/ghost", "pod default/ghost does not exist"),
        (3.0, "delete", "Node", "nx", "node nx does not exist"),
    ]
    assert skipped[0]["place"] == "actions[0].delete"
    assert eng.state()["deletedPods"] == {}


def test_deleting_a_pod_twice_skips_the_second():
    eng, ev = run(objects=[node("n1"), pod("p", nodeName="n1")],
                  actions=[{"at": 1, "delete": delete("Pod", "p")}, {"at": 2, "delete": delete("Pod", "p")},
                           {"at": 40, "delete": delete("Pod", "p")}])
    skipped = [(e["time"], e["reason"]) for e in ev if e["type"] == "ActionSkipped"]
    assert skipped == [(2.0, "pod default/p is already terminating"), (40.0, "pod default/p does not exist")]
    assert [e["time"] for e in ev if e["type"] == "PodDeleted"] == [1.0]


def test_a_bound_pod_terminates_for_its_grace_period_then_is_removed():
    data = dict(objects=[node("n1", "1"), pod("old", nodeName="n1", terminationGracePeriodSeconds=10)],
                actions=[{"at": 2, "delete": delete("Pod", "old")}, {"at": 3, "create": pod("new")}])
    eng, ev = build(**data)
    eng.run(11 * US)
    s = eng.state()
    assert s["pods"]["default/old"]["phase"] == "Terminating"
    assert s["pods"]["default/old"]["nodeName"] == "n1"
    assert "default/old" not in s["deletedPods"]
    # it still holds its node: new does not fit
    assert s["pods"]["default/new"]["phase"] == "Pending"
    assert s["pods"]["default/new"]["queue"] == "unschedulablePods"
    eng.run(12 * US)
    s = eng.state()
    assert "default/old" not in s["pods"]
    assert s["deletedPods"]["default/old"] == {"deletedAt": 12.0, "reason": "Deleted", "preemptor": None}
    assert s["pods"]["default/new"]["phase"] == "Running"   # AssignedPodDelete moved it; it fits now
    deleted = next(e for e in ev if e["type"] == "PodDeleted")
    assert (deleted["time"], deleted["pod"], deleted["reason"], deleted["preemptor"]) == (2.0, "default/old", "Deleted", None)
    removed = next(e for e in ev if e["type"] == "PodRemoved")
    assert removed["time"] == 12.0
    moved = ev[index(ev, qt("default/new", "AssignedPodDelete"))]
    assert moved["time"] == 12.0 and moved["from"] == "unschedulablePods"


def test_an_unbound_pod_is_deleted_at_once():
    eng, ev = run(objects=[node("n1", "1"), pod("big", cpu="4", terminationGracePeriodSeconds=30)],
                  actions=[{"at": 3, "delete": delete("Pod", "big")}])
    s = eng.state()
    assert "default/big" not in s["pods"]
    assert s["deletedPods"]["default/big"] == {"deletedAt": 3.0, "reason": "Deleted", "preemptor": None}
    assert s["queues"] == {"activeQ": [], "backoffQ": [], "unschedulablePods": []}
    assert s["time"] == 3.0
    assert not any(e["type"] == "PodRemoved" for e in ev)


def test_deleting_a_node_deletes_its_pods_at_once():
    eng, ev = run(objects=[node("n1", "4"), node("n2", "4"),
                           pod("x", nodeName="n1", terminationGracePeriodSeconds=30),
                           pod("y", nodeName="n2")],
                  actions=[{"at": 3, "delete": delete("Node", "n1")}])
    s = eng.state()
    assert s["deletedPods"] == {"default/x": {"deletedAt": 3.0, "reason": "Deleted", "preemptor": None}}
    assert s["pods"]["default/y"]["phase"] == "Running"
    assert s["time"] == 3.0
    pd = [e for e in ev if e["type"] == "PodDeleted"]
    assert [(e["time"], e["pod"], e["reason"]) for e in pd] == [(3.0, "default/x", "Deleted")]
    assert "n1" not in eng.nodes


# ------------------------------------------------------------------------------ until and idle

def test_until_includes_a_pop_at_t():
    data = dict(objects=[node("n1")], actions=[{"at": 5, "create": pod("p")}])
    eng, ev = run(until=5 * US, **data)
    s = eng.state()
    assert s["time"] == 5.0
    assert s["pods"]["default/p"]["phase"] == "Running"
    assert any(qt("default/p", "Pop")(e) and e["time"] == 5.0 for e in ev)
    eng, ev = run(until=5 * US - 1, **data)
    assert eng.state()["pods"] == {}
    assert eng.state()["time"] == 4.999999


def test_until_stops_before_later_completions():
    eng, ev = run(until=2 * US, simulation={"bindDuration": "3s"}, objects=[node("n1"), pod("p")])
    s = eng.state()
    assert s["pods"]["default/p"]["phase"] == "Binding"
    assert s["pods"]["default/p"]["nodeName"] == "n1"
    eng.run(3 * US)
    assert eng.state()["pods"]["default/p"]["phase"] == "Running"


def test_without_until_the_run_stops_when_idle_with_unschedulable_pods_parked():
    eng, ev = run(objects=[node("n1", "1"), pod("fits"), pod("too-big", cpu="4")])
    s = eng.state()
    assert eng.is_idle()
    assert s["time"] == 0.0                      # no waiting for flushes that would move nothing
    assert s["queues"] == {"activeQ": [], "backoffQ": [], "unschedulablePods": ["default/too-big"]}
    assert s["pods"]["default/too-big"]["queue"] == "unschedulablePods"
    assert s["pods"]["default/too-big"]["attempts"] == 1
    assert s["pods"]["default/fits"]["phase"] == "Running"


def test_without_until_the_run_waits_for_the_last_action_and_backoff():
    eng, ev = run(objects=[node("n1", "1"), pod("p", cpu="2")],
                  actions=[{"at": "500ms", "create": node("n2", "4")}, {"at": 7, "create": pod("q")}])
    s = eng.state()
    assert s["time"] == 7.0
    assert s["pods"]["default/p"]["nodeName"] == "n2"
    assert s["pods"]["default/q"]["phase"] == "Running"


def test_a_pod_for_no_profile_is_never_enqueued():
    eng, ev = run(objects=[node("n1"), pod("orphan", schedulerName="someone-else")],
                  actions=[{"at": 2, "create": node("n2")}])
    s = eng.state()
    assert s["pods"]["default/orphan"] == {
        "phase": "Pending", "nodeName": None, "nominatedNodeName": None, "queue": None, "attempts": 0,
        "unschedulablePlugins": [], "gated": False, "priority": 0}
    assert not any(e.get("pod") == "default/orphan" for e in ev)
    assert s["metrics"]["pending_pods"] == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


# ------------------------------------------------------------------------------ periodic flushes

def test_backoff_flush_runs_every_second_on_the_whole_seconds():
    # p is created and fails at 0.5s; a node added at 0.7s moves it to backoffQ with its
    # backoff (1s from 0.5s) expiring at 1.5s; the flush at 2.0s moves it.
    eng, ev = run(objects=[node("n1", "1")],
                  actions=[{"at": "500ms", "create": pod("p", cpu="2")}, {"at": "700ms", "create": node("n2", "4")}])
    assert transitions(ev, "default/p") == [
        (0.5, None, "activeQ", "PodAdd"), (0.5, "activeQ", None, "Pop"),
        (0.5, None, "unschedulablePods", "ScheduleAttemptFailure"),
        (0.7, "unschedulablePods", "backoffQ", "NodeAdd"),
        (2.0, "backoffQ", "activeQ", "BackoffComplete"),
        (2.0, "activeQ", None, "Pop"),
    ]


@pytest.mark.parametrize("limit, moved_at", [
    ("20s", [30.0, 60.0]),    # parked at 5s: 30-5 = 25 > 20, and again 60-30 = 30 > 20
    ("25s", [60.0]),          # 30-5 = 25 is not strictly longer than 25: the next flush, at 60s
    ("1s", [30.0, 60.0]),     # not at 6s or 35s: the flush runs only every 30s from t=0
])
def test_leftover_flush_runs_every_30_seconds_from_zero(limit, moved_at):
    eng, ev = run(until=70 * US, simulation={"podMaxInUnschedulablePodsDuration": limit},
                  objects=[node("n1", "1")], actions=[{"at": 5, "create": pod("p", cpu="2")}])
    got = [e["time"] for e in ev if qt("default/p", "UnschedulableTimeout")(e)]
    assert got == moved_at
    assert all(e["to"] == "activeQ" for e in ev if qt("default/p", "UnschedulableTimeout")(e))


# ------------------------------------------------------------------------------ cycle duration

@pytest.mark.parametrize("node_added_at", [1, 2])
def test_a_cycle_is_evaluated_against_the_snapshot_at_its_start(node_added_at):
    # The cycle runs from 0 to 2s; n2 (where p fits) is added during it, so this cycle cannot
    # choose n2.  The NodeAdd is a move request during the cycle, so p goes to backoffQ; its
    # queue time is the cycle's end (2s), so its 1s backoff expires at 3s.
    eng, ev = run(simulation={"schedulingCycleDuration": "2s"},
                  objects=[node("n1", "1"), pod("p", cpu="2")],
                  actions=[{"at": node_added_at, "create": node("n2", "4")}])
    ends = [e for e in ev if e["type"] == "CycleEnd"]
    assert [(e["time"], e["result"], e["node"]) for e in ends] == [
        (2.0, "Unschedulable", None), (5.0, "Scheduled", "n2")]
    starts = [e["time"] for e in ev if e["type"] == "CycleStart"]
    assert starts == [0.0, 3.0]
    # the first cycle never filtered n2
    assert not any(e["type"] == "PluginResult" and e.get("node") == "n2" and e["cycle"] == 1 for e in ev)
    assert transitions(ev, "default/p") == [
        (0.0, None, "activeQ", "PodAdd"), (0.0, "activeQ", None, "Pop"),
        (2.0, None, "backoffQ", "ScheduleAttemptFailure"),
        (3.0, "backoffQ", "activeQ", "BackoffComplete"),
        (3.0, "activeQ", None, "Pop"),
    ]
    assert eng.state()["pods"]["default/p"]["nodeName"] == "n2"


def test_a_failed_pods_queue_time_is_the_cycle_end():
    # Failing with no move request, p is parked at the cycle's end, 2s.  With a 28s limit the
    # 30s leftover flush does not move it (30-2 = 28 is not longer than 28); 60s does.
    eng, ev = run(until=70 * US,
                  simulation={"schedulingCycleDuration": "2s", "podMaxInUnschedulablePodsDuration": "28s"},
                  objects=[node("n1", "1"), pod("p", cpu="2")])
    assert transitions(ev, "default/p")[:4] == [
        (0.0, None, "activeQ", "PodAdd"), (0.0, "activeQ", None, "Pop"),
        (2.0, None, "unschedulablePods", "ScheduleAttemptFailure"),
        (60.0, "unschedulablePods", "activeQ", "UnschedulableTimeout"),
    ]


def test_a_pod_waits_for_the_cycle_in_flight():
    eng, ev = run(simulation={"schedulingCycleDuration": "1s"},
                  objects=[node("n1", "4"), pod("a"), pod("b")])
    starts = [(e["time"], e["pod"]) for e in ev if e["type"] == "CycleStart"]
    assert starts == [(0.0, "default/a"), (1.0, "default/b")]
    bound = [(e["time"], e["pod"]) for e in ev if e["type"] == "Bound"]
    assert bound == [(1.0, "default/a"), (2.0, "default/b")]
