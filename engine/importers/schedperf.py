"""scheduler_perf workload configs (kubernetes v1.28,
``test/integration/scheduler_perf/config/performance-config.yaml``) as a scenario.

A config is a list of test cases; each has a ``workloadTemplate`` (a list of ops) and
``workloads`` (named sets of ``params`` that the ops' ``countParam: $name`` refer to). We read
the ops as ``runWorkload`` (``scheduler_perf_test.go``) runs them:

- ``createNodes``: ``count`` nodes from ``nodeTemplatePath`` or the base node of
  ``IntegrationTestNodePreparer.PrepareNodes`` (capacity cpu 4, memory 32Gi, pods 110), named
  ``<generateName><n>`` (upstream appends 5 random characters; ``node-<op>-`` without a
  template), labelled ``kubernetes.io/hostname=<name>``; allocatable defaults to capacity as
  the API server defaults it; ``labelNodePrepareStrategy`` (values round robin),
  ``uniqueNodeLabelStrategy`` (the node's name as the unique value) and
  ``nodeAllocatableStrategy`` (allocatable overrides) as ``test/utils/runners.go`` applies them.
- ``createPods``: ``count`` pods from ``podTemplatePath``, else the test case's
  ``defaultPodTemplatePath``, else ``makeBasePod`` (one pause container, 100m CPU, 500Mi), in
  ``namespace`` or ``namespace-<op index>``, named ``<generateName><n>``.
- ``createPodSets``: ``count`` ``createPods`` in ``<namespacePrefix>-<i>``.
- ``createNamespaces``: recorded (namespaces are not modelled).
- ``churn``: every ``intervalMilliseconds`` (default 500) after it starts, up to the time the
  workload's last op waits until (with the default zero cycle and bind durations, pods created at
  one instant are all scheduled at that instant, before the next churn tick): mode ``create`` creates each template's object (up to ``number``), mode
  ``recreate`` creates, then deletes, each of ``number`` slots in turn.
- ``barrier`` and a ``createPods`` without ``skipWaitToCompletion`` wait until the pods are
  scheduled. Virtual time has no "until scheduled" action, so the next op comes one
  ``op_interval`` (1 s by default) later: with the default zero cycle and bind durations every
  pod that can be scheduled is bound by then, and one that cannot stays pending, as it would
  keep upstream's wait spinning.
- ``sleep``: the next op comes ``duration`` later.

DRA ops (``createResourceClaimTemplate``, ``createResourceDriver``, ``createResourceClass``) are
refused. ``persistentVolumeTemplatePath`` / ``persistentVolumeClaimTemplatePath`` make each pod's
bound claim and PV as ``CreatePodWithPersistentVolume`` does (the claim template of v1.28 carries
``pv.kubernetes.io/bind-completed``); ``nodeAllocatableStrategy``'s ``csiNodeAllocatable`` and
``migratedPlugins`` make each node's CSINode.
"""
from __future__ import annotations

import copy
import re

from ..quantity import US, parse_duration
from .kube import POD_KEEP, DROP_REASONS, VOLUME_KEEP, trim

MAX_OBJECTS = 200_000
BASE_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {},
             "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"}}}
BASE_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"limits": {"cpu": "100m", "memory": "500Mi"},
                                                   "requests": {"cpu": "100m", "memory": "500Mi"}}}]}}
NODE_KEEP_FROM_TEMPLATE = {"metadata": {"name": "*", "generateName": "*", "labels": "*"},
                           "spec": {"unschedulable": "*", "taints": "*"},
                           "status": {"allocatable": "*", "capacity": "*", "images": "*"},
                           "apiVersion": "*", "kind": "*"}
KNOWN_OPS = {"createNodes", "createPods", "createPodSets", "createNamespaces", "churn", "barrier", "sleep"}
DRA_OPS = {"createResourceClaimTemplate", "createResourceDriver", "createResourceClass"}


def looks_like_perf_config(doc) -> bool:
    return isinstance(doc, list) and bool(doc) and all(
        isinstance(tc, dict) and "workloadTemplate" in tc for tc in doc)


def _names(items):
    return ", ".join(str(x.get("name")) for x in items if isinstance(x, dict))


class PerfConverter:
    def __init__(self, doc, source, resolve, report, problems, test_case=None, workload=None,
                 op_interval=US):
        self.doc, self.source, self.resolve = doc, source, resolve
        self.report, self.problems = report, problems
        self.test_case, self.workload = test_case, workload
        self.op_interval = op_interval
        self.objects = []     # (manifest, origin) at t=0
        self.actions = []     # scenario actions (dicts), in time order
        self.count = 0
        self.name = "scheduler-perf"
        self.title = ""
        self._templates = {}
        self._ns_counter = {}

    def fail(self, place, msg):
        self.problems.append(f"{self.source}: {place}: {msg}" if place else f"{self.source}: {msg}")

    # ------------------------------------------------------------------ entry
    def convert(self):
        cases = self.doc
        if self.test_case is None:
            if len(cases) != 1:
                self.fail("", f"holds {len(cases)} test cases; choose one with --test-case "
                              f"(one of {_names(cases)})")
                return False
            tc_i, tc = 0, cases[0]
        else:
            found = [(i, c) for i, c in enumerate(cases) if c.get("name") == self.test_case]
            if not found:
                self.fail("", f"has no test case named \"{self.test_case}\" (one of {_names(cases)})")
                return False
            tc_i, tc = found[0]
        tname = tc.get("name") or f"[{tc_i}]"
        workloads = tc.get("workloads") or []
        if not isinstance(workloads, list) or not workloads:
            self.fail(f"{tname}.workloads", "is required (a list of workloads with params)")
            return False
        if self.workload is None:
            if len(workloads) != 1:
                self.fail(f"{tname}", f"has {len(workloads)} workloads; choose one with --workload "
                                      f"(one of {_names(workloads)})")
                return False
            wl = workloads[0]
        else:
            wl = next((w for w in workloads if isinstance(w, dict) and w.get("name") == self.workload), None)
            if wl is None:
                self.fail(f"{tname}.workloads", f"has no workload named \"{self.workload}\" (one of {_names(workloads)})")
                return False
        params = wl.get("params") or {}
        self.name = re.sub(r"[^a-z0-9]+", "-", f"{tname}-{wl.get('name', '')}".lower()).strip("-") or "scheduler-perf"
        self.title = f"scheduler_perf {tname} / {wl.get('name', '')}"
        for gate in (tc.get("featureGates") or {}):
            if gate != "SchedulerQueueingHints":
                self.report.note(f"{tname}.featureGates.{gate}: not a gate the engine models; ignored")
        ops = tc.get("workloadTemplate")
        if not isinstance(ops, list):
            self.fail(f"{tname}.workloadTemplate", "is not a list of ops")
            return False
        t = 0
        dirty = False
        churns = []
        node_index = 0
        n_before = len(self.problems)
        for i, op in enumerate(ops):
            place = f"{tname}.workloadTemplate[{i}]"
            if not isinstance(op, dict):
                self.fail(place, "is not an op (a mapping with an opcode)")
                continue
            code = op.get("opcode")
            if code in DRA_OPS:
                self.fail(f"{place}.opcode", f"\"{code}\" is not supported: {DROP_REASONS['dra']}")
                continue
            if code not in KNOWN_OPS:
                self.fail(f"{place}.opcode", f"\"{code}\" is not an op the importer knows "
                                             f"(one of {', '.join(sorted(KNOWN_OPS))})")
                continue
            if code == "createNodes":
                n = self._count(op, params, place)
                if n is None:
                    continue
                node_index = self._create_nodes(op, i, n, node_index, t, place)
            elif code == "createNamespaces":
                n = self._count(op, params, place)
                self.report.drop("Namespace", DROP_REASONS["Namespace"]) if n else None
                for _ in range((n or 0) - 1):
                    self.report.drop("Namespace", DROP_REASONS["Namespace"])
            elif code in ("createPods", "createPodSets"):
                if code == "createPods":
                    sets = [(op, op.get("namespace") or f"namespace-{i}", place)]
                else:
                    n = self._count(op, params, place)
                    inner = op.get("createPodsOp")
                    if n is None:
                        continue
                    if not isinstance(inner, dict):
                        self.fail(f"{place}.createPodsOp", "is required (a createPods op)")
                        continue
                    prefix = op.get("namespacePrefix") or ""
                    sets = [(inner, f"{prefix}-{k}", f"{place}.createPodsOp") for k in range(n)]
                for pop, ns, pplace in sets:
                    n = self._count(pop, params, pplace)
                    if n is None:
                        continue
                    self._create_pods(tc, pop, ns, n, t, pplace)
                if all(not s[0].get("skipWaitToCompletion") for s in sets):
                    t += self.op_interval
                    dirty = False
                else:
                    dirty = True
            elif code == "barrier":
                if dirty:
                    t += self.op_interval
                    dirty = False
            elif code == "sleep":
                try:
                    t += parse_duration(op.get("duration"))
                except (ValueError, TypeError) as e:
                    self.fail(f"{place}.duration", str(e))
            elif code == "churn":
                churns.append((op, i, t, place))
            if self.count > MAX_OBJECTS or len(self.problems) > n_before + 20:
                return False
        if len(self.problems) != n_before:
            return False
        for op, i, start, place in churns:
            self._churn(op, i, start, t, place)
        self.actions.sort(key=lambda a: a["at"])   # stable: same-time actions keep op order
        self.report.note(f"scheduler_perf ops that wait for their pods to be scheduled are followed by the "
                         f"next op {self.op_interval / US:g}s of virtual time later")
        return not (len(self.problems) != n_before)

    # ------------------------------------------------------------------ helpers
    def _count(self, op, params, place):
        cp = op.get("countParam")
        if cp:
            if not isinstance(cp, str) or not cp.startswith("$"):
                self.fail(f"{place}.countParam", f"\"{cp}\" is not a $parameter")
                return None
            v = params.get(cp[1:])
            if v is None:
                self.fail(f"{place}.countParam", f"\"{cp}\" is not a parameter of the workload "
                                                 f"(it has {', '.join(sorted(params)) or 'none'})")
                return None
        else:
            v = op.get("count", 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            self.fail(f"{place}.count", f"{v!r} is not a count (an integer >= 0)")
            return None
        return v

    def _template(self, path, place, kind):
        if path in self._templates:
            return self._templates[path]
        m, err = self.resolve(path)
        if err:
            self.fail(place, err)
            m = None
        elif not isinstance(m, dict) or m.get("kind") != kind:
            got = m.get("kind") if isinstance(m, dict) else type(m).__name__
            self.fail(place, f"{path} is not a {kind} template (its kind is {got!r})")
            m = None
        self._templates[path] = m
        return m

    def _room_for(self, n, place):
        """Refuse a workload that would make more than MAX_OBJECTS objects, before making them."""
        if self.count + n > MAX_OBJECTS:
            self.fail(place, f"makes more than {MAX_OBJECTS} objects; choose a smaller workload")
            return False
        return True

    def _emit(self, manifest, t, origin):
        self.count += 1
        if t == 0:
            self.objects.append((manifest, origin))
        else:
            self.actions.append({"at": t / US, "create": manifest})

    def _create_nodes(self, op, i, n, node_index, t, place):
        if not self._room_for(n, place):
            return node_index
        base = BASE_NODE
        prefix = f"node-{i}-"
        if op.get("nodeTemplatePath"):
            tm = self._template(op["nodeTemplatePath"], f"{place}.nodeTemplatePath", "Node")
            if tm is None:
                return node_index
            base = trim(tm, NODE_KEEP_FROM_TEMPLATE, "Node", self.report)
            prefix = (tm.get("metadata") or {}).get("generateName") or ""
        label = op.get("labelNodePrepareStrategy")
        unique = op.get("uniqueNodeLabelStrategy")
        alloc = op.get("nodeAllocatableStrategy")
        csi_node = isinstance(alloc, dict) and bool(alloc.get("csiNodeAllocatable") or alloc.get("migratedPlugins"))
        for k in range(n):
            node = copy.deepcopy(base)
            md = node.setdefault("metadata", {})
            md.pop("generateName", None)
            name = md.get("name") or f"{prefix}{node_index}"
            md["name"] = name
            labels = md.setdefault("labels", {})
            labels["kubernetes.io/hostname"] = name
            st = node.setdefault("status", {})
            if "allocatable" not in st and "capacity" in st:
                st["allocatable"] = dict(st["capacity"])    # SetDefaults_NodeStatus
            st.pop("capacity", None)
            if isinstance(label, dict) and label.get("labelValues"):
                vals = label["labelValues"]
                labels[str(label.get("labelKey"))] = str(vals[k % len(vals)])
            elif isinstance(unique, dict) and unique.get("labelKey"):
                labels[str(unique["labelKey"])] = name
            elif isinstance(alloc, dict) and isinstance(alloc.get("nodeAllocatable"), dict):
                st["allocatable"].update({str(r): str(q) for r, q in alloc["nodeAllocatable"].items()})
            self._emit(node, t, f"{place} (node {k})")
            self.report.keep("Node")
            if csi_node:
                if not self._room_for(1, place):
                    return node_index
                self._csi_node(name, alloc, t, place)
            node_index += 1
        return node_index

    def _create_pods(self, tc, op, ns, n, t, place):
        if not self._room_for(n, place):
            return
        path = op.get("podTemplatePath") or tc.get("defaultPodTemplatePath")
        base = BASE_POD
        if path:
            tm = self._template(path, f"{place}.podTemplatePath", "Pod")
            if tm is None:
                return
            base = tm
        pv_tm = pvc_tm = None
        if op.get("persistentVolumeClaimTemplatePath"):
            # getPodStrategy: CreatePodWithPersistentVolume (bindVolume true)
            pvc_tm = self._template(op["persistentVolumeClaimTemplatePath"],
                                    f"{place}.persistentVolumeClaimTemplatePath", "PersistentVolumeClaim")
            pv_path = op.get("persistentVolumeTemplatePath")
            if not pv_path:
                self.fail(f"{place}.persistentVolumeTemplatePath",
                          "is required with persistentVolumeClaimTemplatePath")
                return
            pv_tm = self._template(pv_path, f"{place}.persistentVolumeTemplatePath", "PersistentVolume")
            if pv_tm is None or pvc_tm is None:
                return
            if not self._room_for(2 * n, place):
                return
        prefix = (base.get("metadata") or {}).get("generateName") or (base.get("metadata") or {}).get("name") or "pod-"
        for k in range(n):
            c = self._ns_counter.get((ns, prefix), 0)
            self._ns_counter[(ns, prefix)] = c + 1
            pod = trim(base, POD_KEEP, "Pod", self.report)
            pod = copy.deepcopy(pod)
            md = pod.setdefault("metadata", {})
            md["name"] = f"{prefix}{c}"
            md["namespace"] = ns
            if pvc_tm is not None:
                self._volume_for_pod(pod, pv_tm, pvc_tm, ns, k, t, place)
            self._emit(pod, t, f"{place} (pod {k})")
            self.report.keep("Pod", "pending")

    def _volume_for_pod(self, pod, pv_tm, pvc_tm, ns, i, t, place):
        """CreatePodWithPersistentVolume (test/utils/runners.go) for pod ``i``: a claim
        ``pvc-<i>`` from the claim template, bound to a PV ``<namespace>-vol-<i>`` from the PV
        template (getCustomVolumeFactory: its CSI volumeHandle or AWS EBS volumeID is
        ``vol-<i>``; claimRef to the claim, phase Bound; the claim's volumeName and phase
        Bound), and the pod's only volume ``vol`` is that claim."""
        pvc_name = f"pvc-{i}"
        pv = copy.deepcopy(trim(pv_tm, VOLUME_KEEP["PersistentVolume"], "PersistentVolume", self.report))
        vol_id = f"vol-{i}"
        spec = pv.setdefault("spec", {})
        if isinstance(spec.get("csi"), dict):
            spec["csi"]["volumeHandle"] = vol_id
        elif isinstance(spec.get("awsElasticBlockStore"), dict):
            spec["awsElasticBlockStore"]["volumeID"] = vol_id
        pv_name = f"{ns}-{vol_id}"
        pv.setdefault("metadata", {})["name"] = pv_name
        spec["claimRef"] = {"namespace": ns, "name": pvc_name}
        pv["status"] = {"phase": "Bound"}
        pvc = copy.deepcopy(trim(pvc_tm, VOLUME_KEEP["PersistentVolumeClaim"], "PersistentVolumeClaim", self.report))
        pmd = pvc.setdefault("metadata", {})
        pmd["name"] = pvc_name
        pmd["namespace"] = ns
        pvc.setdefault("spec", {})["volumeName"] = pv_name
        pvc["status"] = {"phase": "Bound"}
        self._emit(pvc, t, f"{place} (claim {i})")
        self._emit(pv, t, f"{place} (volume {i})")
        self.report.keep("PersistentVolumeClaim")
        self.report.keep("PersistentVolume")
        pod.setdefault("spec", {})["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": pvc_name}}]

    def _csi_node(self, name, alloc, t, place):
        """NodeAllocatableStrategy.createCSINode: the migrated plugins as the annotation, a
        driver per csiNodeAllocatable entry (in name order; upstream ranges over a map)."""
        drivers = alloc.get("csiNodeAllocatable") or {}
        migrated = alloc.get("migratedPlugins") or []
        cn = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
              "metadata": {"name": name,
                           "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(map(str, migrated))}},
              "spec": {"drivers": [dict({"name": str(d), "nodeID": name},
                                        **({"allocatable": {"count": a["count"]}}
                                           if isinstance(a, dict) and a.get("count") is not None else {}))
                                   for d, a in sorted(drivers.items())]}}
        self._emit(cn, t, f"{place} (CSINode {name})")
        self.report.keep("CSINode")

    def _churn(self, op, i, start, end, place):
        mode = op.get("mode")
        number = op.get("number") or 0
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_OBJECTS:
            self.fail(f"{place}.number", f"{number!r} is not a count (an integer from 0 to {MAX_OBJECTS})")
            return
        if mode not in ("create", "recreate"):
            self.fail(f"{place}.mode", f"{mode!r} is not create or recreate")
            return
        if mode == "recreate" and number == 0:
            self.fail(f"{place}.number", "cannot be 0 when mode is recreate")
            return
        iv = op.get("intervalMilliseconds") or 500
        if isinstance(iv, bool) or not isinstance(iv, int) or iv <= 0:
            self.fail(f"{place}.intervalMilliseconds", f"{iv!r} is not a positive integer")
            return
        interval = iv * 1000
        ns = op.get("namespace") or f"namespace-{i}"
        templates = []
        for j, path in enumerate(op.get("templatePaths") or []):
            m, err = self.resolve(path)
            if err:
                self.fail(f"{place}.templatePaths[{j}]", err)
                continue
            kind = m.get("kind") if isinstance(m, dict) else None
            if kind not in ("Pod", "Node"):
                self.report.drop(str(kind), DROP_REASONS["spread"] if kind == "Service" else DROP_REASONS["other"])
                templates.append(None)
                continue
            templates.append(m)
        if not any(templates):
            return
        slots = [[None] * max(number, 1) for _ in templates]
        counters = [0] * len(templates)
        count = 0
        tick = start + interval
        threshold = number if (mode == "create" and number) else None
        while tick <= end:
            if threshold is not None and count >= threshold:
                break
            for j, tm in enumerate(templates):
                if tm is None:
                    continue
                if mode == "create":
                    self._churn_create(tm, j, counters, ns, tick, place)
                else:
                    s = count % number
                    if slots[j][s] is None:
                        slots[j][s] = self._churn_create(tm, j, counters, ns, tick, place)
                    else:
                        kind, name = slots[j][s]
                        ref = {"kind": kind, "name": name}
                        if kind == "Pod":
                            ref["namespace"] = ns
                        self.actions.append({"at": tick / US, "delete": ref})
                        slots[j][s] = None
            count += 1
            tick += interval
            if len(self.actions) > MAX_OBJECTS or count > MAX_OBJECTS:
                self.fail(place, f"churns more than {MAX_OBJECTS} times; choose a shorter workload")
                return

    def _churn_create(self, tm, j, counters, ns, tick, place):
        kind = tm["kind"]
        prefix = (tm.get("metadata") or {}).get("generateName") or "churn-"
        name = f"{prefix}{counters[j]}"
        counters[j] += 1
        if kind == "Pod":
            m = copy.deepcopy(trim(tm, POD_KEEP, "Pod", self.report))
            m.setdefault("metadata", {}).update({"name": name, "namespace": ns})
        else:
            m = copy.deepcopy(trim(tm, NODE_KEEP_FROM_TEMPLATE, "Node", self.report))
            md = m.setdefault("metadata", {})
            md.pop("generateName", None)
            md["name"] = name
            md.setdefault("labels", {})["kubernetes.io/hostname"] = name
            st = m.setdefault("status", {})
            if "allocatable" not in st and "capacity" in st:
                st["allocatable"] = dict(st["capacity"])
            st.pop("capacity", None)
        self.actions.append({"at": tick / US, "create": m})
        self.report.keep(kind, "churn")
        return kind, name
