"""NodeVolumeLimits (CSI).  Rows of upstream nodevolumelimits/csi_test.go TestCSILimits:
the limit from the node's allocatable or the CSINode, pending claims counted through their
class, the same volume counted once, per-driver limits, migrated in-tree volumes, ephemeral
volumes and the PreFilter skip."""
import pytest

from engine.framework import Code, CycleState
from engine.plugins import nodevolumelimits as nvl
from tests.engine.volume_env import claim_vol, cluster, csi_node, node, parse_pod, pod, pv, pvc, storage_class

EBS, GCE = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
EXCEEDED = (Code.Unschedulable, [nvl.ErrReasonMaxVolumeCountExceeded])

OBJS = [storage_class("csi-sc", provisioner=EBS), storage_class("gce-sc", provisioner=GCE),
        pv("csi-ebs.csi.aws.com-0", csi=(EBS, "vol-0")), pv("csi-ebs.csi.aws.com-1", csi=(EBS, "vol-1")),
        pv("csi-ebs.csi.aws.com-3", csi=(EBS, "vol-3")),
        pv("gce-0", csi=(GCE, "g-0")), pv("gce-1", csi=(GCE, "g-1")),
        pv("intree-0", awsElasticBlockStore={"volumeID": "aws-0"}),
        pv("intree-1", awsElasticBlockStore={"volumeID": "aws-1"}),
        pv("intree-2", awsElasticBlockStore={"volumeID": "aws-2"}),
        pvc("csi-ebs-0", "csi-sc", volume_name="csi-ebs.csi.aws.com-0", bound=True),
        pvc("csi-ebs-1", "csi-sc", volume_name="csi-ebs.csi.aws.com-1", bound=True),
        pvc("csi-ebs-3", "csi-sc", volume_name="csi-ebs.csi.aws.com-3", bound=True),
        pvc("gce-0", "gce-sc", volume_name="gce-0", bound=True), pvc("gce-1", "gce-sc", volume_name="gce-1", bound=True),
        pvc("pending-1", "csi-sc"), pvc("pending-2", "csi-sc"),
        pvc("missing-pv", "csi-sc", volume_name="missing-pv", bound=True), pvc("no-sc", "missing-sc"),
        pvc("intree-0", "", volume_name="intree-0", bound=True), pvc("intree-1", "", volume_name="intree-1", bound=True),
        pvc("intree-2", "", volume_name="intree-2", bound=True)]

CSI_ONE = ["csi-ebs-3"]
CSI_TWO = ["csi-ebs-0", "csi-ebs-1"]


def _node(limit_source, max_vols, drivers, migrated=None):
    n = node("node-for-max-pd-test-1")
    out = [n]
    if limit_source == "node":
        for d in drivers:
            n["status"]["allocatable"][nvl.get_csi_attach_limit_key(d)] = str(max_vols)
    elif limit_source == "csinode":
        out.append(csi_node("node-for-max-pd-test-1", *[(d, max_vols) for d in drivers], migrated=migrated))
    elif limit_source == "csinode-with-no-limit":
        out.append(csi_node("node-for-max-pd-test-1", *[(d, None) for d in drivers], migrated=migrated))
    return out


ROWS = [
    ("fits when node volume limit >= new pods CSI volume", CSI_ONE, [[], CSI_TWO], 4, [EBS], "node", None),
    ("doesn't when node volume limit <= pods CSI volume", CSI_ONE, [[], CSI_TWO], 2, [EBS], "node", EXCEEDED),
    ("should when driver does not support volume limits", CSI_ONE, [[], CSI_TWO], 2, [EBS], "csinode-with-no-limit", None),
    ("count pending PVCs towards volume limit <= pods CSI volume", CSI_ONE, [["pending-1"], CSI_TWO], 2, [EBS],
     "node", EXCEEDED),
    ("count multiple pending pvcs towards volume limit >= pods CSI volume", CSI_ONE,
     [["pending-1"], ["pending-1"], CSI_TWO], 4, [EBS], "node", None),
    ("should count PVCs with invalid PV name but valid SC", CSI_ONE, [["missing-pv"], CSI_TWO], 2, [EBS], "node", EXCEEDED),
    ("don't count pvcs with missing SC towards volume limit", CSI_ONE, [[], ["no-sc"]], 2, [EBS], "node", None),
    ("count pvcs with the same type towards volume limit", CSI_ONE, [["gce-0", "gce-1"], CSI_TWO], 2, [EBS, GCE],
     "node", EXCEEDED),
    ("don't count pvcs with different type towards volume limit", ["gce-0", "gce-1"], [CSI_TWO, []], 2, [EBS, GCE],
     "node", None),
    ("same volume on the node is counted once", ["csi-ebs-0"], [CSI_TWO], 2, [EBS], "csinode", None),
]


@pytest.mark.parametrize("name,new,existing,max_vols,drivers,source,want", ROWS, ids=[r[0] for r in ROWS])
def test_csi_limits(name, new, existing, max_vols, drivers, source, want):
    pods = [pod(f"e{i}", *[claim_vol(c) for c in claims], node_name="node-for-max-pd-test-1")
            for i, claims in enumerate(existing)]
    e, h = cluster(*_node(source, max_vols, drivers), *OBJS, *pods)
    pl = nvl.new({}, h)
    p = parse_pod(pod("new", *[claim_vol(c) for c in new]))
    assert pl.pre_filter(CycleState(), p) == (None, None)
    got = pl.filter(CycleState(), p, e.cache.snapshot().node_info_list[0])
    assert (None if got is None else (got.code, got.reasons)) == want


def test_in_tree_volumes_count_only_when_migrated():
    """"should count in-tree volumes if migration is enabled" and without the migrated-plugins
    annotation, not counted."""
    pods = [pod("e", claim_vol("intree-0"), claim_vol("intree-1"), node_name="node-for-max-pd-test-1")]
    for migrated, want in (("kubernetes.io/aws-ebs", EXCEEDED), (None, None)):
        e, h = cluster(*_node("csinode", 2, ["kubernetes.io/aws-ebs", EBS], migrated=migrated), *OBJS, *pods)
        got = nvl.new({}, h).filter(CycleState(), parse_pod(pod("new", claim_vol("intree-2"))),
                                    e.cache.snapshot().node_info_list[0])
        assert (None if got is None else (got.code, got.reasons)) == want


def test_inline_in_tree_volume_counts_when_migrated():
    inline = {"name": "v", "awsElasticBlockStore": {"volumeID": "inline-1"}}
    pods = [pod("e", claim_vol("intree-0"), claim_vol("intree-1"), node_name="node-for-max-pd-test-1")]
    e, h = cluster(*_node("csinode", 2, [EBS], migrated="kubernetes.io/aws-ebs"), *OBJS, *pods)
    pl = nvl.new({}, h)
    p = parse_pod(pod("new", inline))
    assert pl.pre_filter(CycleState(), p) == (None, None)      # a migratable inline volume: not skipped
    got = pl.filter(CycleState(), p, e.cache.snapshot().node_info_list[0])
    assert (got.code, got.reasons) == EXCEEDED


def test_ephemeral_volume_missing_and_not_owned():
    eph = {"name": "xyz", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
    e, h = cluster(*_node("node", 2, [EBS]), *OBJS)
    got = nvl.new({}, h).filter(CycleState(), parse_pod(pod("abc", eph)), e.cache.snapshot().node_info_list[0])
    assert got.code == Code.Error
    assert got.reasons == ['looking up PVC default/abc-xyz: persistentvolumeclaim "abc-xyz" not found']
    e, h = cluster(*_node("node", 2, [EBS]), *OBJS, pvc("abc-xyz", "csi-sc"))
    got = nvl.new({}, h).filter(CycleState(), parse_pod(pod("abc", eph)), e.cache.snapshot().node_info_list[0])
    assert got.code == Code.Error and got.reasons == ["PVC default/abc-xyz was not created for pod default/abc (pod is not owner)"]


def test_skip_filter_when_the_pod_only_uses_secrets_and_configmaps():
    e, h = cluster(node("n"))
    p = parse_pod(pod("p", {"name": "s", "secret": {"secretName": "x"}}, {"name": "c", "configMap": {"name": "y"}}))
    _res, st = nvl.new({}, h).pre_filter(CycleState(), p)
    assert st.code == Code.Skip


def test_attach_limit_key_is_hashed_when_long():
    assert nvl.get_csi_attach_limit_key(EBS) == "attachable-volumes-csi-ebs.csi.aws.com"
    import hashlib
    long = "a" * 40          # 23 + 40 = 63 characters: hashed (upstream's >= 63)
    assert nvl.get_csi_attach_limit_key(long) == ("attachable-volumes-csi-" + "a" * 23
                                                   + hashlib.sha1(long.encode()).hexdigest()[:16])
    assert nvl.get_csi_attach_limit_key("a" * 39) == "attachable-volumes-csi-" + "a" * 39
