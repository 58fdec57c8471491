"""Volumes in scenarios: validation with places, actions, the default profile's volume plugins
only when a scenario uses volumes, the cluster events of volume objects, and the example."""
from pathlib import Path

import pytest

from engine.errors import ScenarioError
from engine.scenario import Scenario
from engine.scheduler import Engine
from tests.engine.volume_env import claim_vol, node, pod, pv, pvc, storage_class

ROOT = Path(__file__).resolve().parents[2]


def scenario(objects, actions=(), **extra):
    return {"kind": "Scenario", "metadata": {"name": "v"}, "objects": list(objects), "actions": list(actions), **extra}


def problems(data):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data, "v.yaml")
    return e.value.problems


def test_bad_volume_objects_are_reported_with_their_place():
    bad_pv = pv("p", size="lots")
    bad_pv["spec"]["accessModes"] = ["ReadWriteSometimes"]
    bad_sc = storage_class("s", mode="Later")
    bad_pvc = pvc("c", "s")
    bad_pvc["status"] = {"phase": "Gone"}
    bad_pod = pod("x", {"name": "v", "persistentVolumeClaim": {}}, {"name": "w", "emptyDir": {}, "hostPath": {"path": "/"}},
                  {"name": "u", "fancyDisk": {}})
    bad_csi = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n"},
               "spec": {"drivers": [{"name": "d", "allocatable": {"count": -1}}]}}
    probs = problems(scenario([bad_pv, bad_sc, bad_pvc, bad_pod, bad_csi]))
    text = "\n".join(probs)
    assert 'objects[0].spec.capacity.storage: "lots"' in text
    assert 'objects[0].spec.accessModes[0]: "ReadWriteSometimes" is not one of ReadWriteOnce' in text
    assert 'objects[1].volumeBindingMode: "Later" is not Immediate or WaitForFirstConsumer' in text
    assert 'objects[2].status.phase: "Gone" is not one of Pending, Bound, Lost' in text
    assert "objects[3].spec.volumes[0].persistentVolumeClaim.claimName: is required" in text
    assert "objects[3].spec.volumes[1]: must have exactly one volume source" in text
    assert "objects[3].spec.volumes[2].fancyDisk: is not a volume source the engine knows" in text
    assert "objects[4].spec.drivers[0].allocatable.count: -1 is less than 0" in text
    assert problems(scenario([storage_class("s", provisioner="")]))[0] == "objects[0].provisioner: is required"


def _profile_plugins(data):
    e = Engine(Scenario.from_dict(data))
    return [p.name for p in e.frameworks["default-scheduler"].filter_plugins]


def test_default_profile_has_the_volume_plugins_only_when_volumes_are_used():
    plain = scenario([node("n1"), pod("p", {"name": "tmp", "emptyDir": {}})])
    assert "VolumeBinding" not in _profile_plugins(plain)
    with_claim = scenario([node("n1"), pod("p", claim_vol("c"))])
    got = _profile_plugins(with_claim)
    assert got == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "PodTopologySpread", "InterPodAffinity"]
    # a volume object only in an action is enough
    in_action = scenario([node("n1")], [{"at": 1, "create": storage_class("s")}])
    assert "VolumeZone" in _profile_plugins(in_action)
    # an explicit profile may enable one in a scenario without volumes
    explicit = scenario([node("n1")], scheduler={"profiles": [{"plugins": {"multiPoint": {"enabled": [
        {"name": "VolumeRestrictions"}]}}}]})
    assert _profile_plugins(explicit)[-1] == "VolumeRestrictions"
    # and disable them in one with volumes
    disabled = dict(with_claim, scheduler={"profiles": [{"plugins": {"multiPoint": {"disabled": [
        {"name": "VolumeBinding"}]}}}]})
    assert "VolumeBinding" not in _profile_plugins(disabled) and "VolumeZone" in _profile_plugins(disabled)


def test_claim_created_later_moves_the_pod_by_pvc_add():
    data = scenario([node("n1"), pod("p", claim_vol("c"))],
                    [{"at": 2, "create": pvc("c", "s")}, {"at": 3, "create": storage_class("s", provisioner="x.csi")}])
    e = Engine(Scenario.from_dict(data))
    e.run(1_500_000)
    st = e.state()
    assert st["pods"]["default/p"]["queue"] == "unschedulablePods"
    # PreFilter stops at the first rejection: VolumeRestrictions reads the claims first
    assert st["pods"]["default/p"]["unschedulablePlugins"] == ["VolumeRestrictions"]
    e.run(2_500_000)
    # the claim exists now, but its class does not: Immediate (IsDelayBindingMode), unbound
    assert e.state()["pods"]["default/p"]["queue"] == "unschedulablePods"
    e.run(10_000_000)
    st = e.state()
    assert st["pods"]["default/p"]["phase"] == "Running"
    assert st["volumes"]["persistentVolumeClaims"]["default/c"]["phase"] == "Bound"
    assert st["volumes"]["persistentVolumeClaims"]["default/c"]["selectedNode"] == "n1"


def test_storage_class_add_sends_an_event_only_for_wait_for_first_consumer():
    data = scenario([node("n1"), pod("p", claim_vol("c")), pvc("c", "s")],
                    [{"at": 2, "create": storage_class("s", mode="Immediate", provisioner="x")}])
    e = Engine(Scenario.from_dict(data))
    e.run(3_000_000)
    # onStorageClassAdd: an Immediate class moves nothing (the claim is unbound Immediate)
    assert e.state()["pods"]["default/p"]["queue"] == "unschedulablePods"
    data["actions"] = [{"at": 2, "create": storage_class("s", provisioner="x")}]
    e = Engine(Scenario.from_dict(data))
    e.run(3_000_000)
    assert e.state()["pods"]["default/p"]["phase"] == "Running"


def test_example_runs_and_places_each_pod_where_its_volumes_allow():
    sc = Scenario.from_path(ROOT / "docs/examples/volumes.yaml")
    e = Engine(sc)
    e.run(400_000_000)
    st = e.state()
    where = {k: v["nodeName"] for k, v in st["pods"].items()}
    assert where == {"default/cache": "node-a", "default/db": "node-b", "default/late": "node-a",
                     "default/reader": "node-c"}
    pvcs = st["volumes"]["persistentVolumeClaims"]
    assert pvcs["default/data"]["volumeName"] == "pv-b"
    assert pvcs["default/scratch"]["volumeName"].startswith("pvc-")
    assert st["volumes"]["persistentVolumes"]["pv-b"]["claim"] == "default/data"


def test_delete_and_update_actions_of_volume_objects():
    data = scenario([node("n1"), pvc("c", "s"), storage_class("s")],
                    [{"at": 1, "delete": {"kind": "PersistentVolumeClaim", "name": "c"}},
                     {"at": 1, "delete": {"kind": "StorageClass", "name": "s"}},
                     {"at": 2, "update": pv("nope", "s")}])
    e = Engine(Scenario.from_dict(data))
    e.run()
    assert e.pvcs == {} and e.storage_classes == {}
    assert e.pvs == {}
