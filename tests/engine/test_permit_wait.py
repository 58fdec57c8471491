"""Permit Wait, the waiting-pods map and WaitOnPermit (issue 11).

Upstream (kubernetes v1.28.0): framework/runtime/framework.go RunPermitPlugins, WaitOnPermit,
RejectWaitingPod, IterateOverWaitingPods; runtime/waiting_pods_map.go (newWaitingPod's timers,
Allow, Reject and the channel with a buffer of one); schedule_one.go bindingCycle and
handleBindingCycleError; eventhandlers.go deletePodFromSchedulingQueue; preemption.go
prepareCandidate.  The cases mirror framework_test.go's TestPermitPlugins / TestWaitOnPermit /
TestRejectWaitingPod and schedule_one_test.go's binding-cycle failures.
"""
import pytest

from engine import Engine, Scenario, Trace, US
from engine.framework import interface as fwi
from engine.framework.interface import Code, Status
from engine.framework.waiting_pods import go_duration
from engine.plugins import registry


def node(name, cpu="4"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}}}


def pod(name, cpu="1", labels=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}}


class WaitPlugin(fwi.PermitPlugin):
    """Waits ``timeout`` seconds for pods labelled ``wait``; a pod labelled ``release`` allows
    every waiting pod (as a gang plugin allows its siblings); one labelled ``reject-all``
    rejects them."""

    def __init__(self, name, handle, timeout):
        self.name = name
        self.handle = handle
        self.timeout = timeout

    def permit(self, state, p, node_name):
        if p.labels.get("release"):
            self.handle.iterate_over_waiting_pods(lambda wp: wp.allow(self.name))
            return None, 0
        if p.labels.get("reject-all"):
            self.handle.iterate_over_waiting_pods(lambda wp: wp.reject(self.name, "the gang broke up"))
            return None, 0
        if p.labels.get("wait"):
            return Status(Code.Wait), self.timeout
        return None, 0


class DenyPlugin(fwi.PermitPlugin):
    name = "Deny"

    def permit(self, state, p, node_name):
        if p.labels.get("deny"):
            return Status(Code.Unschedulable, ["no entry"]), 0
        return None, 0


@pytest.fixture
def plugins():
    made = {}

    def register(name, timeout):
        def factory(args, handle):
            made[name] = WaitPlugin(name, handle, timeout)
            return made[name]
        registry.register(name, factory)
    register("WaitA", 10)
    register("WaitB", 30)
    registry.register("Deny", lambda args, handle: DenyPlugin())
    yield made
    for n in ("WaitA", "WaitB", "Deny"):
        registry.unregister(n)


def scenario(objects, actions=(), permit=("WaitA",), **sim):
    d = {"kind": "Scenario", "metadata": {"name": "permit"},
         "scheduler": {"profiles": [{"plugins": {"permit": {"enabled": [{"name": n} for n in permit]}}}]},
         "objects": list(objects), "actions": list(actions)}
    if sim:
        d["simulation"] = sim
    return d


def run(doc, until=None):
    events = []
    t = Trace()
    t.add_sink(events.append)
    e = Engine(Scenario.from_dict(doc), t)
    e.run(until)
    return e, events


def of(events, type_, **match):
    return [ev for ev in events if ev["type"] == type_ and all(ev.get(k) == v for k, v in match.items())]


W = {"wait": "1"}


def test_wait_parks_the_assumed_pod_and_the_next_pod_is_scheduled(plugins):
    """RunPermitPlugins returns Wait: the cycle ends Scheduled, the pod waits holding its node,
    and the scheduler pops the next pod (which sees the waiting pod's resources as used)."""
    e, events = run(scenario([node("n1", cpu="2"), pod("a", labels=W), pod("big", cpu="2")]), until=5 * US)
    st = e.state()
    assert st["pods"]["default/a"]["phase"] == "Waiting"
    assert st["pods"]["default/a"]["nodeName"] == "n1"
    assert st["waitingPods"] == {"default/a": {"node": "n1", "since": 0.0, "plugins": {"WaitA": 10.0}, "result": None}}
    [w] = of(events, "PermitWait")
    assert (w["pod"], w["plugin"], w["node"], w["timeout"], w["cycle"]) == ("default/a", "WaitA", "n1", 10.0, 1)
    assert of(events, "CycleEnd", pod="default/a")[0]["result"] == "Scheduled"
    # the next pod was popped at once, and the waiting pod's cpu counts against it
    big_end = of(events, "CycleEnd", pod="default/big")[0]
    assert big_end["time"] == 0.0 and big_end["result"] == "Unschedulable"
    assert "Insufficient cpu" in big_end["message"]
    assert not of(events, "Bound", pod="default/a")
    assert e.plugin_errors() == []


def test_timeout_rejects_unreserves_forgets_and_requeues(plugins):
    """newWaitingPod's timer fires after the plugin's wait: Reject(plugin, "rejected due to
    timeout after waiting 10s at plugin WaitA"); handleBindingCycleError frees the node (the
    other pod moves on AssignedPodDelete) and the pod is requeued with a FitError."""
    e, events = run(scenario([node("n1", cpu="2"), pod("a", labels=W), pod("big", cpu="2")]), until=10 * US)
    [t] = of(events, "PermitTimeout")
    assert t["time"] == 10.0 and t["plugin"] == "WaitA" and t["timeout"] == 10.0 and t["node"] == "n1"
    assert t["message"] == "rejected due to timeout after waiting 10s at plugin WaitA"
    assert not of(events, "PermitReject")
    [bf] = of(events, "BindFailed", pod="default/a")
    assert bf["time"] == 10.0 and bf["reasons"] == [t["message"]] and bf["seq"] > t["seq"]
    st = e.state()
    assert "default/a" not in st["waitingPods"]
    a = st["pods"]["default/a"]
    assert a["phase"] == "Pending" and a["nodeName"] is None
    assert a["unschedulablePlugins"] == ["WaitA"]
    # the rejected pod's failure is a FitError on its one node
    moved = of(events, "QueueTransition", pod="default/a", event="ScheduleAttemptFailure")
    assert moved and moved[-1]["time"] == 10.0
    # big was moved by the AssignedPodDelete that the forget announced, and now fits
    assert of(events, "QueueTransition", pod="default/big", event="AssignedPodDelete")
    assert of(events, "Bound", pod="default/big")[0]["time"] == 10.0
    assert st["metrics"]["schedule_attempts_total"]["unschedulable/default-scheduler"] >= 2


def test_allow_by_every_waiting_plugin_lets_the_binding_go_on(plugins):
    """Allow from another pod's Permit (the gang's last member): the binding cycle goes on with
    PreBind/Bind bindDuration later; the stopped timer does not keep the run going."""
    doc = scenario([node("n1"), pod("a", labels=W), pod("b", labels=W)],
                   [{"at": "3s", "create": pod("c", labels={"release": "1"})}], bindDuration="1s")
    e, events = run(doc)
    assert [ev["pod"] for ev in of(events, "PermitAllow")] == ["default/a", "default/b"]
    assert all(ev["time"] == 3.0 and ev["plugin"] == "WaitA" for ev in of(events, "PermitAllow"))
    bound = {ev["pod"]: ev["time"] for ev in of(events, "Bound")}
    assert bound == {"default/a": 4.0, "default/b": 4.0, "default/c": 4.0}
    assert not of(events, "PermitTimeout")
    assert e.now == 4 * US          # not the 10 s deadline of the stopped timers
    st = e.state()
    assert st["waitingPods"] == {}
    assert {k: p["phase"] for k, p in st["pods"].items()} == {f"default/{n}": "Running" for n in "abc"}


def test_allowed_pod_is_binding_until_the_bind_completes(plugins):
    doc = scenario([node("n1"), pod("a", labels=W)],
                   [{"at": "3s", "create": pod("c", labels={"release": "1"})}], bindDuration="2s")
    e, _ = run(doc, until=4 * US)
    assert e.state()["pods"]["default/a"]["phase"] == "Binding"
    assert e.state()["pods"]["default/a"]["nodeName"] == "n1"


def test_two_waiting_plugins_need_both_allows_and_the_pending_one_times_out(plugins):
    """GetPendingPlugins shrinks with each Allow; Allow stops only that plugin's timer."""
    seen = {}

    class AllowOne(fwi.PermitPlugin):
        name = "AllowOne"

        def __init__(self, handle):
            self.handle = handle

        def permit(self, state, p, node_name):
            if p.labels.get("allow-one"):
                def cb(wp):
                    wp.allow("WaitA")
                    seen[wp.get_pod().key] = wp.get_pending_plugins()
                self.handle.iterate_over_waiting_pods(cb)
            return None, 0
    registry.register("AllowOne", lambda args, h: AllowOne(h))
    try:
        doc = scenario([node("n1"), pod("a", labels=W)],
                       [{"at": "3s", "create": pod("c", labels={"allow-one": "1"})}],
                       permit=("WaitA", "WaitB", "AllowOne"))
        e, events = run(doc, until=20 * US)
        assert seen == {"default/a": ["WaitB"]}
        assert e.state()["waitingPods"]["default/a"]["plugins"] == {"WaitB": 30.0}
        # WaitA's timer (10 s) was stopped by its Allow; WaitB's fires at 30 s
        e.run(40 * US)
        [t] = of(events, "PermitTimeout")
        assert (t["time"], t["plugin"]) == (30.0, "WaitB")
        assert t["message"] == "rejected due to timeout after waiting 30s at plugin WaitB"
    finally:
        registry.unregister("AllowOne")


def test_earliest_timer_wins_when_two_plugins_wait(plugins):
    e, events = run(scenario([node("n1"), pod("a", labels=W)], permit=("WaitB", "WaitA")), until=60 * US)
    w = of(events, "PermitWait")
    assert [(x["plugin"], x["timeout"]) for x in w] == [("WaitB", 30.0), ("WaitA", 10.0)]
    [t] = of(events, "PermitTimeout")
    assert (t["time"], t["plugin"]) == (10.0, "WaitA")
    assert e.state()["pods"]["default/a"]["unschedulablePlugins"] == ["WaitA"]


def test_reject_by_a_plugin_is_a_fit_error_on_the_node(plugins):
    doc = scenario([node("n1"), pod("a", labels=W)], [{"at": "2s", "create": pod("c", labels={"reject-all": "1"})}])
    e, events = run(doc, until=5 * US)
    [r] = of(events, "PermitReject")
    assert (r["pod"], r["plugin"], r["message"], r["time"], r["node"]) == ("default/a", "WaitA", "the gang broke up", 2.0, "n1")
    fail = of(events, "QueueTransition", pod="default/a", event="ScheduleAttemptFailure")[-1]
    assert fail["time"] == 2.0
    assert e.state()["pods"]["default/a"]["unschedulablePlugins"] == ["WaitA"]
    assert e.state()["pods"]["default/a"]["phase"] == "Pending"


def test_a_second_signal_is_dropped(plugins):
    """The channel has a buffer of one: a Reject after Allow-all changes nothing."""
    class AllowThenReject(fwi.PermitPlugin):
        name = "AllowThenReject"

        def __init__(self, handle):
            self.handle = handle

        def permit(self, state, p, node_name):
            if p.labels.get("release"):
                def cb(wp):
                    wp.allow("WaitA")
                    wp.reject("WaitA", "too late")
                self.handle.iterate_over_waiting_pods(cb)
            return None, 0
    registry.register("AllowThenReject", lambda args, h: AllowThenReject(h))
    try:
        doc = scenario([node("n1"), pod("a", labels=W)], [{"at": "1s", "create": pod("c", labels={"release": "1"})}],
                       permit=("WaitA", "AllowThenReject"))
        e, events = run(doc)
        assert not of(events, "PermitReject")
        assert of(events, "Bound", pod="default/a")
    finally:
        registry.unregister("AllowThenReject")


def test_deleting_a_waiting_pod_rejects_it_as_removed(plugins):
    """deletePodFromSchedulingQueue: RejectWaitingPod(uid) -> Reject("", "removed") and
    MoveAll(AssignedPodDelete); the binding cycle then unreserves and forgets the pod."""
    doc = scenario([node("n1", cpu="2"), pod("a", labels=W), pod("big", cpu="2")],
                   [{"at": "2s", "delete": {"kind": "Pod", "name": "a"}}])
    e, events = run(doc, until=5 * US)
    [r] = of(events, "PermitReject")
    assert r["plugin"] is None and r["message"] == "removed" and r["time"] == 2.0
    st = e.state()
    assert st["deletedPods"]["default/a"]["reason"] == "Deleted"
    assert st["waitingPods"] == {}
    assert of(events, "Bound", pod="default/big")[0]["time"] == 2.0
    assert e.cache.get_pod("default/a") is None or e.cache.get_pod("default/a").key != "default/a"


def test_preemption_rejects_a_waiting_victim_instead_of_deleting_it(plugins):
    """prepareCandidate: a victim that is a waiting pod gets Reject(DefaultPreemption, "preempted")."""
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}]
    doc = scenario([node("n1", cpu="2"), *pcs, pod("low", cpu="2", labels=W)],
                   [{"at": "2s", "create": pod("high", cpu="2", priorityClassName="high")}])
    doc["scheduler"]["profiles"][0]["plugins"]["multiPoint"] = {"enabled": [{"name": "DefaultPreemption"}]}
    e, events = run(doc, until=4 * US)
    [r] = of(events, "PermitReject")
    assert (r["pod"], r["plugin"], r["message"]) == ("default/low", "DefaultPreemption", "preempted")
    assert not of(events, "PodDeleted", pod="default/low")
    st = e.state()
    assert "default/low" in st["pods"] and st["pods"]["default/low"]["unschedulablePlugins"] == ["DefaultPreemption"]
    assert st["pods"]["default/high"]["phase"] == "Running"
    assert st["metrics"]["preemption_victims_total"] == 1


def test_timeouts_are_capped_at_15_minutes_and_zero_fires_at_once(plugins):
    registry.unregister("WaitA")
    registry.register("WaitA", lambda args, h: WaitPlugin("WaitA", h, 3600))
    registry.unregister("WaitB")
    registry.register("WaitB", lambda args, h: WaitPlugin("WaitB", h, 0))
    e, events = run(scenario([node("n1"), pod("a", labels=W)]), until=1000 * US)
    t = of(events, "PermitTimeout")
    assert t[0]["timeout"] == 900.0 and t[0]["time"] == 900.0
    assert t[0]["message"] == "rejected due to timeout after waiting 15m0s at plugin WaitA"
    e2, events2 = run(scenario([node("n1"), pod("a", labels=W)], permit=("WaitB",)), until=0)
    [t2] = of(events2, "PermitTimeout")
    assert t2["time"] == 0.0 and t2["message"] == "rejected due to timeout after waiting 0s at plugin WaitB"


def test_a_rejection_by_permit_itself_never_waits(plugins):
    """An Unschedulable Permit ends RunPermitPlugins even after a Wait: no waiting pod."""
    e, events = run(scenario([node("n1"), pod("a", labels={"wait": "1", "deny": "1"})], permit=("WaitA", "Deny")),
                    until=1 * US)
    assert not of(events, "PermitWait")
    assert e.state()["waitingPods"] == {}
    assert e.state()["pods"]["default/a"]["unschedulablePlugins"] == ["Deny"]


def test_state_has_no_waiting_pods_key_without_permit_plugins():
    doc = {"kind": "Scenario", "metadata": {"name": "plain"}, "objects": [node("n1"), pod("a")]}
    e, _ = run(doc)
    assert "waitingPods" not in e.state()
    assert list(e.state()) == ["time", "schedulingCycle", "moveRequestCycle", "queues", "pods", "deletedPods",
                               "nominatedPods", "metrics"]


def test_state_key_order_with_permit_plugins(plugins):
    e, _ = run(scenario([node("n1"), pod("a", labels=W)]), until=0)
    assert list(e.state()) == ["time", "schedulingCycle", "moveRequestCycle", "queues", "pods", "deletedPods",
                               "nominatedPods", "waitingPods", "metrics"]


@pytest.mark.parametrize("us,text", [(0, "0s"), (10 * US, "10s"), (60 * US, "1m0s"), (900 * US, "15m0s"),
                                     (1_500_000, "1.5s"), (250_000, "250ms"), (1_500, "1.5ms"), (7, "7µs"),
                                     (3600 * US, "1h0m0s"), (3723 * US + 500_000, "1h2m3.5s")])
def test_go_duration_strings(us, text):
    """time.Duration.String, as fmt's %v prints the timeout in the rejection message."""
    assert go_duration(us) == text


# -- framework_test.go TestPermitPlugins: RunPermitPlugins' combined status -------------------

class Injected(fwi.PermitPlugin):
    """framework_test.go's TestPlugin with an injected Permit status."""

    def __init__(self, name, code):
        self.name = name
        self.code = code

    def permit(self, state, p, node_name):
        if self.code == Code.Success:
            return Status(Code.Success), 0
        return Status(self.code, ["injected status"]), 10


PERMIT_CASES = [
    ("NilPermitPlugin", [], None, None, None),
    ("SuccessPermitPlugin", [Code.Success], None, None, None),
    ("UnschedulablePermitPlugin", [Code.Unschedulable], Code.Unschedulable, ["injected status"], "TestPlugin0"),
    ("ErrorPermitPlugin", [Code.Error], Code.Error, ["running Permit plugin 'TestPlugin0': injected status"], "TestPlugin0"),
    ("UnschedulableAndUnresolvablePermitPlugin", [Code.UnschedulableAndUnresolvable],
     Code.UnschedulableAndUnresolvable, ["injected status"], "TestPlugin0"),
    ("WaitPermitPlugin", [Code.Wait], Code.Wait, ['one or more plugins asked to wait and no plugin rejected pod "p"'], ""),
    ("SuccessSuccessPermitPlugin", [Code.Success, Code.Success], None, None, None),
    ("ErrorAndErrorPlugins", [Code.Error, Code.Error], Code.Error,
     ["running Permit plugin 'TestPlugin0': injected status"], "TestPlugin0"),
    ("WaitThenUnschedulable", [Code.Wait, Code.Unschedulable], Code.Unschedulable, ["injected status"], "TestPlugin1"),
]


@pytest.mark.parametrize("name,codes,code,reasons,failed", PERMIT_CASES, ids=[c[0] for c in PERMIT_CASES])
def test_run_permit_plugins_combines_as_upstream(name, codes, code, reasons, failed):
    names = [f"TestPlugin{i}" for i in range(len(codes))]
    for n, c in zip(names, codes):
        registry.register(n, lambda args, h, n=n, c=c: Injected(n, c))
    try:
        doc = scenario([node("n1")], permit=names)
        e = Engine(Scenario.from_dict(doc), Trace())
        e.run(0)
        fwk = e.frameworks["default-scheduler"]
        from engine.framework.cycle_state import CycleState
        from engine.objects import Problems, pod_from_manifest
        p = pod_from_manifest(pod("p"), "p", Problems())
        st, wp = fwk.run_permit_plugins(CycleState(), p.copy(node_name="n1"), "n1")
        if code is None:
            assert st is None and wp is None
            return
        assert st.code == code and st.reasons == reasons and st.failed_plugin == failed
        assert (wp is not None) == (code == Code.Wait)
        if wp is not None:
            assert fwk.get_waiting_pod(p.uid) is wp and wp.get_pending_plugins() == ["TestPlugin0"]
    finally:
        for n in names:
            registry.unregister(n)
