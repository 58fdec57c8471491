"""The scenario loader (SPEC.md §1): every problem reported at once, each with its place."""
import json
from datetime import datetime, timezone

import pytest

from engine import ConfigError, Engine, Scenario, ScenarioError, US, load_scenario
from engine.objects import PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER


def node(name, cpu="4", **extra):
    m = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
         "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
    m.update(extra)
    return m


def pod(name, spec=None, **metadata):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **metadata},
            "spec": spec if spec is not None else {"containers": [{"name": "c"}]}}


def pclass(name, value, **extra):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, **extra}


def scenario(**fields):
    d = {"kind": "Scenario", "metadata": {"name": "t"}}
    d.update(fields)
    return d


def problems_of(data, source="s.yaml"):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data, source)
    return e.value


# ------------------------------------------------------------------------------ one problem each

CPU_12X = scenario(objects=[
    node("n1"), node("n2"), node("n3"),
    pod("web", {"containers": [{"name": "c", "resources": {"requests": {"cpu": "12x"}}}]}),
])


def test_spec_example_message_names_file_and_place():
    err = problems_of(CPU_12X, "fixtures/bad.yaml")
    assert err.problems == ['objects[3].spec.containers[0].resources.requests.cpu: "12x" is not a quantity']
    assert err.source == "fixtures/bad.yaml"
    text = str(err)
    assert text.startswith("fixtures/bad.yaml: 1 problem:")
    assert 'objects[3].spec.containers[0].resources.requests.cpu: "12x" is not a quantity' in text


def test_scenario_error_is_a_value_error_with_a_one_paragraph_description():
    err = problems_of(CPU_12X)
    assert isinstance(err, ValueError)
    assert err.describe() == str(err)
    assert "\n\n" not in err.describe()


@pytest.mark.parametrize("data, expected", [
    pytest.param(scenario(objects=[{"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}}]),
                 'objects[0].kind: "Widget" is not one of Node, Pod, PriorityClass, PodDisruptionBudget',
                 id="bad-kind"),
    pytest.param(scenario(objects=[{"apiVersion": "v2", "kind": "Node", "metadata": {"name": "n"}}]),
                 'objects[0].apiVersion: "v2" is not v1 (the apiVersion of a Node)', id="bad-apiVersion"),
    pytest.param(scenario(objects=[pclass("p", 1) | {"apiVersion": "v1"}]),
                 'objects[0].apiVersion: "v1" is not scheduling.k8s.io/v1 (the apiVersion of a PriorityClass)',
                 id="bad-apiVersion-priorityclass"),
    pytest.param(scenario(objects=[node("n1"), node("n1")]),
                 'objects[1].metadata.name: "n1" is already defined at objects[0]', id="duplicate-node"),
    pytest.param(scenario(objects=[pod("p"), node("n"), pod("p")]),
                 'objects[2].metadata.name: "p" is already defined at objects[0]', id="duplicate-pod"),
    pytest.param(scenario(objects=[{"apiVersion": "v1", "kind": "Pod", "metadata": {}}]),
                 "objects[0].metadata.name: is required", id="pod-missing-name"),
    pytest.param(scenario(objects=[{"apiVersion": "v1", "kind": "Node"}]),
                 "objects[0].metadata.name: is required", id="node-missing-metadata"),
    pytest.param(scenario(objects=[pod("Web_1")]),
                 "objects[0].metadata.name: \"Web_1\" is not a valid name (lower-case letters, digits, '-' and '.')",
                 id="invalid-pod-name"),
    pytest.param(scenario(objects=[node("-n")]),
                 'objects[0].metadata.name: "-n" is not a valid name', id="invalid-node-name"),
    pytest.param(scenario(objects=[node("n", spec={"taints": [{"key": "k", "effect": "NoWay"}]})]),
                 'objects[0].spec.taints[0].effect: "NoWay" is not NoSchedule, PreferNoSchedule or NoExecute',
                 id="bad-taint-effect"),
    pytest.param(scenario(objects=[pod("p", {"tolerations": [{"key": "k", "operator": "Maybe"}]})]),
                 'objects[0].spec.tolerations[0].operator: "Maybe" is not Equal or Exists',
                 id="bad-toleration-operator"),
    pytest.param(scenario(objects=[pod("p", {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]})]),
                 "objects[0].spec.tolerations[0].value: must be empty when operator is Exists",
                 id="exists-toleration-with-value"),
    pytest.param(scenario(objects=[pod("p", {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}, "topologyKey": "z"}]}}})]),
                 'objects[0].spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]'
                 '.labelSelector.matchExpressions[0].operator: "Has" is not one of In, NotIn, Exists, DoesNotExist',
                 id="bad-label-selector-operator"),
    pytest.param(scenario(objects=[pod("p", {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}]}}}})]),
                 "objects[0].spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                 ".nodeSelectorTerms[0].matchExpressions[0].values: must be non-empty for operator In",
                 id="in-with-empty-values"),
    pytest.param(scenario(objects=[pod("p", {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Like", "values": ["a"]}]}]}}}})]),
                 'objects[0].spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution'
                 '.nodeSelectorTerms[0].matchExpressions[0].operator: "Like" is not one of In, NotIn, Exists, '
                 'DoesNotExist, Gt, Lt', id="bad-node-selector-operator"),
    pytest.param(scenario(objects=[pod("p", {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]})]),
                 "objects[0].spec.containers[0].resources.requests.cpu: must be less than or equal to the cpu limit",
                 id="request-above-limit"),
    pytest.param(scenario(objects=[node("n", status={"allocatable": {"memory": "lots"}})]),
                 'objects[0].status.allocatable.memory: "lots" is not a quantity', id="bad-allocatable"),
    pytest.param(scenario(objects=[pod("p", {"priorityClassName": "gold", "containers": []})]),
                 'objects[0].spec.priorityClassName: "gold" names no PriorityClass in the scenario',
                 id="unknown-priority-class"),
    pytest.param(scenario(objects=[pclass("a", 1, globalDefault=True), pclass("b", 2, globalDefault=True)]),
                 "objects: more than one PriorityClass has globalDefault: true (a, b)", id="two-global-defaults"),
    # scheduler
    pytest.param(scenario(scheduler={"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2}),
                 "scheduler.podMaxBackoffSeconds: 2 must be greater than or equal to podInitialBackoffSeconds (5)",
                 id="max-backoff-below-initial"),
    pytest.param(scenario(scheduler={"podInitialBackoffSeconds": 0}),
                 "scheduler.podInitialBackoffSeconds: 0 is less than 1", id="zero-initial-backoff"),
    pytest.param(scenario(scheduler={"percentageOfNodesToScore": 101}),
                 "scheduler.percentageOfNodesToScore: 101 is greater than 100", id="percentage-above-100"),
    pytest.param(scenario(scheduler={"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}),
                 'scheduler.profiles[1].schedulerName: "a" is used by another profile', id="duplicate-profile"),
    pytest.param(scenario(scheduler={"profiles": [{"plugins": {"scoring": {}}}]}),
                 "scheduler.profiles[0].plugins.scoring: is not an extension point", id="bad-extension-point"),
    # simulation
    pytest.param(scenario(simulation={"featureGates": {"SchedulerQueueingHintz": True}}),
                 "simulation.featureGates.SchedulerQueueingHintz: is not a feature gate the engine models "
                 "(known: SchedulerQueueingHints)", id="unknown-feature-gate"),
    pytest.param(scenario(simulation={"featureGates": {"SchedulerQueueingHints": "yes"}}),
                 'simulation.featureGates.SchedulerQueueingHints: "yes" is not true or false',
                 id="feature-gate-not-bool"),
    pytest.param(scenario(simulation={"bindDuration": "5x"}),
                 'simulation.bindDuration: "5x" is not a duration', id="bad-bind-duration"),
    pytest.param(scenario(simulation={"schedulingCycleDuration": "-1s"}),
                 'simulation.schedulingCycleDuration: "-1s" is not a duration', id="negative-cycle-duration"),
    pytest.param(scenario(simulation={"podMaxInUnschedulablePodsDuration": "five minutes"}),
                 'simulation.podMaxInUnschedulablePodsDuration: "five minutes" is not a duration',
                 id="bad-unschedulable-duration"),
    pytest.param(scenario(simulation={"startTime": "2026-01-01T00:00:00"}),
                 'simulation.startTime: "2026-01-01T00:00:00" has no time zone (RFC 3339 needs Z or an offset)',
                 id="start-time-without-zone"),
    pytest.param(scenario(simulation={"seed": "a"}), 'simulation.seed: "a" is not an integer', id="bad-seed"),
    pytest.param(scenario(simulation={"speed": 2}), "simulation.speed: is not a simulation field",
                 id="unknown-simulation-field"),
    # actions
    pytest.param(scenario(actions=[{"delete": {"kind": "Pod", "name": "p"}}]),
                 "actions[0].at: is required", id="action-missing-at"),
    pytest.param(scenario(actions=[{"at": 1, "create": node("a"), "delete": {"kind": "Node", "name": "a"}}]),
                 "actions[0]: must have exactly one of create, update or delete", id="action-two-verbs"),
    pytest.param(scenario(actions=[{"at": 1}]),
                 "actions[0]: must have exactly one of create, update or delete", id="action-no-verb"),
    pytest.param(scenario(actions=[{"at": 1, "delete": {"kind": "Widget", "name": "w"}}]),
                 'actions[0].delete.kind: "Widget" is not one of Node, Pod, PriorityClass, PodDisruptionBudget',
                 id="action-unknown-kind-delete"),
    pytest.param(scenario(actions=[{"at": 1, "create": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}}]),
                 'actions[0].create.kind: "Service" is not one of Node, Pod, PriorityClass, PodDisruptionBudget',
                 id="action-unknown-kind-create"),
    pytest.param(scenario(actions=[{"at": 5, "delete": {"kind": "Pod", "name": "a"}},
                                   {"at": "3s", "delete": {"kind": "Pod", "name": "b"}}]),
                 'actions[1].at: "3s" is earlier than the action before it; actions are applied in order',
                 id="action-times-decrease"),
    pytest.param(scenario(actions=[{"at": "soon", "delete": {"kind": "Pod", "name": "a"}}]),
                 'actions[0].at: "soon" is not a duration', id="action-bad-at"),
    pytest.param(scenario(actions=[{"at": 1, "delete": {"kind": "Pod"}}]),
                 "actions[0].delete.name: is required", id="action-delete-without-name"),
    pytest.param(scenario(actions=[{"at": 1, "when": 2, "delete": {"kind": "Pod", "name": "a"}}]),
                 "actions[0].when: is not an action field (at, create, update or delete)",
                 id="action-unknown-field"),
    pytest.param(scenario(actions=["create a pod"]), 'actions[0]: "create a pod" is not an action',
                 id="action-not-a-mapping"),
    pytest.param(scenario(actions=[{"at": 1, "create": pod("p", {"priorityClassName": "nope"})}]),
                 'actions[0].create.spec.priorityClassName: "nope" names no PriorityClass in the scenario',
                 id="action-unknown-priority-class"),
    pytest.param(scenario(actions=[{"at": 1, "create": pod("p", {"containers": [
        {"name": "c", "resources": {"requests": {"memory": "1Gx"}}}]})}]),
                 'actions[0].create.spec.containers[0].resources.requests.memory: "1Gx" is not a quantity',
                 id="action-bad-quantity"),
    # the document itself
    pytest.param({"kind": "Scenario", "metadata": {}}, "metadata.name: is required", id="scenario-missing-name"),
    pytest.param({"kind": "Scenario"}, "metadata.name: is required", id="scenario-missing-metadata"),
    pytest.param({"kind": "Scenario", "metadata": {"name": "Bad Name"}},
                 'metadata.name: "Bad Name" must match [a-z0-9]([-a-z0-9]*[a-z0-9])?', id="scenario-invalid-name"),
    pytest.param({"kind": "Scenaria", "metadata": {"name": "x"}}, 'kind: "Scenaria" must be "Scenario"',
                 id="scenario-bad-kind"),
    pytest.param({"metadata": {"name": "x"}}, 'kind: None must be "Scenario"', id="scenario-missing-kind"),
    pytest.param(scenario(objects="nope"), 'objects: "nope" is not a list', id="objects-not-a-list"),
    pytest.param(scenario(simulation=[1]), "simulation: [1] is not a mapping", id="simulation-not-a-mapping"),
    pytest.param(scenario(nodes=[]), "nodes: is not a scenario field", id="unknown-top-level-field"),
])
def test_one_problem(data, expected):
    err = problems_of(data)
    assert len(err.problems) == 1, err.problems
    assert err.problems[0].startswith(expected), err.problems[0]


def test_top_level_places_have_no_leading_dot():
    err = problems_of(scenario(objects="nope", actions={}, metadata="m"))
    for p in err.problems:
        assert not p.startswith("."), p


def test_several_problems_are_reported_at_once_in_document_order():
    data = scenario(
        scheduler={"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
        simulation={"bindDuration": "5x", "featureGates": {"Nope": True}},
        objects=[
            node("n1"),
            node("n1"),
            pod("p", {"containers": [{"name": "c", "resources": {"requests": {"cpu": "12x", "memory": "1Zi"}}}],
                      "tolerations": [{"operator": "Maybe"}]}),
        ],
        actions=[{"at": 2, "delete": {"kind": "Pod", "name": "p"}},
                 {"at": 1, "delete": {"kind": "Pod", "name": "p"}}],
    )
    err = problems_of(data, "many.yaml")
    assert err.problems == [
        "scheduler.podMaxBackoffSeconds: 2 must be greater than or equal to podInitialBackoffSeconds (5)",
        'simulation.bindDuration: "5x" is not a duration',
        "simulation.featureGates.Nope: is not a feature gate the engine models (known: SchedulerQueueingHints)",
        'objects[1].metadata.name: "n1" is already defined at objects[0]',
        'objects[2].spec.containers[0].resources.requests.cpu: "12x" is not a quantity',
        'objects[2].spec.containers[0].resources.requests.memory: "1Zi" is not a quantity',
        'objects[2].spec.tolerations[0].operator: "Maybe" is not Equal or Exists',
        'actions[1].at: 1 is earlier than the action before it; actions are applied in order',
    ]
    assert str(err).startswith("many.yaml: 8 problems:\n")
    assert all(f"  - {p}" in str(err) for p in err.problems)


def test_an_object_with_a_problem_does_not_also_count_as_a_duplicate():
    # the second n1 is refused for its quantity; it is not then reported as a duplicate as well
    err = problems_of(scenario(objects=[node("n1"), node("n1", status={"allocatable": {"cpu": "x"}})]))
    assert err.problems == ['objects[1].status.allocatable.cpu: "x" is not a quantity']


def test_same_name_in_another_kind_or_namespace_is_not_a_duplicate():
    sc = Scenario.from_dict(scenario(objects=[node("p"), pod("p"), pod("p", namespace="other")]))
    assert [(k, getattr(o, "namespace", ""), o.name) for k, o in sc.objects] == [
        ("Node", "", "p"), ("Pod", "default", "p"), ("Pod", "other", "p")]


# ------------------------------------------------------------------------------ text and files

@pytest.mark.parametrize("text, where", [
    ("kind: Scenario\nmetadata: {name: x\n", "line 3, column 1"),
    ("kind: Scenario\nmetadata:\n  name: x\n bad: 1\n", "line 4, column 2"),
    ("kind: Scenario\nobjects: [\n", "line 3, column 1"),
])
def test_invalid_yaml_names_line_and_column(text, where):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text, "broken.yaml")
    assert len(e.value.problems) == 1
    assert e.value.problems[0].startswith(f"{where}: not valid YAML (")
    assert str(e.value).startswith("broken.yaml: 1 problem:")


@pytest.mark.parametrize("text, got", [
    ("- a\n- b\n", "list"),
    ("", "NoneType"),
    ("just words", "str"),
    ("42", "int"),
])
def test_a_document_that_is_not_a_mapping_is_refused(text, got):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text, "s.yaml")
    assert e.value.problems == [f"the scenario must be a mapping with kind: Scenario, got {got}"]


def test_from_path_names_the_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("kind: Scenario\nmetadata: {name: x}\nsimulation: {bindDuration: 5x}\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    assert e.value.source == str(p)
    assert str(e.value).startswith(f"{p}: 1 problem:")


def test_from_path_of_a_missing_file(tmp_path):
    p = tmp_path / "missing.yaml"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_path(p)
    assert e.value.source == str(p)
    assert "cannot read the file" in e.value.problems[0]


def test_from_path_of_a_binary_file(tmp_path):
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(ScenarioError) as e:
        Scenario.from_path(p)
    assert e.value.problems == ["the file is not UTF-8 text"]


def test_json_is_accepted(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(scenario(objects=[node("n1"), pod("p")])))
    sc = Scenario.from_path(p)
    assert [k for k, _ in sc.objects] == ["Node", "Pod"]
    assert sc.source == str(p)


# ------------------------------------------------------------------------------ defaults

def test_a_minimal_scenario_gets_v128_defaults():
    sc = Scenario.from_text("kind: Scenario\nmetadata: {name: minimal}\n", "m.yaml")
    assert sc.name == "minimal" and sc.title == "" and sc.description == ""
    assert sc.source == "m.yaml"
    assert sc.objects == [] and sc.actions == []
    cfg = sc.scheduler
    assert cfg.pod_initial_backoff == 1 * US
    assert cfg.pod_max_backoff == 10 * US
    assert cfg.percentage_of_nodes_to_score == 0
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    sim = sc.simulation
    assert sim.pod_max_in_unschedulable_pods_duration == 300 * US
    assert sim.bind_duration == 0
    assert sim.scheduling_cycle_duration == 0
    assert sim.seed == 0
    assert sim.start_time == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert sim.feature_gates == {"SchedulerQueueingHints": False}


def test_a_full_scenario_parses_its_fields():
    text = """
kind: Scenario
metadata:
  name: full
  title: A title
  description: |
    Some *Markdown*.
scheduler:
  apiVersion: kubescheduler.config.k8s.io/v1
  kind: KubeSchedulerConfiguration
  podInitialBackoffSeconds: 2
  podMaxBackoffSeconds: 20
  percentageOfNodesToScore: 50
  profiles:
    - schedulerName: default-scheduler
    - schedulerName: other
simulation:
  podMaxInUnschedulablePodsDuration: 1m30s
  bindDuration: 500ms
  schedulingCycleDuration: 0.25
  seed: 7
  startTime: "2030-05-06T07:08:09+02:00"
  featureGates: {SchedulerQueueingHints: true}
objects:
  - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: 1500m, memory: 1Gi, pods: 10}}}
  - {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: team}, spec: {containers: [{name: c}]}}
actions:
  - at: 5
    update: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: team}, spec: {containers: [{name: c}]}}
  - at: 1m
    delete: {kind: Node, name: n1}
  - at: 1m
    delete: {kind: Pod, metadata: {name: p, namespace: team}}
"""
    sc = Scenario.from_text(text, "full.yaml")
    assert (sc.name, sc.title, sc.description) == ("full", "A title", "Some *Markdown*.\n")
    assert sc.scheduler.pod_initial_backoff == 2 * US and sc.scheduler.pod_max_backoff == 20 * US
    assert sc.scheduler.percentage_of_nodes_to_score == 50
    assert [p.scheduler_name for p in sc.scheduler.profiles] == ["default-scheduler", "other"]
    sim = sc.simulation
    assert sim.pod_max_in_unschedulable_pods_duration == 90 * US
    assert sim.bind_duration == 500_000 and sim.scheduling_cycle_duration == 250_000
    assert sim.seed == 7
    assert sim.start_time == datetime(2030, 5, 6, 5, 8, 9, tzinfo=timezone.utc)
    assert sim.feature_gates == {"SchedulerQueueingHints": True}
    (nk, n), (pk, p) = sc.objects
    assert nk == "Node" and n.allocatable == {"cpu": 1500, "memory": 2**30, "pods": 10}  # capacity fallback
    assert pk == "Pod" and p.key == "team/p"
    assert [(a.at, a.verb, a.kind, a.namespace, a.name) for a in sc.actions] == [
        (5 * US, "update", "Pod", "team", "p"),
        (60 * US, "delete", "Node", "", "n1"),
        (60 * US, "delete", "Pod", "team", "p"),
    ]


def test_pod_defaults_before_the_engine_resolves_priority():
    sc = Scenario.from_dict(scenario(objects=[pod("p")]))
    (_, p), = sc.objects
    assert p.namespace == "default" and p.key == "default/p"
    assert p.scheduler_name == "default-scheduler"
    assert p.termination_grace_period == 30
    assert p.priority == 0 and p.spec_priority is None
    assert p.preemption_policy is None            # resolved from the PriorityClass in the Engine
    assert p.effective_preemption_policy == PREEMPT_LOWER_PRIORITY
    assert p.node_name == "" and p.nominated_node_name == ""
    assert p.start_time is None


def test_start_time_is_relative_to_simulation_start():
    sc = Scenario.from_dict(scenario(
        simulation={"startTime": "2026-01-01T00:01:00Z"},
        objects=[pod("p", {"containers": []}) | {"status": {"startTime": "2026-01-01T00:00:30Z"}}]))
    assert sc.objects[0][1].start_time == -30 * US


def test_requests_default_to_limits_and_init_containers_take_the_max():
    sc = Scenario.from_dict(scenario(objects=[pod("p", {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
        "containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "500m"}}}],
        "overhead": {"cpu": "100m"},
    })]))
    p = sc.objects[0][1]
    assert p.requests == {"cpu": 3100, "memory": 2**30}


# ------------------------------------------------------------------------------ in the Engine

def _loaded(data):
    eng = Engine(Scenario.from_dict(data))
    eng.step()   # the first step loads the objects at t=0
    return eng


def test_priority_and_preemption_policy_are_resolved_by_the_engine():
    eng = _loaded(scenario(objects=[
        pclass("default-low", 5, globalDefault=True),
        pclass("gold", 1000, preemptionPolicy="Never"),
        pclass("silver", 100),
        pod("plain"),
        pod("golden", {"priorityClassName": "gold", "containers": []}),
        pod("own-policy", {"priorityClassName": "gold", "preemptionPolicy": "PreemptLowerPriority",
                           "containers": []}),
        pod("silvery", {"priorityClassName": "silver", "containers": []}),
        pod("explicit", {"priority": 42, "containers": []}),
        pod("critical", {"priorityClassName": "system-cluster-critical", "containers": []}),
    ]))
    pods = eng.state()["pods"]
    assert pods["default/plain"]["priority"] == 5          # globalDefault
    assert pods["default/golden"]["priority"] == 1000
    assert pods["default/silvery"]["priority"] == 100
    assert pods["default/explicit"]["priority"] == 42
    assert pods["default/critical"]["priority"] == 2000000000
    assert eng.pods["default/golden"].preemption_policy == PREEMPT_NEVER          # from the class
    assert eng.pods["default/own-policy"].preemption_policy == PREEMPT_LOWER_PRIORITY  # the pod's own
    assert eng.pods["default/silvery"].preemption_policy == PREEMPT_LOWER_PRIORITY
    assert eng.pods["default/plain"].effective_preemption_policy == PREEMPT_LOWER_PRIORITY


def test_without_classes_priority_is_zero():
    eng = _loaded(scenario(objects=[pod("p")]))
    assert eng.state()["pods"]["default/p"]["priority"] == 0


def test_the_parsed_scenario_is_not_changed_by_running_it():
    sc = Scenario.from_dict(scenario(objects=[pclass("gold", 1000, preemptionPolicy="Never"), node("n1"),
                                              pod("p", {"priorityClassName": "gold", "containers": []})]))
    Engine(sc).run()
    p = sc.objects[2][1]
    assert p.priority == 0 and p.preemption_policy is None and p.node_name == ""


def test_unknown_plugin_is_a_config_error_when_the_engine_is_built():
    sc = Scenario.from_dict(scenario(scheduler={"profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "second", "plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}},
    ]}), "p.yaml")   # the loader accepts it: plugins are resolved against the registry by the Engine
    with pytest.raises(ConfigError) as e:
        Engine(sc)
    assert isinstance(e.value, ScenarioError)
    assert len(e.value.problems) == 1
    msg = e.value.problems[0]
    assert msg.startswith("scheduler.profiles[1].plugins")     # names the profile
    assert "NoSuchPlugin" in msg and "is not a known plugin" in msg


def test_unmodelled_volume_plugin_is_refused_with_the_reason():
    sc = Scenario.from_dict(scenario(scheduler={"profiles": [
        {"plugins": {"filter": {"enabled": [{"name": "AzureDiskLimits"}]}}}]}))
    with pytest.raises(ConfigError, match="the non-CSI attach limits, are not modelled"):
        Engine(sc)


@pytest.mark.parametrize("capacity", ["5", "true", "2026-01-01", "[1, 2]"])
def test_a_persistent_volume_capacity_that_is_not_a_mapping_is_a_problem_not_a_crash(capacity):
    text = ("kind: Scenario\nmetadata: {name: pvcap}\nobjects:\n"
            f"  - {{apiVersion: v1, kind: PersistentVolume, metadata: {{name: pv1}}, spec: {{capacity: {capacity}, "
            "accessModes: [ReadWriteOnce], hostPath: {path: /x}}}\n")
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text)
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith("objects[0].spec.capacity: ")
    assert "is not a resource list" in e.value.problems[0]
