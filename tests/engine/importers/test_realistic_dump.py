"""A realistic cluster dump (tests/engine/importers/make_dump.py, committed as
data/cluster-dump.yaml.gz) imports and runs headless. Expectations are computed from the dump
itself, the way the scheduler's informers would see it."""
import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from engine import Engine, Scenario
from engine.importers import import_files

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
import make_dump  # noqa: E402

DUMP = HERE / "data" / "cluster-dump.yaml.gz"


def dump_text():
    return gzip.decompress(DUMP.read_bytes()).decode()


def test_the_committed_dump_is_what_the_generator_writes():
    assert make_dump.to_yaml(make_dump.make_dump(7)) == dump_text()


def test_the_dump_imports_and_runs_headless():
    text = dump_text()
    dump = yaml.safe_load(text)
    items = dump["items"]
    kinds = Counter(i["kind"] for i in items)
    assert kinds["Pod"] >= 250 and kinds["Node"] == 21 and len(set(i["metadata"].get("namespace") for i in items)) > 5
    assert all("managedFields" in i["metadata"] for i in items)

    r = import_files([("cluster-dump.yaml", text)])
    sc = r.scenario
    nodes = {i["metadata"]["name"] for i in items if i["kind"] == "Node"}
    pods = [i for i in items if i["kind"] == "Pod"]
    terminal = [p for p in pods if p["status"]["phase"] in ("Succeeded", "Failed")]
    live = [p for p in pods if p not in terminal]
    bound = [p for p in live if p["spec"].get("nodeName")]
    pending = [p for p in live if not p["spec"].get("nodeName")]
    theirs = [p for p in pending if p["spec"]["schedulerName"] != "default-scheduler"]
    assert terminal and theirs and all(p["spec"]["nodeName"] in nodes for p in bound)
    rep = r.report.as_dict()
    assert rep["kept"]["Pod"] == len(live)
    assert rep["kept"]["Node"] == len(nodes)
    assert sum(rep["dropped"]["Pod"].values()) == len(terminal)
    for kind in ("Service", "ReplicaSet"):
        assert sum(rep["dropped"][kind].values()) == kinds[kind]
    assert rep["kept"]["Namespace"] == kinds["Namespace"]
    for kind in ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode"):
        assert rep["kept"][kind] == kinds[kind]
    assert sum(rep["dropped"]["PriorityClass"].values()) == 2   # the two built-in classes
    assert rep["kept"]["PriorityClass"] == kinds["PriorityClass"] - 2
    assert rep["kept"]["PodDisruptionBudget"] == kinds["PodDisruptionBudget"]
    assert rep["fieldsIgnored"]["Pod"]["metadata.managedFields"] == len(live)
    assert len(rep["notOurs"]) == len(theirs)
    # JSON (kubectl -o json) gives the same scenario
    assert import_files([("cluster-dump.json", json.dumps(dump))]).scenario["objects"] == sc["objects"]

    eng = Engine(Scenario.from_dict(sc))
    eng.run()
    st = eng.state()
    key = lambda p: f"{p['metadata']['namespace']}/{p['metadata']['name']}"  # noqa: E731
    for p in bound:
        k = key(p)
        if p["metadata"].get("deletionTimestamp"):
            assert st["deletedPods"][k]["reason"] == "Deleted"
        else:
            assert st["pods"][k]["phase"] == "Running" and st["pods"][k]["nodeName"] == p["spec"]["nodeName"]
    for p in terminal:
        assert key(p) not in st["pods"]
    for p in theirs:
        assert st["pods"][key(p)]["queue"] is None and st["pods"][key(p)]["attempts"] == 0
    ours = [p for p in pending if p not in theirs]
    for p in ours:
        s = st["pods"][key(p)]
        if p["spec"].get("schedulingGates"):
            assert s["gated"] and s["attempts"] == 0
        else:
            assert s["attempts"] >= 1 and (s["phase"] == "Running" or s["queue"] == "unschedulablePods")
    assert st["queues"]["activeQ"] == [] and st["queues"]["backoffQ"] == []
    # the pod no node can hold stays pending, for the reason the dump's own status gave
    assert st["pods"]["default/ml-trainer"]["phase"] == "Pending"
    assert "NodeResourcesFit" in st["pods"]["default/ml-trainer"]["unschedulablePlugins"]


def test_cli_imports_and_runs_the_dump(tmp_path):
    src = tmp_path / "cluster-dump.yaml"
    src.write_text(dump_text())
    out = tmp_path / "cluster.yaml"
    r = subprocess.run([sys.executable, "-m", "engine", "import", str(src), "-o", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "dropped:" in r.stdout and "fields ignored" in r.stdout
    r = subprocess.run([sys.executable, "-m", "engine", "run", str(out), "--state", str(tmp_path / "s.json")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "s.json").read_text())["queues"]["activeQ"] == []
