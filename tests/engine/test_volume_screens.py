"""The Filter screens of VolumeBinding and NodeVolumeLimits (CSILimits) over the node table
(``_filter_suspects``: the bound PVs' node affinity on label columns; the nodes' volume
limits against ``NodeTable.volume_refs``) against the per-node Filter, on seeded random
clusters: nodes in zones with small CSI attach limits (allocatable and CSINode counts, some
CSINodes migrating the in-tree AWS EBS plugin, CSINodes replaced along the way), bound claims
whose PVs are zonal or not, in-tree or CSI, claims bound to a missing PV, unbound claims of a
WaitForFirstConsumer class, inline EBS disks, pods coming and going, full nodes and
higher-priority pods that preempt (the dry run on the table where both plugins are node-only
in a cycle: ``_filter_node_only``).

VolumeBinding's screen must be exactly the nodes its Filter rejects, CSILimits' must hold every
node its Filter rejects, pod by pod at several points of a run; and whole runs must give the
same trace and state with the table on and off."""
import json
import random

import pytest

from engine import Engine, Scenario, Trace, resourcefit
from engine.framework.cycle_state import CycleState

from tests.engine.test_node_table import run
from tests.engine.volume_env import claim_vol, csi_node, pv, pvc, storage_class

DRIVER = "ebs.csi.aws.com"
ZONES = ("z0", "z1", "z2")


def _node(rng, i, limits):
    labels = {"kubernetes.io/hostname": f"n{i:03d}"}
    if rng.random() < 0.85:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    alloc = {"cpu": "1", "memory": "16Gi", "pods": "20"}
    if limits and rng.random() < 0.5:
        alloc[f"attachable-volumes-csi-{DRIVER}"] = str(rng.randrange(1, 5))
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03d}", "labels": labels},
            "status": {"allocatable": alloc}}


def _csi_node(rng, i, limits):
    return csi_node(f"n{i:03d}", (DRIVER, rng.choice((None, 1, 2, 3, 39)) if limits else None),
                    migrated="kubernetes.io/aws-ebs" if rng.random() < 0.5 else None)


def _volumes(rng, name, objects):
    """A pod's volumes, with the claims and PVs they need added to ``objects``."""
    vols = []
    for j in range(rng.choice((0, 1, 1, 2, 3))):
        claim = f"{name}-c{j}"
        r = rng.random()
        if r < 0.6:
            src = ({"awsElasticBlockStore": {"volumeID": f"vol-{claim}"}} if rng.random() < 0.5
                   else {"csi": (DRIVER, f"h-{claim}")})
            zone = (rng.choice(ZONES),) if rng.random() < 0.4 else None
            objects.append(pv(f"pv-{claim}", claim=claim, zone_affinity=zone, phase="Bound", **src))
            objects.append(pvc(claim, volume_name=f"pv-{claim}", bound=True))
        elif r < 0.7:
            objects.append(pvc(claim, volume_name=f"pv-missing-{claim}", bound=True))
        else:
            objects.append(pvc(claim, cls="wffc"))
        vols.append(claim_vol(claim))
    if rng.random() < 0.2:
        vols.append({"name": "disk", "awsElasticBlockStore": {"volumeID": f"inline-{rng.randrange(5)}"}})
    return vols


def _pod(rng, name, objects, node=None):
    cpu = rng.choice(("100m", "500m", "900m"))
    spec = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
            "volumes": _volumes(rng, name, objects), "terminationGracePeriodSeconds": 0}
    if node is not None:
        spec["nodeName"] = node
    else:
        spec["priority"] = rng.choice((0, 0, 10, 100))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def scenario(seed):
    """Odd seeds: no volume limits at all (both plugins node-only in every cycle whose claims
    are all bound)."""
    rng = random.Random(seed)
    limits = seed % 2 == 0
    n = rng.randrange(100, 160)
    objects = [storage_class("wffc", provisioner=DRIVER)]
    objects += [_node(rng, i, limits) for i in range(n)]
    objects += [_csi_node(rng, i, limits) for i in range(n) if rng.random() < 0.7]
    objects += [_pod(rng, f"e{i}", objects, f"n{rng.randrange(n):03d}") for i in range(rng.randrange(2 * n, 3 * n))]
    actions = []
    for i in range(rng.randrange(150, 250)):
        at = f"{rng.randrange(1, 20)}s"
        r = rng.random()
        if r < 0.8:
            actions.append({"at": at, "create": _pod(rng, f"p{i}", objects)})
        elif r < 0.9:
            actions.append({"at": at, "delete": {"kind": "Pod", "namespace": "default", "name": f"e{rng.randrange(n)}"}})
        else:
            actions.append({"at": at, "update": _csi_node(rng, rng.randrange(n), limits)})
    actions.sort(key=lambda a: int(a["at"][:-1]))
    return {"kind": "Scenario", "metadata": {"name": f"volumes-{seed}"}, "objects": objects, "actions": actions}


@pytest.mark.parametrize("seed", range(6))
def test_the_screens_hold_the_nodes_filter_rejects(seed):
    eng = Engine(Scenario.from_dict(scenario(seed)), Trace(enabled=False))
    fwk = eng.frameworks["default-scheduler"]
    vb, limits = fwk._instances["VolumeBinding"], fwk._instances["NodeVolumeLimits"]
    screened = {"VolumeBinding": 0, "NodeVolumeLimits": 0}
    rejected = dict(screened)
    node_only = 0
    for until in (0, 6_000_000, 60_000_000):
        eng.run(until)
        snap = eng.cache.snapshot()
        table = snap.node_table()
        nodes = snap.node_info_list
        for pod in list(eng.pods.values()):
            for pl in (vb, limits):
                st = CycleState()
                _, status = pl.pre_filter(st, pod)
                if status is not None:
                    continue
                m = pl._filter_suspects(st, pod, table)
                want = [pl.filter(st, pod, ni) is not None for ni in nodes]
                if m is False:
                    continue
                got = [False] * len(nodes) if m is None else m.tolist()
                if pl is vb:
                    assert got == want
                else:
                    assert all(g for g, w in zip(got, want) if w)
                    if pl._filter_node_only(st, pod, table):      # no limit anywhere: passes everywhere
                        assert not any(want)
                        node_only += 1
                screened[pl.name] += 1
                rejected[pl.name] += sum(want)
    assert min(screened.values()) > 50 and rejected["VolumeBinding"] > 50, (screened, rejected)
    if seed % 2:
        assert node_only > 50
    else:
        assert rejected["NodeVolumeLimits"] > 50


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("trace", [False, True])
def test_whole_runs_are_the_same_with_the_screens(seed, trace, monkeypatch):
    data = scenario(seed)
    ref_trace, ref_state, _ = run(data, trace, table=False)
    on_table = []          # cycles of pods with claims whose Filter and dry run were on the table
    build = resourcefit.ResourceFilter._build.__func__

    def spy(cls, fwk, state, pod, table):
        rf = build(cls, fwk, state, pod, table)
        if rf is not None and any(v.kind == "persistentVolumeClaim" for v in pod.volumes):
            on_table.append(pod.key)
        return rf

    monkeypatch.setattr(resourcefit.ResourceFilter, "_build", classmethod(spy))
    got_trace, got_state, eng = run(data, trace, table=True)
    assert (len(on_table) > 20) if seed % 2 else not on_table
    phases = [p["phase"] for p in json.loads(got_state)["pods"].values()]
    assert phases.count("Running") > 100 and phases.count("Pending") > 0
    assert any(d["preemptor"] for d in json.loads(got_state)["deletedPods"].values())     # preemption
    if trace and seed % 2 == 0:
        assert "node(s) exceed max volume count" in got_trace
    if trace:
        assert "node(s) had volume node affinity conflict" in got_trace
    assert got_state == ref_state
    assert got_trace == ref_trace
    assert eng.cache.snapshot().node_table().check() == []
