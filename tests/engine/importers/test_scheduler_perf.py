"""scheduler_perf workload configs (v1.28's performance-config.yaml, copied unchanged under
data/scheduler_perf) imported as scenarios and run."""
from pathlib import Path

import pytest
import yaml

from engine import Engine, Scenario, ScenarioError
from engine.importers import import_files, import_paths

DATA = Path(__file__).parent / "data" / "scheduler_perf"
CONFIG = DATA / "config" / "performance-config.yaml"


def run(sc):
    eng = Engine(Scenario.from_dict(sc))
    eng.run()
    return eng


def test_scheduling_basic_500_nodes_imports_and_runs():
    r = import_paths([CONFIG], test_case="SchedulingBasic", workload="500Nodes")
    sc = r.scenario
    assert sc["metadata"]["name"] == "schedulingbasic-500nodes"
    nodes = [o for o in sc["objects"] if o["kind"] == "Node"]
    init = [o for o in sc["objects"] if o["kind"] == "Pod"]
    measured = [a for a in sc["actions"]]
    assert len(nodes) == 500 and len(init) == 500 and len(measured) == 1000
    # no nodeTemplatePath: PrepareNodes' base node (capacity cpu 4, memory 32Gi, pods 110),
    # named node-<op>-..., capacity defaulted to allocatable
    assert nodes[0] == {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": "node-0-0", "labels": {"kubernetes.io/hostname": "node-0-0"}},
                        "status": {"allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"}}}
    assert {p["metadata"]["namespace"] for p in init} == {"namespace-1"}
    assert {a["at"] for a in measured} == {1.0}
    assert {a["create"]["metadata"]["namespace"] for a in measured} == {"namespace-2"}
    assert init[0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
    eng = run(sc)
    st = eng.state()
    assert len(st["pods"]) == 1500
    assert all(p["phase"] == "Running" for p in st["pods"].values())
    assert st["time"] == 1.0


def test_preemption_basic_imports_as_upstream_writes_it():
    sc = import_paths([CONFIG], test_case="PreemptionBasic", workload="500Nodes").scenario
    low = [o for o in sc["objects"] if o["kind"] == "Pod"]
    high = [a["create"] for a in sc["actions"]]
    assert len(low) == 2000 and len(high) == 500
    assert low[0]["spec"]["terminationGracePeriodSeconds"] == 0
    assert {p["spec"]["priority"] for p in high} == {10}
    assert high[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "3000m"


def test_preemption_basic_runs_with_smaller_params(tmp_path):
    # the same test case template with a smaller workload's params
    cases = yaml.safe_load(CONFIG.read_text())
    tc = next(c for c in cases if c["name"] == "PreemptionBasic")
    tc["workloads"].append({"name": "20Nodes", "params": {"initNodes": 20, "initPods": 80, "measurePods": 20}})
    (tmp_path / "config").mkdir()
    cfg = tmp_path / "config" / "performance-config.yaml"
    cfg.write_text(yaml.safe_dump(cases))
    for name in ("node-default.yaml", "pod-low-priority.yaml", "pod-high-priority.yaml"):
        (tmp_path / "config" / name).write_text((DATA / "config" / name).read_text())
    sc = import_paths([cfg], test_case="PreemptionBasic", workload="20Nodes").scenario
    st = run(sc).state()
    high = {k: p for k, p in st["pods"].items() if k.startswith("namespace-2/")}
    low = {k: p for k, p in st["pods"].items() if k.startswith("namespace-1/")}
    # 4 CPU nodes hold four 900m pods; a 3000m pod fits once three of them are preempted
    assert len(high) == 20 and all(p["phase"] == "Running" for p in high.values())
    assert len(low) == 20 and all(p["phase"] == "Running" for p in low.values())
    assert len(st["deletedPods"]) == 60
    assert {d["reason"] for d in st["deletedPods"].values()} == {"Preempted"}
    per_node = {}
    for p in st["pods"].values():
        per_node.setdefault(p["nodeName"], []).append(p["priority"])
    assert all(sorted(v) == [0, 10] for v in per_node.values()) and len(per_node) == 20


def test_templates_given_as_files_churn_and_strategies():
    files = [(str(CONFIG.relative_to(DATA)), CONFIG.read_text())]
    for rel in ("config/churn/node-default.yaml", "config/pod-high-priority-large-cpu.yaml",
                "config/churn/service-default.yaml", "config/pod-default.yaml"):
        files.append((rel, (DATA / rel).read_text()))
    r = import_files(files, test_case="SchedulingWithMixedChurn", workload="1000Nodes")
    sc = r.scenario
    assert sum(o["kind"] == "Node" for o in sc["objects"]) == 1000
    assert sc["objects"][0]["metadata"]["name"] == "node-0-0"   # no template: node-<op>-
    churn = sc["actions"]
    assert [(a["at"], a["create"]["kind"], a["create"]["metadata"]["name"]) for a in churn] == [
        (1.0, "Node", "node-churn-0"), (1.0, "Pod", "pod-h-0")]
    assert r.report.dropped["Service"]
    st = run(sc).state()
    assert sum(p["phase"] == "Running" for p in st["pods"].values()) == 1000
    # the churned pod asks for more CPU than any node has (the template's point): it waits
    churned = st["pods"]["namespace-1/pod-h-0"]
    assert churned["phase"] == "Pending" and "NodeResourcesFit" in churned["unschedulablePlugins"]


def test_label_strategy_and_unknown_choices():
    cases = [{"name": "Labels", "workloadTemplate": [
        {"opcode": "createNodes", "countParam": "$n", "labelNodePrepareStrategy": {"labelKey": "zone", "labelValues": ["a", "b"]}},
        {"opcode": "createNodes", "count": 2, "uniqueNodeLabelStrategy": {"labelKey": "uniq"}},
        {"opcode": "createNodes", "count": 1, "nodeAllocatableStrategy": {"nodeAllocatable": {"cpu": "8"}}},
        {"opcode": "createPods", "countParam": "$n", "collectMetrics": True, "skipWaitToCompletion": False},
        {"opcode": "barrier"}, {"opcode": "sleep", "duration": "5s"},
        {"opcode": "createPods", "count": 1, "namespace": "late"}],
        "workloads": [{"name": "w", "params": {"n": 3}}]}]
    sc = import_files([("perf.yaml", yaml.safe_dump(cases))]).scenario
    nodes = [o for o in sc["objects"] if o["kind"] == "Node"]
    assert [n["metadata"]["labels"].get("zone") for n in nodes] == ["a", "b", "a", None, None, None]
    assert [n["metadata"]["labels"].get("uniq") for n in nodes[3:5]] == ["node-1-3", "node-1-4"]
    assert nodes[5]["status"]["allocatable"]["cpu"] == "8"
    assert [a["at"] for a in sc["actions"]] == [6.0]   # 1s after the waiting createPods, then sleep 5s

    def refused(**kw):
        with pytest.raises(ScenarioError) as e:
            import_files([("perf.yaml", yaml.safe_dump(cases))], **kw)
        return e.value.problems
    assert refused(workload="x") == ['perf.yaml: Labels.workloads: has no workload named "x" (one of w)']
    assert refused(test_case="Nope") == ['perf.yaml: has no test case named "Nope" (one of Labels)']
    cases[0]["workloads"][0]["params"] = {}
    assert refused()[0] == 'perf.yaml: Labels.workloadTemplate[0].countParam: "$n" is not a parameter of the workload (it has none)'


def test_missing_templates_and_dra_ops_are_refused():
    with pytest.raises(ScenarioError) as e:
        import_files([("performance-config.yaml", CONFIG.read_text())], test_case="PreemptionBasic", workload="500Nodes")
    assert e.value.problems == [
        "performance-config.yaml: PreemptionBasic.workloadTemplate[1].podTemplatePath: the template "
        "config/pod-low-priority.yaml was not given (add it to the files imported)",
        "performance-config.yaml: PreemptionBasic.workloadTemplate[2].podTemplatePath: the template "
        "config/pod-high-priority.yaml was not given (add it to the files imported)"]
    with pytest.raises(ScenarioError) as e:
        import_paths([CONFIG], test_case="SchedulingWithResourceClaimTemplate", workload="fast")
    assert any('"createResourceClaimTemplate" is not supported: dynamic resource allocation is not modelled' in p
               for p in e.value.problems)
    with pytest.raises(ScenarioError) as e:
        import_paths([CONFIG])
    assert e.value.problems[0].endswith("holds 23 test cases; choose one with --test-case (one of SchedulingBasic, "
                                        "SchedulingPodAntiAffinity, SchedulingSecrets, SchedulingInTreePVs, "
                                        "SchedulingMigratedInTreePVs, SchedulingCSIPVs, SchedulingPodAffinity, "
                                        "SchedulingPreferredPodAffinity, SchedulingPreferredPodAntiAffinity, "
                                        "SchedulingNodeAffinity, TopologySpreading, PreferredTopologySpreading, "
                                        "MixedSchedulingBasePod, PreemptionBasic, PreemptionPVs, Unschedulable, "
                                        "SchedulingWithMixedChurn, SchedulingRequiredPodAntiAffinityWithNSSelector, "
                                        "SchedulingPreferredAntiAffinityWithNSSelector, "
                                        "SchedulingRequiredPodAffinityWithNSSelector, "
                                        "SchedulingPreferredAffinityWithNSSelector, SchedulingWithNodeInclusionPolicy, "
                                        "SchedulingWithResourceClaimTemplate)")


@pytest.mark.parametrize("case", ["SchedulingInTreePVs", "SchedulingMigratedInTreePVs", "SchedulingCSIPVs"])
def test_volume_test_cases_import_and_run(case):
    """CreatePodWithPersistentVolume: each pod with its own bound claim and PV; the migrated and
    CSI cases give every node a CSINode with the driver's attach limit."""
    r = import_paths([CONFIG], test_case=case, workload="500Nodes")
    rep = r.report.as_dict()
    assert rep["kept"]["PersistentVolumeClaim"] == rep["kept"]["PersistentVolume"] == 1500
    assert rep["kept"].get("CSINode", 0) == (0 if case == "SchedulingInTreePVs" else 500)
    sc = r.scenario
    pods = [o for o in sc["objects"] if o["kind"] == "Pod"] + \
        [a["create"] for a in sc.get("actions", []) if "create" in a and a["create"]["kind"] == "Pod"]
    first = pods[0]
    assert first["spec"]["volumes"] == [{"name": "vol", "persistentVolumeClaim": {"claimName": "pvc-0"}}]
    pvs = {o["metadata"]["name"]: o for o in sc["objects"] if o["kind"] == "PersistentVolume"}
    pv = pvs[f"{first['metadata']['namespace']}-vol-0"]
    assert pv["spec"]["claimRef"] == {"namespace": first["metadata"]["namespace"], "name": "pvc-0"}
    src = pv["spec"].get("csi", pv["spec"].get("awsElasticBlockStore"))
    assert src.get("volumeHandle", src.get("volumeID")) == "vol-0"
    if case != "SchedulingInTreePVs":
        cn = next(o for o in sc["objects"] if o["kind"] == "CSINode")
        assert cn["spec"]["drivers"] == [{"name": "ebs.csi.aws.com", "nodeID": cn["metadata"]["name"],
                                          "allocatable": {"count": 39}}]
    eng = Engine(Scenario.from_dict(sc))
    assert "VolumeBinding" in [p.name for p in eng.frameworks["default-scheduler"].filter_plugins]
    eng.run()
    st = eng.state()
    assert all(p["phase"] == "Running" for p in st["pods"].values())
    assert len(st["pods"]) == 1500


def test_bad_workloads_are_refused_in_bounded_time_and_memory():
    cases = [{"name": "Huge", "workloadTemplate": [
        {"opcode": "createNodes", "count": 10 ** 9},
        {"opcode": "churn", "mode": "recreate", "number": 10 ** 12, "templatePaths": ["config/churn/node-default.yaml"]},
        {"opcode": "createPods", "count": 1, "collectMetrics": True}],
        "workloads": [{"name": "w", "params": {}}]}]
    with pytest.raises(ScenarioError) as e:
        import_files([("perf.yaml", yaml.safe_dump(cases))])
    assert e.value.problems == ["perf.yaml: Huge.workloadTemplate[0].count: 1,000,000,000 nodes: would make "
                                "1,000,000,000 cluster objects; at most 200,000 are allowed (objects plus the "
                                "objects the actions create)"]
    cases[0]["workloadTemplate"][0]["count"] = 1
    cases[0]["workloadTemplate"].append({"opcode": "sleep", "duration": "100h"})   # long, within the engine's limit
    with pytest.raises(ScenarioError) as e:
        import_files([("perf.yaml", yaml.safe_dump(cases)),
                      ("config/churn/node-default.yaml", (DATA / "config/churn/node-default.yaml").read_text())])
    assert e.value.problems == ["perf.yaml: Huge.workloadTemplate[1].number: 1000000000000 is not a count (an integer from 0 to 200000)"]
    cases[0]["workloadTemplate"][1]["number"] = 1
    cases[0]["workloadTemplate"][1]["intervalMilliseconds"] = 1
    with pytest.raises(ScenarioError) as e:
        import_files([("perf.yaml", yaml.safe_dump(cases)),
                      ("config/churn/node-default.yaml", (DATA / "config/churn/node-default.yaml").read_text())])
    # counted, not looped over: 360,001,000 ticks, every other one a create (one slot)
    assert e.value.problems == ["perf.yaml: Huge.workloadTemplate[1]: a churn every 1 ms for 360001 s (up to the "
                                "workload's last op): would make 180,000,502 cluster objects; at most 200,000 are "
                                "allowed (objects plus the objects the actions create)"]


def test_deeply_nested_input_is_refused():
    with pytest.raises(ScenarioError) as e:
        import_files([("deep.json", "[" * 100000 + "]" * 100000)])
    assert e.value.problems == ["deep.json: JSON: values are nested more than 100 levels deep"]


def test_the_measured_pods_are_those_of_the_ops_with_collect_metrics():
    """ImportResult.measured: scheduler_perf measures the createPods ops with collectMetrics
    (bench/run.py --config reads it); SchedulingBasic's second op, 1 s after the first."""
    r = import_paths([CONFIG], test_case="SchedulingBasic", workload="500Nodes")
    (at, ns), = r.measured
    created = [a["create"] for a in r.scenario["actions"] if a["at"] * 1_000_000 == at]
    assert at == 1_000_000 and len(created) == 1000
    assert {p["metadata"]["namespace"] for p in created} == {ns}
    init = [o for o in r.scenario["objects"] if o["kind"] == "Pod"]
    assert len(init) == 500 and ns not in {p["metadata"]["namespace"] for p in init}
    assert import_files([("a.yaml", "kind: Scenario\nmetadata: {name: a}\n")]).measured == []


def test_create_namespaces_makes_labelled_namespaces_and_the_affinity_binds():
    """createNamespaces (namespacePreparer.prepare): ``<prefix>-<i>`` with the template's
    labels, which the measured pods' required affinity selects (namespaceSelector team=devops):
    every measured pod binds, as upstream's."""
    r = import_paths([CONFIG], test_case="SchedulingRequiredPodAffinityWithNSSelector", workload="500Nodes")
    sc = r.scenario
    namespaces = [o for o in sc["objects"] if o["kind"] == "Namespace"]
    assert [n["metadata"]["name"] for n in namespaces] == [f"init-ns-{i}" for i in range(10)] + ["measure-ns-0"]
    assert all(n["metadata"]["labels"] == {"team": "devops"} for n in namespaces)
    assert r.report.as_dict()["kept"]["Namespace"] == 11
    st = run(sc).state()
    measured = [p for k, p in st["pods"].items() if k.startswith("measure-ns-0/")]
    assert len(measured) == 100 and all(p["phase"] == "Running" for p in measured)


def test_create_namespaces_twice_keeps_the_first_and_without_a_template_has_no_labels():
    cases = [{"name": "T", "workloadTemplate": [
        {"opcode": "createNamespaces", "prefix": "ns", "count": 2},
        {"opcode": "createNamespaces", "prefix": "ns", "count": 3}],
        "workloads": [{"name": "w", "params": {}}]}]
    sc = import_files([("perf.yaml", yaml.safe_dump(cases))], test_case="T", workload="w").scenario
    assert [o for o in sc["objects"] if o["kind"] == "Namespace"] == [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i}"}} for i in range(3)]
