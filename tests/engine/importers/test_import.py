"""Import (engine/importers): kubectl dumps as YAML and JSON, one List or several
files/documents, kube-scheduler-simulator exports, KubeSchedulerConfiguration files, scenarios,
and the files it refuses, with their messages."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine import Engine, Scenario, ScenarioError
from engine.importers import dump_scenario, import_files

ROOT = Path(__file__).resolve().parents[3]
CREATED = "2026-03-01T10:00:00Z"


def node(name, cpu="4", zone="a", **extra):
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "17", "creationTimestamp": CREATED,
                      "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
                      "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
                      "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:status": {}}}]},
         "spec": {"podCIDR": "10.244.0.0/24", "providerID": f"kind://{name}"},
         "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                    "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                    "lastHeartbeatTime": "2026-03-01T12:00:00Z",
                                    "lastTransitionTime": CREATED}],
                    "nodeInfo": {"kubeletVersion": "v1.28.4"}}}
    n.update(extra)
    return n


def pod(name, ns="default", node_name=None, cpu="500m", phase=None, **spec_extra):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "creationTimestamp": CREATED,
                      "labels": {"app": name.split("-")[0]},
                      "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}]},
         "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                                  "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
                                  "env": [{"name": "A", "value": "1"}]}],
                  "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                  "priority": 0, "terminationGracePeriodSeconds": 30,
                  "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                   "effect": "NoExecute", "tolerationSeconds": 300}]},
         "status": {"phase": phase or ("Running" if node_name else "Pending"), "qosClass": "Burstable",
                    "conditions": [{"type": "PodScheduled", "status": "True" if node_name else "False"}]}}
    if node_name:
        p["spec"]["nodeName"] = node_name
        p["status"]["startTime"] = "2026-03-01T11:00:00Z"
        p["status"]["containerStatuses"] = [{"name": "c", "ready": True, "restartCount": 0}]
    p["spec"].update(spec_extra)
    return p


def small_dump():
    items = [
        node("n1"), node("n2", zone="b"),
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "system-node-critical", "creationTimestamp": CREATED}, "value": 2000001000,
         "description": "built in"},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
         "value": 1000, "description": "for the important ones"},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
         "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "expectedPods": 1}},
        pod("web-1", "shop", "n1"),
        pod("kube-proxy-abcde", "kube-system", "n2", priorityClassName="system-node-critical",
            priority=2000001000),
        pod("etcd-n1", "kube-system", "n1", priorityClassName="system-node-critical", priority=2000001000),
        pod("done-1", "batch", "n2", phase="Succeeded"),
        pod("broken-1", "batch", "n2", phase="Failed"),
        pod("elsewhere-1", "shop", "n9"),
        pod("pending-1", "shop", priorityClassName="high", priority=1000),
        pod("theirs-1", "shop", schedulerName="volcano"),
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "shop"},
         "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}},
    ]
    items[7]["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.hash": "abc"}
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def objects_by(sc, kind):
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in sc["objects"] if o["kind"] == kind}


def test_kubectl_yaml_list_keeps_what_the_scheduler_reads():
    dump = small_dump()
    r = import_files([("dump.yaml", yaml.safe_dump(dump))])
    sc = r.scenario
    pods = objects_by(sc, "Pod")
    assert set(pods) == {("shop", "web-1"), ("kube-system", "kube-proxy-abcde"), ("kube-system", "etcd-n1"),
                         ("shop", "pending-1"), ("shop", "theirs-1")}
    web = pods[("shop", "web-1")]
    assert web["spec"]["nodeName"] == "n1"
    assert web["status"] == {"startTime": "2026-03-01T11:00:00Z"}
    assert "managedFields" not in web["metadata"] and "uid" not in web["metadata"]
    assert web["spec"]["containers"] == [{"name": "c", "image": "nginx:1.25",
                                          "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}}]
    assert web["spec"]["tolerations"][0]["key"] == "node.kubernetes.io/not-ready"
    # the class gives the same value: spec.priority is left to the class
    assert "priority" not in pods[("kube-system", "kube-proxy-abcde")]["spec"]
    assert "priority" not in pods[("shop", "pending-1")]["spec"]
    assert pods[("kube-system", "etcd-n1")]["metadata"]["annotations"] == {"kubernetes.io/config.mirror": "abc"}
    n1 = objects_by(sc, "Node")[("", "n1")]
    assert n1["status"] == {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                            "conditions": [{"type": "Ready", "status": "True"}]}
    assert set(n1["spec"]) == set()
    assert list(objects_by(sc, "PriorityClass")) == [("", "high")]
    pdb = objects_by(sc, "PodDisruptionBudget")[("shop", "web")]
    assert "status" not in pdb
    # the scenario starts when the dump was taken (its latest timestamp)
    assert sc["simulation"]["startTime"] == "2026-03-01T12:00:00Z"
    rep = r.report.as_dict()
    assert rep["kept"]["Pod"] == 5 and rep["kept"]["Node"] == 2
    assert rep["keptDetail"]["Pod"] == {"bound": 3, "pending": 1, "pending, not ours": 1}
    assert rep["dropped"]["Pod"] == {
        "bound to a node that is not in the import (no snapshot would hold it)": 1,
        "phase Failed: the scheduler's pod informer leaves out terminal pods "
        "(field selector status.phase!=Succeeded,status.phase!=Failed)": 1,
        "phase Succeeded: the scheduler's pod informer leaves out terminal pods "
        "(field selector status.phase!=Succeeded,status.phase!=Failed)": 1}
    assert set(rep["dropped"]) == {"Pod", "PriorityClass", "Service"}
    assert objects_by(sc, "Namespace") == {("", "shop"): {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": "shop"}}}
    assert rep["kept"]["PersistentVolumeClaim"] == 1
    claim = objects_by(sc, "PersistentVolumeClaim")[("shop", "data")]
    assert claim["spec"] == {"resources": {"requests": {"storage": "1Gi"}}}
    assert rep["notOurs"] == ["shop/theirs-1 (volcano)"]
    assert rep["fieldsIgnored"]["Pod"]["metadata.managedFields"] == 5
    assert rep["fieldsIgnored"]["Pod"]["spec.containers[].env"] == 5
    assert rep["fieldsIgnored"]["Node"]["status.nodeInfo"] == 2
    text = r.report.text()
    assert ("kept: 1 Namespace, 2 Node, 1 PersistentVolumeClaim, 5 Pod (3 bound, 1 pending, 1 pending, not ours), "
            "1 PodDisruptionBudget, 1 PriorityClass") in text
    assert "not ours (1 pending pods of another scheduler" in text


def test_imported_dump_runs_as_the_scheduler_would():
    sc = Scenario.from_dict(import_files([("dump.yaml", yaml.safe_dump(small_dump()))]).scenario)
    eng = Engine(sc)
    eng.run()
    st = eng.state()["pods"]
    assert st["shop/web-1"]["phase"] == "Running" and st["shop/web-1"]["nodeName"] == "n1"
    assert st["kube-system/kube-proxy-abcde"]["priority"] == 2000001000
    assert st["shop/pending-1"]["phase"] == "Running" and st["shop/pending-1"]["priority"] == 1000
    assert st["shop/theirs-1"] == {**st["shop/theirs-1"], "phase": "Pending", "queue": None, "attempts": 0}
    assert "batch/done-1" not in st and "shop/elsewhere-1" not in st
    # a bound pod keeps its start time relative to the dump's instant
    web = next(p for k, p in eng.pods.items() if k == "shop/web-1")
    assert web.start_time == -3600 * 1_000_000


def test_json_list_several_files_and_documents_give_the_same_scenario():
    dump = small_dump()
    as_yaml = import_files([("dump.yaml", yaml.safe_dump(dump))]).scenario
    as_json = import_files([("dump.yaml", json.dumps(dump, indent=2))]).scenario
    docs = "---\n".join(yaml.safe_dump(i) for i in dump["items"])
    as_docs = import_files([("dump.yaml", docs)]).scenario
    half = len(dump["items"]) // 2
    as_files = import_files([("dump.yaml", yaml.safe_dump({"kind": "List", "items": dump["items"][:half]})),
                             ("more.json", json.dumps({"kind": "List", "items": dump["items"][half:]}))]).scenario
    for other in (as_json, as_docs, as_files):
        assert other["objects"] == as_yaml["objects"]
        assert other["simulation"] == as_yaml["simulation"]


def test_typed_list_items_without_kind():
    lst = {"apiVersion": "v1", "kind": "NodeList", "items": [{k: v for k, v in node("n1").items() if k != "kind"}]}
    sc = import_files([("nodes.json", json.dumps(lst))]).scenario
    assert [o["kind"] for o in sc["objects"]] == ["Node"]


def test_pending_pods_enter_in_creation_order_and_terminating_pods_are_deleted_at_zero():
    items = [node("n1"),
             pod("b-late", cpu="100m"), pod("a-early", cpu="100m"), pod("old", node_name="n1")]
    items[1]["metadata"]["creationTimestamp"] = "2026-03-01T10:05:00Z"
    items[2]["metadata"]["creationTimestamp"] = "2026-03-01T10:01:00Z"
    items[3]["metadata"]["deletionTimestamp"] = "2026-03-01T12:00:20Z"
    gone = pod("gone", cpu="100m")
    gone["metadata"]["deletionTimestamp"] = "2026-03-01T12:00:20Z"
    items.append(gone)
    r = import_files([("d.yaml", yaml.safe_dump({"kind": "List", "items": items}))])
    sc = r.scenario
    assert [o["metadata"]["name"] for o in sc["objects"] if o["kind"] == "Pod"] == ["old", "a-early", "b-late"]
    assert sc["actions"] == [{"at": 0, "delete": {"kind": "Pod", "namespace": "default", "name": "old"}}]
    old = objects_by(sc, "Pod")[("default", "old")]
    assert old["spec"]["terminationGracePeriodSeconds"] == 20   # the dump was taken at 12:00:00
    assert r.report.dropped["Pod"] == {"pending and being deleted (deletionTimestamp): skipPodSchedule skips it": 1}
    eng = Engine(Scenario.from_dict(sc))
    eng.run()
    assert eng.state()["deletedPods"]["default/old"]["deletedAt"] == 20.0


def test_simulator_export_with_its_scheduler_config():
    export = {
        "pods": [pod("p1"), pod("p2", node_name="node-abc")],
        "nodes": [node("node-abc")],
        "pvs": [{"metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "1Gi"}}}],
        "pvcs": [{"metadata": {"name": "c-1", "namespace": "default"}, "spec": {}}],
        "storageClasses": [{"metadata": {"name": "standard"}, "provisioner": "x"}],
        "priorityClasses": [{"metadata": {"name": "low"}, "value": 10}],
        "namespaces": [{"metadata": {"name": "default"}}],
        "schedulerConfig": {
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "parallelism": 16, "percentageOfNodesToScore": None,
            "profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {"multiPoint": {"enabled": [{"name": "PrioritySort"}, {"name": "NodeResourcesFit", "weight": 1},
                                                                 {"name": "VolumeBinding"}, {"name": "DefaultBinder"}],
                                                     "disabled": None},
                                      "filter": None},
                          "pluginConfig": [{"name": "DefaultPreemption",
                                            "args": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DefaultPreemptionArgs",
                                                     "minCandidateNodesAbsolute": 100, "minCandidateNodesPercentage": 10}},
                                           {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 600}}]}]},
    }
    r = import_files([("snapshot.json", json.dumps(export))])
    sc = r.scenario
    assert r.report.formats == {"snapshot.json": "simulator (kube-scheduler-simulator export)"}
    assert [o["kind"] for o in sc["objects"]] == ["PriorityClass", "Namespace", "PersistentVolume", "PersistentVolumeClaim",
                                                  "StorageClass", "Node", "Pod", "Pod"]
    prof = sc["scheduler"]["profiles"][0]
    assert [p["name"] for p in prof["plugins"]["multiPoint"]["enabled"]] == ["PrioritySort", "NodeResourcesFit",
                                                                           "VolumeBinding", "DefaultBinder"]
    assert prof["pluginConfig"] == [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 100,
                                                                           "minCandidateNodesPercentage": 10}},
                                    {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 600}}]
    assert "apiVersion" not in sc["scheduler"] and "percentageOfNodesToScore" not in sc["scheduler"]
    rep = r.report.as_dict()
    assert rep["dropped"] == {}
    assert rep["kept"]["Namespace"] == 1
    assert rep["kept"]["PersistentVolume"] == rep["kept"]["PersistentVolumeClaim"] == rep["kept"]["StorageClass"] == 1
    Engine(Scenario.from_dict(sc)).run()        # the export runs, with its volume objects


def test_kube_scheduler_configuration_file_becomes_the_scheduler_and_decides_what_is_ours():
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "podInitialBackoffSeconds": 2, "leaderElection": {"leaderElect": False},
           "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "volcano"}]}
    dump = small_dump()
    r = import_files([("dump.yaml", yaml.safe_dump(dump)), ("sched.yaml", yaml.safe_dump(cfg))])
    assert r.scenario["scheduler"]["podInitialBackoffSeconds"] == 2
    assert r.report.not_ours == []
    eng = Engine(Scenario.from_dict(r.scenario))
    eng.run()
    assert eng.state()["pods"]["shop/theirs-1"]["phase"] == "Running"


def test_a_scenario_is_imported_as_is():
    text = (ROOT / "docs/examples/backoff.yaml").read_text()
    r = import_files([("backoff.yaml", text)])
    assert r.scenario == yaml.safe_load(text)
    assert r.report.kept == {"Node": 1, "Pod": 3}


# ------------------------------------------------------------------ refused, with their place

def refused(files, **kw):
    with pytest.raises(ScenarioError) as e:
        import_files(files, **kw)
    return e.value.problems


def test_truncated_yaml_and_json():
    text = yaml.safe_dump(small_dump())
    cut = text[: len(text) // 2]
    cut = cut[: cut.rindex("\n")] + "\n    - {name: c, image: [unclosed\n"
    (p,) = refused([("dump.yaml", cut)])
    assert p.startswith("dump.yaml: line ") and "not valid YAML or JSON" in p
    js = json.dumps(small_dump(), indent=1)
    (p,) = refused([("dump.json", js[: len(js) // 3])])
    assert p.startswith("dump.json: line ") and "not valid JSON" in p


def test_truncated_yaml_that_still_parses_is_refused_by_the_validator_with_its_place():
    dump = small_dump()
    dump["items"][5]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "5x"
    dump["items"][0]["status"]["allocatable"] = "4"
    probs = refused([("dump.yaml", yaml.safe_dump(dump))])
    assert 'dump.yaml.items[0] (Node n1).status.allocatable: "4" is not a resource list' in probs
    assert ('dump.yaml.items[5] (Pod shop/web-1).spec.containers[0].resources.requests.cpu: "5x" is not a quantity'
            in probs)


def test_not_yaml_or_json():
    (p,) = refused([("notes.txt", "<html><body>Hello</body></html>\n")])
    assert p.startswith("notes.txt: cannot tell what this is: a str")
    (p,) = refused([("tabs.yaml", "kind: List\nitems:\n\t- a\n")])
    assert p.startswith("tabs.yaml: line 3, column 1: not valid YAML or JSON")
    (p,) = refused([("empty.yaml", "   \n")])
    assert p == "empty.yaml: the file is empty"
    (p,) = refused([("alias.yaml", "a: &x {kind: Pod}\nb: *x\n")])
    assert p == "alias.yaml: uses YAML aliases (*name), which are not accepted in an import"


def test_wrong_kind_and_shape():
    (p,) = refused([("x.yaml", "kind: List\nitems:\n- 3\n")])
    assert p == "x.yaml.items[0]: a int ('3') is not a Kubernetes object"
    (p,) = refused([("x.yaml", "kind: List\nitems:\n- {kind: Pod, metadata: {}}\n")])
    assert p == "x.yaml.items[0].metadata.name: is required"
    (p,) = refused([("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: 7}\n")])
    assert p == "x.yaml (Pod p).spec.nodeName: 7 is not a string"
    (p,) = refused([("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")])
    assert p.startswith("deploy.yaml: nothing the scheduler reads was found (no Node, Pod, PriorityClass or "
                        "PodDisruptionBudget); dropped: 1 Deployment")
    (p,) = refused([("s.yaml", "kind: Scenario\nmetadata: {name: s}\n"), ("n.yaml", yaml.safe_dump(node("n1")))])
    assert p == "s.yaml: a scenario is imported alone (it is already complete)"
    (p,) = refused([("c.yaml", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n")])
    assert p == 'c.yaml.apiVersion: "kubescheduler.config.k8s.io/v1beta3" is not kubescheduler.config.k8s.io/v1 (only v1 is read)'
    (p,) = refused([("x.json", json.dumps({"pods": {"a": 1}}))])
    assert p == "x.json.pods: is not a list"
    (p,) = refused([("x.yaml", yaml.safe_dump(node("n1")))], fmt="simulator")
    assert p == ("x.yaml: kind 'Node' is not a kube-scheduler-simulator export (a mapping with "
                 "namespaces, nodes, pods, priorityClasses, pvcs, pvs, schedulerConfig, storageClasses)")


def test_cli_import_writes_the_scenario_and_prints_the_report(tmp_path):
    src = tmp_path / "dump.yaml"
    src.write_text(yaml.safe_dump(small_dump()))
    out = tmp_path / "sc.yaml"
    r = subprocess.run([sys.executable, "-m", "engine", "import", str(src), "-o", str(out),
                        "--report-json", str(tmp_path / "r.json")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ("kept: 1 Namespace, 2 Node, 1 PersistentVolumeClaim, 5 Pod (3 bound, 1 pending, 1 pending, not ours), "
            "1 PodDisruptionBudget, 1 PriorityClass") in r.stdout
    assert f"wrote {out} (11 objects, 0 actions)" in r.stdout
    assert yaml.safe_load(out.read_text())["objects"] == import_files([("dump.yaml", src.read_text())]).scenario["objects"]
    assert json.loads((tmp_path / "r.json").read_text())["kept"]["Pod"] == 5
    v = subprocess.run([sys.executable, "-m", "engine", "validate", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    # without -o: scenario on stdout, report on stderr
    r = subprocess.run([sys.executable, "-m", "engine", "import", str(src)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and yaml.safe_load(r.stdout)["kind"] == "Scenario" and "kept:" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "List", "items": [')
    r = subprocess.run([sys.executable, "-m", "engine", "import", str(bad)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"import: 1 problem:\n  - {bad}: line 1, column 28: not valid JSON (Expecting value)\n"
    r = subprocess.run([sys.executable, "-m", "engine", "import", str(tmp_path / "missing.yaml")], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "missing.yaml: cannot read the file: No such file or directory" in r.stderr


def test_dump_scenario_round_trips():
    sc = import_files([("dump.yaml", yaml.safe_dump(small_dump()))]).scenario
    assert yaml.safe_load(dump_scenario(sc)) == sc


def test_a_pods_only_dump_keeps_the_priority_admission_wrote():
    # kubectl get pods -A -o yaml: no PriorityClasses, no nodes
    items = [pod("api-1", "shop", priorityClassName="business", priority=5000),
             pod("web-1", "shop", node_name="n1")]
    r = import_files([("pods.yaml", yaml.safe_dump({"kind": "List", "items": items}))])
    (p,) = [o for o in r.scenario["objects"] if o["kind"] == "Pod"]
    assert p["spec"]["priority"] == 5000 and "priorityClassName" not in p["spec"]
    assert r.report.dropped["Pod"] == {"bound to a node that is not in the import (no snapshot would hold it)": 1}
    eng = Engine(Scenario.from_dict(r.scenario))
    eng.run()
    assert eng.state()["pods"]["shop/api-1"]["priority"] == 5000
