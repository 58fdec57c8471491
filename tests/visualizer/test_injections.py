"""The page's inject forms become scenario actions, checked like any other action."""
import pytest

from visualizer import injections, runner

pytestmark = pytest.mark.django_db


@pytest.fixture
def live(scenario_text):
    session = runner.create_session(scenario_text("too-big.yaml"))
    runner.control(session.pk, {"action": "step-event"})
    with runner.open_live(session.pk) as live:
        yield live


def test_node_add_form(live):
    verb, body = injections.build({"form": "node-add", "name": "n2", "cpu": "8", "memory": "16Gi", "pods": "110",
                                   "labels": "zone=a, disk=ssd", "taints": "dedicated=gpu:NoSchedule",
                                   "unschedulable": "true"}, live)
    assert verb == "create"
    assert body == {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": "n2", "labels": {"zone": "a", "disk": "ssd"}},
                    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
                    "spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule", "value": "gpu"}],
                             "unschedulable": True}}


def test_node_add_form_problems_are_all_listed(live):
    with pytest.raises(runner.ControlError) as info:
        injections.build({"form": "node-add", "name": "", "labels": "nolabel", "taints": "k=v:Sometimes"}, live)
    assert info.value.problems == [
        "name: is required", "labels: 'nolabel' is not key=value",
        "taints: 'k=v:Sometimes' is not key=value:Effect (Effect one of NoSchedule, PreferNoSchedule, NoExecute)"]


def test_pod_add_form_defaults_the_kind(live):
    verb, body = injections.build({"form": "pod-add", "manifest": "metadata: {name: p}\nspec: {containers: []}"}, live)
    assert (verb, body["kind"], body["apiVersion"]) == ("create", "Pod", "v1")


def test_pod_add_form_with_broken_yaml(live):
    with pytest.raises(runner.ControlError, match="not valid YAML"):
        injections.build({"form": "pod-add", "manifest": "metadata: [unclosed"}, live)


@pytest.mark.parametrize(("fields", "body"), [
    ({"kind": "Pod", "name": "default/small"}, {"kind": "Pod", "namespace": "default", "name": "small"}),
    ({"kind": "Pod", "name": "small"}, {"kind": "Pod", "name": "small"}),
    ({"kind": "Node", "name": "n1"}, {"kind": "Node", "name": "n1"}),
])
def test_delete_form(live, fields, body):
    assert injections.build({"form": "delete", **fields}, live) == ("delete", body)


def test_node_update_form_changes_the_current_manifest(live):
    verb, body = injections.build({"form": "node-update", "node": "n1", "set_labels": "zone=b",
                                   "add_taints": "k=v:NoSchedule", "unschedulable": "true"}, live)
    assert verb == "update"
    assert body["metadata"] == {"name": "n1", "labels": {"zone": "b"}}
    assert body["status"] == {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
    assert body["spec"] == {"taints": [{"key": "k", "effect": "NoSchedule", "value": "v"}], "unschedulable": True}
    # the node's stored manifest is not changed by building the action
    assert live.stepper.engine.nodes["n1"].manifest.get("spec") is None


def test_node_update_of_an_unknown_node(live):
    with pytest.raises(runner.ControlError, match="'n9' is not a node of the cluster now"):
        injections.build({"form": "node-update", "node": "n9"}, live)


def test_unknown_form(live):
    with pytest.raises(runner.ControlError, match="is not one of"):
        injections.build({"form": "teleport"}, live)
