"""A different PostFilter plugged in through the profile (issue: custom preemption plugins).

Upstream lets a profile disable DefaultPreemption and enable another PostFilter; its preemption
Evaluator is reusable (preemption.Evaluator with an Interface).  Here a custom plugin reuses
engine.preemption.Evaluator with its own victim choice and gets the same trace events.
"""
from engine import Engine, Scenario, Trace, US
from engine.framework.interface import Code, PostFilterPlugin, Status
from engine.plugins import registry
from engine.plugins.defaultpreemption import DefaultPreemption
from engine.preemption import Evaluator


class EvictEverything(DefaultPreemption):
    """Like DefaultPreemption, but never reprieves: every lower-priority pod is a victim."""
    name = "EvictEverything"

    def select_victims_on_node(self, state, pod, node_info, pdbs):
        victims = [p for p in node_info.pods if p.priority < pod.priority]
        if not victims:
            return None, 0, Status(Code.UnschedulableAndUnresolvable, ["nothing to evict"])
        for p in victims:
            node_info.remove_pod(p)
        st = self.handle.run_filter_plugins_with_nominated_pods(state, pod, node_info, True)
        if st is not None and st.code != Code.Success:
            return None, 0, st
        return victims, 0, Status(Code.Success)

    def post_filter(self, state, pod, m):
        return Evaluator(self.name, self.handle, state, self).preempt(pod, m)


class NeverPreempt(PostFilterPlugin):
    name = "NeverPreempt"

    def post_filter(self, state, pod, m):
        return None, Status(Code.Unschedulable, ["this profile never preempts"])


def scenario(post_filter):
    def node(n):
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
                "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}

    def pod(n, prio, **spec):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n},
                "spec": {"priority": prio, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec}}
    return Scenario.from_dict({
        "kind": "Scenario", "metadata": {"name": "custom"},
        "scheduler": {"profiles": [{"plugins": {"postFilter": {
            "enabled": [{"name": post_filter}], "disabled": [{"name": "DefaultPreemption"}]}}}]},
        "objects": [node("n1"), pod("a", 1, nodeName="n1"), pod("b", 2, nodeName="n1"), pod("high", 10)],
    })


def run(sc, until):
    events = []
    t = Trace()
    t.add_sink(events.append)
    e = Engine(sc, t)
    e.run(until)
    return e, events


def test_custom_preemption_plugin_replaces_default_and_gets_the_same_trace_events():
    registry.register("EvictEverything", lambda args, h: EvictEverything(args or {}, h))
    try:
        e, events = run(scenario("EvictEverything"), 5 * US)
    finally:
        registry.unregister("EvictEverything")
    post = [ev for ev in events if ev["type"] == "PluginResult" and ev["point"] == "PostFilter"]
    assert [p["plugin"] for p in post] == ["EvictEverything"]
    cand = [ev for ev in events if ev["type"] == "PreemptionCandidate"]
    # DefaultPreemption would reprieve b (one victim is enough); this plugin evicts both
    assert cand[0]["victims"] == ["default/a", "default/b"]
    assert any(ev["type"] == "PreemptionPick" and ev["node"] == "n1" for ev in events)
    assert any(ev["type"] == "Nomination" and ev["pod"] == "default/high" and ev["node"] == "n1" for ev in events)
    assert {k for k, v in e.state()["deletedPods"].items() if v["reason"] == "Preempted"} == {"default/a", "default/b"}
    assert e.state()["pods"]["default/high"]["phase"] == "Running"


def test_a_profile_without_preemption_leaves_the_pod_parked():
    registry.register("NeverPreempt", lambda args, h: NeverPreempt())
    try:
        e, events = run(scenario("NeverPreempt"), 5 * US)
    finally:
        registry.unregister("NeverPreempt")
    assert not any(ev["type"].startswith("Preemption") for ev in events)
    end = [ev for ev in events if ev["type"] == "CycleEnd" and ev["pod"] == "default/high"][0]
    assert "this profile never preempts" in end["message"]
    assert e.state()["queues"]["unschedulablePods"] == ["default/high"]
