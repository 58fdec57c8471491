"""Generate a realistic ``kubectl get nodes,pods,pdb,priorityclasses,pv,pvc,storageclass,csinode,
namespaces,services,replicasets -A -o yaml`` dump of a made-up cluster.

It is written the way the API server and controllers write objects, not the way the importer
reads them: every object has uid, resourceVersion, creationTimestamp and managedFields; pods
carry the defaults the API server adds (dnsPolicy, restartPolicy, securityContext, the
service-account token volume, the not-ready/unreachable tolerations), their status
(conditions, containerStatuses, hostIP, podIP, qosClass); nodes carry addresses, nodeInfo,
conditions with heartbeats, images and volumesInUse. The cluster: 3 control-plane nodes with
their static (mirror) pods, 18 workers in 3 zones, DaemonSets on every node, Deployments
(ReplicaSets) with anti-affinity and topology spread constraints, StatefulSets with
PersistentVolumeClaims, finished and failed Jobs, a few pods that cannot be scheduled, a pod for
another scheduler, a pod being deleted, PriorityClasses (the system ones included) and PDBs.

Pods are placed by a first-fit that respects requests, taints and node selectors, so the dump is
consistent the way a real one is; nothing here looks at what the importer does.

``--more-reasons`` (``make_dump(seed, more_reasons=True)``) appends three more pending pods, for
reasons the default dump has not: one asking more memory than the nodes its selector picks have,
one selecting the tainted batch nodes without tolerating their taint, and a high-priority one
that fits on a batch node only by preempting batch-low jobs. Without it the output is what it
always was (the stored data/cluster-dump.yaml.gz is seed 7 without it).

    python tests/engine/importers/make_dump.py [--seed 7] [--json] [--more-reasons] > dump.yaml
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from datetime import datetime, timedelta, timezone

import yaml

T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=timezone.utc)
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.rv = 1000
        self.items = []
        self.nodes = []          # (manifest, free cpu m, free mem bytes, free pods)
        self.now = T0 + timedelta(days=12)

    # ------------------------------------------------------------- helpers
    def uid(self, *parts):
        h = hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def meta(self, kind, name, ns=None, created=None, manager="kube-controller-manager", **extra):
        self.rv += self.r.randint(1, 50)
        created = created or (T0 + timedelta(minutes=self.r.randint(0, 10000)))
        md = {"name": name}
        if ns:
            md["namespace"] = ns
        md.update({
            "uid": self.uid(kind, ns, name),
            "resourceVersion": str(self.rv),
            "creationTimestamp": ts(created),
            "managedFields": [
                {"manager": manager, "operation": "Update", "apiVersion": "v1",
                 "time": ts(created), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {".": {}}}},
                {"manager": "kubelet" if kind == "Pod" else manager, "operation": "Update",
                 "apiVersion": "v1", "time": ts(created + timedelta(seconds=5)), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:conditions": {".": {}}}}, "subresource": "status"},
            ],
        })
        md.update(extra)
        return md

    def add(self, obj):
        self.items.append(obj)
        return obj

    # ------------------------------------------------------------- cluster-scoped
    def priority_classes(self):
        for name, value, desc in [("system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."),
                                  ("system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.")]:
            self.add({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": self.meta("PriorityClass", name, created=T0, manager="kube-apiserver"),
                      "value": value, "globalDefault": False, "description": desc,
                      "preemptionPolicy": "PreemptLowerPriority"})
        for name, value, gd, pol in [("business-critical", 100000, False, "PreemptLowerPriority"),
                                     ("default-priority", 1000, True, "PreemptLowerPriority"),
                                     ("batch-low", -10, False, "Never")]:
            self.add({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": self.meta("PriorityClass", name, manager="kubectl-client-side-apply"),
                      "value": value, "globalDefault": gd, "description": f"{name} workloads",
                      "preemptionPolicy": pol})

    def namespaces(self, names):
        for n in names:
            self.add({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": self.meta("Namespace", n, manager="kubectl-create",
                                            labels={"kubernetes.io/metadata.name": n, "team": self.r.choice(["core", "web", "data"])}),
                      "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})

    def node(self, name, zone, role, cpu, mem_gi, taints=()):
        alloc_cpu = cpu * 1000 - 80
        alloc_mem = mem_gi * 1024 ** 3 - 700 * 1024 ** 2
        labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "node.kubernetes.io/instance-type": f"m5.{'2x' if cpu == 8 else ''}large",
                  "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": zone,
                  "failure-domain.beta.kubernetes.io/zone": zone}
        if role == "control-plane":
            labels["node-role.kubernetes.io/control-plane"] = ""
        else:
            labels["node-role.kubernetes.io/worker"] = ""
            labels["workload"] = role
        images = [{"names": [f"registry.k8s.io/{img}@sha256:{self.uid(img)[:16]}", f"registry.k8s.io/{img}"],
                   "sizeBytes": self.r.randint(5, 300) * 1024 ** 2}
                  for img in ("kube-proxy:v1.28.4", "pause:3.9", "coredns/coredns:v1.10.1", "nginx:1.25", "redis:7.2")]
        conds = []
        for t, s, reason in [("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                             ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                             ("PIDPressure", "False", "KubeletHasSufficientPID"),
                             ("Ready", "True", "KubeletReady")]:
            conds.append({"type": t, "status": s, "reason": reason, "message": f"kubelet {reason}",
                          "lastHeartbeatTime": ts(self.now - timedelta(seconds=self.r.randint(1, 40))),
                          "lastTransitionTime": ts(T0)})
        n = self.add({
            "apiVersion": "v1", "kind": "Node",
            "metadata": self.meta("Node", name, created=T0, manager="kubelet", labels=labels,
                                  annotations={"node.alpha.kubernetes.io/ttl": "0",
                                               "volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
            "spec": {"podCIDR": f"10.244.{len(self.nodes)}.0/24", "podCIDRs": [f"10.244.{len(self.nodes)}.0/24"],
                     "providerID": f"aws:///{zone}/i-{self.uid(name)[:17]}",
                     **({"taints": [dict(t, timeAdded=ts(T0)) if t["effect"] == "NoExecute" else t for t in taints]} if taints else {})},
            "status": {
                "addresses": [{"type": "InternalIP", "address": f"10.0.{len(self.nodes)}.10"},
                              {"type": "Hostname", "address": name}],
                "allocatable": {"cpu": f"{alloc_cpu}m", "ephemeral-storage": "95551679124",
                                "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                                "memory": f"{alloc_mem // 1024}Ki", "pods": "110"},
                "capacity": {"cpu": str(cpu), "ephemeral-storage": "101430960Ki", "hugepages-1Gi": "0",
                             "hugepages-2Mi": "0", "memory": f"{mem_gi * 1024 ** 2}Ki", "pods": "110"},
                "conditions": conds,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "images": images,
                "nodeInfo": {"architecture": "amd64", "bootID": self.uid("boot", name),
                             "containerRuntimeVersion": "containerd://1.7.11", "kernelVersion": "6.1.0-17-amd64",
                             "kubeProxyVersion": "v1.28.4", "kubeletVersion": "v1.28.4", "machineID": self.uid("m", name)[:32],
                             "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)",
                             "systemUUID": self.uid("s", name)},
                "volumesInUse": [], "volumesAttached": [],
            }})
        self.nodes.append([n, alloc_cpu, alloc_mem, 110])
        self.add({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                  "metadata": self.meta("CSINode", name, created=T0, manager="kubelet",
                                        ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": name,
                                                          "uid": self.uid("Node", None, name)}]),
                  "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": f"i-{self.uid(name)[:17]}",
                                        "allocatable": {"count": 25},
                                        "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]}})
        return n

    # ------------------------------------------------------------- pods
    def container(self, name, image, cpu_m, mem_mi, limits=True, port=None):
        c = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
             "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}},
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
             "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                               "readOnly": True}],
             "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
             "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10}}
        if limits:
            c["resources"]["limits"] = {"cpu": f"{cpu_m * 2}m", "memory": f"{mem_mi}Mi"}
        if port:
            c["ports"] = [dict(port, protocol="TCP")]
        return c

    def fits(self, slot, cpu, mem, pod_spec):
        n, fc, fm, fp = slot
        if fc < cpu or fm < mem or fp < 1:
            return False
        taints = n["spec"].get("taints") or []
        tols = pod_spec.get("tolerations") or []
        for t in taints:
            if t["effect"] not in ("NoSchedule", "NoExecute"):
                continue
            if not any(tol.get("operator") == "Exists" and (not tol.get("key") or tol.get("key") == t["key"])
                       or (tol.get("key") == t["key"] and tol.get("value") == t.get("value")) for tol in tols):
                return False
        for k, v in (pod_spec.get("nodeSelector") or {}).items():
            if n["metadata"]["labels"].get(k) != v:
                return False
        return True

    def pod(self, name, ns, containers, owner=None, node=None, phase="Running", labels=None, priority_class=None,
            extra_spec=None, annotations=None, created=None, scheduler=None, deleting=False, pending_reason=None,
            volumes=()):
        created = created or (T0 + timedelta(minutes=self.r.randint(10, 15000)))
        refs = [owner] if owner else None
        md = self.meta("Pod", name, ns, created, manager="kube-controller-manager" if owner else "kubectl-create",
                       labels=labels or {}, **({"ownerReferences": refs} if refs else {}),
                       **({"annotations": annotations} if annotations else {}))
        if deleting:
            md["deletionTimestamp"] = ts(self.now + timedelta(seconds=20))
            md["deletionGracePeriodSeconds"] = 30
        spec = {"containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
                "restartPolicy": "Always", "schedulerName": scheduler or "default-scheduler",
                "securityContext": {}, "serviceAccount": "default", "serviceAccountName": "default",
                "terminationGracePeriodSeconds": 30,
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 300},
                                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 300}],
                "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}] + list(volumes),
                "preemptionPolicy": "PreemptLowerPriority", "priority": 0}
        if extra_spec:
            for k, v in extra_spec.items():
                if k == "tolerations":
                    spec["tolerations"] = spec["tolerations"] + v
                else:
                    spec[k] = v
        if priority_class:
            spec["priorityClassName"] = priority_class
            spec["priority"] = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000,
                                "business-critical": 100000, "batch-low": -10}.get(priority_class, 1000)
            if priority_class == "batch-low":
                spec["preemptionPolicy"] = "Never"
        else:
            spec["priorityClassName"] = "default-priority"   # the globalDefault class, as admission writes it
            spec["priority"] = 1000
        cpu = sum(int(c["resources"]["requests"]["cpu"][:-1]) for c in containers)
        mem = sum(int(c["resources"]["requests"]["memory"][:-2]) * 1024 ** 2 for c in containers)
        if phase in ("Running", "Succeeded", "Failed") and node is None:
            order = self.nodes[:]
            self.r.shuffle(order)
            slot = next((s for s in order if self.fits(s, cpu, mem, spec)), None)
            if slot is None:
                phase, pending_reason = "Pending", "0/21 nodes are available: Insufficient cpu."
            else:
                node = slot[0]["metadata"]["name"]
        if node is not None and phase in ("Running",):
            slot = next(s for s in self.nodes if s[0]["metadata"]["name"] == node)
            slot[1] -= cpu
            slot[2] -= mem
            slot[3] -= 1
        status = {"phase": phase, "qosClass": "Burstable"}
        if node is not None and phase != "Pending":
            spec["nodeName"] = node
            start = created + timedelta(seconds=self.r.randint(1, 20))
            status.update({
                "hostIP": f"10.0.{[s[0]['metadata']['name'] for s in self.nodes].index(node)}.10",
                "podIP": f"10.244.{self.r.randint(0, 20)}.{self.r.randint(2, 250)}",
                "startTime": ts(start),
                "conditions": [{"type": t, "status": "True" if phase == "Running" else "False",
                                "lastProbeTime": None, "lastTransitionTime": ts(start)}
                               for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": f"docker.io/{c['image']}@sha256:{self.uid(c['image'])[:20]}",
                                       "containerID": f"containerd://{self.uid(name, c['name'])}", "ready": phase == "Running",
                                       "restartCount": self.r.randint(0, 3), "started": phase == "Running",
                                       "state": ({"running": {"startedAt": ts(start)}} if phase == "Running" else
                                                 {"terminated": {"exitCode": 0 if phase == "Succeeded" else 1,
                                                                 "reason": "Completed" if phase == "Succeeded" else "Error",
                                                                 "startedAt": ts(start), "finishedAt": ts(start + timedelta(minutes=3))}})}
                                      for c in containers],
            })
        else:
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": pending_reason or "0/21 nodes are available.",
                                     "lastProbeTime": None, "lastTransitionTime": ts(created)}]
        return self.add({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status})

    def owner(self, kind, name, ns):
        api = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1",
               "Node": "v1"}[kind]
        return {"apiVersion": api, "kind": kind, "name": name, "uid": self.uid(kind, ns, name),
                "controller": True, "blockOwnerDeletion": True}

    def suffix(self, n=5):
        return "".join(self.r.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    # ------------------------------------------------------------- workloads
    def more_reasons(self):
        """Three more pending pods (after every other object, so the rest of the dump is the
        same as without them)."""
        self.pod("cache-warmer", "default", [self.container("warmer", "redis:7.2", 100, 80 * 1024)], phase="Pending",
                 labels={"app": "warmer"}, extra_spec={"nodeSelector": {"workload": "memory"}},
                 pending_reason="0/21 nodes are available: 3 Insufficient memory.")
        self.pod("batch-intruder", "default", [self.container("job", "example.com/job:1", 100, 128)], phase="Pending",
                 labels={"app": "intruder"}, extra_spec={"nodeSelector": {"workload": "batch"}},
                 pending_reason="0/21 nodes are available: 3 node(s) had untolerated taint {dedicated: batch}.")
        self.pod("urgent-report", "batch", [self.container("report", "example.com/report:3", 7500, 1024, limits=False)],
                 phase="Pending", labels={"app": "urgent-report"}, priority_class="business-critical",
                 extra_spec={"restartPolicy": "Never", "tolerations": [{"key": "dedicated", "operator": "Equal",
                                                                         "value": "batch", "effect": "NoSchedule"}],
                             "nodeSelector": {"workload": "batch"}},
                 pending_reason="0/21 nodes are available: 3 Insufficient cpu.")
        return self.items

    def build(self):
        self.priority_classes()
        nss = ["kube-system", "default", "web", "data", "batch", "monitoring"]
        self.namespaces(nss)
        for i in range(3):
            self.node(f"cp-{i}", ZONES[i], "control-plane", 4, 16,
                      taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])
        for i in range(18):
            role = "general" if i < 12 else ("memory" if i < 15 else "batch")
            taints = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}] if role == "batch" else []
            self.node(f"ip-10-0-{i + 3}-10.eu-west-1.compute.internal", ZONES[i % 3], role,
                      8 if role != "memory" else 4, 32 if role != "memory" else 64, taints)
        self.storage()
        # static pods on the control plane (mirror pods)
        for i in range(3):
            for comp, cpu in (("etcd", 100), ("kube-apiserver", 250), ("kube-controller-manager", 200),
                              ("kube-scheduler", 100)):
                self.pod(f"{comp}-cp-{i}", "kube-system", [self.container(comp, f"registry.k8s.io/{comp}:v1.28.4", cpu, 100, limits=False)],
                         owner=self.owner("Node", f"cp-{i}", None), node=f"cp-{i}",
                         labels={"component": comp, "tier": "control-plane"}, priority_class="system-node-critical",
                         annotations={"kubernetes.io/config.mirror": self.uid(comp, i)[:32],
                                      "kubernetes.io/config.source": "file", "kubernetes.io/config.hash": self.uid(comp, i)[:32]},
                         created=T0 + timedelta(seconds=30))
        # DaemonSets: pinned by matchFields, tolerate everything
        for ds, ns, cpu, pc in (("kube-proxy", "kube-system", 100, "system-node-critical"),
                                ("aws-node", "kube-system", 25, "system-node-critical"),
                                ("node-exporter", "monitoring", 50, None),
                                ("fluent-bit", "monitoring", 100, None)):
            for slot in self.nodes:
                n = slot[0]["metadata"]["name"]
                aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}]}}}
                self.pod(f"{ds}-{self.suffix()}", ns, [self.container(ds, f"registry.k8s.io/{ds}:v1.28.4", cpu, 64,
                                                                      port={"containerPort": 9100, "hostPort": 9100} if ds == "node-exporter" else None)],
                         owner=self.owner("DaemonSet", ds, ns), node=n, labels={"app": ds, "controller-revision-hash": "6d4b9f"},
                         priority_class=pc,
                         extra_spec={"affinity": aff, "tolerations": [{"operator": "Exists"}], "hostNetwork": True},
                         created=T0 + timedelta(minutes=2))
        # a DaemonSet pod for a node that was just added: pending, pinned to it
        last = self.nodes[-1][0]["metadata"]["name"]
        self.pod(f"fluent-bit-{self.suffix()}", "monitoring", [self.container("fluent-bit", "fluent/fluent-bit:2.2", 100, 64)],
                 owner=self.owner("DaemonSet", "fluent-bit-v2", "monitoring"), phase="Pending",
                 labels={"app": "fluent-bit-v2"},
                 extra_spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                     {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [last]}]}]}}},
                     "tolerations": [{"operator": "Exists"}]})
        # coredns
        rs = f"coredns-{self.suffix(10)}"
        self.replicaset(rs, "kube-system", {"k8s-app": "kube-dns"}, 2)
        for _ in range(2):
            self.pod(f"{rs}-{self.suffix()}", "kube-system", [self.container("coredns", "registry.k8s.io/coredns/coredns:v1.10.1", 100, 70,
                                                                             port={"containerPort": 53, "name": "dns"})],
                     owner=self.owner("ReplicaSet", rs, "kube-system"), labels={"k8s-app": "kube-dns", "pod-template-hash": rs[-10:]},
                     priority_class="system-cluster-critical",
                     extra_spec={"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
                             {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]},
                             "topologyKey": "kubernetes.io/hostname"}}]}},
                         "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]})
        # web Deployments with spread and anti-affinity
        for app, replicas, cpu, mem, pc in (("frontend", 24, 250, 256, "business-critical"), ("api", 30, 500, 512, None),
                                            ("checkout", 12, 300, 384, "business-critical"), ("search", 16, 400, 1024, None),
                                            ("cache", 9, 200, 2048, None)):
            ns = "web"
            rs = f"{app}-{self.suffix(10)}"
            labels = {"app": app, "pod-template-hash": rs[-10:]}
            self.replicaset(rs, ns, {"app": app}, replicas)
            self.service(app, ns, {"app": app})
            spec = {"topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": app}}, "matchLabelKeys": ["pod-template-hash"]},
                {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                 "labelSelector": {"matchLabels": {"app": app}}}],
                "nodeSelector": {"workload": "general"} if app != "cache" else {"workload": "memory"}}
            if app == "checkout":
                spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "checkout"}}, "topologyKey": "kubernetes.io/hostname"}]},
                    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "api"}},
                                                            "topologyKey": "topology.kubernetes.io/zone"}}]}}
            if app == "search":
                spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 80, "preference": {"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a", "eu-west-1b"]}]}}]}}
            for k in range(replicas):
                self.pod(f"{rs}-{self.suffix()}", ns, [self.container(app, f"example.com/{app}:1.{k % 3}", cpu, mem),
                                                       self.container("envoy", "envoyproxy/envoy:v1.28", 50, 64)],
                         owner=self.owner("ReplicaSet", rs, ns), labels=labels, priority_class=pc, extra_spec=spec,
                         deleting=(app == "api" and k == 0))
            self.pdb(f"{app}-pdb", ns, {"app": app}, replicas, maxu=1 if app != "cache" else None,
                     mina="60%" if app == "cache" else None)
        # StatefulSets with claims
        for sts, replicas, cpu, mem, size in (("postgres", 3, 1000, 4096, "100Gi"), ("kafka", 5, 800, 3072, "200Gi"),
                                              ("zookeeper", 3, 200, 512, "10Gi")):
            ns = "data"
            self.service(sts, ns, {"app": sts})
            for k in range(replicas):
                claim = f"data-{sts}-{k}"
                pod = self.pod(f"{sts}-{k}", ns, [self.container(sts, f"example.com/{sts}:15", cpu, mem)],
                               owner=self.owner("StatefulSet", sts, ns),
                               labels={"app": sts, "statefulset.kubernetes.io/pod-name": f"{sts}-{k}"},
                               extra_spec={"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                                   {"labelSelector": {"matchLabels": {"app": sts}}, "topologyKey": "kubernetes.io/hostname"}]}},
                                   "nodeSelector": {"workload": "memory"} if sts == "postgres" else {}},
                               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])
                zone = None
                if pod["spec"].get("nodeName"):
                    n = next(s[0] for s in self.nodes if s[0]["metadata"]["name"] == pod["spec"]["nodeName"])
                    zone = n["metadata"]["labels"]["topology.kubernetes.io/zone"]
                    n["status"]["volumesInUse"].append(f"kubernetes.io/csi/ebs.csi.aws.com^vol-{self.uid(claim)[:17]}")
                self.claim(claim, ns, size, zone, bound=zone is not None)
            self.pdb(f"{sts}-pdb", ns, {"app": sts}, replicas, mina=replicas - 1)
        # batch: finished and failed Jobs, running ones on the batch nodes
        for j in range(40):
            job = f"report-{29000000 + j * 15}"
            phase = "Succeeded" if j < 30 else ("Failed" if j < 34 else "Running")
            self.pod(f"{job}-{self.suffix()}", "batch", [self.container("report", "example.com/report:3", 500, 512, limits=False)],
                     owner=self.owner("Job", job, "batch"), phase=phase,
                     labels={"job-name": job, "batch.kubernetes.io/controller-uid": self.uid(job)},
                     priority_class="batch-low",
                     extra_spec={"restartPolicy": "Never", "tolerations": [{"key": "dedicated", "operator": "Equal",
                                                                             "value": "batch", "effect": "NoSchedule"}],
                                 "nodeSelector": {"workload": "batch"}})
        # misc in default: unschedulable, gated, another scheduler, huge
        self.pod("ml-trainer", "default", [self.container("trainer", "example.com/trainer:1", 16000, 65536)], phase="Pending",
                 labels={"app": "ml"}, pending_reason="0/21 nodes are available: 21 Insufficient cpu.")
        self.pod("gpu-job", "default", [self.container("cuda", "nvidia/cuda:12.2", 1000, 1024)], phase="Pending",
                 labels={"app": "gpu"}, extra_spec={"nodeSelector": {"accelerator": "nvidia-a100"}},
                 pending_reason="0/21 nodes are available: 21 node(s) didn't match Pod's node affinity/selector.")
        self.pod("waiting-for-quota", "default", [self.container("app", "nginx:1.25", 100, 128)], phase="Pending",
                 labels={"app": "gated"}, extra_spec={"schedulingGates": [{"name": "example.com/quota"}]})
        for k in range(3):
            self.pod(f"volcano-task-{k}", "batch", [self.container("task", "example.com/task:1", 200, 256)],
                     phase="Pending", scheduler="volcano", labels={"app": "volcano"})
        for k in range(6):
            self.pod(f"web-burst-{k}", "web", [self.container("burst", "nginx:1.25", 1500, 2048)], phase="Pending",
                     labels={"app": "burst"}, priority_class="business-critical", extra_spec={"nodeSelector": {"workload": "general"}})
        return self.items

    def storage(self):
        self.add({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                  "metadata": self.meta("StorageClass", "gp3", created=T0, manager="kubectl-client-side-apply",
                                        annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
                  "provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"}, "reclaimPolicy": "Delete",
                  "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True})

    def claim(self, name, ns, size, zone, bound):
        vol = f"pvc-{self.uid(name)}"
        self.add({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                  "metadata": self.meta("PersistentVolumeClaim", name, ns),
                  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                           "storageClassName": "gp3", "volumeMode": "Filesystem", **({"volumeName": vol} if bound else {})},
                  "status": {"phase": "Bound" if bound else "Pending",
                             **({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}} if bound else {})}})
        if bound:
            self.add({"apiVersion": "v1", "kind": "PersistentVolume",
                      "metadata": self.meta("PersistentVolume", vol, manager="csi-provisioner"),
                      "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size},
                               "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": name, "namespace": ns},
                               "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{self.uid(name)[:17]}", "fsType": "ext4"},
                               "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                   {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": [zone]}]}]}},
                               "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gp3", "volumeMode": "Filesystem"},
                      "status": {"phase": "Bound"}})

    def replicaset(self, name, ns, sel, replicas):
        self.add({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": self.meta("ReplicaSet", name, ns),
                  "spec": {"replicas": replicas, "selector": {"matchLabels": sel}},
                  "status": {"replicas": replicas, "readyReplicas": replicas}})

    def service(self, name, ns, sel):
        self.add({"apiVersion": "v1", "kind": "Service", "metadata": self.meta("Service", name, ns),
                  "spec": {"selector": sel, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
                           "type": "ClusterIP", "clusterIP": f"10.96.{self.r.randint(0, 255)}.{self.r.randint(1, 254)}"},
                  "status": {"loadBalancer": {}}})

    def pdb(self, name, ns, sel, expected, maxu=None, mina=None):
        spec = {"selector": {"matchLabels": sel}}
        if maxu is not None:
            spec["maxUnavailable"] = maxu
        if mina is not None:
            spec["minAvailable"] = mina
        self.add({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": self.meta("PodDisruptionBudget", name, ns),
                  "spec": spec,
                  "status": {"currentHealthy": expected, "desiredHealthy": expected - 1, "disruptionsAllowed": 1,
                             "expectedPods": expected, "observedGeneration": 1,
                             "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                                             "lastTransitionTime": ts(T0), "message": "", "observedGeneration": 1}]}})


def make_dump(seed=7, more_reasons=False):
    gen = Gen(seed)
    items = gen.build()
    if more_reasons:
        items = gen.more_reasons()
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


class _Dumper(yaml.SafeDumper):
    """kubectl never writes anchors: repeat shared values instead."""

    def ignore_aliases(self, data):
        return True


def to_yaml(dump) -> str:
    return yaml.dump(dump, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="kubectl -o json instead of -o yaml")
    ap.add_argument("--more-reasons", action="store_true",
                    help="append three more pending pods (memory, an untolerated taint, a preemption)")
    args = ap.parse_args(argv)
    dump = make_dump(args.seed, more_reasons=args.more_reasons)
    if args.json:
        json.dump(dump, sys.stdout, indent=4)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_yaml(dump))


if __name__ == "__main__":
    main()
