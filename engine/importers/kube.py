"""Kubernetes objects as a live cluster returns them, cut down to what the scheduler reads.

A ``kubectl get ... -o yaml`` dump (or kube-scheduler-simulator's export) carries much that
kube-scheduler never looks at: managedFields, container commands and probes, node addresses,
heartbeat times. ``Converter`` keeps the fields the engine honours (docs/scenario-format.md),
counts every other field it leaves out under its path, and decides per object what the
scheduler would do with it:

- Pods in phase Succeeded or Failed are left out: the scheduler's pod informer lists pods with
  the field selector ``status.phase!=Succeeded,status.phase!=Failed`` (``scheduler.go``
  ``newPodInformer``).
- A pending pod with a ``deletionTimestamp`` is left out: ``skipPodSchedule`` skips it
  (``schedule_one.go``). A bound one keeps its node and is deleted at t=0 with what is left
  of its grace period.
- Bound pods (``spec.nodeName``) stay on their node with their ``status.startTime``; a pod
  bound to a node the import does not have is left out (the scheduler's cache would keep it
  on a node that is in no snapshot).
- Mirror pods (annotation ``kubernetes.io/config.mirror``) are bound pods like any other for
  the scheduler's cache. DaemonSet pods are ordinary pods whose required node affinity
  (``matchFields`` on ``metadata.name``, set by the DaemonSet controller) pins them to a node.
- Pods whose ``schedulerName`` no profile has stay pending and are reported as not ours.
- The built-in PriorityClasses (``system-node-critical``, ``system-cluster-critical``) exist in
  the engine already; ``spec.priority`` is left out when the pod's class gives the same value
  (the Priority admission plugin wrote it from the class).
- Namespaces keep their name and labels (InterPodAffinity's namespaceSelector terms select
  namespaces by their labels); a namespace the dump does not hold is implicit in the engine,
  labelled only ``kubernetes.io/metadata.name``.
- PodDisruptionBudgets lose their status: the engine recomputes ``disruptionsAllowed`` as the
  disruption controller does whenever pods change.
- PersistentVolumes, PersistentVolumeClaims (with their uid, which PVs' claimRefs name),
  StorageClasses and CSINodes keep what the volume plugins read; a pod keeps its volumes of
  the sources a volume plugin reads (claims, ephemeral volumes, the in-tree disks
  VolumeRestrictions compares); CSIDriver, CSIStorageCapacity and VolumeAttachment are left
  out (storage capacity tracking is not modelled).
"""
from __future__ import annotations

import copy
import math
from datetime import date, datetime, timezone

from ..objects import Problems, is_custom_api_version, parse_time
from ..quantity import _q

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

# what we keep, as nested key sets ("*" keeps the whole value)
_CONTAINER_KEEP = {"name": "*", "image": "*", "resources": {"requests": "*", "limits": "*"},
                   "ports": {"containerPort": "*", "hostPort": "*", "hostIP": "*", "protocol": "*", "name": "*"},
                   "restartPolicy": "*"}
POD_KEEP = {
    "apiVersion": "*", "kind": "*",
    "metadata": {"name": "*", "namespace": "*", "labels": "*",
                 "ownerReferences": {"apiVersion": "*", "kind": "*", "name": "*", "controller": "*"}},
    "spec": {"containers": _CONTAINER_KEEP, "initContainers": _CONTAINER_KEEP, "overhead": "*",
             "priority": "*", "priorityClassName": "*", "preemptionPolicy": "*", "schedulerName": "*",
             "nodeName": "*", "nodeSelector": "*", "affinity": "*", "tolerations": "*",
             "topologySpreadConstraints": "*", "schedulingGates": "*",
             "terminationGracePeriodSeconds": "*", "volumes": "*"},
    "status": {"nominatedNodeName": "*", "startTime": "*"},
}
NODE_KEEP = {
    "apiVersion": "*", "kind": "*",
    "metadata": {"name": "*", "labels": "*"},
    "spec": {"unschedulable": "*", "taints": {"key": "*", "value": "*", "effect": "*"}},
    "status": {"allocatable": "*", "capacity": "*", "images": {"names": "*", "sizeBytes": "*"},
               "conditions": {"type": "*", "status": "*"}},
}
PRIORITY_CLASS_KEEP = {"apiVersion": "*", "kind": "*", "metadata": {"name": "*"}, "value": "*",
                       "globalDefault": "*", "preemptionPolicy": "*"}
NAMESPACE_KEEP = {"apiVersion": "*", "kind": "*", "metadata": {"name": "*", "labels": "*"}}
PDB_KEEP = {"apiVersion": "*", "kind": "*", "metadata": {"name": "*", "namespace": "*"},
            "spec": {"selector": "*", "minAvailable": "*", "maxUnavailable": "*"}}

# The volume objects the volume plugins read, and what of them (pod volumes: the sources a
# volume plugin reads; the others are left out, see _pod_volumes).
_VOLUME_ANNOTATIONS = {"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
                       "volume.kubernetes.io/selected-node", "volume.beta.kubernetes.io/storage-class",
                       "storage.alpha.kubernetes.io/migrated-plugins", "pv.kubernetes.io/provisioned-by"}
PV_KEEP = {"apiVersion": "*", "kind": "*",
           "metadata": {"name": "*", "labels": "*", "annotations": "*", "deletionTimestamp": "*"},
           "spec": {"capacity": {"storage": "*"}, "accessModes": "*", "storageClassName": "*", "volumeMode": "*",
                    "claimRef": {"namespace": "*", "name": "*", "uid": "*"}, "nodeAffinity": "*",
                    "csi": {"driver": "*", "volumeHandle": "*"}, "gcePersistentDisk": "*",
                    "awsElasticBlockStore": "*", "azureDisk": "*"},
           "status": {"phase": "*"}}
PVC_KEEP = {"apiVersion": "*", "kind": "*",
            "metadata": {"name": "*", "namespace": "*", "uid": "*", "labels": "*", "annotations": "*",
                         "deletionTimestamp": "*",
                         "ownerReferences": {"apiVersion": "*", "kind": "*", "name": "*", "uid": "*", "controller": "*"}},
            "spec": {"accessModes": "*", "resources": {"requests": {"storage": "*"}}, "storageClassName": "*",
                     "volumeName": "*", "volumeMode": "*", "selector": "*"},
            "status": {"phase": "*"}}
STORAGE_CLASS_KEEP = {"apiVersion": "*", "kind": "*", "metadata": {"name": "*", "annotations": "*"},
                      "provisioner": "*", "volumeBindingMode": "*", "allowedTopologies": "*"}
CSI_NODE_KEEP = {"apiVersion": "*", "kind": "*", "metadata": {"name": "*", "annotations": "*"},
                 "spec": {"drivers": {"name": "*", "nodeID": "*", "allocatable": {"count": "*"}, "topologyKeys": "*"}}}
VOLUME_KEEP = {"PersistentVolume": PV_KEEP, "PersistentVolumeClaim": PVC_KEEP, "StorageClass": STORAGE_CLASS_KEEP,
               "CSINode": CSI_NODE_KEEP}
POD_VOLUME_SOURCES = ("persistentVolumeClaim", "ephemeral", "gcePersistentDisk", "awsElasticBlockStore", "rbd",
                      "iscsi", "azureDisk")
VOLUME_KINDS = {"CSIDriver", "CSIStorageCapacity", "VolumeAttachment"}
SPREAD_SELECTOR_KINDS = {"Service", "ReplicaSet", "StatefulSet", "ReplicationController"}
DRA_KINDS = {"ResourceClaim", "ResourceClaimTemplate", "ResourceClass", "PodSchedulingContext"}
DROP_REASONS = {
    "volumes": "not modelled: storage capacity tracking (CSIDriver storageCapacity, CSIStorageCapacity) "
               "and attachments; VolumeBinding then finds every provisioner's capacity sufficient, as "
               "upstream does without a CSIDriver object",
    "spread": "not modelled: PodTopologySpread's system default constraints select pods through the "
              "Services, ReplicaSets, StatefulSets and ReplicationControllers that own them, so "
              "without them default spreading does not apply",
    "dra": "dynamic resource allocation is not modelled",
    "other": "not read by kube-scheduler",
}


# ---------------------------------------------------------------------------------------------
# Typed reads of untrusted values. Every importer reads a field of a file through these, so that
# a wrong type is a problem with its place (``dump.yaml.items[3] (Pod p).spec: "oops" is not a
# mapping``, the scenario reader's words), never an exception.

TIME = (str, date)      # an RFC 3339 text, or the timestamp YAML reads from an unquoted one
_WHAT = {dict: "a mapping", list: "a list", str: "a string", int: "an integer", bool: "true or false",
         TIME: "an RFC 3339 time"}


def at(place: str, key) -> str:
    """The place of ``key`` inside ``place`` (``key`` alone at the top)."""
    return f"{place}.{key}" if place else str(key)


def wrong_type(v, want) -> str | None:
    """None if ``v`` is a ``want`` (a type of ``_WHAT``; an integer is never a boolean), else
    the problem's text: ``5 is not a mapping``."""
    if isinstance(v, want) and not (want is int and isinstance(v, bool)):
        return None
    return f"{_q(v)} is not {_WHAT[want]}"


def typed(d, key, want, place: str, problems: list, default=None):
    """``d[key]`` if it is a ``want``, else ``default``: absent or null silently (as the API
    reads a null field), any other value with the problem ``<place>.<key>: <value> is not ...``
    appended to ``problems``."""
    v = d.get(key) if isinstance(d, dict) else None
    if v is None:
        return default
    msg = wrong_type(v, want)
    if msg is not None:
        problems.append(f"{at(place, key)}: {msg}")
        return default
    return v


def check_fields(d: dict, schema: dict, place: str, problems: list) -> None:
    """``typed`` for every field ``schema`` names: ``{key: type}``, or ``{key: {...}}`` for a
    mapping whose own fields are checked in turn."""
    for key, want in schema.items():
        if isinstance(want, dict):
            sub = typed(d, key, dict, place, problems)
            if sub is not None:
                check_fields(sub, want, at(place, key), problems)
        else:
            typed(d, key, want, place, problems)


# The fields Converter reads itself, and their types (the others go to the scenario validator,
# which says what is wrong with them, the place mapped back to the file).
READ_FIELDS = {
    "*": {"metadata": {"namespace": str}},
    "Pod": {"metadata": {"annotations": dict, "ownerReferences": list, "creationTimestamp": TIME,
                         "deletionTimestamp": TIME},
            "spec": {"nodeName": str, "priorityClassName": str, "schedulerName": str, "volumes": list},
            "status": {}},
    "Node": {"status": {}},
}


def mapping_at(d: dict, key) -> dict:
    """``d[key]``, made an empty mapping first if it is absent or null (what a checked mapping
    field may be besides a mapping)."""
    v = d.get(key)
    if not isinstance(v, dict):
        v = d[key] = {}
    return v


def check_object(m: dict, place: str, problems: list) -> bool:
    """Whether the fields of ``m`` (an object with a kind and a name) that the converter reads
    have their types; each one that has not is a problem at ``place``."""
    before = len(problems)
    check_fields(m, READ_FIELDS["*"], place, problems)
    check_fields(m, READ_FIELDS.get(m.get("kind"), {}), place, problems)
    return len(problems) == before


def _time_text(v) -> str:
    """An instant as RFC 3339 text (YAML reads an unquoted one as a datetime)."""
    if isinstance(v, datetime):
        return rfc3339(v if v.tzinfo else v.replace(tzinfo=timezone.utc))
    if isinstance(v, date):
        return v.isoformat()
    return v if isinstance(v, str) else ""


def makes_object(m: dict) -> bool:
    """Whether the converter may keep ``m`` as a scenario object (its kind is one the scheduler
    reads, or a custom resource): what the import counts against its object limit before
    converting."""
    kind = m.get("kind")
    if kind in ("Pod", "Node", "PriorityClass", "PodDisruptionBudget") or kind in VOLUME_KEEP:
        return True
    return kind not in VOLUME_KINDS and is_custom_api_version(m.get("apiVersion"))


def trim(obj, keep, kind, report, prefix=""):
    """A copy of ``obj`` with only the fields ``keep`` lists; every other field is counted in
    the report under its path (list items as ``[]``)."""
    if keep == "*":
        return obj
    if isinstance(obj, list):
        return [trim(x, keep, kind, report, prefix + "[]") for x in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        sub = keep.get(k) if isinstance(keep, dict) else None
        if sub is None:
            report.ignore(kind, f"{prefix}.{k}" if prefix else str(k))
            continue
        out[k] = trim(v, sub, kind, report, f"{prefix}.{k}" if prefix else str(k))
    return out


def latest_timestamp(objs) -> datetime | None:
    """The latest instant written in a set of objects (creation, start and condition times):
    when the dump was taken, as nearly as it says; the imported scenario starts there."""
    best = None
    probs = Problems()

    def see(v):
        nonlocal best
        t = parse_time(v, "", probs) if isinstance(v, str) else None
        if t is not None and (best is None or t > best):
            best = t

    for o in objs:
        if not isinstance(o, dict):
            continue
        md = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
        see(md.get("creationTimestamp"))
        st = o.get("status") if isinstance(o.get("status"), dict) else {}
        see(st.get("startTime"))
        conditions = st.get("conditions")
        for c in conditions if isinstance(conditions, list) else []:
            if isinstance(c, dict):
                see(c.get("lastTransitionTime"))
                see(c.get("lastHeartbeatTime"))
    return best


def rfc3339(t: datetime) -> str:
    t = t.astimezone(timezone.utc)
    s = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        s += f".{t.microsecond:06d}".rstrip("0")
    return s + "Z"


def _keep_read_annotations(out, kind, report):
    """Only the annotations the volume plugins and the binder read."""
    md = out.get("metadata")
    if not isinstance(md, dict) or not isinstance(md.get("annotations"), dict):
        return
    kept = {k: v for k, v in md["annotations"].items() if k in _VOLUME_ANNOTATIONS}
    if len(kept) != len(md["annotations"]):
        report.ignore(kind, "metadata.annotations (those the scheduler does not read)")
    if kept:
        md["annotations"] = kept
    else:
        del md["annotations"]


def _pod_volumes(ospec, report):
    """A pod's volumes of the sources a volume plugin reads; the others (configMap, secret,
    emptyDir, projected, ...) are left out and counted."""
    vols = ospec.get("volumes")
    if not isinstance(vols, list):
        return
    kept = []
    for v in vols:
        if isinstance(v, dict) and any(k in v for k in POD_VOLUME_SOURCES):
            src = next(k for k in POD_VOLUME_SOURCES if k in v)
            kept.append({"name": v.get("name"), src: v[src]})
        else:
            other = next((k for k in (v if isinstance(v, dict) else {}) if k != "name"), "?")
            report.ignore("Pod", f"spec.volumes[] of a source no volume plugin reads ({other})")
    if kept:
        ospec["volumes"] = kept
    else:
        del ospec["volumes"]


class Converter:
    """Turns API objects into scenario objects; ``convert_all`` returns them in the order the
    engine loads them (PriorityClasses, Namespaces, PDBs, Nodes, bound pods, pending pods by
    creation time) with where each came from, and the t=0 delete actions of terminating pods."""

    def __init__(self, report, profiles=("default-scheduler",)):
        self.report = report
        self.profiles = set(profiles)

    def convert_all(self, items, start: datetime | None):
        """``items``: [(manifest, origin)] -> (objects [(manifest, origin)], actions). Each
        manifest has passed ``check_object``."""
        report = self.report
        seen = {}
        pcs, namespaces, pdbs, nodes, bound, pending, actions, custom = [], [], [], [], [], [], [], []
        volumes = []
        class_values = dict(SYSTEM_PRIORITY_CLASSES)
        for m, origin in items:
            if m.get("kind") == "PriorityClass" and isinstance(m.get("value"), int):
                name = (m.get("metadata") or {}).get("name")
                class_values.setdefault(name, m["value"])
        node_names = {(m.get("metadata") or {}).get("name") for m, _ in items if m.get("kind") == "Node"}
        daemonset = mirror = pvc_pods = 0
        for m, origin in items:
            kind = m.get("kind")
            md = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
            key = (kind, md.get("namespace") or ("" if kind in ("Node", "PriorityClass", "Namespace") else "default"),
                   md.get("name"))
            if kind in ("Pod", "Node", "PriorityClass", "Namespace", "PodDisruptionBudget") or kind in VOLUME_KEEP:
                if key in seen:
                    report.drop(kind, f"the same object again (first at {seen[key]}); the first one is kept")
                    continue
                seen[key] = origin
            if kind == "PriorityClass":
                if md.get("name") in SYSTEM_PRIORITY_CLASSES:
                    report.drop(kind, "built in: the engine knows system-node-critical and system-cluster-critical")
                    continue
                pcs.append((trim(m, PRIORITY_CLASS_KEEP, kind, report), origin))
                report.keep(kind)
            elif kind == "Namespace":
                namespaces.append((trim(m, NAMESPACE_KEEP, kind, report), origin))
                report.keep(kind)
            elif kind == "PodDisruptionBudget":
                if "status" in m:
                    report.ignore(kind, "status (recomputed as the disruption controller would)")
                pdbs.append((trim({k: v for k, v in m.items() if k != "status"}, PDB_KEEP, kind, report), origin))
                report.keep(kind)
            elif kind == "Node":
                out = trim(m, NODE_KEEP, kind, report)
                st = out.get("status") or {}
                if "allocatable" in st and "capacity" in st:
                    del st["capacity"]   # the engine reads allocatable, capacity only without it
                nodes.append((out, origin))
                report.keep(kind)
            elif kind == "Pod":
                r = self._pod(m, md, origin, class_values, node_names, start)
                if r is None:
                    continue
                out, where, delete = r
                # check_object saw to the types of what is read here
                refs = md.get("ownerReferences") or []
                if any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in refs):
                    daemonset += 1
                if MIRROR_ANNOTATION in (md.get("annotations") or {}):
                    mirror += 1
                    out.setdefault("metadata", {}).setdefault("annotations", {})[MIRROR_ANNOTATION] = \
                        md["annotations"][MIRROR_ANNOTATION]
                vols = (m.get("spec") or {}).get("volumes") or []
                if any(isinstance(v, dict) and ("persistentVolumeClaim" in v or "ephemeral" in v) for v in vols):
                    pvc_pods += 1
                (bound if where == "bound" else pending).append((out, origin, _time_text(md.get("creationTimestamp"))))
                if delete is not None:
                    actions.append(delete)
            elif kind not in VOLUME_KINDS and is_custom_api_version(m.get("apiVersion")) and isinstance(kind, str):
                # a custom resource (a PodGroup, a quota ...): kept for the plugins that read it
                ckey = (m.get("apiVersion"), kind, md.get("namespace") or "default", md.get("name"))
                if ckey in seen:
                    report.drop(kind, f"the same object again (first at {seen[ckey]}); the first one is kept")
                    continue
                seen[ckey] = origin
                out = {"apiVersion": m["apiVersion"], "kind": kind,
                       "metadata": {k: copy.deepcopy(v) for k, v in md.items()
                                    if k in ("name", "namespace", "labels", "annotations")}}
                out.update({k: copy.deepcopy(v) for k, v in m.items() if k not in ("apiVersion", "kind", "metadata")})
                for k in sorted(md, key=str):
                    if k not in ("name", "namespace", "labels", "annotations"):
                        report.ignore(kind, f"metadata.{k}")
                custom.append((out, origin))
                report.keep(kind)
            elif kind in VOLUME_KEEP:
                out = trim(m, VOLUME_KEEP[kind], kind, report)
                _keep_read_annotations(out, kind, report)
                volumes.append((out, origin))
                report.keep(kind)
            elif kind in VOLUME_KINDS:
                report.drop(kind, DROP_REASONS["volumes"])
            elif kind in SPREAD_SELECTOR_KINDS:
                report.drop(kind, DROP_REASONS["spread"])
            elif kind in DRA_KINDS:
                report.drop(kind, DROP_REASONS["dra"])
            else:
                report.drop(str(kind), DROP_REASONS["other"])
        if daemonset:
            report.note(f"{daemonset} DaemonSet pod(s): kept as the scheduler sees them, ordinary pods whose "
                        "required node affinity (matchFields metadata.name, written by the DaemonSet "
                        "controller) pins each to its node")
        if mirror:
            report.note(f"{mirror} mirror pod(s) (static pods, annotation {MIRROR_ANNOTATION}): kept bound to "
                        "their node, as the scheduler's cache counts them")
        if pvc_pods:
            report.note(f"{pvc_pods} pod(s) use PersistentVolumeClaims or ephemeral volumes: the default "
                        "profile gets the volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, "
                        "VolumeZone)")
        pending.sort(key=lambda x: x[2])   # activeQ order: by creation (the queue time), stable
        objects = pcs + namespaces + pdbs + volumes + custom + nodes + [(o, g) for o, g, _ in bound] + [(o, g) for o, g, _ in pending]
        return objects, actions

    def _pod(self, m, md, origin, class_values, node_names, start):
        report = self.report
        spec = m.get("spec") if isinstance(m.get("spec"), dict) else {}
        status = m.get("status") if isinstance(m.get("status"), dict) else {}
        phase = status.get("phase")
        if phase in ("Succeeded", "Failed"):
            report.drop("Pod", f"phase {phase}: the scheduler's pod informer leaves out terminal pods "
                               "(field selector status.phase!=Succeeded,status.phase!=Failed)")
            return None
        node = spec.get("nodeName")
        deleting = md.get("deletionTimestamp")
        if deleting and not node:
            report.drop("Pod", "pending and being deleted (deletionTimestamp): skipPodSchedule skips it")
            return None
        if isinstance(node, str) and node and node not in node_names:
            report.drop("Pod", "bound to a node that is not in the import (no snapshot would hold it)")
            return None
        out = trim(m, POD_KEEP, "Pod", report)
        ospec = mapping_at(out, "spec")
        if "volumes" in ospec:
            _pod_volumes(ospec, report)
        pcn = spec.get("priorityClassName")
        if "priority" in ospec and pcn and class_values.get(pcn) == ospec["priority"]:
            del ospec["priority"]   # the class gives the same value: resolved as admission did
        elif pcn and pcn not in class_values and isinstance(ospec.get("priority"), int):
            # a dump without its PriorityClasses: admission already wrote the value, keep it
            del ospec["priorityClassName"]
            report.ignore("Pod", "spec.priorityClassName (its PriorityClass is not in the import; spec.priority kept)")
        delete = None
        if deleting and node:
            t = parse_time(deleting, "", Problems())
            grace = ospec.get("terminationGracePeriodSeconds", 30)
            if t is not None and start is not None:
                grace = max(0, math.ceil((t - start).total_seconds()))
            ospec["terminationGracePeriodSeconds"] = grace
            delete = {"at": 0, "delete": {"kind": "Pod", "namespace": md.get("namespace") or "default",
                                          "name": md.get("name")}}
            report.note("pods being deleted (deletionTimestamp) stay on their node and are deleted at t=0 "
                        "with what is left of their grace period")
            report.keep("Pod", "terminating")
        elif node:
            report.keep("Pod", "bound")
        else:
            sched = spec.get("schedulerName") or "default-scheduler"
            if sched not in self.profiles:
                self.report.not_ours.append(f"{md.get('namespace') or 'default'}/{md.get('name')} ({sched})")
                report.keep("Pod", "pending, not ours")
            else:
                report.keep("Pod", "pending")
        return out, ("bound" if node else "pending"), delete
