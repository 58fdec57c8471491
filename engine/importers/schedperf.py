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
- ``createNamespaces``: ``count`` Namespaces ``<prefix>-<i>`` from ``namespaceTemplatePath``
  (its labels) or without labels, as ``namespacePreparer.prepare`` makes them (a name made
  again is kept as first made: upstream's create answers AlreadyExists and goes on). The
  namespaces ``createPods`` makes for itself (``createNamespaceIfNotPresent``, no labels)
  are the engine's implicit ones.

Every count is checked before anything is made: the ops are read first into a plan (how many
objects each makes, at which time), and the workload is refused with the field that asks for
too much when the objects it would make pass the import's limit (``max_objects``,
``engine/limits.py``), or when they would hold more than ``MAX_VALUES_PER_OBJECT`` values each
on average (a template's size multiplies too). Only then are the objects made.
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

from .. import limits
from ..quantity import US, _q, parse_duration
from .kube import POD_KEEP, DROP_REASONS, VOLUME_KEEP, at, check_fields, mapping_at, trim, wrong_type
from .report import ImportReport

MAX_VALUES_PER_OBJECT = limits.MAX_VALUES_PER_OBJECT
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
# the fields of a template read here, and their types (the validator reads the rest)
TEMPLATE_FIELDS = {
    "Node": {"metadata": {"name": str, "generateName": str, "labels": dict},
             "status": {"capacity": dict, "allocatable": dict}},
    "Pod": {"metadata": {"name": str, "generateName": str}, "spec": {}},
    "PersistentVolume": {"metadata": {}, "spec": {"csi": {}, "awsElasticBlockStore": {}}},
    "PersistentVolumeClaim": {"metadata": {}, "spec": {}},
    "Namespace": {"metadata": {"labels": dict}},
}
KNOWN_OPS = {"createNodes", "createPods", "createPodSets", "createNamespaces", "churn", "barrier", "sleep"}
DRA_OPS = {"createResourceClaimTemplate", "createResourceDriver", "createResourceClass"}
MAX_PROBLEMS = 20   # problems of the ops before the config is refused without reading further


def looks_like_perf_config(doc) -> bool:
    return isinstance(doc, list) and bool(doc) and all(
        isinstance(tc, dict) and "workloadTemplate" in tc for tc in doc)


def _names(items):
    return ", ".join(str(x.get("name")) for x in items if isinstance(x, dict))


def _many(op, n, what) -> str:
    """How many objects an op's count asks for, the start of a refusal: ``$initNodes = 5,000 nodes: ``."""
    cp = op.get("countParam")
    return f"{cp} = {n:,} {what}: " if cp else f"{n:,} {what}: "


def count_values(v) -> int:
    """The values of ``v`` as engine/yamlload.py counts a document's: every mapping, list,
    key and scalar (iterative: a template is at most as deep as a document may be)."""
    total = 0
    stack = [v]
    while stack:
        x = stack.pop()
        total += 1
        if isinstance(x, dict):
            total += len(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return total


class PerfConverter:
    """One test case and workload of a scheduler_perf config as scenario objects and actions:
    ``convert`` reads every op into a plan, checking its counts against ``max_objects`` and
    the size of what they make, and only then makes the objects."""

    def __init__(self, doc, source, resolve, report, problems, test_case=None, workload=None,
                 op_interval=US, max_objects=limits.MAX_SCENARIO_OBJECTS):
        self.doc, self.source, self.resolve = doc, source, resolve
        self.report, self.problems = report, problems
        self.test_case, self.workload = test_case, workload
        self.op_interval = op_interval
        self.max_objects = max_objects
        self.objects = []     # (manifest, origin) at t=0
        self.actions = []     # scenario actions (dicts), in time order
        self.action_origins = []  # where each action came from (for the validator's problems)
        self.measured = []        # (virtual time, namespace) of each createPods op with collectMetrics
        self.planned = 0          # objects the plan makes (checked against max_objects)
        self.planned_values = 0   # and their values (checked against MAX_VALUES_PER_OBJECT each)
        self.name = "scheduler-perf"
        self.title = ""
        self._templates = {}
        self._resolved = {}
        self._ns_counter = {}
        self._namespaces = set()      # the names createNamespaces ops made

    def fail(self, place, msg):
        self.problems.append(f"{self.source}: {place}: {msg}" if place else f"{self.source}: {msg}")

    def get(self, d, key, want, place, default=None):
        """``d[key]`` if it is a ``want`` (absent or null: ``default``), else ``default`` and a
        problem ``<place>.<key>: <value> is not ...``."""
        v = d.get(key) if isinstance(d, dict) else None
        if v is None:
            return default
        msg = wrong_type(v, want)
        if msg is not None:
            self.fail(at(place, key), msg)
            return default
        return v

    # ------------------------------------------------------------------ entry
    def convert(self):
        cases = self.doc
        if not looks_like_perf_config(cases):     # a format forced on another document
            self.fail("", "is not a scheduler_perf config (a list of test cases, mappings with a workloadTemplate)")
            return False
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
        n_before = len(self.problems)
        tname = self.get(tc, "name", str, f"[{tc_i}]") or f"[{tc_i}]"
        workloads = self.get(tc, "workloads", list, tname) or []
        if len(self.problems) != n_before:
            return False
        if not workloads:
            self.fail(f"{tname}.workloads", "is required (a list of workloads with params)")
            return False
        if self.workload is None:
            if len(workloads) != 1:
                self.fail(f"{tname}", f"has {len(workloads)} workloads; choose one with --workload "
                                      f"(one of {_names(workloads)})")
                return False
            wl_i, wl = 0, workloads[0]
        else:
            wl_i, wl = next(((j, w) for j, w in enumerate(workloads)
                             if isinstance(w, dict) and w.get("name") == self.workload), (None, None))
            if wl is None:
                self.fail(f"{tname}.workloads", f"has no workload named \"{self.workload}\" (one of {_names(workloads)})")
                return False
        wplace = f"{tname}.workloads[{wl_i}]"
        if not isinstance(wl, dict):
            self.fail(wplace, wrong_type(wl, dict))
            return False
        wname = self.get(wl, "name", str, wplace, "")
        params = self.get(wl, "params", dict, wplace, {})
        gates = self.get(tc, "featureGates", dict, tname, {})
        ops = tc.get("workloadTemplate")
        if not isinstance(ops, list):
            self.fail(f"{tname}.workloadTemplate", "is not a list of ops")
        if len(self.problems) != n_before:
            return False
        self.name = re.sub(r"[^a-z0-9]+", "-", f"{tname}-{wname}".lower()).strip("-") or "scheduler-perf"
        self.title = f"scheduler_perf {tname} / {wname}"
        for gate in gates:
            if gate != "SchedulerQueueingHints":
                self.report.note(f"{tname}.featureGates.{gate}: not a gate the engine models; ignored")

        plan = self._plan(tc, tname, ops, params, n_before)
        if plan is None or len(self.problems) != n_before:
            return False
        for make, args in plan:
            make(*args)
        pairs = sorted(zip(self.actions, self.action_origins), key=lambda p: p[0]["at"])  # stable: op order
        self.actions = [a for a, _ in pairs]
        self.action_origins = [o for _, o in pairs]
        self.report.note(f"scheduler_perf ops that wait for their pods to be scheduled are followed by the "
                         f"next op {self.op_interval / US:g}s of virtual time later")
        return True

    # ------------------------------------------------------------------ the plan
    def _plan(self, tc, tname, ops, params, n_before):
        """[(method, args)] that make the workload's objects, in op order (churns last), once
        every op is read and every count is within the bounds; None if it is refused."""
        plan = []
        churns = []
        t = 0
        dirty = False
        self._node_index = 0    # createNodes ops name their nodes on from here
        default_pod = self.get(tc, "defaultPodTemplatePath", str, tname)
        for i, op in enumerate(ops):
            if len(self.problems) > n_before + MAX_PROBLEMS:
                return None
            place = f"{tname}.workloadTemplate[{i}]"
            if not isinstance(op, dict):
                self.fail(place, "is not an op (a mapping with an opcode)")
                continue
            code = op.get("opcode")
            if isinstance(code, str) and code in DRA_OPS:
                self.fail(f"{place}.opcode", f"\"{code}\" is not supported: {DROP_REASONS['dra']}")
                continue
            if not isinstance(code, str) or code not in KNOWN_OPS:
                self.fail(f"{place}.opcode", f"{_q(code)} is not an op the importer knows "
                                             f"(one of {', '.join(sorted(KNOWN_OPS))})")
                continue
            if code == "createNodes":
                made = self._plan_nodes(op, i, t, place, params)
                if made is False:
                    return None
                if made is not None:
                    plan.append(made)
            elif code == "createNamespaces":
                n, field = self._count(op, params, place)
                if n is None:
                    continue
                if n > self.max_objects:    # upstream makes them: as many objects
                    self.fail(f"{place}.{field}", f"{_many(op, n, 'namespaces')}"
                                                  f"{limits.too_many_objects(n, self.max_objects)}")
                    return None
                made = self._plan_namespaces(op, n, field, t, place)
                if made is False:
                    return None
                if made is not None:
                    plan.append(made)
            elif code == "createPods":
                ns = self.get(op, "namespace", str, place) or f"namespace-{i}"
                made = self._plan_pods(tc, default_pod, op, params, place, t, lambda k, ns=ns: ns)
                if made is False:
                    return None
                if made is not None:
                    plan.append(made)
                    if op.get("collectMetrics") is True:       # what scheduler_perf measures
                        self.measured.append((t, ns))
                if not op.get("skipWaitToCompletion"):
                    t += self.op_interval
                    dirty = False
                else:
                    dirty = True
            elif code == "createPodSets":
                n, field = self._count(op, params, place)
                inner = op.get("createPodsOp")
                prefix = self.get(op, "namespacePrefix", str, place) or ""
                if n is None:
                    continue
                if not isinstance(inner, dict):
                    self.fail(f"{place}.createPodsOp", "is required (a createPods op)")
                    continue
                if n > self.max_objects:    # a namespace each, upstream; and as many sets to read
                    self.fail(f"{place}.{field}", f"{_many(op, n, 'pod sets')}"
                                                  f"{limits.too_many_objects(n, self.max_objects)}")
                    return None
                made = self._plan_pods(tc, default_pod, inner, params, f"{place}.createPodsOp", t,
                                       lambda k, prefix=prefix: f"{prefix}-{k}", sets=n,
                                       sets_field=(f"{place}.{field}", _many(op, n, "pod sets")))
                if made is False:
                    return None
                if made is not None:
                    plan.append(made)
                if n == 0 or not inner.get("skipWaitToCompletion"):
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
        if len(self.problems) != n_before:
            return None
        for op, i, start, place in churns:     # they run up to the end of the workload
            made = self._plan_churn(op, i, start, t, place)
            if made is False:
                return None
            if made is not None:
                plan.append(made)
        return plan

    def _count(self, op, params, place):
        """(the op's count, the field it came from: count or countParam), or (None, field)."""
        cp = op.get("countParam")
        if cp:
            if not isinstance(cp, str) or not cp.startswith("$"):
                self.fail(f"{place}.countParam", f"{_q(cp)} is not a $parameter")
                return None, "countParam"
            v = params.get(cp[1:])
            if v is None:
                self.fail(f"{place}.countParam", f"\"{cp}\" is not a parameter of the workload "
                                                 f"(it has {', '.join(sorted(map(str, params))) or 'none'})")
                return None, "countParam"
        else:
            v = op.get("count", 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            self.fail(f"{place}.count", f"{_q(v)} is not a count (an integer >= 0)")
            return None, "count"
        return v, ("countParam" if cp else "count")

    def _room(self, objects, values, field, what=""):
        """Count ``objects`` objects holding ``values`` values into the plan; False, with the
        problem at ``field``, when the plan passes the object limit or the values limit."""
        self.planned += objects
        if self.planned > self.max_objects:
            self.fail(field, f"{what}{limits.too_many_objects(self.planned, self.max_objects)}")
            return False
        self.planned_values += values
        budget = self.max_objects * MAX_VALUES_PER_OBJECT
        if self.planned_values > budget:
            self.fail(field, f"{what}would make objects of {self.planned_values:,} values in all; at most "
                             f"{budget:,} are allowed ({MAX_VALUES_PER_OBJECT} an object on average)")
            return False
        return True

    def _resolve(self, path):
        """``resolve(path)``, once a path."""
        if path not in self._resolved:
            self._resolved[path] = self.resolve(path)
        return self._resolved[path]

    def _template(self, path, place, kind):
        """The template ``path`` names, of ``kind``, or None (problem recorded, once a path)."""
        if path in self._templates:
            return self._templates[path]
        m, err = self._resolve(path)
        if err:
            self.fail(place, err)
            m = None
        elif not isinstance(m, dict) or m.get("kind") != kind:
            got = m.get("kind") if isinstance(m, dict) else type(m).__name__
            self.fail(place, f"{path} is not a {kind} template (its kind is {_q(got)})")
            m = None
        else:
            probs = []
            check_fields(m, TEMPLATE_FIELDS.get(kind, {}), "", probs)
            for p in probs:
                self.problems.append(f"{path}: {p}")
            if probs:
                m = None
        self._templates[path] = m
        return m

    def _plan_namespaces(self, op, n, field, t, place):
        """(make, args) of a createNamespaces op (``createNamespacesOp``, ``count`` already
        read), None if it makes nothing, False if refused."""
        before = len(self.problems)
        prefix = self.get(op, "prefix", str, place) or ""
        path = self.get(op, "namespaceTemplatePath", str, place)
        tm = self._template(path, f"{place}.namespaceTemplatePath", "Namespace") if path else None
        if n == 0 or len(self.problems) != before:
            return None
        labels = dict((tm or {}).get("metadata", {}).get("labels") or {})
        size = count_values(self._namespace(prefix, 0, labels))
        if not self._room(n, n * size, f"{place}.{field}", _many(op, n, "namespaces")):
            return False
        return self._create_namespaces, (prefix, labels, n, t, place)

    def _plan_nodes(self, op, i, t, place, params):
        """(make, args) of a createNodes op, None if it makes nothing, False if refused."""
        before = len(self.problems)
        n, field = self._count(op, params, place)
        base = BASE_NODE
        prefix = f"node-{i}-"
        path = self.get(op, "nodeTemplatePath", str, place)
        label = self.get(op, "labelNodePrepareStrategy", dict, place)
        unique = self.get(op, "uniqueNodeLabelStrategy", dict, place)
        alloc = self.get(op, "nodeAllocatableStrategy", dict, place)
        sp = f"{place}.nodeAllocatableStrategy"
        if label is not None:
            self.get(label, "labelValues", list, f"{place}.labelNodePrepareStrategy")
        if alloc is not None:
            self.get(alloc, "nodeAllocatable", dict, sp)
            self.get(alloc, "migratedPlugins", list, sp)
            for d, a in (self.get(alloc, "csiNodeAllocatable", dict, sp) or {}).items():
                if a is not None and not isinstance(a, dict):
                    self.fail(f"{sp}.csiNodeAllocatable.{d}", wrong_type(a, dict))
        tm = self._template(path, f"{place}.nodeTemplatePath", "Node") if path else None
        if n is None or n == 0 or len(self.problems) != before:
            return None     # (nothing read of the template: an op of no nodes costs nothing)
        if tm is not None:
            base = trim(tm, NODE_KEEP_FROM_TEMPLATE, "Node", self.report)
            prefix = (tm.get("metadata") or {}).get("generateName") or ""
        csi_node = alloc is not None and bool(alloc.get("csiNodeAllocatable") or alloc.get("migratedPlugins"))
        node = self._node(base, prefix, self._node_index, 0, label, unique, alloc)
        size = count_values(node)   # of one node (and its CSINode)
        if csi_node:
            size += count_values(self._csi_node(node["metadata"]["name"], alloc))
        if not self._room(n * (2 if csi_node else 1), n * size, f"{place}.{field}", _many(op, n, "nodes")):
            return False
        made = self._create_nodes, (base, prefix, self._node_index, n, label, unique, alloc, csi_node, t, place)
        self._node_index += n
        return made

    def _plan_pods(self, tc, default_pod, op, params, place, t, namespace, sets=1, sets_field=None):
        """(make, args) of a createPods op (``sets`` of them, the k-th in ``namespace(k)``),
        None if it makes nothing, False if refused."""
        before = len(self.problems)
        n, field = self._count(op, params, place)
        path = self.get(op, "podTemplatePath", str, place) or default_pod
        pvc_path = self.get(op, "persistentVolumeClaimTemplatePath", str, place)
        pv_path = self.get(op, "persistentVolumeTemplatePath", str, place)
        base = BASE_POD
        if path:
            tm = self._template(path, f"{place}.podTemplatePath", "Pod")
            if tm is None:
                return None
            base = tm
        pv_tm = pvc_tm = None
        if pvc_path:
            # getPodStrategy: CreatePodWithPersistentVolume (bindVolume true)
            pvc_tm = self._template(pvc_path, f"{place}.persistentVolumeClaimTemplatePath", "PersistentVolumeClaim")
            if not pv_path:
                self.fail(f"{place}.persistentVolumeTemplatePath",
                          "is required with persistentVolumeClaimTemplatePath")
                return None
            pv_tm = self._template(pv_path, f"{place}.persistentVolumeTemplatePath", "PersistentVolume")
            if pv_tm is None or pvc_tm is None:
                return None
        if n is None or n == 0 or sets == 0 or len(self.problems) != before:
            return None
        scratch = ImportReport()    # the sample's trimmed fields are not the import's
        ns0 = namespace(0)
        pod = self._pod(base, ns0, "pod-0", scratch)
        made = [pod]
        if pvc_tm is not None:
            made += self._volume_for_pod(pod, pv_tm, pvc_tm, ns0, 0, scratch)
        size = sum(count_values(m) for m in made)   # of one pod (and its claim and volume)
        if sets_field is not None:
            field, what = sets_field[0], f"{sets_field[1][:-2]} of {_many(op, n, 'pods')}"
        else:
            field, what = f"{place}.{field}", _many(op, n, "pods")
        if not self._room(sets * n * len(made), sets * n * size, field, what):
            return False
        return self._create_pods, (base, pv_tm, pvc_tm, namespace, sets, n, t, place)

    def _plan_churn(self, op, i, start, end, place):
        """(make, args) of a churn op running from ``start`` to ``end``, None if it makes
        nothing, False if refused. What it makes is counted, not looped over: a churn every
        millisecond for a day is refused at once."""
        mode = op.get("mode")
        number = op.get("number") or 0
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= self.max_objects:
            self.fail(f"{place}.number", f"{_q(number)} is not a count (an integer from 0 to {self.max_objects})")
            return None
        if mode not in ("create", "recreate"):
            self.fail(f"{place}.mode", f"{_q(mode)} is not create or recreate")
            return None
        if mode == "recreate" and number == 0:
            self.fail(f"{place}.number", "cannot be 0 when mode is recreate")
            return None
        iv = op.get("intervalMilliseconds") or 500
        if isinstance(iv, bool) or not isinstance(iv, int) or iv <= 0:
            self.fail(f"{place}.intervalMilliseconds", f"{_q(iv)} is not a positive integer")
            return None
        interval = iv * 1000
        ns = self.get(op, "namespace", str, place) or f"namespace-{i}"
        templates = []
        for j, path in enumerate(self.get(op, "templatePaths", list, place) or []):
            if not isinstance(path, str):
                self.fail(f"{place}.templatePaths[{j}]", wrong_type(path, str))
                continue
            m, err = self._resolve(path)
            if err:
                self.fail(f"{place}.templatePaths[{j}]", err)
                continue
            kind = m.get("kind") if isinstance(m, dict) else None
            if kind not in ("Pod", "Node"):
                self.report.drop(str(kind), DROP_REASONS["spread"] if kind == "Service" else DROP_REASONS["other"])
                templates.append(None)
                continue
            probs = []
            check_fields(m, TEMPLATE_FIELDS[kind], "", probs)
            if probs:
                self.problems.extend(f"{path}: {p}" for p in probs)
                continue
            templates.append(m)
        if not any(templates):
            return None
        # ticks at start + k * interval <= end; what each template makes of them
        ticks = max(0, (end - start) // interval)
        if mode == "create":
            creates = min(ticks, number) if number else ticks
        else:   # each slot in turn: created on its even visits, deleted on its odd ones
            rounds, rest = divmod(ticks, number)
            creates = number * ((rounds + 1) // 2) + (rest if rounds % 2 == 0 else 0)
        if creates == 0:
            return None
        live = [tm for tm in templates if tm is not None]
        scratch = ImportReport()
        sizes = {}      # a template named again and again is measured once
        for tm in live:
            if id(tm) not in sizes:
                sizes[id(tm)] = count_values(self._churn_object(tm, "churn-0", ns, scratch))
        size = sum(sizes[id(tm)] for tm in live)
        what = f"a churn every {iv} ms for {(end - start) / US:g} s (up to the workload's last op): "
        if not self._room(creates * len(live), creates * size, place, what):
            return False
        return self._churn, (templates, mode, number, ticks, interval, ns, start, place)

    # ------------------------------------------------------------------ making the objects
    def _act(self, action, origin):
        self.actions.append(action)
        self.action_origins.append(f"{self.source}: {origin}")

    def _emit(self, manifest, t, origin):
        if t == 0:
            self.objects.append((manifest, f"{self.source}: {origin}"))
        else:
            self._act({"at": t / US, "create": manifest}, origin)

    @staticmethod
    def _node(base, prefix, node_index, k, label, unique, alloc):
        node = copy.deepcopy(base)
        md = mapping_at(node, "metadata")
        md.pop("generateName", None)
        name = md.get("name") or f"{prefix}{node_index}"
        md["name"] = name
        labels = mapping_at(md, "labels")
        labels["kubernetes.io/hostname"] = name
        st = mapping_at(node, "status")
        if st.get("allocatable") is None and isinstance(st.get("capacity"), dict):
            st["allocatable"] = dict(st["capacity"])    # SetDefaults_NodeStatus
        st.pop("capacity", None)
        if label is not None and label.get("labelValues"):
            vals = label["labelValues"]
            labels[str(label.get("labelKey"))] = str(vals[k % len(vals)])
        elif unique is not None and unique.get("labelKey"):
            labels[str(unique["labelKey"])] = name
        elif alloc is not None and isinstance(alloc.get("nodeAllocatable"), dict):
            mapping_at(st, "allocatable").update({str(r): str(q) for r, q in alloc["nodeAllocatable"].items()})
        return node

    def _create_nodes(self, base, prefix, node_index, n, label, unique, alloc, csi_node, t, place):
        for k in range(n):
            node = self._node(base, prefix, node_index, k, label, unique, alloc)
            name = node["metadata"]["name"]
            self._emit(node, t, f"{place} (node {k})")
            self.report.keep("Node")
            if csi_node:
                self._emit(self._csi_node(name, alloc), t, f"{place} (CSINode {name})")
                self.report.keep("CSINode")
            node_index += 1

    @staticmethod
    def _namespace(prefix, k, labels):
        md = {"name": f"{prefix}-{k}"}
        if labels:
            md["labels"] = dict(labels)
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}

    def _create_namespaces(self, prefix, labels, n, t, place):
        for k in range(n):
            ns = self._namespace(prefix, k, labels)
            if ns["metadata"]["name"] in self._namespaces:
                continue        # AlreadyExists: the first one stays
            self._namespaces.add(ns["metadata"]["name"])
            self._emit(ns, t, f"{place} (namespace {k})")
            self.report.keep("Namespace")

    @staticmethod
    def _pod(base, ns, name, report):
        pod = copy.deepcopy(trim(base, POD_KEEP, "Pod", report))
        md = mapping_at(pod, "metadata")
        md["name"] = name
        md["namespace"] = ns
        return pod

    def _create_pods(self, base, pv_tm, pvc_tm, namespace, sets, n, t, place):
        md = base.get("metadata") or {}
        prefix = md.get("generateName") or md.get("name") or "pod-"
        for s in range(sets):
            ns = namespace(s)
            for k in range(n):
                c = self._ns_counter.get((ns, prefix), 0)
                self._ns_counter[(ns, prefix)] = c + 1
                pod = self._pod(base, ns, f"{prefix}{c}", self.report)
                if pvc_tm is not None:
                    pvc, pv = self._volume_for_pod(pod, pv_tm, pvc_tm, ns, k, self.report)
                    self._emit(pvc, t, f"{place} (claim {k})")
                    self._emit(pv, t, f"{place} (volume {k})")
                    self.report.keep("PersistentVolumeClaim")
                    self.report.keep("PersistentVolume")
                self._emit(pod, t, f"{place} (pod {k})")
                self.report.keep("Pod", "pending")

    @staticmethod
    def _volume_for_pod(pod, pv_tm, pvc_tm, ns, i, report):
        """CreatePodWithPersistentVolume (test/utils/runners.go) for pod ``i``: a claim
        ``pvc-<i>`` from the claim template, bound to a PV ``<namespace>-vol-<i>`` from the PV
        template (getCustomVolumeFactory: its CSI volumeHandle or AWS EBS volumeID is
        ``vol-<i>``; claimRef to the claim, phase Bound; the claim's volumeName and phase
        Bound), and the pod's only volume ``vol`` is that claim. Returns (claim, PV)."""
        pvc_name = f"pvc-{i}"
        pv = copy.deepcopy(trim(pv_tm, VOLUME_KEEP["PersistentVolume"], "PersistentVolume", report))
        vol_id = f"vol-{i}"
        spec = mapping_at(pv, "spec")
        if isinstance(spec.get("csi"), dict):
            spec["csi"]["volumeHandle"] = vol_id
        elif isinstance(spec.get("awsElasticBlockStore"), dict):
            spec["awsElasticBlockStore"]["volumeID"] = vol_id
        pv_name = f"{ns}-{vol_id}"
        mapping_at(pv, "metadata")["name"] = pv_name
        spec["claimRef"] = {"namespace": ns, "name": pvc_name}
        pv["status"] = {"phase": "Bound"}
        pvc = copy.deepcopy(trim(pvc_tm, VOLUME_KEEP["PersistentVolumeClaim"], "PersistentVolumeClaim", report))
        pmd = mapping_at(pvc, "metadata")
        pmd["name"] = pvc_name
        pmd["namespace"] = ns
        mapping_at(pvc, "spec")["volumeName"] = pv_name
        pvc["status"] = {"phase": "Bound"}
        mapping_at(pod, "spec")["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": pvc_name}}]
        return pvc, pv

    @staticmethod
    def _csi_node(name, alloc):
        """NodeAllocatableStrategy.createCSINode: the migrated plugins as the annotation, a
        driver per csiNodeAllocatable entry (in name order; upstream ranges over a map)."""
        drivers = alloc.get("csiNodeAllocatable") or {}
        migrated = alloc.get("migratedPlugins") or []
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": name,
                             "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(map(str, migrated))}},
                "spec": {"drivers": [dict({"name": str(d), "nodeID": name},
                                          **({"allocatable": {"count": a["count"]}}
                                             if isinstance(a, dict) and a.get("count") is not None else {}))
                                     for d, a in sorted(drivers.items(), key=lambda da: str(da[0]))]}}

    def _churn(self, templates, mode, number, ticks, interval, ns, start, place):
        slots = [{} for _ in templates]     # recreate: slot -> (kind, name) of its live object
        counters = [0] * len(templates)
        tick = start
        live = [(j, tm) for j, tm in enumerate(templates) if tm is not None]
        for count in range(min(ticks, number) if (mode == "create" and number) else ticks):
            tick += interval
            for j, tm in live:
                if mode == "create":
                    self._churn_create(tm, j, counters, ns, tick, place)
                else:
                    s = count % number
                    if s not in slots[j]:
                        slots[j][s] = self._churn_create(tm, j, counters, ns, tick, place)
                    else:
                        kind, name = slots[j].pop(s)
                        ref = {"kind": kind, "name": name}
                        if kind == "Pod":
                            ref["namespace"] = ns
                        self._act({"at": tick / US, "delete": ref}, f"{place} (churn {kind} {name})")

    @staticmethod
    def _churn_object(tm, name, ns, report):
        if tm["kind"] == "Pod":
            m = copy.deepcopy(trim(tm, POD_KEEP, "Pod", report))
            mapping_at(m, "metadata").update({"name": name, "namespace": ns})
            return m
        m = copy.deepcopy(trim(tm, NODE_KEEP_FROM_TEMPLATE, "Node", report))
        md = mapping_at(m, "metadata")
        md.pop("generateName", None)
        md["name"] = name
        mapping_at(md, "labels")["kubernetes.io/hostname"] = name
        st = mapping_at(m, "status")
        if st.get("allocatable") is None and isinstance(st.get("capacity"), dict):
            st["allocatable"] = dict(st["capacity"])
        st.pop("capacity", None)
        return m

    def _churn_create(self, tm, j, counters, ns, tick, place):
        kind = tm["kind"]
        prefix = (tm.get("metadata") or {}).get("generateName") or "churn-"
        name = f"{prefix}{counters[j]}"
        counters[j] += 1
        self._act({"at": tick / US, "create": self._churn_object(tm, name, ns, self.report)},
                  f"{place} (churn {kind} {name})")
        self.report.keep(kind, "churn")
        return kind, name
