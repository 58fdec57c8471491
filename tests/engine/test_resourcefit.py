"""Fit's Filter and preemption's dry run over the node table (engine/resourcefit.py) give what
the per-node path gives: every Filter search and every dry run of seeded random clusters is
computed both ways and compared field by field (feasible nodes, each status's code, reasons
and plugin in the map's order, candidates with their victims, errors), and whole runs give the
same final state. The clusters are built to need preemption: small and full nodes, pods of
three priorities, nominated pods, start times (some victims with one, some without), pod-count
limits, pods requesting nothing, ephemeral storage, cordons, taints, pods naming a node, and
DefaultPreemption's candidate limits down to none."""
import copy
import json
import random

import pytest

from engine import Engine, Scenario, Trace, preemption, resourcefit
from engine import schedule_one
from engine.framework.types import Diagnosis


def _node(rng, i, plain):
    cap = {"cpu": rng.choice(["1", "2", "4"]), "memory": rng.choice(["2Gi", "4Gi"]),
           "pods": str(rng.choice([2, 3, 4, 110, 110]))}
    if rng.random() < 0.15:
        cap["ephemeral-storage"] = rng.choice(["1Gi", "4Gi"])
    spec = {}
    if plain:
        pass
    elif rng.random() < 0.05:
        spec["unschedulable"] = True
    elif rng.random() < 0.08:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": rng.choice(["NoSchedule", "NoExecute"])}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}"}, "spec": spec,
            "status": {"capacity": cap}}


def _pod(rng, name, priority, nodes, plain):
    req = {}
    r = rng.random()
    if r < 0.9:
        req["cpu"] = rng.choice(["200m", "500m", "900m", "1500m"])
        if rng.random() < 0.7:
            req["memory"] = rng.choice(["256Mi", "1Gi", "2Gi"])
        if rng.random() < 0.1:
            req["ephemeral-storage"] = rng.choice(["512Mi", "2Gi"])
    spec = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": req}}],
            "priority": priority, "terminationGracePeriodSeconds": rng.choice([0, 0, 3])}
    if rng.random() < 0.15:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if not plain and name.startswith("low-") and rng.random() < 0.3:
        # bound without the scheduler, so without a start time unless it gives one (the
        # scheduler's binds set it), and possibly beyond the node's allocatable
        spec["nodeName"] = f"n{rng.randrange(nodes):03d}"
    m = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    if rng.random() < 0.3:
        # before or after the instants the dry runs happen at (1s-12s): the order of victims
        # with and without a start time depends on the time
        m["status"] = {"startTime": f"2026-01-01T00:00:{rng.randrange(13):02d}Z"}
    return m


def scenario(seed):
    rng = random.Random(seed)
    n = rng.randrange(100, 220)
    plain = seed % 2 == 0       # no cordon, taint or named node: every node on the table
    objects = [_node(rng, i, plain) for i in range(n)]
    objects += [_pod(rng, f"low-{i}", rng.choice([0, 0, 3]), n, plain) for i in range(rng.randrange(2 * n, 4 * n))]
    actions = []
    for i in range(rng.randrange(60, 160)):
        at = f"{rng.randrange(1, 12)}s"
        if rng.random() < 0.9:
            actions.append({"at": at, "create": _pod(rng, f"high-{i}", rng.choice([5, 10, 10]), n, plain)})
        else:
            actions.append({"at": at, "delete": {"kind": "Pod", "namespace": "default",
                                                 "name": f"low-{rng.randrange(2 * n)}"}})
    actions.sort(key=lambda a: int(a["at"][:-1]))
    # binds that take a while: assumed pods (no start time yet) among the victims
    data = {"kind": "Scenario", "metadata": {"name": f"resourcefit-{seed}"}, "objects": objects,
            "actions": actions, "simulation": {"bindDuration": rng.choice(["0s", "1500ms"])}}
    if seed % 3 == 1:
        args = rng.choice([{"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 0},
                           {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}])
        data["scheduler"] = {"profiles": [{"schedulerName": "default-scheduler",
                                           "pluginConfig": [{"name": "DefaultPreemption", "args": args}]}]}
    return data


def _status(st):
    return None if st is None else (st.code.name, list(st.reasons), st.failed_plugin)


def _both_ways(monkeypatch, fn, counts, key):
    """fn's result with resourcefit on, after checking it equals the result with it off."""
    def call(*a):
        old = resourcefit.MIN_NODES
        resourcefit.MIN_NODES = 10 ** 9
        try:
            ref = fn(*a, off=True)
        finally:
            resourcefit.MIN_NODES = old
        got = fn(*a, off=False)
        assert got[1] == ref[1]
        counts[key] += 1
        return got[0]
    return call


@pytest.mark.parametrize("seed", range(8))
def test_the_table_gives_every_filter_and_dry_run_the_per_node_path_gives(seed, monkeypatch):
    data = scenario(seed)
    counts = {"filter": 0, "dry_run": 0}
    used = {"filter_on_table": 0, "filter_screened_rf": 0, "dry_run_on_table": 0, "select_on_table": 0}
    real_filter = schedule_one.filter_nodes
    real_dry_run = preemption.Evaluator.dry_run_preemption
    real_on_table = schedule_one.filter_on_table
    real_screened = schedule_one.filter_screened
    real_tv_dry_run = resourcefit.TableVictims.dry_run
    real_tv_select = resourcefit.TableVictims.select

    def filter_nodes(self, fwk, state, pod, diagnosis, nodes, nominated, off):
        d = Diagnosis(dict(diagnosis.node_to_status_map), set(diagnosis.unschedulable_plugins))
        feasible, err = real_filter(self, fwk, state, pod, d, nodes, nominated)
        if not off:
            diagnosis.node_to_status_map.clear()
            diagnosis.node_to_status_map.update(d.node_to_status_map)
            diagnosis.unschedulable_plugins.update(d.unschedulable_plugins)
        return (feasible, err), ([ni.name for ni in feasible], _status(err),
                                 [(k, _status(v)) for k, v in d.node_to_status_map.items()],
                                 sorted(d.unschedulable_plugins))

    def dry_run(self, pod, potential, pdbs, offset, num_candidates, off):
        cands, statuses, err = real_dry_run(self, pod, potential, pdbs, offset, num_candidates)
        return (cands, statuses, err), ([(c.name, [v.key for v in c.victims], c.num_pdb_violations) for c in cands],
                                        [(k, _status(v)) for k, v in statuses.items()], _status(err))

    def spy(name, real):
        def f(*a, **k):
            used[name] += 1
            return real(*a, **k)
        return f

    def screened(self, *a, **k):
        if len(a) > 11 and a[11] is not None:
            used["filter_screened_rf"] += 1
        return real_screened(self, *a, **k)

    monkeypatch.setattr(schedule_one, "filter_nodes",
                        _both_ways(monkeypatch, filter_nodes, counts, "filter"))
    monkeypatch.setattr(preemption.Evaluator, "dry_run_preemption",
                        _both_ways(monkeypatch, dry_run, counts, "dry_run"))
    monkeypatch.setattr(schedule_one, "filter_on_table", spy("filter_on_table", real_on_table))
    monkeypatch.setattr(schedule_one, "filter_screened", screened)
    monkeypatch.setattr(resourcefit.TableVictims, "dry_run", spy("dry_run_on_table", real_tv_dry_run))
    monkeypatch.setattr(resourcefit.TableVictims, "select", spy("select_on_table", real_tv_select))
    eng = Engine(Scenario.from_dict(data), Trace(enabled=False))
    eng.run(60_000_000)
    # the comparisons ran, on the table's paths, and the runs preempted
    assert counts["filter"] > 50 and counts["dry_run"] > 5, counts
    if seed % 2 == 0:
        assert used["filter_on_table"] > 20 and used["dry_run_on_table"] > 5, used
    else:
        assert used["filter_screened_rf"] > 20 and used["select_on_table"] > 5, used


def _run(data, on):
    old = resourcefit.MIN_NODES
    if not on:
        resourcefit.MIN_NODES = 10 ** 9
    try:
        eng = Engine(Scenario.from_dict(data), Trace(enabled=False))
        eng.run(60_000_000)
        return json.dumps(eng.state(), sort_keys=True), eng
    finally:
        resourcefit.MIN_NODES = old


@pytest.mark.parametrize("seed", range(8, 12))
def test_whole_runs_end_in_the_same_state(seed):
    data = scenario(seed)
    ref, _ = _run(data, on=False)
    got, eng = _run(data, on=True)
    assert got == ref
    table = eng.cache.snapshot().node_table()
    # the victims' columns kept current by the cache equal ones built afresh
    assert table is not None and table._victims and table.check() == []


def test_the_paths_were_taken_for_the_whole_cluster_and_per_node():
    """Both forms of the dry run on the table occur in these clusters: every node on the
    table (TableVictims.dry_run), and with some nodes evaluated per node (select)."""
    seen = {"dry_run": 0, "select": 0}
    real_d, real_s = resourcefit.TableVictims.dry_run, resourcefit.TableVictims.select
    try:
        resourcefit.TableVictims.dry_run = lambda self, *a: (seen.__setitem__("dry_run", seen["dry_run"] + 1), real_d(self, *a))[1]
        resourcefit.TableVictims.select = lambda self, *a: (seen.__setitem__("select", seen["select"] + 1), real_s(self, *a))[1]
        for seed in range(4):
            _run(scenario(seed), on=True)
    finally:
        resourcefit.TableVictims.dry_run, resourcefit.TableVictims.select = real_d, real_s
    assert seen["dry_run"] > 0 and seen["select"] > 0, seen
