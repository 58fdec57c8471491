"""VolumeRestrictions.  Rows of upstream volumerestrictions/volume_restrictions_test.go:
TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts and
TestAccessModeConflicts."""
import pytest

from engine.framework import Code, CycleState
from engine.plugins import volumerestrictions as vr
from tests.engine.volume_env import claim_vol, cluster, node, parse_pod, pod, pvc

DISK = (Code.Unschedulable, [vr.ErrReasonDiskConflict])

GCE = [{"name": "v", "gcePersistentDisk": {"pdName": "foo"}}, {"name": "v", "gcePersistentDisk": {"pdName": "bar"}}]
AWS = [{"name": "v", "awsElasticBlockStore": {"volumeID": "foo"}}, {"name": "v", "awsElasticBlockStore": {"volumeID": "bar"}}]
RBD = [{"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}},
       {"name": "v", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}}]
ISCSI = [{"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}},
         {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}]

# name, kind volumes, existing pods' volume index (None: no pod), want
ROWS = []
for kind, vols in (("gce", GCE), ("aws", AWS), ("rbd", RBD), ("iscsi", ISCSI)):
    ROWS += [(f"{kind} nothing", vols, [], None), (f"{kind} one state", vols, [0], DISK),
             (f"{kind} same state", vols, [0, 0], DISK), (f"{kind} different state", vols, [1], None)]


@pytest.mark.parametrize("name,vols,existing,want", ROWS, ids=[r[0] for r in ROWS])
def test_disk_conflicts(name, vols, existing, want):
    objs = [pod(f"e{i}", vols[j], node_name="n1") for i, j in enumerate(existing)]
    e, h = cluster(node("n1"), *objs)
    pl = vr.new({}, h)
    p = parse_pod(pod("p", vols[0]))
    state = CycleState()
    assert pl.pre_filter(state, p) == (None, None)
    got = pl.filter(state, p, e.cache.snapshot().node_info_list[0])
    assert (None if got is None else (got.code, got.reasons)) == want


def test_read_only_gce_disks_do_not_conflict():
    ro = {"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
    e, h = cluster(node("n1"), pod("e", ro, node_name="n1"))
    pl = vr.new({}, h)
    p = parse_pod(pod("p", ro))
    state = CycleState()
    pl.pre_filter(state, p)
    assert pl.filter(state, p, e.cache.snapshot().node_info_list[0]) is None


def test_pod_with_unrestricted_volume_skips():
    e, h = cluster(node("n1"))
    _res, st = vr.new({}, h).pre_filter(CycleState(), parse_pod(pod("p", {"name": "v", "emptyDir": {}})))
    assert st.code == Code.Skip


RWOP = pvc("claim-with-rwop-1", "sc", modes=("ReadWriteOncePod",))
RWOP2 = pvc("claim-with-rwop-2", "sc", modes=("ReadWriteOncePod",))
RWO = pvc("claim-rwo", "sc")


@pytest.mark.parametrize("name,pod_claims,existing_claims,want_pre,want_filter", [
    ("nothing", ["claim-rwo"], [], (Code.Skip, []), None),
    ("failed to get PVC", ["claim-missing"], [], (Code.UnschedulableAndUnresolvable,
                                                  ['persistentvolumeclaim "claim-missing" not found']), None),
    ("no access mode conflict", ["claim-with-rwop-1"], ["claim-rwo"], (Code.Skip, []), None),
    ("access mode conflict, unschedulable", ["claim-with-rwop-1"], ["claim-with-rwop-1"], None,
     (Code.Unschedulable, [vr.ErrReasonReadWriteOncePodConflict])),
    ("two conflicts, unschedulable", ["claim-with-rwop-1", "claim-with-rwop-2"],
     ["claim-with-rwop-1", "claim-with-rwop-2"], None, (Code.Unschedulable, [vr.ErrReasonReadWriteOncePodConflict])),
])
def test_access_mode_conflicts(name, pod_claims, existing_claims, want_pre, want_filter):
    existing = [pod(f"e-{c}", claim_vol(c), node_name="n1") for c in existing_claims]
    e, h = cluster(node("n1"), RWOP, RWOP2, RWO, *existing)
    pl = vr.new({}, h)
    p = parse_pod(pod("p", *[claim_vol(c) for c in pod_claims]))
    state = CycleState()
    _res, st = pl.pre_filter(state, p)
    assert (None if st is None else (st.code, st.reasons)) == want_pre
    if st is None:
        got = pl.filter(state, p, e.cache.snapshot().node_info_list[0])
        assert (got.code, got.reasons) == want_filter
        # preemption's RemovePod of the pods using the claims clears the conflict
        for ex in list(e.cache.snapshot().node_info_list[0].pods):
            assert pl.remove_pod(state, p, ex, None) is None
        assert pl.filter(state, p, e.cache.snapshot().node_info_list[0]) is None
