"""VolumeZone.  Rows of upstream volumezone/volume_zone_test.go TestSingleZone,
TestMultiZone and TestWithBinding."""
import pytest

from engine.framework import Code, CycleState
from engine.plugins import volumezone as vz
from tests.engine.volume_env import claim_vol, cluster, node, parse_pod, pod, pv, pvc, storage_class

BZ, BR = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
Z, R = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
PVS = [pv("vol-1", labels={BZ: "us-west1-a"}), pv("vol-2", labels={BR: "us-west1", "uselessLabel": "none"}),
       pv("vol-stable-1", labels={Z: "us-west1-a"}), pv("vol-stable-2", labels={R: "us-west1", "uselessLabel": "none"}),
       pv("vol-stable-3", labels={Z: "us-west1-a", R: "us-west1-a"}),
       pv("vol-multi", labels={BZ: "us-west1-b__us-west1-c"})]
PVCS = [pvc(f"pvc-{n[4:]}", volume_name=n, bound=True) for n in
        ("vol-1", "vol-2", "vol-stable-1", "vol-stable-2", "vol-stable-3", "vol-multi")]
PVCS += [pvc("pvc-not-exist", volume_name="vol-not-exist", bound=True), pvc("pvc-empty-sc", cls=""),
         pvc("pvc-no-sc", cls="class-0"), pvc("pvc-wait", cls="wait"), pvc("pvc-immediate", cls="immediate")]
CLASSES = [storage_class("wait"), storage_class("immediate", mode="Immediate")]
CONFLICT = (Code.UnschedulableAndUnresolvable, [vz.ErrReasonConflict])

# name, claim, node labels, Filter (code, reasons) or None
CASES = [
    ("node without labels", "pvc-1", {}, None),
    ("beta zone label matched", "pvc-1", {BZ: "us-west1-a", "uselessLabel": "none"}, None),
    ("beta region label matched", "pvc-2", {BR: "us-west1", "uselessLabel": "none"}, None),
    ("beta region label doesn't match", "pvc-2", {BR: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
    ("beta zone label doesn't match", "pvc-1", {BZ: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
    ("zone label matched", "pvc-stable-1", {Z: "us-west1-a", "uselessLabel": "none"}, None),
    ("region label matched", "pvc-stable-2", {R: "us-west1", "uselessLabel": "none"}, None),
    ("region label doesn't match", "pvc-stable-2", {R: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
    ("zone label doesn't match", "pvc-stable-1", {Z: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
    ("pv with zone and region, node with only zone", "pvc-stable-3", {Z: "us-west1-a"}, CONFLICT),
    ("pv with zone,node with beta zone", "pvc-stable-1", {BZ: "us-west1-a"}, CONFLICT),
    ("pv with beta label,node with ga label, matched", "pvc-1", {Z: "us-west1-a"}, None),
    ("pv with beta label,node with ga label, don't match", "pvc-1", {Z: "us-west1-b"}, CONFLICT),
    ("multi zone: one of the zones", "pvc-multi", {BZ: "us-west1-c"}, None),
    ("multi zone: none of the zones", "pvc-multi", {BZ: "us-west1-a"}, CONFLICT),
]


@pytest.mark.parametrize("name,claim,labels,want", CASES, ids=[c[0] for c in CASES])
def test_zone(name, claim, labels, want):
    n = node("host1")
    n["metadata"]["labels"] = labels
    e, h = cluster(n, *PVS, *PVCS, *CLASSES)
    pl = vz.new({}, h)
    p = parse_pod(pod("pod-1", claim_vol(claim, "vol-1")))
    state = CycleState()
    assert pl.pre_filter(state, p) == (None, None)
    got = pl.filter(state, p, e.cache.snapshot().node_info_list[0])
    assert (None if got is None else (got.code, got.reasons)) == want


# TestWithBinding (the real listers' not-found messages instead of the fake ones')
BINDING = [
    ("label zone failure domain matched", "pvc-1", None),
    ("unbound volume empty storage class", "pvc-empty-sc",
     (Code.UnschedulableAndUnresolvable, ["PersistentVolumeClaim had no pv name and storageClass name"])),
    ("unbound volume no storage class", "pvc-no-sc",
     (Code.UnschedulableAndUnresolvable, ['storageclass.storage.k8s.io "class-0" not found'])),
    ("unbound volume immediate binding mode", "pvc-immediate",
     (Code.UnschedulableAndUnresolvable, ["PersistentVolume had no name"])),
    ("unbound volume wait binding mode", "pvc-wait", (Code.Skip, [])),
    ("pv does not exist", "pvc-not-exist", (Code.UnschedulableAndUnresolvable, ['persistentvolume "vol-not-exist" not found'])),
]


@pytest.mark.parametrize("name,claim,want", BINDING, ids=[c[0] for c in BINDING])
def test_with_binding(name, claim, want):
    e, h = cluster(node("host1", **{BZ: "us-west1-a"}), *PVS, *PVCS, *CLASSES)
    pl = vz.new({}, h)
    p = parse_pod(pod("pod-1", claim_vol(claim, "vol-1")))
    state = CycleState()
    _res, st = pl.pre_filter(state, p)
    assert (None if st is None else (st.code, st.reasons)) == want
    if st is not None and st.code != Code.Skip:
        # Filter without PreFilter state finds the same problem (getPVbyPod again)
        got = pl.filter(CycleState(), p, e.cache.snapshot().node_info_list[0])
        assert (got.code, got.reasons) == want
