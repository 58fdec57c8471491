"""Namespace objects with labels (docs/scenario-format.md, "Namespaces"): how a scenario
declares them, what namespaceSelector terms see of them (InterPodAffinity's
``mergeAffinityTermNamespacesIfNotEmpty`` and ``GetNamespaceLabelsSnapshot``, the scheduling
queue's ``getUnschedulablePodsWithMatchingAffinityTerm``, upstream v1.28), and that a
namespace change moves no pod (v1.28 registers no Namespace event)."""
import io
import json

import pytest

from engine import Engine, Scenario, ScenarioError, Trace, US
from engine.export import scenario_at
from engine.trace import JsonLinesWriter


def ns(name, **labels):
    m = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    if labels:
        m["metadata"]["labels"] = labels
    return m


def node(name, zone):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": zone}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}


def pod(name, namespace="default", labels=None, node_name=None, affinity=None):
    spec = {"containers": [{"name": "c"}]}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec}


def required_affinity(ns_selector, kind="podAffinity"):
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": ns_selector,
         "topologyKey": "zone"}]}}


DEVOPS = {"matchLabels": {"team": "devops"}}


def scenario(objects, actions=(), **simulation):
    d = {"kind": "Scenario", "metadata": {"name": "t"}, "objects": list(objects), "actions": list(actions)}
    if simulation:
        d["simulation"] = simulation
    return d


def run(data, until=400 * US):
    buf = io.StringIO()
    tr = Trace(enabled=True)
    tr.add_sink(JsonLinesWriter(buf))
    eng = Engine(Scenario.from_dict(data), tr)
    eng.run(until)
    return eng, [json.loads(line) for line in buf.getvalue().splitlines()]


def cluster(*namespaces, actions=(), **simulation):
    """Two zones; a db pod in namespace ``ops`` on n2 (zone b); a pending web pod in ``dev``
    that requires a db pod in its zone, in a namespace labelled team=devops."""
    return scenario([*namespaces, node("n1", "a"), node("n2", "b"),
                     pod("db", "ops", {"app": "db"}, node_name="n2"),
                     pod("web", "dev", affinity=required_affinity(DEVOPS))], actions, **simulation)


# ------------------------------------------------------------------------------ the scenario format

def test_a_namespace_object_parses_with_its_name_label():
    sc = Scenario.from_dict(scenario([ns("ops", team="devops"), ns("dev")]))
    got = {o.name: o.labels for k, o in sc.objects if k == "Namespace"}
    assert got == {"ops": {"team": "devops", "kubernetes.io/metadata.name": "ops"},
                   "dev": {"kubernetes.io/metadata.name": "dev"}}


def test_the_api_server_sets_the_name_label_whatever_the_manifest_says():
    sc = Scenario.from_dict(scenario([ns("ops", **{"kubernetes.io/metadata.name": "other"})]))
    assert sc.objects[0][1].labels == {"kubernetes.io/metadata.name": "ops"}


@pytest.mark.parametrize("manifest,problem", [
    (ns("Ops"), 'objects[0].metadata.name: "Ops" is not a valid namespace name (a DNS label: '
                "lower-case letters, digits and '-')"),
    (ns("a.b"), 'objects[0].metadata.name: "a.b" is not a valid namespace name (a DNS label: '
                "lower-case letters, digits and '-')"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {}}, "objects[0].metadata.name: is required"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": {"team": ["a"]}}},
     "objects[0].metadata.labels.team: ['a'] is not a string"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": "team"}},
     'objects[0].metadata.labels: "team" is not a mapping'),
    ({"apiVersion": "v2", "kind": "Namespace", "metadata": {"name": "x"}},
     'objects[0].apiVersion: "v2" is not v1 (the apiVersion of a Namespace)'),
])
def test_a_bad_namespace_is_refused_with_its_place(manifest, problem):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario([manifest]))
    assert e.value.problems == [problem]


def test_a_namespace_declared_twice_is_refused():
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario([ns("ops"), ns("ops", team="x")]))
    assert e.value.problems == ['objects[1].metadata.name: "ops" is already defined at objects[0]']


def test_namespace_actions_parse_and_a_bad_one_names_its_place():
    sc = Scenario.from_dict(scenario([], [{"at": 1, "create": ns("ops", team="devops")},
                                          {"at": 2, "update": ns("ops")},
                                          {"at": 3, "delete": {"kind": "Namespace", "name": "ops"}}]))
    assert [(a.verb, a.kind, a.namespace, a.name) for a in sc.actions] == [
        ("create", "Namespace", "", "ops"), ("update", "Namespace", "", "ops"),
        ("delete", "Namespace", "", "ops")]
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(scenario([], [{"at": 1, "create": ns("ops", team=True)}]))
    assert e.value.problems == ["actions[0].create.metadata.labels.team: True is not a string"]


# ------------------------------------------------------------------------------ namespaceSelector matching

def test_required_affinity_by_namespace_selector_binds_with_a_labelled_namespace():
    eng, _ = run(cluster(ns("ops", team="devops"), ns("dev")))
    assert eng.state()["pods"]["dev/web"]["nodeName"] == "n2"


@pytest.mark.parametrize("namespaces", [(ns("ops"), ns("dev")), ()], ids=["unlabelled", "implicit"])
def test_a_namespace_without_the_label_matches_nothing(namespaces):
    """The web pod is the only pod its term could match, but it does not match its own term
    (its namespace is not selected), so no node passes (satisfyPodAffinity)."""
    eng, _ = run(cluster(*namespaces), until=US)
    st = eng.state()["pods"]["dev/web"]
    assert st["nodeName"] is None
    assert st["unschedulablePlugins"] == ["InterPodAffinity"]


def test_a_label_update_moves_no_pod_and_shows_in_the_next_cycle():
    """v1.28 registers no Namespace event: after the update at 2s the pod stays in
    unschedulablePods until the leftover flush (podMaxInUnschedulablePodsDuration 10s), and
    that cycle sees the new labels."""
    eng, ev = run(cluster(ns("ops"), ns("dev"),
                          actions=[{"at": "2s", "update": ns("ops", team="devops")}],
                          podMaxInUnschedulablePodsDuration="10s"), until=9 * US)
    assert eng.state()["pods"]["dev/web"]["queue"] == "unschedulablePods"
    assert [e["kind"] for e in ev if e["type"] == "Action"] == ["Namespace"]
    eng.run(400 * US)
    st = eng.state()["pods"]["dev/web"]
    assert (st["nodeName"], st["attempts"]) == ("n2", 2)


def test_a_deleted_namespace_is_no_longer_selected():
    """The lister no longer lists it: the unrolled namespaces leave it out."""
    eng, _ = run(cluster(ns("ops", team="devops"), ns("dev"),
                         actions=[{"at": "0s", "delete": {"kind": "Namespace", "name": "ops"}}]), until=US)
    assert eng.state()["pods"]["dev/web"]["nodeName"] is None


def test_a_namespace_created_by_an_action_does_not_exist_before():
    data = cluster(ns("dev"), actions=[{"at": "5s", "create": ns("ops", team="devops")}],
                   podMaxInUnschedulablePodsDuration="10s")
    eng, _ = run(data, until=4 * US)
    assert eng.state()["pods"]["dev/web"]["nodeName"] is None
    eng.run(400 * US)
    assert eng.state()["pods"]["dev/web"]["nodeName"] == "n2"


def test_existing_pods_terms_see_the_incoming_pods_namespace_labels():
    """An existing pod's required anti-affinity with a namespaceSelector repels pods of the
    namespaces whose labels match (GetNamespaceLabelsSnapshot of the incoming pod's)."""
    guard = pod("guard", "ops", {"app": "guard"}, node_name="n2",
                affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": DEVOPS,
                     "topologyKey": "zone"}]}})
    objs = [node("n2", "b"), guard, pod("db", "dev", {"app": "db"}), pod("db", "qa", {"app": "db"})]
    eng, _ = run(scenario([ns("dev", team="devops"), ns("qa")] + objs), until=US)
    st = eng.state()["pods"]
    assert (st["dev/db"]["nodeName"], st["qa/db"]["nodeName"]) == (None, "n2")
    assert st["dev/db"]["unschedulablePlugins"] == ["InterPodAffinity"]


def test_an_assigned_pod_in_a_selected_namespace_moves_the_waiting_pod():
    """getUnschedulablePodsWithMatchingAffinityTerm: the db pod bound at 3s in namespace ops
    (labelled team=devops) matches web's term, so web leaves unschedulablePods at once
    (AssignedPodAdd); in an unlabelled namespace it does not."""
    for labels, want in (({"team": "devops"}, "n2"), ({}, None)):
        data = scenario([ns("ops", **labels), ns("dev"), node("n1", "a"), node("n2", "b"),
                         pod("web", "dev", affinity=required_affinity(DEVOPS))],
                        [{"at": "3s", "create": pod("db", "ops", {"app": "db"}, node_name="n2")}])
        eng, ev = run(data, until=4 * US)
        assert eng.state()["pods"]["dev/web"]["nodeName"] == want
        moved = [e for e in ev if e["type"] == "QueueTransition" and e.get("pod") == "dev/web"
                 and e.get("event") == "AssignedPodAdd"]
        assert bool(moved) == bool(want)


# ------------------------------------------------------------------------------ trace, actions, export

def test_namespace_actions_in_the_trace_and_the_skipped_ones():
    eng, ev = run(scenario([ns("ops")], [{"at": 1, "create": ns("ops")},
                                         {"at": 2, "delete": {"kind": "Namespace", "name": "ops"}},
                                         {"at": 3, "update": ns("ops", team="x")},
                                         {"at": 4, "delete": {"kind": "Namespace", "name": "ops"}},
                                         {"at": 5, "create": ns("ops", team="y")}]))
    assert [(e["time"], e["action"], e["kind"], e["name"]) for e in ev if e["type"] == "Action"] == [
        (1.0, "create", "Namespace", "ops"), (2.0, "delete", "Namespace", "ops"),
        (3.0, "update", "Namespace", "ops"), (4.0, "delete", "Namespace", "ops"),
        (5.0, "create", "Namespace", "ops")]
    assert [(e["time"], e["reason"], e["place"]) for e in ev if e["type"] == "ActionSkipped"] == [
        (1.0, "Namespace ops already exists", "actions[0].create"),
        (3.0, "Namespace ops does not exist", "actions[2].update"),
        (4.0, "Namespace ops does not exist", "actions[3].delete")]
    assert eng.namespaces.labels("ops") == {"team": "y", "kubernetes.io/metadata.name": "ops"}


def test_a_scenario_without_namespaces_has_only_implicit_ones():
    eng, _ = run(scenario([node("n1", "a")]))
    assert eng.namespaces.namespaces == {}
    assert eng.namespaces.labels("any") == {"kubernetes.io/metadata.name": "any"}


def test_the_export_keeps_the_namespaces_that_exist():
    eng, _ = run(cluster(ns("ops", team="devops"), ns("dev"), ns("gone"),
                         actions=[{"at": "1s", "delete": {"kind": "Namespace", "name": "gone"}}]), until=2 * US)
    out = scenario_at(eng)
    got = [o["metadata"] for o in out["objects"] if o["kind"] == "Namespace"]
    assert got == [{"name": "ops", "labels": {"team": "devops"}}, {"name": "dev"}]
    again = Engine(Scenario.from_dict(out), Trace(enabled=False))
    again.run(400 * US)
    assert again.state()["pods"]["dev/web"]["nodeName"] == "n2"
