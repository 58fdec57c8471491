"""VolumeRestrictions: in-tree disks two pods cannot share on a node, and ReadWriteOncePod
claims (upstream ``plugins/volumerestrictions/volume_restrictions.go``, v1.28.0; the
ReadWriteOncePod feature gate is beta and on in v1.28)."""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, EnqueueExtensions,
                                   FilterPlugin, GVK, PreFilterExtensions, PreFilterPlugin, Status)

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ErrReasonDiskConflict = "node(s) had no available disk"
ErrReasonReadWriteOncePodConflict = ("node has pod using PersistentVolumeClaim with the same name and "
                                     "ReadWriteOncePod access mode")


class _PreFilterState:
    """preFilterState: the pod's ReadWriteOncePod claim names, and how many pods on nodes
    use one of them."""
    __slots__ = ("read_write_once_pod_pvcs", "conflicting_pvc_ref_count")

    def __init__(self, pvcs, count):
        self.read_write_once_pod_pvcs = pvcs
        self.conflicting_pvc_ref_count = count

    def conflicting_pvc_ref_count_for_pod(self, pod) -> int:
        return sum(1 for v in pod.volumes
                   if v.kind == "persistentVolumeClaim" and v.claim_name in self.read_write_once_pod_pvcs)

    def update_with_pod(self, pod, multiplier):
        self.conflicting_pvc_ref_count += multiplier * self.conflicting_pvc_ref_count_for_pod(pod)

    def clone(self):
        return _PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)


def _have_overlap(a1, a2) -> bool:
    return bool(set(a1) & set(a2))


def is_volume_conflict(volume, pod) -> bool:
    """isVolumeConflict: the same GCE PD (unless both read-only), AWS EBS volume, iSCSI IQN
    (unless both read-only) or RBD image on overlapping monitors (unless both read-only)."""
    for ev in pod.volumes:
        if volume.kind != ev.kind:
            continue
        k = volume.kind
        if k == "gcePersistentDisk":
            if volume.get("pdName") == ev.get("pdName") and not (volume.read_only and ev.read_only):
                return True
        elif k == "awsElasticBlockStore":
            if volume.get("volumeID") == ev.get("volumeID"):
                return True
        elif k == "iscsi":
            if volume.get("iqn") == ev.get("iqn") and not (volume.read_only and ev.read_only):
                return True
        elif k == "rbd":
            if (_have_overlap(volume.get("monitors", []), ev.get("monitors", []))
                    and volume.get("pool", "rbd") == ev.get("pool", "rbd")
                    and volume.get("image") == ev.get("image")
                    and not (volume.read_only and ev.read_only)):
                return True
    return False


def needs_restrictions_check(v) -> bool:
    return v.kind in ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def satisfy_volume_conflicts(pod, node_info) -> bool:
    for v in pod.volumes:
        if not needs_restrictions_check(v):
            continue
        for ep in node_info.pods:
            if is_volume_conflict(v, ep):
                return False
    return True


def used_pvc_set(snapshot) -> set:
    """Snapshot.usedPVCSet: namespace/claim of every persistentVolumeClaim volume of the pods
    on nodes (NodeInfo.PVCRefCounts)."""
    out = set()
    for ni in snapshot.node_info_list:
        for p in ni.pods:
            for v in p.volumes:
                if v.kind == "persistentVolumeClaim":
                    out.add(f"{p.namespace}/{v.claim_name}")
    return out


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, EnqueueExtensions, PreFilterExtensions):
    name = NAME

    def __init__(self, handle):
        self.handle = handle

    def pre_filter(self, state, pod):
        """PreFilter: Skip unless the pod has an in-tree disk to compare or a ReadWriteOncePod
        claim some pod on a node already uses; a missing claim is UnschedulableAndUnresolvable."""
        needs_check = any(needs_restrictions_check(v) for v in pod.volumes)
        host = self.handle.host
        pvcs = set()
        for v in pod.volumes:
            if v.kind != "persistentVolumeClaim":
                continue
            pvc = host.pvcs.get(f"{pod.namespace}/{v.claim_name}")
            if pvc is None:
                return None, Status(Code.UnschedulableAndUnresolvable,
                                    f'persistentvolumeclaim "{v.claim_name}" not found')
            if "ReadWriteOncePod" not in pvc.access_modes:
                continue
            pvcs.add(pvc.name)
        used = used_pvc_set(self.handle.snapshot()) if pvcs else set()
        count = sum(1 for n in pvcs if f"{pod.namespace}/{n}" in used)
        s = _PreFilterState(frozenset(pvcs), count)
        if not needs_check and s.conflicting_pvc_ref_count == 0:
            return None, Status(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self):
        return self

    def add_pod(self, state, pod_to_schedule, pod_info_to_add, node_info):
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_info_to_add, 1)
        return None

    def remove_pod(self, state, pod_to_schedule, pod_info_to_remove, node_info):
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_info_to_remove, -1)
        return None

    def filter(self, state, pod, node_info):
        """Filter: a disk conflict with a pod on the node, then the ReadWriteOncePod count."""
        if not satisfy_volume_conflicts(pod, node_info):
            return Status(Code.Unschedulable, ErrReasonDiskConflict)
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_pvc_ref_count > 0:
            return Status(Code.Unschedulable, ErrReasonReadWriteOncePodConflict)
        return None

    def events_to_register(self) -> list:
        """Pod/Delete, Node/Add, PersistentVolumeClaim/Add|Update."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.Pod, ActionType.Delete)),
            ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add)),
            ClusterEventWithHint(ClusterEvent(GVK.PersistentVolumeClaim, ActionType.Add | ActionType.Update)),
        ]


def new(args, handle):
    return VolumeRestrictions(handle)
