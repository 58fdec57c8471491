"""Does engine/objects.py parse every manifest as a frozen copy of it did? (issue 23, item 5)

    .venv/bin/python bench/objects_diff.py [--before-ref REV | --before-file PATH] [--seed N]
                                           [--scale X] [--speed [--runs N]]

Loads ``engine/objects.py`` as it was at ``REV`` (default: the commit before the declarative
field reader, BEFORE_REF) as the module ``engine._objects_before`` (its relative imports made
absolute: it shares engine.labels and engine.quantity with this checkout) and compares it with
this checkout's ``engine.objects`` on a corpus of manifests and scenarios:

* object level: every ``*_from_manifest`` parser (Pod, Node, PriorityClass,
  PodDisruptionBudget, PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, custom
  objects) on every manifest, old and new each on its own deep copy; compared are the returned
  object (a canonical dump of its class and fields, recursively, that names the parts that are
  the input's own dicts and lists by their place in it), the problems (text and order), an
  exception if one is raised, and the input afterwards (parsers must not change it);
* scenario level: ``Scenario.from_dict`` with the names engine.scenario and engine.config took
  from engine.objects bound to the old module's, then to the new one's; compared are the scenario
  (canonical dump) or the ScenarioError's problems.

Corpus: the scenarios of fixtures/, docs/examples/, tests/visualizer/scenarios/, the golden
workloads (tests/engine/golden/digests.py), ../shared/conformance/{cases,fuzz}; the importer
test data (the objects of cluster-dump.yaml.gz and of the scheduler_perf templates, the
scenarios they import to, the kubectl dump of tests/engine/importers/test_import.py); one rich
manifest per kind that sets every field the parsers read. Then, seeded: every path of every
rich manifest set to each of a pool of values (wrong types, nulls, huge numbers, bad
quantities, enum values, bad names and labels, ...), deleted, or given an extra field; random
combinations of those; every two fields of each mapping of a rich manifest set to each pair of
a few wrong values (the order of two problems in one mapping; at one place); targeted and random
(tests/fuzz/mutate.py's ``mutate_data``) mutations of every corpus manifest; ``mutate_data``
on the corpus scenarios. Every parser runs at the place ``objects[3]`` and at none ("").

``--speed`` instead times ``Scenario.from_dict`` on SchedulingBasic with 5,000 nodes, 1,000
init pods and 10,000 measured pods (bench/workloads.py) with the old and the new parsers,
alternately, ``--runs`` times each.

Exit status: 0 when nothing differs, 1 otherwise (the first differences are printed).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import gc
import gzip
import importlib.util
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.setrecursionlimit(20000)

import engine.config  # noqa: E402
import engine.objects as new  # noqa: E402
import engine.scenario  # noqa: E402
from engine import yamlload  # noqa: E402
from engine.errors import ScenarioError  # noqa: E402
from engine.scenario import DEFAULT_START, Scenario  # noqa: E402
from tests.fuzz.mutate import NASTY, mutate_data  # noqa: E402

# engine/objects.py before the declarative field reader (issue 23, item 5)
BEFORE_REF = "bc0e0350812c1633d4c236eb5d2722e86fdf5924"


# ------------------------------------------------------------------------------ the old module

def load_before(ref: str | None, path: str | None):
    if path:
        src = Path(path).read_text(encoding="utf-8")
    else:
        src = subprocess.run(["git", "show", f"{ref}:engine/objects.py"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
    src = re.sub(r"^(\s*)from \.(\w+) import", r"\1from engine.\2 import", src, flags=re.M)
    src = re.sub(r"^(\s*)from \. import", r"\1from engine import", src, flags=re.M)
    tmp = Path(tempfile.mkdtemp(prefix="objects_before_")) / "_objects_before.py"
    tmp.write_text(src, encoding="utf-8")
    name = "engine._objects_before"
    spec = importlib.util.spec_from_file_location(name, tmp)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod     # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------ canonical dumps

def copy_input(x, ids, depth=0):
    """A copy of ``x`` (dicts and lists copied, other values shared, as deepcopy shares
    immutable ones), and in ``ids`` the order of each dict and list of the copy in a walk of it:
    the same number names the same part of two copies."""
    if depth > 5000:
        return x
    if isinstance(x, dict):
        out = {}
        ids[id(out)] = len(ids)
        for k, v in x.items():
            out[k] = copy_input(v, ids, depth + 1)
        return out
    if isinstance(x, list):
        out = []
        ids[id(out)] = len(ids)
        out.extend(copy_input(v, ids, depth + 1) for v in x)
        return out
    return x


def canon(x, ids, depth=0):
    """A comparable dump of ``x``: types, values in order; a dict or list of the input (``ids``)
    as ``("@", its number)`` (the input itself is compared as a whole)."""
    if depth > 3000:
        return ("too-deep",)
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x if t is str or x is None else (t.__name__, x)
    if t is float:
        return ("float", repr(x))
    if t is Decimal:
        return ("Decimal", repr(x))
    if t is datetime:
        return ("datetime", repr(x))
    d = depth + 1
    if id(x) in ids:
        return ("@", ids[id(x)])
    if isinstance(x, dict):
        return (t.__name__, tuple((canon(k, ids, d), canon(v, ids, d)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (t.__name__, tuple(canon(v, ids, d) for v in x))
    if isinstance(x, (set, frozenset)):
        return (t.__name__, tuple(sorted((canon(v, ids, d) for v in x), key=repr)))
    if isinstance(x, type) or callable(x) and not hasattr(x, "__dict__"):
        return ("callable", repr(x))
    fields = []
    if dataclasses.is_dataclass(x):
        names = [f.name for f in dataclasses.fields(x)]
        fields = [(n, canon(getattr(x, n), ids, d)) for n in names]
        extra = [k for k in getattr(x, "__dict__", {}) if k not in names]
        fields += [(k, canon(x.__dict__[k], ids, d)) for k in extra]
    elif hasattr(x, "__dict__"):
        fields = [(k, canon(v, ids, d)) for k, v in vars(x).items()]
    elif hasattr(type(x), "__slots__"):
        fields = [(k, canon(getattr(x, k, "<unset>"), ids, d)) for k in type(x).__slots__]
    else:
        return (t.__name__, repr(x))
    # class-level attributes a class keeps beside its fields (PersistentVolume.namespace = "")
    for k in ("namespace",):
        if k not in dict(fields) and hasattr(x, k):
            fields.append((f"class.{k}", canon(getattr(x, k), ids, d)))
    return (t.__qualname__, tuple(fields))


# ------------------------------------------------------------------------------ corpus

def load_yaml(path: Path):
    text = path.read_text(encoding="utf-8")
    try:
        return yamlload.load_data(text)
    except yamlload.YAMLLoadError:
        return None


def scenario_of(data):
    if isinstance(data, dict) and data.get("kind") == "Scenario":
        return data
    if isinstance(data, dict) and isinstance(data.get("scenario"), dict):
        return data["scenario"]
    return None


def manifests_of(sc) -> list:
    """The objects of a scenario and the bodies of its create/update actions."""
    out = []
    if not isinstance(sc, dict):
        return out
    if isinstance(sc.get("objects"), list):
        out += sc["objects"]
    if isinstance(sc.get("actions"), list):
        for a in sc["actions"]:
            if isinstance(a, dict):
                out += [a[v] for v in ("create", "update") if v in a]
    return out


def corpus_scenarios() -> list:
    """[(name, scenario dict)]"""
    out = []
    globs = [ROOT / "fixtures", ROOT / "docs" / "examples", ROOT / "tests" / "visualizer" / "scenarios",
             SHARED / "conformance" / "cases", SHARED / "conformance" / "fuzz"]
    for g in globs:
        for p in sorted(g.glob("*.yaml")):
            sc = scenario_of(load_yaml(p))
            if sc is not None:
                out.append((str(p.relative_to(ROOT.parent)), sc))
    from tests.engine.golden.digests import workloads
    out += [(f"golden:{n}", d) for n, d in workloads()]
    return out


def importer_corpus():
    """(manifests, scenarios) from the importers' test data."""
    from engine.importers import import_files, import_paths
    from tests.engine.importers.test_import import node, pod, small_dump
    import yaml
    manifests, scenarios = [], []
    data = ROOT / "tests" / "engine" / "importers" / "data"
    dump_text = gzip.decompress((data / "cluster-dump.yaml.gz").read_bytes()).decode()
    dump = yaml.safe_load(dump_text)
    manifests += dump["items"]
    scenarios.append(("importer:cluster-dump", import_files([("cluster-dump.yaml", dump_text)]).scenario))
    sd = small_dump()
    manifests += copy.deepcopy(sd["items"])
    manifests += [node("x1", cpu="500m", zone="c"), pod("p-1", "ns", "n1", cpu="2", phase="Running")]
    scenarios.append(("importer:small-dump", import_files([("dump.yaml", yaml.safe_dump(sd))]).scenario))
    perf = data / "scheduler_perf" / "config"
    for p in sorted(perf.rglob("*.yaml")):
        if p.name == "performance-config.yaml":
            continue
        for doc in yaml.safe_load_all(p.read_text()):
            if isinstance(doc, dict):
                manifests.append(doc)
    cfg = yaml.safe_load((perf / "performance-config.yaml").read_text())
    for case in cfg:
        wl = case.get("workloads") or []
        if not wl:
            continue
        try:
            sc = import_paths([perf / "performance-config.yaml"], test_case=case["name"],
                              workload=wl[0]["name"]).scenario
        except ScenarioError:
            continue
        # a sample of the objects of each kind (the rest differ only by their names)
        seen: dict = {}
        for m in manifests_of(sc):
            k = m.get("kind") if isinstance(m, dict) else None
            if seen.get(k, 0) < 4:
                seen[k] = seen.get(k, 0) + 1
                manifests.append(m)
        if len(manifests_of(sc)) <= 3000:
            scenarios.append((f"importer:perf:{case['name']}", sc))
    return manifests, scenarios


def rich_manifests() -> list:
    """One manifest per kind with every field its parser reads."""
    sel = {"matchLabels": {"app": "web", "tier": 3},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                {"key": "canary", "operator": "DoesNotExist"}]}
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                 {"key": "cores", "operator": "Gt", "values": ["4"]}],
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]}
    container = {"name": "c", "image": "nginx:1.25",
                 "resources": {"requests": {"cpu": "250m", "memory": "64Mi", "example.com/gpu": "1",
                                            "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"},
                               "limits": {"cpu": "1", "memory": "128Mi", "example.com/gpu": "1"}},
                 "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP", "hostIP": "10.0.0.1"},
                           {"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]}
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web", "n": 1},
                     "annotations": {"a": "b"}, "uid": "u1"},
        "spec": {
            "containers": [container, {"name": "d", "image": "busybox"}],
            "initContainers": [{"name": "init", "image": "busybox",
                                "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
            "overhead": {"cpu": "100m", "memory": "10Mi"},
            "priority": 100, "priorityClassName": "high", "preemptionPolicy": "Never",
            "schedulerName": "default-scheduler", "nodeName": "", "nodeSelector": {"disk": "ssd", "gen": 2},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "preference": {"matchExpressions": [
                            {"key": "zone", "operator": "NotIn", "values": ["c"]}]}}]},
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": sel, "topologyKey": "zone"}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}},
                                                          "namespaces": ["shop", "db"],
                                                          "topologyKey": "kubernetes.io/hostname"}}]},
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}},
                         "namespaceSelector": {"matchLabels": {"team": "a"}},
                         "topologyKey": "kubernetes.io/hostname"}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": {"labelSelector": sel, "topologyKey": "zone",
                                                            "namespaceSelector": {}}}]}},
            "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                            {"operator": "Exists"},
                            {"key": "t", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 2,
                 "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["rev"]},
                {"maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}],
            "schedulingGates": [{"name": "gate-a"}, {"name": "gate-b"}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
                {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1"}},
                {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1"}},
                {"name": "iscsi", "iscsi": {"iqn": "iqn.2001-04.com.example:storage", "lun": 0}},
                {"name": "rbd", "rbd": {"image": "img", "monitors": ["10.0.0.1:6789"]}},
                {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "uri"}},
                {"name": "tmp", "emptyDir": {}},
                {"name": "cfg", "configMap": None}],
            "terminationGracePeriodSeconds": 10},
        "status": {"nominatedNodeName": "n2", "startTime": "2025-12-31T23:59:30Z", "phase": "Pending"}}
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "labels": {"zone": "a", "kubernetes.io/hostname": "n1"}},
        "spec": {"unschedulable": True,
                 "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"},
                            {"key": "gpu", "effect": "PreferNoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "2",
                                   "hugepages-1Gi": "0", "attachable-volumes-x": "10", "unknown": "5"},
                   "capacity": {"cpu": "8"},
                   "images": [{"names": ["nginx:1.25", "docker.io/nginx@sha256:1"], "sizeBytes": 500000000},
                              {"names": ["busybox"], "sizeBytes": 1}],
                   "conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure"}]}}
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
          "value": 1000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"}
    pc_sys = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
              "metadata": {"name": "system-cluster-critical"}, "value": 2000000000}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"minAvailable": "50%", "selector": sel},
           "status": {"disruptionsAllowed": 1, "disruptedPods": {"web-1": "2026-01-01T00:00:00Z"}}}
    pdb2 = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "pv-1", "labels": {"zone": "a"},
                       "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
          "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                   "storageClassName": "fast", "volumeMode": "Block",
                   "claimRef": {"namespace": "shop", "name": "data", "uid": "u2"},
                   "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
                   "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
                   "awsElasticBlockStore": {"volumeID": "vol-1"}},
          "status": {"phase": "Bound"}}
    pv2 = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-2", "deletionTimestamp": "x"},
           "spec": {"capacity": {"storage": "1Gi"}, "gcePersistentDisk": {"pdName": "p"}, "azureDisk": {}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "data", "namespace": "shop", "uid": "u2", "labels": {"a": "b"},
                        "annotations": {"volume.kubernetes.io/selected-node": "n1"},
                        "ownerReferences": [{"kind": "Pod", "name": "web-1", "uid": "u1", "controller": True},
                                            {"kind": "StatefulSet", "name": "web"}, "junk"]},
           "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "5Gi"}}, "volumeName": "pv-1", "volumeMode": "Filesystem",
                    "selector": sel},
           "status": {"phase": "Bound"}}
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
          "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
          "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]},
                                {"matchLabelExpressions": []}]}
    csin = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": "n1", "annotations": {"storage.alpha.kubernetes.io/migrated-plugins":
                                                       "kubernetes.io/aws-ebs, kubernetes.io/gce-pd"}},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25},
                                  "topologyKeys": ["zone"]},
                                 {"name": "pd.csi.storage.gke.io", "topologyKeys": None}]}}
    custom = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
              "metadata": {"name": "pg", "namespace": "shop"}, "spec": {"minMember": 3}}
    return [pod, node, pc, pc_sys, pdb, pdb2, pv, pv2, pvc, sc, csin, custom]


# Values a field is set to: wrong types, nulls, huge numbers, bad quantities, the enum values
# the parsers know, bad names, labels and times.
POOL = [
    None, True, False, 0, 1, -1, 2, 7, 65535, 65536, 100, 101, 2**31 - 1, 2**31, -2**31 - 1, 2**63, 2**70, 1.0,
    1.5, -0.0, 1e308, float("inf"), float("nan"),
    "", " ", "x", "0", "1", "-1", "12x", "100m", "0.5", "1Gi", "1e3", "1e999999", "16Ei", "9223372036854775807",
    "9223372036854776m", "-5Gi", "50%", "101%", "x%",
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equal", "NoSchedule", "PreferNoSchedule", "NoExecute",
    "DoNotSchedule", "ScheduleAnyway", "Honor", "Ignore", "TCP", "UDP", "SCTP", "Never", "PreemptLowerPriority",
    "Filesystem", "Block", "Immediate", "WaitForFirstConsumer", "Pending", "Available", "Bound", "Released",
    "Failed", "Lost", "ReadWriteOnce", "ReadWriteOncePod", "metadata.name", "system-node-critical",
    "system-cluster-critical", "system-x", "Bad_Name", "a" * 300, "-bad-", "kubernetes.io/hostname",
    "a/b/c", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00+02:00", "not-a-time",
    "scheduling.x-k8s.io/v1alpha1", "x.io/vbeta", "Pod", "PodGroup", "lower",
    datetime(2026, 1, 1), [], {}, [None], [1], ["x"], ["a", "b"], [{}], [[]], {"a": 1}, {"a": None}, {1: "x"},
    {"name": "g"}, {"key": "k", "operator": "Exists"}, {"matchLabels": {"a": "b"}}, {"storage": "1Gi"},
]


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def set_at(root, path, new):
    root = copy_input(root, {})
    if not path:
        return new
    node = root
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = new
    return root


def delete_at(root, path):
    root = copy_input(root, {})
    if not path:
        return None
    node = root
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]
    return root


def targeted(m, rng: random.Random, n: int | None = None):
    """Mutations of ``m`` at each path (all of them, or ``n`` chosen at random): set to each value
    of POOL (or one of them), deleted, an extra field added."""
    ps = [p for p in paths(m) if p]
    out = []
    if n is None:
        for p in ps:
            for v in POOL:
                out.append(set_at(m, p, copy.deepcopy(v)))
            out.append(delete_at(m, p))
            parent = p[:-1]
            node = m
            for k in parent:
                node = node[k]
            if isinstance(node, dict):
                out.append(set_at(m, parent + ("zzExtraField",), 1))
        return out
    for _ in range(n):
        p = rng.choice(ps) if ps else ()
        roll = rng.random()
        if roll < 0.75:
            out.append(set_at(m, p, copy.deepcopy(rng.choice(POOL))))
        elif roll < 0.9:
            out.append(delete_at(m, p))
        else:
            out.append(set_at(m, p, copy.deepcopy(rng.choice(NASTY))))
    return out


_DELETE = object()
# what each of two fields of one mapping is set to (or deleted), in every combination
PAIR_VALUES = [_DELETE, None, 5, "", "x", [], "Exists"]


def pairwise(m) -> list:
    """For every mapping in ``m`` and every two of its keys (and of the keys its siblings in a
    list have), the manifests with both set to each combination of PAIR_VALUES: the problems of
    two wrong fields of one mapping come in the order their parser reads and checks them."""
    out = []

    def walk(x, path, siblings):
        if isinstance(x, dict):
            keys = list(x) + [k for k in siblings if k not in x]
            for i, k1 in enumerate(keys):
                for k2 in keys[i + 1:]:
                    for v1 in PAIR_VALUES:
                        for v2 in PAIR_VALUES:
                            y = copy_input(m, {})
                            node = y
                            for p in path:
                                node = node[p]
                            for k, v in ((k1, v1), (k2, v2)):
                                if v is _DELETE:
                                    node.pop(k, None)
                                else:
                                    node[k] = copy.deepcopy(v)
                            out.append(y)
            for k, v in x.items():
                walk(v, path + (k,), ())
        elif isinstance(x, list):
            union = []
            for v in x:
                if isinstance(v, dict):
                    union += [k for k in v if k not in union]
            for i, v in enumerate(x):
                walk(v, path + (i,), union)

    walk(m, (), ())
    return out


def combined(m, rng: random.Random, n: int):
    """``n`` manifests with two to five targeted changes each."""
    out = []
    for _ in range(n):
        x = m
        for _ in range(rng.randint(2, 5)):
            ps = [p for p in paths(x) if p]
            if not ps:
                break
            p = rng.choice(ps)
            x = delete_at(x, p) if rng.random() < 0.2 else set_at(x, p, copy.deepcopy(rng.choice(POOL + NASTY)))
        out.append(x)
    return out


# ------------------------------------------------------------------------------ comparing

PARSERS = ["pod_from_manifest", "node_from_manifest", "priority_class_from_manifest", "pdb_from_manifest",
           "pv_from_manifest", "pvc_from_manifest", "storage_class_from_manifest", "csi_node_from_manifest",
           "custom_object_from_manifest"]
KIND_PARSER = {"Pod": "pod_from_manifest", "Node": "node_from_manifest",
               "PriorityClass": "priority_class_from_manifest", "PodDisruptionBudget": "pdb_from_manifest",
               "PersistentVolume": "pv_from_manifest", "PersistentVolumeClaim": "pvc_from_manifest",
               "StorageClass": "storage_class_from_manifest", "CSINode": "csi_node_from_manifest"}


def outcome(mod, fname, m, place, extra):
    """(the result, the problems, whether the input is unchanged) of one parse of a copy of ``m``."""
    ids: dict = {}
    x = copy_input(m, ids)
    probs = mod.Problems()
    try:
        obj = getattr(mod, fname)(x, place, probs, *extra)
        res = ("ok", canon(obj, ids))
    except Exception as e:    # an exception is an outcome too: the same one, or a difference
        res = ("raise", type(e).__name__, str(e))
    # == compares identical values (a NaN) as equal: the copy shares them with m
    return res, tuple(probs.items), x == m


class Tally:
    def __init__(self):
        self.manifests = self.parses = self.with_problems = self.objects = self.raised = 0
        self.scenarios = self.scenarios_invalid = 0
        self.diffs: list = []

    def diff(self, what, old, new):
        self.diffs.append((what, old, new))


def compare_manifest(old, m, tally: Tally, fnames=None, places=("objects[3]", "")):
    tally.manifests += 1
    if fnames is None:
        kind = m.get("kind") if isinstance(m, dict) else None
        fnames = [KIND_PARSER.get(kind, "pod_from_manifest") if isinstance(kind, str) else "pod_from_manifest"]
    for fname in fnames:
        if fname == "custom_object_from_manifest" and not (
                isinstance(m, dict) and isinstance(m.get("apiVersion"), str)):
            continue    # its caller (scenario.parse_object) gives it a custom apiVersion only
        # a pod parsed with and without a start instant; every parser at a place and at none
        extras = [(DEFAULT_START,), (None,)] if fname == "pod_from_manifest" else [(), ()]
        for place, extra in zip(places, extras):
            a = outcome(old, fname, m, place, extra)
            b = outcome(new, fname, m, place, extra)
            tally.parses += 1
            tally.with_problems += bool(b[1])
            tally.objects += b[0][0] == "ok" and b[0][1] is not None
            tally.raised += b[0][0] == "raise"
            if a != b:
                tally.diff(f"{fname} at {place!r}{' (no start instant)' if extra == (None,) else ''} on {short(m)}",
                           a, b)


_SWAPPED = None


def bind(module):
    """Bind the names engine.scenario and engine.config took from engine.objects to ``module``'s."""
    global _SWAPPED
    if _SWAPPED is None:
        _SWAPPED = [(mod, name) for mod in (engine.scenario, engine.config) for name, v in vars(mod).items()
                    if not name.startswith("__") and hasattr(new, name) and getattr(new, name) is v
                    and not isinstance(v, type(engine))]
    for mod, name in _SWAPPED:
        setattr(mod, name, getattr(module, name))


def scenario_outcome(module, data):
    bind(module)
    ids: dict = {}
    data = copy_input(data, ids)
    try:
        sc = Scenario.from_dict(data)
        return ("ok", canon(sc, ids))
    except ScenarioError as e:
        return ("problems", tuple(e.problems))
    except Exception as e:
        return ("raise", type(e).__name__, str(e))
    finally:
        bind(new)


def compare_scenario(old, name, data, tally: Tally):
    tally.scenarios += 1
    a = scenario_outcome(old, data)
    b = scenario_outcome(new, data)
    tally.scenarios_invalid += b[0] != "ok"
    if a != b:
        tally.diff(f"Scenario.from_dict({name})", a, b)


def short(m) -> str:
    try:
        s = json.dumps(m, default=repr)
    except (TypeError, ValueError, RecursionError):
        s = repr(m)
    return s if len(s) <= 300 else s[:300] + "..."


def dedupe(ms):
    seen, out = set(), []
    for m in ms:
        try:
            k = json.dumps(m, default=repr)
        except (TypeError, ValueError, RecursionError):
            k = repr(m)
        if k not in seen:
            seen.add(k)
            out.append(m)
    return out


def first_difference(a, b, path="$"):
    if type(a) is not type(b) or not isinstance(a, tuple) or len(a) != len(b):
        return f"{path}: {short(a)[:400]} != {short(b)[:400]}"
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: equal"


# ------------------------------------------------------------------------------ main

def run_diff(old, seed: int, scale: float) -> int:
    rng = random.Random(seed)
    t0 = time.perf_counter()
    tally = Tally()
    scenarios = corpus_scenarios()
    imp_manifests, imp_scenarios = importer_corpus()
    scenarios += imp_scenarios
    base = dedupe([m for _, sc in scenarios for m in manifests_of(sc)] + imp_manifests)
    rich = rich_manifests()
    print(f"corpus: {len(scenarios)} scenarios, {len(base)} distinct manifests in them and the importer data, "
          f"{len(rich)} rich manifests", flush=True)

    # 1. every manifest, every parser
    for m in base + rich + [copy.deepcopy(v) for v in POOL + NASTY]:
        compare_manifest(old, m, tally, PARSERS)
    print(f"  corpus, all parsers: {tally.parses} parses ({time.perf_counter() - t0:.0f}s)", flush=True)

    # 2. the rich manifests, every path x every value (+ deleted, + an extra field), and combinations
    for m in rich:
        fnames = [KIND_PARSER.get(m["kind"], "custom_object_from_manifest")]
        for x in targeted(m, rng):
            compare_manifest(old, x, tally, fnames)
        for x in combined(m, rng, int(1500 * scale)):
            compare_manifest(old, x, tally, fnames)
        for x in dedupe(pairwise(m)):
            compare_manifest(old, x, tally, fnames, places=("objects[3]",))
    print(f"  + rich manifests mutated: {tally.parses} parses ({time.perf_counter() - t0:.0f}s)", flush=True)

    # 3. targeted and random mutations of every corpus manifest
    per = max(1, int(12 * scale))
    for m in base:
        if not isinstance(m, dict):
            continue
        for x in targeted(m, rng, per):
            compare_manifest(old, x, tally)
        for _ in range(max(1, per // 3)):
            compare_manifest(old, mutate_data(m, rng), tally)
    print(f"  + corpus manifests mutated: {tally.parses} parses ({time.perf_counter() - t0:.0f}s)", flush=True)

    # 4. scenarios, as they are and mutated (the small ones)
    for name, sc in scenarios:
        compare_scenario(old, name, sc, tally)
    n_mut = max(1, int(25 * scale))
    for name, sc in scenarios:
        if len(manifests_of(sc)) > 200:
            continue
        for i in range(n_mut):
            compare_scenario(old, f"{name} mutated #{i}", mutate_data(sc, rng), tally)
        # one object of it given a targeted change, in place (problems in scenario order)
        ms = sc.get("objects") if isinstance(sc.get("objects"), list) else []
        for i in range(n_mut if ms else 0):
            j = rng.randrange(len(ms))
            x = targeted(ms[j], rng, 1)[0] if isinstance(ms[j], dict) else None
            data = copy.deepcopy(sc)
            data["objects"][j] = x
            compare_scenario(old, f"{name} objects[{j}] mutated #{i}", data, tally)
    elapsed = time.perf_counter() - t0

    print(f"compared {tally.manifests} manifests ({tally.parses} parses: {tally.with_problems} with problems, "
          f"{tally.objects} giving an object, {tally.raised} raising) and {tally.scenarios} scenarios "
          f"({tally.scenarios_invalid} invalid) in {elapsed:.0f}s (seed {seed}, scale {scale})")
    print(f"differences: {len(tally.diffs)}")
    for what, a, b in tally.diffs[:10]:
        print(f"- {what}\n  old vs new: {first_difference(a, b)}")
    return 1 if tally.diffs else 0


def run_speed(old, runs: int) -> int:
    import workloads
    data = workloads.scheduling_basic(5000, 1000, 10000)
    n = len(data["objects"]) + len(data["actions"])
    times = {"before": [], "after": []}
    order = (("before", old), ("after", new))
    for i in range(runs):
        for label, module in order if i % 2 == 0 else order[::-1]:   # ABBA: neither always goes first
            bind(module)
            try:
                gc.collect()
                t = time.perf_counter()
                Scenario.from_dict(data)
                times[label].append(time.perf_counter() - t)
            finally:
                bind(new)
    print(f"Scenario.from_dict(SchedulingBasic 5000 nodes, 1000 init pods, 10000 measured pods: {n} manifests), "
          f"{runs} runs each, alternating (ABBA, gc.collect() before each):")
    for label, ts in times.items():
        print(f"  {label:6s}: min {min(ts):.3f}s  median {statistics.median(ts):.3f}s  "
              f"({', '.join(f'{t:.3f}' for t in ts)})")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before-ref", default=BEFORE_REF, help="git revision of the old engine/objects.py")
    ap.add_argument("--before-file", help="a file holding the old engine/objects.py (instead of --before-ref)")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the numbers of mutations")
    ap.add_argument("--speed", action="store_true", help="time Scenario.from_dict instead")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    old = load_before(a.before_ref, a.before_file)
    if a.speed:
        return run_speed(old, a.runs)
    return run_diff(old, a.seed, a.scale)


if __name__ == "__main__":
    sys.exit(main())
