"""Wrong types and amplifying counts in every importer (issue 22): each is a ScenarioError whose
problem names the file and the field (CLI exit 2, HTTP 400), never an exception out of the
importer (exit 1, HTTP 500); every count is checked against the object limit before an object is
made."""
import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from engine import ScenarioError
from engine.cli import main
from engine.importers import import_files, import_paths
from engine.importers.schedperf import PerfConverter

sys.path.insert(0, str(Path(__file__).parent))
from test_import import node, pod  # noqa: E402

DATA = Path(__file__).parent / "data" / "scheduler_perf"
LIMIT = ("at most 200,000 are allowed (objects plus the objects the actions create)")


def refused(files, **kw):
    with pytest.raises(ScenarioError) as e:
        import_files(files, **kw)
    return e.value.problems


def dump(*items):
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(items)})


def with_field(obj, path, value):
    """``obj`` with the field at ``path`` (keys separated by dots) set to ``value``."""
    *parents, last = path.split(".")
    d = obj
    for k in parents:
        d = d[k]
    d[last] = value
    return obj


# ------------------------------------------------------------------ kubectl dumps

@pytest.mark.parametrize("path, value, problem", [
    ("spec", "oops", 'spec: "oops" is not a mapping'),
    ("spec", 1.5, "spec: 1.5 is not a mapping"),
    ("status", [1], "status: [1] is not a mapping"),
    ("metadata.annotations", 5, "metadata.annotations: 5 is not a mapping"),
    ("metadata.annotations", "kubernetes.io/config.mirror", 'metadata.annotations: "kubernetes.io/config.mirror" '
                                                             "is not a mapping"),
    ("metadata.ownerReferences", 7, "metadata.ownerReferences: 7 is not a list"),
    ("metadata.creationTimestamp", 5, "metadata.creationTimestamp: 5 is not an RFC 3339 time"),
    ("metadata.deletionTimestamp", [], "metadata.deletionTimestamp: [] is not an RFC 3339 time"),
    ("spec.schedulerName", {"a": "b"}, "spec.schedulerName: {'a': 'b'} is not a string"),
    ("spec.priorityClassName", ["high"], "spec.priorityClassName: ['high'] is not a string"),
    ("spec.volumes", 5, "spec.volumes: 5 is not a list"),
])
def test_a_pod_field_of_the_wrong_type_is_refused_with_its_place(path, value, problem):
    p = with_field(pod("web-1", "shop"), path, value)
    assert refused([("dump.yaml", dump(node("n1"), p))]) == [f"dump.yaml.items[1] (Pod shop/web-1).{problem}"]


def test_a_node_status_or_a_namespace_of_the_wrong_type_is_refused_with_its_place():
    assert refused([("dump.yaml", dump(with_field(node("n1"), "status", 7)))]) == [
        "dump.yaml.items[0] (Node n1).status: 7 is not a mapping"]
    p = with_field(pod("web-1"), "metadata.namespace", {"a": 1})
    assert refused([("dump.yaml", dump(node("n1"), p))]) == [
        "dump.yaml.items[1].metadata.namespace: {'a': 1} is not a string"]
    assert refused([("dump.yaml", dump(with_field(node("n1"), "metadata", "n1")))]) == [
        'dump.yaml.items[0].metadata: "n1" is not a mapping']
    assert refused([("dump.yaml", dump(with_field(node("n1"), "metadata.name", 5)))]) == [
        "dump.yaml.items[0].metadata.name: 5 is not a string"]


def test_one_object_per_document_and_simulator_exports_name_their_place_too():
    p = with_field(pod("web-1", "shop"), "spec", "oops")
    text = yaml.safe_dump(node("n1")) + "---\n" + yaml.safe_dump(p)
    assert refused([("objs.yaml", text)]) == ['objs.yaml: document 2 (Pod shop/web-1).spec: "oops" is not a mapping']
    export = {"nodes": [node("n1")], "pods": [p]}
    assert refused([("snap.json", json.dumps(export))]) == [
        'snap.json.pods[0] (Pod shop/web-1).spec: "oops" is not a mapping']


def test_unquoted_yaml_timestamps_and_numeric_keys_import():
    # YAML reads an unquoted timestamp as a datetime: pods still enter by creation time
    text = ("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', pods: '10'}}\n---\n"
            "kind: Pod\nmetadata: {name: late, creationTimestamp: 2026-03-01T10:05:00Z}\n"
            "spec: {containers: [{name: c}]}\n---\n"
            "kind: Pod\nmetadata: {name: early, creationTimestamp: '2026-03-01T10:00:00Z'}\n"
            "spec: {containers: [{name: c}]}\n")
    sc = import_files([("d.yaml", text)]).scenario
    assert [o["metadata"]["name"] for o in sc["objects"] if o["kind"] == "Pod"] == ["early", "late"]
    # a simulator export with a numeric key: reported as ignored, as text
    r = import_files([("snap.yaml", "nodes: [{metadata: {name: n1}}]\n7: x\nextra: y\n")])
    assert r.report.as_dict()["fieldsIgnored"] == {"simulator export": {"7": 1, "extra": 1}}
    assert "simulator export: 7 (1), extra (1)" in r.report.text()


# ------------------------------------------------------------------ KubeSchedulerConfiguration

def config(**fields):
    return yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           **fields})


@pytest.mark.parametrize("fields, problems", [
    ({"profiles": 5}, ["sched.yaml.profiles: 5 is not a list"]),
    ({"profiles": ["default-scheduler"]}, ['sched.yaml.profiles[0]: "default-scheduler" is not a mapping']),
    ({"profiles": [{"schedulerName": {"a": "b"}}]},
     ["sched.yaml.profiles[0].schedulerName: {'a': 'b'} is not a string"]),
    ({"profiles": [{"plugins": {"filter": {"enabled": [{"name": {"a": "b"}}]}}}]},
     ["sched.yaml.profiles[0].plugins.filter.enabled[0].name: {'a': 'b'} is not a string"]),
    ({"profiles": [{"plugins": {"score": {"disabled": "NodeResourcesFit"}}}]},
     ['sched.yaml.profiles[0].plugins.score.disabled: "NodeResourcesFit" is not a list']),
    ({"profiles": [{"plugins": {"score": 3}}]}, ["sched.yaml.profiles[0].plugins.score: 3 is not a mapping"]),
    ({"profiles": [{"plugins": ["filter"]}]}, ["sched.yaml.profiles[0].plugins: ['filter'] is not a mapping"]),
    ({"profiles": [{"pluginConfig": [{"name": ["x"]}]}]},
     ["sched.yaml.profiles[0].pluginConfig[0].name: ['x'] is not a string"]),
    ({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": "x"}]}]},
     ['sched.yaml.profiles[0].pluginConfig[0].args: "x" is not a mapping']),
    ({"profiles": [{"pluginConfig": {"name": "x"}}]},
     ["sched.yaml.profiles[0].pluginConfig: {'name': 'x'} is not a list"]),
])
def test_a_scheduler_configuration_of_the_wrong_shape_is_refused_with_its_place(fields, problems):
    assert refused([("sched.yaml", config(**fields)), ("dump.yaml", dump(node("n1")))]) == problems


def test_a_simulator_exports_scheduler_config_names_its_place():
    export = {"nodes": [node("n1")], "schedulerConfig": {"profiles": [{"schedulerName": {"a": "b"}}]}}
    assert refused([("snap.json", json.dumps(export))]) == [
        "snap.json.schedulerConfig.profiles[0].schedulerName: {'a': 'b'} is not a string"]


# ------------------------------------------------------------------ scheduler_perf configs

def perf(ops, params=None, **tc):
    return yaml.safe_dump([{"name": "T", "workloadTemplate": ops, "workloads": [{"name": "w", "params": params or {}}],
                            **tc}])


@pytest.mark.parametrize("config, problem", [
    (perf([{"opcode": {"a": 1}}]), "T.workloadTemplate[0].opcode: {'a': 1} is not an op the importer knows "
                                   "(one of barrier, churn, createNamespaces, createNodes, createPodSets, createPods, "
                                   "sleep)"),
    (perf([{"opcode": "createPods", "count": 1, "podTemplatePath": ["a.yaml"]}]),
     "T.workloadTemplate[0].podTemplatePath: ['a.yaml'] is not a string"),
    (perf([{"opcode": "createNodes", "count": 1, "nodeTemplatePath": {"a": 1}}]),
     "T.workloadTemplate[0].nodeTemplatePath: {'a': 1} is not a string"),
    (perf([{"opcode": "createNodes", "count": 2, "labelNodePrepareStrategy": {"labelKey": "z", "labelValues": {"a": 1}}}]),
     "T.workloadTemplate[0].labelNodePrepareStrategy.labelValues: {'a': 1} is not a list"),
    (perf([{"opcode": "createNodes", "count": 2, "nodeAllocatableStrategy": {"csiNodeAllocatable": "ebs"}}]),
     'T.workloadTemplate[0].nodeAllocatableStrategy.csiNodeAllocatable: "ebs" is not a mapping'),
    (perf([{"opcode": "createNodes", "count": 2, "nodeAllocatableStrategy": {"csiNodeAllocatable": {"ebs": 3}}}]),
     "T.workloadTemplate[0].nodeAllocatableStrategy.csiNodeAllocatable.ebs: 3 is not a mapping"),
    (perf([{"opcode": "createPods", "count": 1, "namespace": 5}]), "T.workloadTemplate[0].namespace: 5 is not a string"),
    (perf([{"opcode": "createNodes", "countParam": "$n"}], params=["n", 3]),
     "T.workloads[0].params: ['n', 3] is not a mapping"),
    (perf([{"opcode": "createNodes", "count": "3"}]), 'T.workloadTemplate[0].count: "3" is not a count (an integer >= 0)'),
    (perf([{"opcode": "createNodes", "count": 1}], featureGates=5), "T.featureGates: 5 is not a mapping"),
    (perf([{"opcode": "churn", "mode": "create", "templatePaths": "x.yaml"}]),
     'T.workloadTemplate[0].templatePaths: "x.yaml" is not a list'),
    (perf([{"opcode": "churn", "mode": "create", "templatePaths": [5]}]),
     "T.workloadTemplate[0].templatePaths[0]: 5 is not a string"),
    (yaml.safe_dump([{"name": "T", "workloadTemplate": [], "workloads": ["w"]}]), 'T.workloads[0]: "w" is not a mapping'),
    (yaml.safe_dump([{"name": ["T"], "workloadTemplate": [], "workloads": [{"name": "w"}]}]),
     "[0].name: ['T'] is not a string"),
])
def test_a_scheduler_perf_field_of_the_wrong_type_is_refused_with_its_place(config, problem):
    assert refused([("perf.yaml", config)]) == [f"perf.yaml: {problem}"]


def test_a_template_of_the_wrong_shape_is_refused_with_its_name():
    ops = [{"opcode": "createNodes", "count": 2, "nodeTemplatePath": "config/node.yaml"},
           {"opcode": "createPods", "count": 2, "podTemplatePath": "config/pod.yaml"}]
    node_tm = "apiVersion: v1\nkind: Node\nmetadata: {generateName: n-, labels: [a]}\nstatus: {capacity: 4}\n"
    pod_tm = "apiVersion: v1\nkind: Pod\nmetadata: x\nspec: {containers: [{name: c}]}\n"
    assert refused([("perf.yaml", perf(ops)), ("config/node.yaml", node_tm), ("config/pod.yaml", pod_tm)]) == [
        "config/node.yaml: metadata.labels: ['a'] is not a mapping",
        "config/node.yaml: status.capacity: 4 is not a mapping",
        'config/pod.yaml: metadata: "x" is not a mapping']


def test_a_format_forced_on_the_wrong_document_is_refused():
    assert refused([("dump.yaml", dump(node("n1")))], fmt="scheduler-perf") == [
        "dump.yaml: is not a scheduler_perf config (a list of test cases, mappings with a workloadTemplate)"]


# ------------------------------------------------------------------ counts, before anything is made

@pytest.fixture
def nothing_made(monkeypatch):
    """Fails the test if the converter makes a single object."""
    def emit(self, *a):
        raise AssertionError("an object was made before the counts were checked")
    monkeypatch.setattr(PerfConverter, "_emit", emit)


def perf_refused(ops, params=None, files=(), **kw):
    return refused([("perf.yaml", perf(ops, params))] + list(files), **kw)


def test_create_namespaces_of_a_trillion_is_refused_without_a_loop(nothing_made):
    assert perf_refused([{"opcode": "createNamespaces", "count": 10 ** 12}]) == [
        "perf.yaml: T.workloadTemplate[0].count: 1,000,000,000,000 namespaces: would make 1,000,000,000,000 "
        f"cluster objects; {LIMIT}"]


def test_create_pod_sets_are_counted_sets_times_pods(nothing_made):
    inner = {"opcode": "createPods", "count": 1}
    assert perf_refused([{"opcode": "createPodSets", "count": 10 ** 8, "namespacePrefix": "ns", "createPodsOp": inner}]) == [
        f"perf.yaml: T.workloadTemplate[0].count: 100,000,000 pod sets: would make 100,000,000 cluster objects; {LIMIT}"]
    # no pods in a set: still a namespace each upstream, and as many sets to read
    inner["count"] = 0
    assert perf_refused([{"opcode": "createPodSets", "count": 10 ** 8, "createPodsOp": inner}]) == [
        f"perf.yaml: T.workloadTemplate[0].count: 100,000,000 pod sets: would make 100,000,000 cluster objects; {LIMIT}"]
    inner["countParam"] = "$pods"
    assert perf_refused([{"opcode": "createPodSets", "count": 1000, "createPodsOp": inner}], {"pods": 1000}) == [
        "perf.yaml: T.workloadTemplate[0].count: 1,000 pod sets of $pods = 1,000 pods: would make 1,000,000 "
        f"cluster objects; {LIMIT}"]


def test_counts_add_up_across_ops_and_count_params(nothing_made):
    ops = [{"opcode": "createNodes", "countParam": "$nodes"}, {"opcode": "createPods", "countParam": "$pods"},
           {"opcode": "createPods", "count": 1}]
    assert perf_refused(ops, {"nodes": 100_000, "pods": 100_000}) == [
        f"perf.yaml: T.workloadTemplate[2].count: 1 pods: would make 200,001 cluster objects; {LIMIT}"]
    assert perf_refused(ops[:1], {"nodes": 10 ** 30}) == [
        "perf.yaml: T.workloadTemplate[0].countParam: $nodes = 1,000,000,000,000,000,000,000,000,000,000 nodes: "
        f"would make 1,000,000,000,000,000,000,000,000,000,000 cluster objects; {LIMIT}"]


def test_claims_and_volumes_count_with_their_pods(nothing_made):
    ops = [{"opcode": "createPods", "count": 70_000, "persistentVolumeClaimTemplatePath": "config/pvc.yaml",
            "persistentVolumeTemplatePath": "config/pv-csi.yaml"}]
    files = [(f"config/{n}", (DATA / "config" / n).read_text()) for n in ("pvc.yaml", "pv-csi.yaml")]
    assert perf_refused(ops, files=files) == [
        f"perf.yaml: T.workloadTemplate[0].count: 70,000 pods: would make 210,000 cluster objects; {LIMIT}"]


def test_a_churn_is_counted_from_its_interval_and_the_workloads_end(nothing_made):
    churn = {"opcode": "churn", "mode": "create", "intervalMilliseconds": 1, "templatePaths": ["config/churn/node-default.yaml"]}
    files = [("config/churn/node-default.yaml", (DATA / "config/churn/node-default.yaml").read_text())]
    ops = [{"opcode": "createNodes", "count": 1}, churn, {"opcode": "sleep", "duration": "200h"}]
    assert perf_refused(ops, files=files) == [
        "perf.yaml: T.workloadTemplate[1]: a churn every 1 ms for 720000 s (up to the workload's last op): would make "
        f"720,000,001 cluster objects; {LIMIT}"]
    churn["mode"], churn["number"] = "recreate", 2
    # two slots, each created on its even visits and deleted on its odd ones
    assert perf_refused(ops, files=files)[0].endswith(f"would make 360,000,001 cluster objects; {LIMIT}")


def test_the_callers_limit_applies(nothing_made):
    # 157 bytes that asked for 199,000 nodes: the web app's limit refuses them before one is made
    assert perf_refused([{"opcode": "createNodes", "count": 199_000}], max_objects=20_000) == [
        "perf.yaml: T.workloadTemplate[0].count: 199,000 nodes: would make 199,000 cluster objects; at most "
        "20,000 are allowed (objects plus the objects the actions create)"]


def test_the_limit_itself_is_allowed():
    sc = import_files([("perf.yaml", perf([{"opcode": "createNodes", "count": 20}]))], max_objects=20).scenario
    assert len(sc["objects"]) == 20
    assert perf_refused([{"opcode": "createNodes", "count": 21}], max_objects=20) == [
        "perf.yaml: T.workloadTemplate[0].count: 21 nodes: would make 21 cluster objects; at most 20 are allowed "
        "(objects plus the objects the actions create)"]


def test_a_large_template_times_a_count_is_bounded_by_its_values(nothing_made):
    labels = {f"label-{i}": "x" for i in range(1000)}
    tm = yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "big-", "labels": labels},
                         "status": {"capacity": {"cpu": "4", "pods": "110"}}})
    problems = perf_refused([{"opcode": "createNodes", "count": 2_000, "nodeTemplatePath": "big.yaml"}],
                            files=[("big.yaml", tm)], max_objects=20_000)
    # 2,021 values a node: its 1,000 labels (keys and values), name, hostname label, allocatable ...
    assert problems == ["perf.yaml: T.workloadTemplate[0].count: 2,000 nodes: would make objects of 4,042,000 values "
                        "in all; at most 2,000,000 are allowed (100 an object on average)"]


def test_a_kubectl_dump_or_simulator_export_is_counted_before_it_is_converted(monkeypatch):
    from engine.importers import kube

    def convert_all(self, *a):
        raise AssertionError("converted before the count was checked")
    monkeypatch.setattr(kube.Converter, "convert_all", convert_all)
    items = [node(f"n{i}") for i in range(3)] + [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}]
    assert refused([("dump.yaml", dump(*items))], max_objects=2) == [
        "dump.yaml: would make 3 cluster objects; at most 2 are allowed (objects plus the objects the actions create)"]
    assert refused([("a.yaml", dump(*items[:2])), ("snap.json", json.dumps({"pods": [pod("p")]}))], max_objects=2) == [
        "a.yaml, snap.json: would make 3 cluster objects; at most 2 are allowed (objects plus the objects the "
        "actions create)"]


def test_a_scenario_imported_as_is_is_held_to_the_limit():
    text = yaml.safe_dump({"kind": "Scenario", "metadata": {"name": "s"},
                           "objects": [{"kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(3)]})
    assert refused([("s.yaml", text)], max_objects=2) == [
        "s.yaml: objects: would make 3 cluster objects; at most 2 are allowed (objects plus the objects the actions create)"]


# ------------------------------------------------------------------ through the CLI

def test_the_cli_exits_2_with_the_place(tmp_path):
    bad = tmp_path / "dump.yaml"
    bad.write_text(dump(node("n1"), with_field(pod("web-1", "shop"), "spec", "oops")))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["import", str(bad)])
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue() == f'import: 1 problem:\n  - {bad}.items[1] (Pod shop/web-1).spec: "oops" is not a mapping\n'


def test_import_paths_passes_the_limit_down(tmp_path):
    cfg = tmp_path / "perf.yaml"
    cfg.write_text(perf([{"opcode": "createNodes", "count": 3}]))
    assert len(import_paths([cfg], max_objects=3).scenario["objects"]) == 3
    with pytest.raises(ScenarioError) as e:
        import_paths([cfg], max_objects=2)
    assert e.value.problems == [f"{cfg}: T.workloadTemplate[0].count: 3 nodes: would make 3 cluster objects; at most 2 "
                                "are allowed (objects plus the objects the actions create)"]


def test_null_fields_read_as_absent():
    # kubectl writes null for an empty field: the converter reads it as absent, never as a mapping
    p = with_field(pod("web-1", "shop"), "spec", None)
    sc = import_files([("dump.yaml", dump(with_field(node("n1"), "status", None), p))]).scenario
    assert [(o["kind"], o.get("spec"), o.get("status")) for o in sc["objects"]] == [("Node", {}, None),
                                                                                      ("Pod", {}, {})]
    ops = [{"opcode": "createNodes", "count": 2, "nodeTemplatePath": "n.yaml",
            "nodeAllocatableStrategy": {"nodeAllocatable": {"cpu": "8"}}},
           {"opcode": "createPods", "count": 1, "podTemplatePath": "p.yaml",
            "persistentVolumeClaimTemplatePath": "pvc.yaml", "persistentVolumeTemplatePath": "pv.yaml"}]
    templates = [("n.yaml", "kind: Node\nmetadata: {generateName: x-, labels: null}\nstatus: {capacity: null}\n"),
                 ("p.yaml", "kind: Pod\nmetadata: null\nspec: {containers: [{name: c}]}\n"),
                 ("pvc.yaml", "kind: PersistentVolumeClaim\nmetadata: null\nspec: null\n"),
                 ("pv.yaml", "kind: PersistentVolume\nmetadata: null\nspec: {csi: null, capacity: {storage: 1Gi}}\n")]
    sc = import_files([("perf.yaml", perf(ops))] + templates).scenario
    nodes = [o for o in sc["objects"] if o["kind"] == "Node"]
    assert nodes[1] == {"kind": "Node", "metadata": {"labels": {"kubernetes.io/hostname": "x-1"}, "name": "x-1"},
                        "status": {"allocatable": {"cpu": "8"}}}
    claim, volume, p = [o for o in sc["objects"] if o["kind"] != "Node"]
    assert claim == {"kind": "PersistentVolumeClaim", "metadata": {"name": "pvc-0", "namespace": "namespace-1"},
                     "spec": {"volumeName": "namespace-1-vol-0"}, "status": {"phase": "Bound"}}
    assert volume["metadata"] == {"name": "namespace-1-vol-0"}
    assert p["metadata"] == {"name": "pod-0", "namespace": "namespace-1"}


def test_the_validators_problems_name_the_config_and_the_op_that_made_the_object():
    ops = [{"opcode": "createNodes", "count": 1},
           {"opcode": "churn", "mode": "create", "number": 1, "templatePaths": ["p.yaml"]},
           {"opcode": "createPods", "count": 1, "podTemplatePath": "p.yaml"},
           {"opcode": "createPods", "count": 1, "podTemplatePath": "p.yaml"}]
    template = "kind: Pod\nmetadata: {generateName: p-}\nspec: {containers: [{name: c, resources: {requests: {cpu: 5x}}}]}\n"
    quantity = 'spec.containers[0].resources.requests.cpu: "5x" is not a quantity'
    # an object at t=0, then the actions: the churn's at 0.5 s, the second op's pod at 1 s
    assert refused([("perf.yaml", perf(ops)), ("p.yaml", template)]) == [
        f"perf.yaml: T.workloadTemplate[2] (pod 0).{quantity}",
        f"perf.yaml: T.workloadTemplate[1] (churn Pod p-0).{quantity}",
        f"perf.yaml: T.workloadTemplate[3] (pod 0).{quantity}"]


def test_a_churn_naming_its_templates_again_and_again_is_counted_once_a_template(nothing_made):
    tm = yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"generateName": "p-", "labels": {f"l{i}": "x" for i in range(1000)}},
                         "spec": {"containers": [{"name": "c"}]}})
    ops = [{"opcode": "createNodes", "count": 1},
           {"opcode": "churn", "mode": "create", "number": 1, "templatePaths": ["big.yaml"] * 2000 + ["s.yaml"] * 5000},
           {"opcode": "createPods", "count": 0}]
    files = [("big.yaml", tm), ("s.yaml", "kind: Service\nmetadata: {name: s}\n")]
    # one tick (at 0.5 s, before the workload ends at 1 s): each of the 2,000 templates makes one pod of
    # 2,020 values (its 1,000 labels, keys and values), besides the node (23)
    assert perf_refused(ops, files=files, max_objects=20_000) == [
        "perf.yaml: T.workloadTemplate[1]: a churn every 500 ms for 1 s (up to the workload's last op): would make "
        "objects of 4,040,023 values in all; at most 2,000,000 are allowed (100 an object on average)"]
