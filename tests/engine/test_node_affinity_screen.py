"""NodeAffinity's Filter screen over the node table (``NodeAffinity._filter_suspects``, the
label columns of ``NodeTable.label_matches``) against the per-node Filter: seeded random
clusters whose nodes carry zone, disk and numeric core labels (some missing), and pods with
nodeSelectors and required node affinity (every operator, several terms, invalid values, empty
terms, matchFields), with and without a scheduler-enforced ``addedAffinity``.

The screen must be exactly the nodes Filter rejects, pod by pod, at several points of a run;
and whole runs (test_node_table's clusters: cordons, taints, full nodes, preemption, node
updates and deletions, with these pods added) must give the same trace and state with the
table on and off."""
import json
import random

import pytest

from engine import Engine, Scenario, Trace
from engine.framework.cycle_state import CycleState
from engine.framework.interface import Code
from engine.plugins import nodeaffinity

from tests.engine.test_node_table import run, scenario as table_scenario

ZONES = ("z0", "z1", "z2")
DISKS = ("ssd", "hdd")


def _labels(rng):
    labels = {}
    if rng.random() < 0.7:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if rng.random() < 0.5:
        labels["disk"] = rng.choice(DISKS)
    if rng.random() < 0.6:
        labels["cores"] = rng.choice(("2", "4", "8", "16", "x"))
    return labels


def _expr(rng):
    r = rng.random()
    if r < 0.3:
        return {"key": "topology.kubernetes.io/zone", "operator": rng.choice(("In", "NotIn")),
                "values": rng.sample(ZONES + ("z9",), rng.randrange(1, 3))}
    if r < 0.5:
        return {"key": "disk", "operator": rng.choice(("Exists", "DoesNotExist"))}
    if r < 0.7:
        return {"key": "cores", "operator": rng.choice(("Gt", "Lt")), "values": [rng.choice(("3", "8"))]}
    if r < 0.8:
        return {"key": "disk", "operator": "In", "values": ["ssd", "not valid!"]}    # the term matches nothing
    return {"key": rng.choice(("disk", "gpu")), "operator": rng.choice(("In", "NotIn")),
            "values": rng.sample(DISKS, rng.randrange(1, 3))}


def _term(rng, names):
    t = {}
    if rng.random() < 0.9:
        t["matchExpressions"] = [_expr(rng) for _ in range(rng.randrange(1, 3))]
    if names and rng.random() < 0.05:
        t["matchFields"] = [{"key": "metadata.name", "operator": "NotIn", "values": rng.sample(names, 2)}]
    return t


def _constrain(rng, spec, names):
    if rng.random() < 0.4:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": rng.choice(ZONES)}
        if rng.random() < 0.3:
            spec["nodeSelector"]["disk"] = rng.choice(DISKS)
    if rng.random() < 0.6:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [_term(rng, names) for _ in range(rng.randrange(1, 3))]}}}


def scenario(seed):
    """test_node_table's cluster, its nodes relabelled and most pods constrained."""
    rng = random.Random(seed + 1000)
    sc = table_scenario(seed)
    nodes = [o for o in sc["objects"] if o["kind"] == "Node"]
    nodes += [a["update"] for a in sc["actions"] if "update" in a]
    nodes += [a["create"] for a in sc["actions"] if a.get("create", {}).get("kind") == "Node"]
    for n in nodes:
        n["metadata"]["labels"] = _labels(rng)
    names = [n["metadata"]["name"] for n in nodes]
    pods = [o for o in sc["objects"] if o["kind"] == "Pod"]
    pods += [a["create"] for a in sc["actions"] if a.get("create", {}).get("kind") == "Pod"]
    for p in pods:
        _constrain(rng, p["spec"], names)
    return sc


def _added(rng):
    if rng.random() < 0.5:
        return None
    return {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [_expr(rng)]} for _ in range(rng.randrange(1, 3))]}}}


@pytest.mark.parametrize("seed", range(12))
def test_the_screen_is_exactly_the_nodes_filter_rejects(seed):
    rng = random.Random(seed)
    eng = Engine(Scenario.from_dict(scenario(seed)), Trace(enabled=False))
    plugins = [nodeaffinity.new(_added(rng), None) for _ in range(3)]
    screened = rejected = unscreened = 0
    for until in (0, 5_000_000, 60_000_000):
        eng.run(until)
        snap = eng.cache.snapshot()
        table = snap.node_table()
        nodes = snap.node_info_list
        for pod in list(eng.pods.values()):
            for pl in plugins:
                st = CycleState()
                _, status = pl.pre_filter(st, pod)
                if status is not None and status.code == Code.Skip:
                    continue
                want = [pl.filter(st, pod, ni) is not None for ni in nodes]
                m = pl._filter_suspects(st, pod, table)
                if m is False:     # a term with matchFields: not screened
                    assert any(t.match_fields for t in pod.required_node_affinity.terms)
                    unscreened += 1
                    continue
                got = [False] * len(nodes) if m is None else m.tolist()
                assert got == want
                screened += 1
                rejected += sum(want)
    assert screened > 100 and rejected > 1000 and unscreened > 0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("trace", [False, True])
def test_whole_runs_are_the_same_with_the_screen(seed, trace):
    data = scenario(seed)
    ref_trace, ref_state, _ = run(data, trace, table=False)
    got_trace, got_state, _ = run(data, trace, table=True)
    phases = [p["phase"] for p in json.loads(got_state)["pods"].values()]
    assert phases.count("Running") > 50 and phases.count("Pending") > 0
    if trace:
        assert "didn't match Pod's node affinity/selector" in got_trace
    assert got_state == ref_state
    assert got_trace == ref_trace
