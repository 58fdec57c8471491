"""VolumeBinding.  The important rows of upstream volumebinding/volume_binding_test.go
TestVolumeBinding (PreFilter result and status, Filter status, Score 0 without the
VolumeCapacityPriority gate), then Reserve/PreBind/Unreserve through the assume caches."""
import pytest

from engine.framework import Code, CycleState
from engine.plugins import volumebinding as vb
from tests.engine.volume_env import claim_vol, cluster, node, parse_pod, pod, pv, pvc, storage_class, csi_node

WAIT = storage_class("wait-sc")
IMMEDIATE = storage_class("immediate-sc", mode="Immediate")


def bound_pvc(name, pv_name, cls="wait-sc"):
    return pvc(name, cls, volume_name=pv_name, bound=True, phase="Bound")


# name, pod volumes (claims), nodes, objects, PreFilter (code, reasons) or None,
# PreFilter node names, Filter per node: None or reasons
CASES = [
    ("pod has not pvcs", [], [node("node-a")], [], (Code.Skip, []), None, [None]),
    ("all bound", ["pvc-a"], [node("node-a")],
     [bound_pvc("pvc-a", "pv-a"), pv("pv-a", "wait-sc", phase="Available")], None, None, [None]),
    ("all bound with local volumes", ["pvc-a", "pvc-b"], [node("node-a")],
     [bound_pvc("pvc-a", "pv-a"), bound_pvc("pvc-b", "pv-b"),
      pv("pv-a", "wait-sc", phase="Bound", host_affinity=["node-a"]),
      pv("pv-b", "wait-sc", phase="Bound", host_affinity=["node-a"])], None, {"node-a"}, [None]),
    ("PVC does not exist", ["pvc-a"], [node("node-a")], [],
     (Code.UnschedulableAndUnresolvable, ['persistentvolumeclaim "pvc-a" not found']), None, None),
    ("Part of PVCs do not exist", ["pvc-a", "pvc-b"], [node("node-a")], [bound_pvc("pvc-a", "pv-a")],
     (Code.UnschedulableAndUnresolvable, ['persistentvolumeclaim "pvc-b" not found']), None, None),
    ("immediate claims not bound", ["pvc-a"], [node("node-a")], [pvc("pvc-a", "immediate-sc")],
     (Code.UnschedulableAndUnresolvable, ["pod has unbound immediate PersistentVolumeClaims"]), None, None),
    ("unbound claims no matches", ["pvc-a"], [node("node-a")], [pvc("pvc-a", "wait-sc")], None, None,
     [[vb.ErrReasonBindConflict]]),
    ("bound and unbound unsatisfied", ["pvc-a", "pvc-b"], [node("node-a", foo="barbar")],
     [bound_pvc("pvc-a", "pv-a"), pvc("pvc-b", "wait-sc"),
      pv("pv-a", "wait-sc", phase="Available", nodeAffinity={"required": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]}})],
     None, None, [[vb.ErrReasonNodeConflict, vb.ErrReasonBindConflict]]),
    ("pv not found", ["pvc-a"], [node("node-a")], [bound_pvc("pvc-a", "pv-a")], None, None,
     [[vb.ErrReasonPVNotExist]]),
    ("pv not found claim lost", ["pvc-a"], [node("node-a")],
     [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True, phase="Lost")],
     (Code.UnschedulableAndUnresolvable, ['persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"']),
     None, None),
]


@pytest.mark.parametrize("name,claims,nodes,objs,want_pre,want_nodes,want_filter", CASES, ids=[c[0] for c in CASES])
def test_volume_binding(name, claims, nodes, objs, want_pre, want_nodes, want_filter):
    e, h = cluster(WAIT, IMMEDIATE, *nodes, *objs)
    pl = vb.new({}, h)
    p = parse_pod(pod("pod-a", *[claim_vol(c) for c in claims]))
    state = CycleState()
    res, st = pl.pre_filter(state, p)
    if want_pre is None:
        assert st is None
    else:
        assert (st.code, st.reasons) == want_pre
    if want_nodes is None:
        assert res is None
    else:
        assert res.node_names == want_nodes
    if st is not None and st.code != Code.Skip:
        return
    for ni, want in zip(e.cache.snapshot().node_info_list, want_filter):
        if st is not None:   # skipped at PreFilter: the framework does not call Filter
            break
        got = pl.filter(state, p, ni)
        if want is None:
            assert got is None
        else:
            assert got.code == Code.UnschedulableAndUnresolvable and got.reasons == want
        assert pl.score(state, p, ni.name) == (0, None)


def test_static_binding_smallest_fitting_pv_reserve_prebind_and_unreserve():
    """findMatchingVolumes takes the smallest Available PV of the class that is big enough and
    fits the node; Reserve assumes it (claimRef), Unreserve reverts, PreBind writes and binds."""
    e, h = cluster(WAIT, node("node-a", **{"topology.kubernetes.io/zone": "a"}),
                   node("node-b", **{"topology.kubernetes.io/zone": "b"}),
                   pvc("data", "wait-sc", size="5Gi"),
                   pv("small", "wait-sc", size="1Gi"), pv("big", "wait-sc", size="100Gi"),
                   pv("fit", "wait-sc", size="10Gi"), pv("zone-b", "wait-sc", size="6Gi", zone_affinity=["b"]))
    pl = vb.new({}, h)
    p = parse_pod(pod("db", claim_vol("data")))
    state = CycleState()
    assert pl.pre_filter(state, p) == (None, None)
    na, nb = e.cache.snapshot().node_info_list
    assert pl.filter(state, p, na) is None and pl.filter(state, p, nb) is None
    s = state.read(vb.STATE_KEY)
    assert [pv_.name for pv_, _ in s.pod_volumes_by_node["node-a"].static_bindings] == ["fit"]
    assert [pv_.name for pv_, _ in s.pod_volumes_by_node["node-b"].static_bindings] == ["zone-b"]
    assert pl.reserve(state, p, "node-b") is None and s.all_bound is False
    assert e.pv_cache.get("zone-b").claim_ref[:2] == ("default", "data")
    assert e.pvs["zone-b"].claim_ref is None            # only assumed, not written
    pl.unreserve(state, p, "node-b")
    assert e.pv_cache.get("zone-b").claim_ref is None
    assert pl.reserve(state, p, "node-b") is None
    assert pl.pre_bind(state, p, "node-b") is None
    assert e.pvs["zone-b"].claim_ref[:2] == ("default", "data") and e.pvs["zone-b"].phase == "Bound"
    c = e.pvcs["default/data"]
    assert c.volume_name == "zone-b" and c.phase == "Bound" and vb.is_pvc_fully_bound(c)


def test_dynamic_provisioning_honours_allowed_topologies_and_selected_node():
    sc = storage_class("fast", provisioner="ebs.csi.aws.com", topologies={"topology.kubernetes.io/zone": ["a"]})
    cn = csi_node("node-a", ("ebs.csi.aws.com", 10))
    cn["spec"]["drivers"][0]["topologyKeys"] = ["topology.kubernetes.io/zone"]
    e, h = cluster(sc, cn, node("node-a", **{"topology.kubernetes.io/zone": "a"}),
                   node("node-b", **{"topology.kubernetes.io/zone": "b"}), pvc("scratch", "fast", size="2Gi"))
    pl = vb.new({}, h)
    p = parse_pod(pod("cache", claim_vol("scratch")))
    state = CycleState()
    pl.pre_filter(state, p)
    na, nb = e.cache.snapshot().node_info_list
    assert pl.filter(state, p, na) is None
    assert pl.filter(state, p, nb).reasons == [vb.ErrReasonBindConflict]
    pl.reserve(state, p, "node-a")
    assert e.pvc_cache.get("default/scratch").annotations["volume.kubernetes.io/selected-node"] == "node-a"
    assert "volume.kubernetes.io/selected-node" not in e.pvcs["default/scratch"].annotations
    assert pl.pre_bind(state, p, "node-a") is None
    c = e.pvcs["default/scratch"]
    assert c.phase == "Bound" and c.volume_name == f"pvc-{c.uid}"
    new_pv = e.pvs[c.volume_name]
    assert new_pv.capacity == 2 * 1024 ** 3 and new_pv.storage_class_name == "fast"
    assert new_pv.node_affinity.matches("", {"topology.kubernetes.io/zone": "a"})
    assert not new_pv.node_affinity.matches("", {"topology.kubernetes.io/zone": "b"})


def test_selected_node_claim_only_fits_that_node():
    sc = storage_class("fast", provisioner="ebs.csi.aws.com")
    e, h = cluster(sc, node("node-a"), node("node-b"),
                   pvc("scratch", "fast", annotations={"volume.kubernetes.io/selected-node": "node-b"}))
    pl = vb.new({}, h)
    p = parse_pod(pod("cache", claim_vol("scratch")))
    state = CycleState()
    pl.pre_filter(state, p)
    na, nb = e.cache.snapshot().node_info_list
    assert pl.filter(state, p, na).reasons == [vb.ErrReasonBindConflict]
    assert pl.filter(state, p, nb) is None


def test_no_provisioner_class_cannot_provision():
    e, h = cluster(WAIT, node("node-a"), pvc("x", "wait-sc"))
    pl = vb.new({}, h)
    p = parse_pod(pod("p", claim_vol("x")))
    state = CycleState()
    pl.pre_filter(state, p)
    assert pl.filter(state, p, e.cache.snapshot().node_info_list[0]).reasons == [vb.ErrReasonBindConflict]


def test_ephemeral_volume_waits_for_its_claim_and_checks_the_owner():
    eph = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}
    e, h = cluster(WAIT, node("node-a"))
    pl = vb.new({}, h)
    p = parse_pod(pod("p", eph))
    _res, st = pl.pre_filter(CycleState(), p)
    assert st.code == Code.UnschedulableAndUnresolvable
    assert st.reasons == ['waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"']
    e, h = cluster(WAIT, node("node-a"), pvc("p-scratch", "wait-sc"))
    _res, st = vb.new({}, h).pre_filter(CycleState(), p)
    assert st.reasons == ["PVC default/p-scratch was not created for pod default/p (pod is not owner)"]
    owned = pvc("p-scratch", "wait-sc", metadata={"ownerReferences": [{"kind": "Pod", "name": "p", "controller": True}]})
    e, h = cluster(WAIT, node("node-a"), owned)
    assert vb.new({}, h).pre_filter(CycleState(), p) == (None, None)


def test_events_to_register():
    from engine.framework.interface import ActionType, GVK
    got = [(e.event.resource, e.event.action_type) for e in vb.new({}, None).events_to_register()]
    au = ActionType.Add | ActionType.Update
    assert got == [(GVK.StorageClass, au), (GVK.PersistentVolumeClaim, au), (GVK.PersistentVolume, au),
                   (GVK.Node, ActionType.Add | ActionType.UpdateNodeLabel), (GVK.CSINode, au),
                   (GVK.CSIDriver, au), (GVK.CSIStorageCapacity, au)]
