"""The volume objects the scheduler reads, and the writes its VolumeBinding plugin makes.

Upstream: the informers of PersistentVolumes, PersistentVolumeClaims, StorageClasses and
CSINodes; ``volumebinding/assume_cache.go`` (``AssumeCache``: the binder's view of PVs and
PVCs, where the decisions of a scheduling cycle are *assumed* before they are written);
``binder.go`` (``bindAPIUpdate``, ``checkBindings``) and, as the simulator's stand-in for the
controllers the binder waits for, the PV controller's binding and an external provisioner's
PV (``pkg/controller/volume/persistentvolume``, v1.28).

The engine has no PV controller running on its own: when VolumeBinding's PreBind writes its
decisions (a PV's ``claimRef``, a claim's ``volume.kubernetes.io/selected-node``), the
controller's answer follows at once, within the same PreBind: the static PV and its claim are
bound, and a claim to provision gets a new PV ``pvc-<claim uid>`` of its class (capacity as
requested, node affinity from the CSI driver's topology keys on the selected node when its
CSINode lists them).  checkBindings then finds everything bound, as upstream's poll would.
"""
from __future__ import annotations

from .objects import (ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, PersistentVolume)
from .labels import NodeSelector, NodeSelectorTerm, Requirement


class AssumeCache:
    """assumeCache: the latest API object of each name, and an assumed newer version a cycle
    decided on (``Assume``), dropped again by ``Restore`` or replaced when the API object
    changes (an informer update at least as new as the assumed one)."""

    def __init__(self, api: dict):
        self.api = api            # name/key -> object (the engine's own dict, shared)
        self.assumed: dict = {}

    def get(self, key):
        o = self.assumed.get(key)
        return o if o is not None else self.api.get(key)

    def get_api(self, key):
        return self.api.get(key)

    def assume(self, key, obj) -> None:
        if key not in self.api:
            raise KeyError(key)
        self.assumed[key] = obj

    def restore(self, key) -> None:
        self.assumed.pop(key, None)

    def on_api_change(self, key) -> None:
        """An API add/update/delete of ``key``: the informer's newer version wins."""
        self.assumed.pop(key, None)

    def list(self):
        return [self.get(k) for k in self.api]


def volume_claim_name(pod, vol) -> str:
    """ephemeral.VolumeClaimName: ``<pod name>-<volume name>``."""
    return f"{pod.name}-{vol.name}"


def volume_is_for_pod(pod, pvc):
    """ephemeral.VolumeIsForPod: the claim's controller owner must be the pod; the error
    message as upstream's, or None.  Upstream compares the owner's uid; the engine gives pods
    its own uids (an imported pod's is not kept), so the owner is matched by kind and name."""
    for kind, name, _uid, controller in pvc.owners:
        if controller and kind == "Pod" and name == pod.name:
            return None
    return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def pod_claim_names(pod):
    """(volume, claim name, is ephemeral) of each claim of the pod, in volume order."""
    for v in pod.volumes:
        if v.kind == "persistentVolumeClaim":
            yield v, v.claim_name, False
        elif v.kind == "ephemeral":
            yield v, volume_claim_name(pod, v), True


def is_volume_bound_to_claim(pv, pvc) -> bool:
    """volume.IsVolumeBoundToClaim."""
    if pv.claim_ref is None:
        return False
    ns, name, uid = pv.claim_ref
    if name != pvc.name or ns != pvc.namespace:
        return False
    return not uid or not pvc.uid or uid == pvc.uid


def check_node_affinity(pv, node_labels) -> bool:
    """volume.CheckNodeAffinity: the PV's required node affinity matches the node (a PV
    without one matches every node)."""
    if pv.node_affinity is None:
        return True
    # upstream matches a Node made of the labels alone: a matchFields term never matches
    return pv.node_affinity.matches("", node_labels)


def provisioned_pv(pvc, sc, node, csi_node, uid) -> PersistentVolume:
    """The PV an external provisioner creates for ``pvc`` (selected node ``node``)."""
    na = None
    if csi_node is not None:
        for name, _count, keys in csi_node.drivers:
            if name == sc.provisioner and keys:
                reqs = tuple(Requirement(k, "In", (node.labels[k],)) for k in keys if k in node.labels)
                if reqs:
                    na = NodeSelector((NodeSelectorTerm(reqs),))
    pv_name = f"pvc-{uid}"
    manifest = {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": pv_name, "annotations": {"pv.kubernetes.io/provisioned-by": sc.provisioner}},
                "spec": {"capacity": {"storage": str(pvc.request)}, "accessModes": list(pvc.access_modes),
                         "storageClassName": sc.name,
                         "claimRef": {"namespace": pvc.namespace, "name": pvc.name, "uid": pvc.uid},
                         "csi": {"driver": sc.provisioner, "volumeHandle": pv_name}},
                "status": {"phase": "Bound"}}
    if na is not None:
        manifest["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": r.key, "operator": "In", "values": list(r.values)} for r in na.terms[0].match_expressions]}]}}
    return PersistentVolume(pv_name, pvc.request, pvc.access_modes, sc.name, pvc.volume_mode,
                            (pvc.namespace, pvc.name, pvc.uid), na, (sc.provisioner, pv_name), None, "Bound",
                            {}, {"pv.kubernetes.io/provisioned-by": sc.provisioner}, False, manifest)


def bound_pv(pv, pvc) -> PersistentVolume:
    """volume.GetBindVolumeToClaim: the PV with its claimRef set (and bound-by-controller)."""
    ann = dict(pv.annotations)
    if not is_volume_bound_to_claim(pv, pvc):
        ann.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
    m = dict(pv.manifest)
    spec = dict(m.get("spec") or {})
    spec["claimRef"] = {"namespace": pvc.namespace, "name": pvc.name, "uid": pvc.uid}
    m["spec"] = spec
    md = dict(m.get("metadata") or {})
    md["annotations"] = ann
    m["metadata"] = md
    return pv.copy(claim_ref=(pvc.namespace, pvc.name, pvc.uid), annotations=ann, manifest=m)


def with_status(obj, phase):
    m = dict(obj.manifest)
    m["status"] = dict(m.get("status") or {}, phase=phase)
    return obj.copy(phase=phase, manifest=m)


def claim_bound_to(pvc, pv_name) -> object:
    """The claim as the PV controller leaves it once bound: volumeName, bind-completed, Bound."""
    ann = dict(pvc.annotations)
    ann[ANN_BIND_COMPLETED] = "yes"
    m = dict(pvc.manifest)
    md = dict(m.get("metadata") or {})
    md["annotations"] = ann
    m["metadata"] = md
    spec = dict(m.get("spec") or {})
    spec["volumeName"] = pv_name
    m["spec"] = spec
    m["status"] = dict(m.get("status") or {}, phase="Bound")
    return pvc.copy(volume_name=pv_name, annotations=ann, phase="Bound", manifest=m)


def claim_with_selected_node(pvc, node_name):
    ann = dict(pvc.annotations)
    ann[ANN_SELECTED_NODE] = node_name
    m = dict(pvc.manifest)
    md = dict(m.get("metadata") or {})
    md["annotations"] = ann
    m["metadata"] = md
    return pvc.copy(annotations=ann, manifest=m)
