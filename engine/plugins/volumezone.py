"""VolumeZone: a pod's bound PVs' zone and region labels against the node's
(upstream ``plugins/volumezone/volume_zone.go``, v1.28.0)."""
from __future__ import annotations

from ..framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, EnqueueExtensions,
                                   FilterPlugin, GVK, PreFilterPlugin, Status)
from ..objects import BINDING_WAIT_FOR_FIRST_CONSUMER

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ErrReasonConflict = "node(s) had no available volume zone"

LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_TOPOLOGY_ZONE,
                   LABEL_TOPOLOGY_REGION)


def translate_to_ga_label(label: str) -> str:
    if label == LABEL_FAILURE_DOMAIN_BETA_REGION:
        return LABEL_TOPOLOGY_REGION
    if label == LABEL_FAILURE_DOMAIN_BETA_ZONE:
        return LABEL_TOPOLOGY_ZONE
    return label


def label_zones_to_set(value: str):
    """volumehelpers.LabelZonesToSet: zones joined by "__"; an empty zone is an error."""
    zones = value.split("__")
    if any(not z.strip() for z in zones):
        return None
    return {z.strip() for z in zones}


class _State:
    __slots__ = ("pod_pv_topologies",)

    def __init__(self, t):
        self.pod_pv_topologies = t

    def clone(self):
        return self


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, handle):
        self.handle = handle

    def get_pv_by_pod(self, pod):
        """getPVbyPod: [(pv name, label key, zone values)], or a Status."""
        host = self.handle.host
        out = []
        for v in pod.volumes:
            if v.kind != "persistentVolumeClaim":
                continue
            pvc = host.pvcs.get(f"{pod.namespace}/{v.claim_name}")
            if pvc is None:
                return None, Status(Code.UnschedulableAndUnresolvable, f'persistentvolumeclaim "{v.claim_name}" not found')
            pv_name = pvc.volume_name
            if not pv_name:
                sc_name = pvc.class_name
                if not sc_name:
                    return None, Status(Code.UnschedulableAndUnresolvable,
                                        "PersistentVolumeClaim had no pv name and storageClass name")
                sc = host.storage_classes.get(sc_name)
                if sc is None:
                    return None, Status(Code.UnschedulableAndUnresolvable,
                                        f'storageclass.storage.k8s.io "{sc_name}" not found')
                if sc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue
                return None, Status(Code.UnschedulableAndUnresolvable, "PersistentVolume had no name")
            pv = host.pvs.get(pv_name)
            if pv is None:
                return None, Status(Code.UnschedulableAndUnresolvable, f'persistentvolume "{pv_name}" not found')
            for key in TOPOLOGY_LABELS:
                if key in pv.labels:
                    zones = label_zones_to_set(pv.labels[key])
                    if zones is None:
                        continue     # upstream logs and ignores the label
                    out.append((pv.name, key, zones))
        return out, None

    def pre_filter(self, state, pod):
        tops, st = self.get_pv_by_pod(pod)
        if st is not None:
            return None, st
        if not tops:
            return None, Status(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, _State(tops))
        return None, None

    def pre_filter_extensions(self):
        return None

    def filter(self, state, pod, node_info):
        if not pod.volumes:
            return None
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            tops, st = self.get_pv_by_pod(pod)
            if st is not None:
                return st
        else:
            tops = s.pod_pv_topologies
        labels = node_info.node.labels
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for _pv, key, values in tops:
            v = labels.get(key)
            if v is None:
                v = labels.get(translate_to_ga_label(key))
            if v is None or v not in values:
                return Status(Code.UnschedulableAndUnresolvable, ErrReasonConflict)
        return None

    def events_to_register(self) -> list:
        """StorageClass/Add, Node/Add|UpdateNodeLabel, PersistentVolumeClaim/Add,
        PersistentVolume/Add|Update."""
        return [
            ClusterEventWithHint(ClusterEvent(GVK.StorageClass, ActionType.Add)),
            ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add | ActionType.UpdateNodeLabel)),
            ClusterEventWithHint(ClusterEvent(GVK.PersistentVolumeClaim, ActionType.Add)),
            ClusterEventWithHint(ClusterEvent(GVK.PersistentVolume, ActionType.Add | ActionType.Update)),
        ]


def new(args, handle):
    return VolumeZone(handle)
