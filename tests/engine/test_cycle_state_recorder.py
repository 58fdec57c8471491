"""The CycleState inspector's recorder (engine/framework/recorder.py): what each extension
point's plugins wrote in a cycle's CycleState, attributed, rendered and bounded; off by
default, and with it on the engine does exactly what it does without it."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from engine import Engine, Scenario, Trace, US
from engine.framework.cycle_state import CycleState
from engine.framework.interface import (PermitPlugin, PreBindPlugin, PreFilterPlugin, PreScorePlugin,
                                        ReservePlugin)
from engine.framework.recorder import (MAX_CHARS, MAX_ITEMS, CycleRecord, CycleStateRecorder, plain,
                                       visualize)
from engine.plugins import registry
from engine.scenario import load_scenario
from engine.stepper import Stepper

ROOT = Path(__file__).resolve().parents[2]
SPREAD = ROOT / "tests/visualizer/scenarios/topology-spread.yaml"


def _run(path, recorder=None):
    st = Stepper(load_scenario(path))
    if recorder is not None:
        st.engine.cycle_state_recorder = recorder
    st.run_to_end()
    if recorder is not None:
        recorder.finish()
    return st


def _writes(rec: CycleRecord, point=None, plugin=None):
    return [w for w in rec.writes if (point is None or w["point"] == point)
            and (plugin is None or w["plugin"] == plugin)]


# ---------------------------------------------------------------------- off: nothing changes

def test_off_by_default():
    assert Engine.cycle_state_recorder is None
    assert CycleState().recorder is None


@pytest.mark.parametrize("lesson", ["09-interpod-affinity.yaml", "11-preemption-reprieve.yaml"])
def test_recording_changes_neither_the_trace_nor_the_state(lesson):
    path = ROOT / "fixtures" / lesson
    plain_run = _run(path)
    recorded = _run(path, CycleStateRecorder())
    assert json.dumps(list(recorded.events), sort_keys=True, default=str) == \
        json.dumps(list(plain_run.events), sort_keys=True, default=str)
    assert json.dumps(recorded.state(), sort_keys=True, default=str) == \
        json.dumps(plain_run.state(), sort_keys=True, default=str)


# ---------------------------------------------------------------------- in-tree states

def test_in_tree_states_attributed_to_their_point_and_plugin():
    rec = CycleStateRecorder()
    _run(SPREAD, rec)
    r = rec.records[1]
    assert r.pod == "default/web-new"
    fit = _writes(r, "PreFilter", "NodeResourcesFit")
    assert [w["key"] for w in fit] == ["PreFilterNodeResourcesFit"]
    assert fit[0]["type"].endswith("fit._PreFilterState")
    assert "cpu: 500\nmemory: 0\n" in fit[0]["value"]
    pts = _writes(r, "PreFilter", "PodTopologySpread")[0]
    assert pts["key"] == "PreFilterPodTopologySpread"
    # the critical paths, the minimum first, and TpPairToMatchNum by pair
    assert "topology.kubernetes.io/zone: b=1 (min), a=2" in pts["value"]
    assert "TpPairToMatchNum:\n  topology.kubernetes.io/zone=a: 2\n  topology.kubernetes.io/zone=b: 1" in pts["value"]
    assert "maxSkew=1 topologyKey=topology.kubernetes.io/zone selector=app=web" in pts["value"]
    score = _writes(r, "PreScore", "PodTopologySpread")[0]
    assert "maxSkew=1 topologyKey=kubernetes.io/hostname selector=app=web" in score["value"]
    assert "snapshot" not in score["value"]
    assert {w["plugin"] for w in _writes(r, "PreScore")} >= {"TaintToleration", "NodeAffinity",
                                                              "NodeResourcesFit", "PodTopologySpread"}
    # snapshots as each point ended: after PreFilter only PreFilter's keys
    snaps = dict(r.snapshots)
    assert set(snaps["PreFilter"]) == {"PreFilterNodeResourcesFit", "PreFilterPodTopologySpread"}
    assert "PreScorePodTopologySpread" in snaps["PreScore"]


def test_inter_pod_affinity_counts_readable():
    rec = CycleStateRecorder()
    _run(ROOT / "fixtures/09-interpod-affinity.yaml", rec)
    values = [w["value"] for r in rec.records.values() for w in _writes(r, "PreFilter", "InterPodAffinity")]
    assert values
    assert any("requiredAffinityTerms" in v and "topologyKey=kubernetes.io/hostname selector=app=database" in v
               for v in values)
    # once the database runs on n1, a web pod's affinity counts it by pair
    assert any("kubernetes.io/hostname=n1: 1" in v for v in values)


def test_only_the_cycles_asked_for():
    rec = CycleStateRecorder(cycles=[2])
    _run(ROOT / "fixtures/09-interpod-affinity.yaml", rec)
    assert list(rec.records) == [2]


# ---------------------------------------------------------------------- an out-of-tree plugin

class Counter:
    def __init__(self, n=0):
        self.n = n

    def clone(self):
        return Counter(self.n)


class Pretty:
    def __visualize__(self):
        return "three apples"

    def clone(self):
        return self


class Broken:
    def __visualize__(self):
        raise ValueError("no view today")

    def clone(self):
        return self


class Scribe(PreFilterPlugin, PreScorePlugin, ReservePlugin, PermitPlugin, PreBindPlugin):
    name = "Scribe"

    def __init__(self, args, handle):
        self.handle = handle

    def pre_filter(self, state, pod):
        state.write("scribe/counter", Counter(1))
        state.write("scribe/pretty", Pretty())
        state.write("scribe/broken", Broken())
        return None, None

    def pre_filter_extensions(self):
        return None

    def pre_score(self, state, pod, nodes):
        state.read("scribe/counter").n = 2     # mutated later: PreFilter's snapshot keeps 1
        state.write("scribe/big", list(range(1000)))
        return None

    def reserve(self, state, pod, node_name):
        state.delete("scribe/big")
        return None

    def unreserve(self, state, pod, node_name):
        pass

    def permit(self, state, pod, node_name):
        state.write("scribe/permit", {"node": node_name})
        return None, 0

    def pre_bind(self, state, pod, node_name):
        state.write("scribe/prebind", ("bound", node_name))
        return None


def _scribe_scenario():
    def node(n):
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
                "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}
    points = ["preFilter", "preScore", "reserve", "permit", "preBind"]
    return Scenario.from_dict({
        "kind": "Scenario", "metadata": {"name": "scribe"},
        "scheduler": {"profiles": [{"plugins": {p: {"enabled": [{"name": "Scribe"}]} for p in points}}]},
        "objects": [node("n1"), node("n2"),
                    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}],
    })


@pytest.fixture
def scribe():
    registry.register("Scribe", lambda args, h: Scribe(args or {}, h))
    try:
        yield
    finally:
        registry.unregister("Scribe")


def test_out_of_tree_plugin_writes_per_point(scribe):
    rec = CycleStateRecorder()
    e = Engine(_scribe_scenario(), Trace())
    e.cycle_state_recorder = rec
    e.run(10 * US)
    rec.finish()
    r = rec.records[1]
    mine = [(w["point"], w["op"], w["key"]) for w in r.writes if w["plugin"] == "Scribe"]
    assert mine == [("PreFilter", "write", "scribe/counter"), ("PreFilter", "write", "scribe/pretty"),
                    ("PreFilter", "write", "scribe/broken"), ("PreScore", "write", "scribe/big"),
                    ("Reserve", "delete", "scribe/big"), ("Permit", "write", "scribe/permit"),
                    ("PreBind", "write", "scribe/prebind")]
    by_key = {w["key"]: w for w in r.writes if w["op"] == "write"}
    assert by_key["scribe/pretty"]["value"] == "three apples"
    assert by_key["scribe/broken"]["value"] == "__visualize__() raised ValueError: no view today"
    assert by_key["scribe/counter"]["type"].endswith("test_cycle_state_recorder.Counter")
    big = by_key["scribe/big"]["value"]
    assert f"… {1000 - MAX_ITEMS} more" in big and len(big) <= MAX_CHARS
    snaps = dict(r.snapshots)
    assert snaps["PreFilter"]["scribe/counter"][1] == "n: 1"     # as PreFilter left it
    assert snaps["PreScore"]["scribe/counter"][1] == "n: 2"
    assert "scribe/big" not in snaps["Reserve"]
    assert snaps["PreBind"]["scribe/prebind"][1] == "- bound\n- n1"
    assert by_key["scribe/permit"]["value"] == "node: n1"
    assert e.state()["pods"]["default/p"]["phase"] == "Running"


def test_clones_are_not_recorded():
    rec = CycleRecord(1, "default/p")
    s = CycleState(rec)
    rec.enter(s, "PostFilter", "DefaultPreemption")
    s.write("a", 1)
    c = s.clone()
    assert c.recorder is None
    c.write("b", 2)
    c.delete("a")
    assert [(w["op"], w["key"], w["plugin"]) for w in rec.writes] == [("write", "a", "DefaultPreemption")]


# ---------------------------------------------------------------------- visualize

def test_visualize_bounds_and_never_raises():
    class BadRepr:
        __slots__ = ()

        def __repr__(self):
            raise RuntimeError("boom")

    assert visualize(3) == "3" and visualize("x") == "'x'" and visualize(None) == "None"
    assert len(visualize("y" * 100_000)) <= MAX_CHARS
    huge = {f"k{i}": "v" * 300 for i in range(MAX_ITEMS * 3)}
    out = visualize(huge)
    assert len(out) <= MAX_CHARS and out.endswith("…")
    assert "BadRepr" in visualize([BadRepr()])     # reprlib names it; nothing raised
    assert visualize({1, 3, 2}) == "- 1\n- 2\n- 3"
    assert visualize({}) == "{}" and visualize([" padded "]) == '- " padded "'
    deep = []
    for _ in range(50):
        deep = [deep]
    assert len(visualize(deep)) <= MAX_CHARS


def test_visualize_dataclasses_and_pairs():
    @dataclasses.dataclass
    class D:
        name: str
        counts: dict

    assert visualize(D("x", {("zone", "a"): 2})) == "name: x\ncounts:\n  zone=a: 2"
    assert visualize([D("y", {})]) == "- type: D\n  name: y\n  counts: {}"
    assert plain(D("y", {}), 1)["type"] == "D"


def test_visualize_hook_structures():
    class S:
        def __visualize__(self):
            return {"paths": ["zone: a=1 (min)"], "n": 3}

    assert visualize(S()) == "paths:\n  - zone: a=1 (min)\nn: 3"
