"""A cluster for the volume plugins' tests: an Engine loaded from manifests (its volume
listers, assume caches and cache), and a handle over it as the framework gives plugins."""
from __future__ import annotations

from engine.scenario import Scenario
from engine.scheduler import Engine


def node(name, **labels):
    """A node labelled with its hostname, as upstream's test makeNode."""
    labels = {"kubernetes.io/hostname": name, **labels}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(name, *volumes, node_name=None, namespace="default", uid=None):
    m = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
         "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)}}
    if node_name:
        m["spec"]["nodeName"] = node_name
    return m


def claim_vol(claim, name=None, read_only=False):
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only}}


def pvc(name, cls=None, size="1Gi", volume_name=None, bound=False, modes=("ReadWriteOnce",), phase=None,
        annotations=None, **extra):
    m = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": name, "namespace": "default", "annotations": dict(annotations or {})},
         "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}}
    if cls is not None:
        m["spec"]["storageClassName"] = cls
    if volume_name:
        m["spec"]["volumeName"] = volume_name
    if bound:
        m["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if phase:
        m["status"] = {"phase": phase}
    m["metadata"].update(extra.pop("metadata", {}))
    m["spec"].update(extra)
    return m


def pv(name, cls="", size="1Gi", claim=None, labels=None, zone_affinity=None, host_affinity=None,
       modes=("ReadWriteOnce",), csi=None, phase=None, **spec):
    m = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": dict(labels or {})},
         "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls}}
    if claim:
        m["spec"]["claimRef"] = {"namespace": "default", "name": claim}
    exprs = []
    if zone_affinity:
        exprs.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zone_affinity)})
    if host_affinity:
        exprs.append({"key": "kubernetes.io/hostname", "operator": "In", "values": list(host_affinity)})
    if exprs:
        m["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if csi:
        m["spec"]["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if phase:
        m["status"] = {"phase": phase}
    m["spec"].update(spec)
    return m


def storage_class(name, mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner", topologies=None):
    m = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
         "provisioner": provisioner, "volumeBindingMode": mode}
    if topologies:
        m["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in topologies.items()]}]
    return m


def csi_node(name, *drivers, migrated=None):
    m = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
         "spec": {"drivers": [{"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
                              for d, c in drivers]}}
    if migrated:
        m["metadata"]["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return m


class Handle:
    def __init__(self, engine):
        self.host = engine

    def snapshot(self):
        return self.host.cache.snapshot()


def cluster(*objects):
    """(engine, handle) with the objects loaded (pods with nodeName on their node)."""
    sc = Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "t"}, "objects": list(objects)})
    e = Engine(sc)
    e._load()
    return e, Handle(e)


def pod_obj(engine, name, namespace="default"):
    return engine.pods[f"{namespace}/{name}"]


def parse_pod(m):
    """A pod not in the cluster (the one to schedule)."""
    from engine.objects import Problems, pod_from_manifest
    probs = Problems()
    p = pod_from_manifest(m, "pod", probs)
    assert not probs, probs.items
    return p
