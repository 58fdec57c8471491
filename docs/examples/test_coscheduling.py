"""Testing the Coscheduling example plugin with pytest (docs/writing-plugins.md, "Waiting pods").

    pytest docs/examples/test_coscheduling.py
"""
import pytest

from engine.testing import make_node, make_pod

GROUP = "scheduling.x-k8s.io/pod-group"


def pod_group(name, min_member, timeout=None):
    spec = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def member(name, group="gang", cpu="3"):
    return make_pod(name).req(cpu=cpu).label(GROUP, group)


def cluster(nodes, pods, objects=(), actions=(), post_filter=True):
    from engine.testing import scenario
    plugins = {"multiPoint": ["Coscheduling"]}
    if not post_filter:
        plugins["postFilter"] = {"disabled": [{"name": "Coscheduling"}]}
    return scenario(nodes=[make_node(n).capacity(cpu="4", memory="8Gi") for n in nodes], pods=pods,
                    objects=list(objects), actions=list(actions), plugins=plugins)


def test_members_wait_until_the_quorum_then_bind_together(scheduler_sim):
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1", "n2", "n3"], [member("a"), member("b"), member("c")],
                                       objects=[pod_group("gang", 3, timeout=30)]))
    assert [e["pod"] for e in result.events("PermitWait")] == ["default/a", "default/b"]
    assert [e["pod"] for e in result.events("PermitAllow")] == ["default/a", "default/b"]
    assert {result.phase(p) for p in "abc"} == {"Running"}
    assert {e["time"] for e in result.events("Bound")} == {0.0}


def test_prefilter_waits_for_enough_members(scheduler_sim):
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1", "n2"], [member("a")], objects=[pod_group("gang", 2)]))
    [r] = result.plugin_results("Coscheduling", "PreFilter", "a")
    assert r["code"] == "UnschedulableAndUnresolvable"
    assert r["reasons"] == ["pre-filter pod a cannot find enough sibling pods, current pods number: 1, "
                            "minMember of group: 2"]
    assert result.queue_of("a") == "unschedulablePods"


def test_a_missing_pod_group_is_refused_in_prefilter(scheduler_sim):
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1"], [member("a", group="nowhere")]))
    [r] = result.plugin_results("Coscheduling", "PreFilter", "a")
    assert r["reasons"] == ['podGroup "default/nowhere" not found']


def test_the_pod_group_created_later_moves_the_member(scheduler_sim):
    """EventsToRegister: a PodGroup add moves the pods Coscheduling rejected."""
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1"], [member("a", cpu="1")],
                                       actions=[{"at": "5s", "create": pod_group("gang", 1)}]))
    assert result.phase("a") == "Running"
    assert result.events("Bound", pod="a")[0]["time"] >= 5.0


def test_timeout_rejects_the_waiting_members_and_frees_their_nodes(scheduler_sim):
    """Two of three fit: they wait from t=0 with the group's 10 s timeout, and both timers fire
    at 10 s; the nodes are freed and the third member gets its turn."""
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1", "n2"], [member("a"), member("b"), member("c")],
                                       objects=[pod_group("gang", 3, timeout=10)], post_filter=False), until=10)
    timeouts = result.events("PermitTimeout")
    assert [(t["pod"], t["time"]) for t in timeouts] == [("default/a", 10.0), ("default/b", 10.0)]
    assert timeouts[0]["message"] == "rejected due to timeout after waiting 10s at plugin Coscheduling"
    assert not result.events("PermitReject")      # b timed out before a's Unreserve could reject it
    assert [e["pod"] for e in result.events("BindFailed")] == ["default/a", "default/b"]
    # the freed space goes to the member that was waiting for a node
    assert result.events("CycleEnd", pod="c")[-1]["time"] == 10.0


def test_unreserve_rejects_the_waiting_siblings(scheduler_sim):
    """A member deleted while waiting is rejected ("removed"); its Unreserve rejects the others."""
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1", "n2"], [member("a"), member("b"), member("c")],
                                       objects=[pod_group("gang", 3, timeout=30)], post_filter=False,
                                       actions=[{"at": "5s", "delete": {"kind": "Pod", "name": "a"}}]), until=5)
    rejects = result.events("PermitReject")
    assert [(r["pod"], r["plugin"], r["message"]) for r in rejects] == [
        ("default/a", None, "removed"), ("default/b", "Coscheduling", "rejection in Unreserve")]


def test_post_filter_rejects_the_waiting_members_at_once(scheduler_sim):
    """The third member finds no node: PostFilter's optimistic rejection frees the other two."""
    scheduler_sim.load("coscheduling.py")
    result = scheduler_sim.run(cluster(["n1", "n2"], [member("a"), member("b"), member("c")],
                                       objects=[pod_group("gang", 3, timeout=10)]), until=0)
    rejects = result.events("PermitReject")
    assert [(r["pod"], r["message"]) for r in rejects] == [("default/a", "optimistic rejection in PostFilter"),
                                                          ("default/b", "optimistic rejection in PostFilter")]
    [pf] = result.plugin_results("Coscheduling", "PostFilter", "c")
    assert pf["reasons"] == ["PodGroup default/gang gets rejected due to Pod c is unschedulable even after PostFilter"]


def test_bad_args_are_refused(scheduler_sim):
    scheduler_sim.load("coscheduling.py")
    from engine.testing import scenario
    with pytest.raises(Exception) as info:
        scheduler_sim.run(scenario(nodes=[make_node("n1")], pods=[member("a")],
                                   plugins={"multiPoint": ["Coscheduling"]},
                                   plugin_config={"Coscheduling": {"permitWaitingTimeSeconds": -1}}))
    assert "pluginConfig[Coscheduling].args.permitWaitingTimeSeconds: -1 is not a non-negative integer" in str(info.value)
