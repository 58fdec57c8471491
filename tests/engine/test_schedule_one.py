"""scheduleOne details: PodsToActivate, binding of a re-created pod, binding-cycle trace, profile checks.

Upstream: schedule_one.go (schedulingCycle activates PodsToActivate on success; bindingCycle
likewise), cache keyed by pod UID, framework runtime's shared queue sort requirement
(scheduler.go "profiles must use the same queue sort").
"""
import pytest

from engine import ConfigError, Engine, Scenario, Trace, US
from engine.framework import interface as fwi
from engine.plugins import registry


def node(name, cpu="4"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}}}


def pod(name, cpu="1", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}}


def run(doc, until=None):
    events = []
    t = Trace()
    t.add_sink(events.append)
    e = Engine(Scenario.from_dict(doc), t)
    e.run(until)
    return e, events


class Activator(fwi.PermitPlugin):
    """Test plugin: on Permit, asks to activate default/parked (PodsToActivate)."""
    name = "Activator"

    def permit(self, state, pod, node_name):
        parked = self.handle.get_pod("default/parked")
        if parked is not None:
            state.pods_to_activate[parked.key] = parked
        return None, 0


@pytest.fixture
def activator():
    def factory(args, handle):
        p = Activator()
        p.handle = handle
        return p
    registry.register("Activator", factory)
    yield
    registry.unregister("Activator")


def test_pods_to_activate_moves_a_parked_pod_with_force_activate(activator):
    doc = {"kind": "Scenario", "metadata": {"name": "activate"},
           "scheduler": {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "Activator"}]}}}]},
           "objects": [node("n1", cpu="2"), pod("parked", cpu="8")],
           "actions": [{"at": "5s", "create": pod("trigger")}]}
    e, events = run(doc, until=5 * US)
    moves = [ev for ev in events if ev["type"] == "QueueTransition" and ev["pod"] == "default/parked"
             and ev["event"] == "ForceActivate"]
    assert len(moves) == 1 and moves[0]["from"] == "unschedulablePods" and moves[0]["to"] == "activeQ"
    assert e.state()["metrics"]["queue_incoming_pods_total"]["active/ForceActivate"] == 1
    # it was retried right away, ignoring its backoff
    starts = [ev for ev in events if ev["type"] == "CycleStart" and ev["pod"] == "default/parked"]
    assert [s["time"] for s in starts] == [0.0, 5.0]


def test_a_pod_recreated_while_its_old_binding_is_in_flight_is_scheduled_itself():
    """The bind carries the old pod's UID: it fails, and the new pod gets its own cycle."""
    doc = {"kind": "Scenario", "metadata": {"name": "recreate"},
           "simulation": {"bindDuration": "2s"},
           "objects": [node("n1")],
           "actions": [{"at": 0, "create": pod("p")},
                       {"at": "1s", "delete": {"kind": "Pod", "name": "p"}},
                       {"at": "1s", "create": pod("p")}]}
    e, events = run(doc)
    assert any(ev["type"] == "BindFailed" and ev["pod"] == "default/p" for ev in events)
    assert not any(ev["type"] == "CycleSkipped" for ev in events)
    st = e.state()["pods"]["default/p"]
    assert st["phase"] == "Running" and st["nodeName"] == "n1"


def test_binding_plugin_results_carry_the_pods_own_cycle():
    doc = {"kind": "Scenario", "metadata": {"name": "bindcycle"}, "simulation": {"bindDuration": "1s"},
           "objects": [node("n1"), pod("a"), pod("b")]}
    _, events = run(doc)
    binds = {ev["pod"]: ev["cycle"] for ev in events if ev["type"] == "PluginResult" and ev["point"] == "Bind"}
    starts = {ev["pod"]: ev["cycle"] for ev in events if ev["type"] == "CycleStart"}
    assert binds == starts == {"default/a": 1, "default/b": 2}


def test_profiles_must_share_one_queue_sort():
    class OtherSort(fwi.QueueSortPlugin):
        name = "OtherSort"

        def less(self, a, b):
            return a.timestamp < b.timestamp
    registry.register("OtherSort", lambda args, h: OtherSort())
    try:
        doc = {"kind": "Scenario", "metadata": {"name": "sorts"},
               "scheduler": {"profiles": [
                   {"schedulerName": "default-scheduler"},
                   {"schedulerName": "other", "plugins": {"queueSort": {
                       "enabled": [{"name": "OtherSort"}], "disabled": [{"name": "*"}]}}}]}}
        with pytest.raises(ConfigError, match="same queue sort"):
            Engine(Scenario.from_dict(doc))
    finally:
        registry.unregister("OtherSort")


def test_unknown_profile_field_is_refused_with_its_place():
    doc = {"kind": "Scenario", "metadata": {"name": "p"}, "scheduler": {"profiles": [{"plugin": {}}]}}
    with pytest.raises(Exception) as exc:
        Scenario.from_dict(doc)
    assert "scheduler.profiles[0].plugin: is not a profile field" in str(exc.value)


def test_a_plugin_factory_that_raises_is_a_config_error_naming_the_profile():
    def broken(args, handle):
        raise RuntimeError("boom")
    registry.register("Broken", broken)
    try:
        doc = {"kind": "Scenario", "metadata": {"name": "b"},
               "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Broken"}]}}}]}}
        with pytest.raises(ConfigError) as exc:
            Engine(Scenario.from_dict(doc))
        assert exc.value.problems == ["scheduler.profiles[0].plugins: building plugin 'Broken' failed: RuntimeError: boom"]
    finally:
        registry.unregister("Broken")


def test_update_during_a_successful_cycle_queues_a_copy_that_is_skipped_once_assumed():
    """Upstream: the update handler re-adds a pod that is in flight but not yet assumed
    (PriorityQueue.Update, not in any queue -> new QueuedPodInfo); the cycle then assumes the
    pod; the stale copy is popped later and skipPodSchedule drops it (assumed)."""
    doc = {"kind": "Scenario", "metadata": {"name": "stale"},
           "simulation": {"schedulingCycleDuration": "1s", "bindDuration": "2s"},
           "objects": [node("n1"), pod("p")],
           "actions": [{"at": "500ms", "update": {**pod("p"), "metadata": {"name": "p", "annotations": {"x": "1"}}}}]}
    e, events = run(doc)
    moves = [(ev["from"], ev["to"], ev["event"]) for ev in events
             if ev["type"] == "QueueTransition" and ev["pod"] == "default/p"]
    assert (None, "activeQ", "PodUpdate") in moves
    skipped = [ev for ev in events if ev["type"] == "CycleSkipped"]
    assert len(skipped) == 1 and skipped[0]["cycle"] == 2 and skipped[0]["time"] == 1.0
    st = e.state()
    assert st["pods"]["default/p"]["phase"] == "Running" and st["queues"]["activeQ"] == []


def test_a_node_listed_between_its_addition_and_the_next_cycle_is_still_seen():
    """Reading the node list (as the UI does) must not hide a new node from the next cycle."""
    doc = {"kind": "Scenario", "metadata": {"name": "snap"},
           "objects": [node("n1", cpu="1"), pod("big", cpu="2")]}
    e = Engine(Scenario.from_dict(doc))
    e.run(0)
    from engine.scenario import parse_action
    from engine.objects import Problems
    probs = Problems()
    e.inject(parse_action("create", node("n2", cpu="4"), "inject", probs, e.scenario.simulation.start_time))
    e.cache.node_info_list()          # an observer lists the nodes
    e.run(2 * US)
    assert e.state()["pods"]["default/big"]["nodeName"] == "n2"
