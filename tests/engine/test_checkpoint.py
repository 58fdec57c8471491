"""Checkpoints (engine/checkpoint.py) and Stepper.resume: a run resumed from any checkpoint
emits exactly the events and reaches exactly the states of the original run, and neither run
changes the other (the checkpoint holds copies, closures included)."""
import json
from pathlib import Path

import pytest

from engine import Scenario
from engine.checkpoint import Checkpointer, CheckpointError, take
from engine.stepper import Stepper
from engine.tracestore import ForkedLog

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "fixtures").glob("*.yaml")) + [ROOT / "docs/examples/preemption.yaml",
                                                         ROOT / "docs/examples/volumes.yaml"]


def _state(st):
    return json.dumps(st.engine.state(), sort_keys=True)


def _cluster(nodes=25, pods=90):
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}", "labels": {"zone": f"z{i % 3}"}},
             "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]} if i % 6 == 1 else {},
             "status": {"allocatable": {"cpu": str(1 + i % 3), "memory": "4Gi", "pods": "8"}}} for i in range(nodes)]
    objs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{j:03d}", "namespace": "default"},
              "spec": {"priority": (j % 4) * 10,
                       "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{200 + 150 * (j % 7)}m"}}}]}}
             for j in range(pods)]
    actions = [{"at": "3s", "delete": {"kind": "Node", "name": "n03"}},
               {"at": "5s", "create": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late"},
                                       "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "20"}}}}]
    return {"kind": "Scenario", "metadata": {"name": "ckpt"}, "objects": objs, "actions": actions}


def _scenarios():
    for p in LESSONS:
        yield p.stem, p.read_text(encoding="utf-8")
    yield "generated", json.dumps(_cluster())


@pytest.mark.parametrize("name,text", list(_scenarios()), ids=lambda v: v if len(v) < 40 else "")
def test_a_run_resumed_from_any_checkpoint_is_the_same_run(name, text, lesson_plugins):
    sc = Scenario.from_text(text, name)
    head = Stepper(sc)
    ck = Checkpointer(min_events=1, overhead=0)
    ck.attach(head)
    states = {}
    while head.advance("event"):
        if head.at_unit_boundary:
            states[head.position] = _state(head)
    end = len(head.events)
    assert len(ck.checkpoints) >= 3
    # the head's run is the run of a stepper that never took a checkpoint
    fresh = Stepper(Scenario.from_text(text, name))
    fresh.advance_to_end()
    assert head.events == fresh.events and _state(head) == _state(fresh)
    picks = ck.checkpoints if len(ck.checkpoints) <= 8 else ck.checkpoints[::len(ck.checkpoints) // 8]
    for cp in picks:
        assert states[cp.position] == _state(Stepper.resume(sc, cp, head.events))
        st = Stepper.resume(sc, cp, head.events)
        targets = sorted(p for p in states if p >= cp.position)[:4]
        for target in targets:
            st.reveal_to(target)
            assert _state(st) == states[target], (name, cp.position, target)
        st.advance_to_end()
        assert len(st.events) == end
        assert st.events[cp.position:] == head.events[cp.position:]
    # restoring did not touch the head's engine
    assert _state(head) == _state(fresh)


def test_the_original_run_goes_on_unchanged_after_a_resumed_copy_runs_ahead():
    text = json.dumps(_cluster())
    a = Stepper(Scenario.from_text(text))
    a.advance_until(2.0)
    cp = take(a.engine, len(a.events), a.injected)
    b = Stepper.resume(a.scenario, cp, a.events)
    b.advance_to_end()                    # the copy runs to the end first
    a.advance_to_end()                    # then the original
    fresh = Stepper(Scenario.from_text(text))
    fresh.advance_to_end()
    assert a.events == fresh.events and _state(a) == _state(fresh) == _state(b)
    assert isinstance(b.events, ForkedLog) and b.events == fresh.events
    # a forked log reads across its parent's events and its own as one log
    every = list(fresh.events)
    mid = cp.position
    for ts in ({"QueueTransition"}, {"HostSelected", "PluginResult"}):
        assert list(b.events.scan(mid - 200, mid + 200, types=ts)) == [e for e in every[mid - 200:mid + 200] if e["type"] in ts]
        assert list(b.events.scan_back(mid + 200, mid - 200, types=ts)) == [e for e in every[mid - 200:mid + 200][::-1]
                                                                             if e["type"] in ts]


def test_an_engine_that_cannot_be_pickled_says_so():
    import threading
    st = Stepper(Scenario.from_text(json.dumps(_cluster(3, 2))))
    st.advance_until(0)
    st.engine.some_lock = threading.Lock()
    with pytest.raises(CheckpointError, match="cannot be checkpointed"):
        take(st.engine, len(st.events))
    ck = Checkpointer(min_events=1, overhead=0)
    ck.attach(st)
    st.advance_until(100)
    assert ck.checkpoints == [] and "cannot be checkpointed" in ck.failed


def test_checkpoints_stay_within_their_budget_and_spread_over_the_run():
    st = Stepper(Scenario.from_text(json.dumps(_cluster())))
    other = Stepper(st.scenario)
    other.advance_until(100)
    probe = take(other.engine, len(other.events))        # a checkpoint at the end: the largest
    ck = Checkpointer(min_events=1, overhead=0, budget_bytes=6 * probe.nbytes)
    ck.attach(st)
    st.advance_until(100)
    assert 1 < len(ck.checkpoints) and ck.nbytes <= 6 * probe.nbytes
    assert ck.min_events > 1                      # thinned at least once
    positions = [cp.position for cp in ck.checkpoints]
    assert positions == sorted(positions) and positions[-1] > len(st.events) // 3
    assert ck.latest(positions[1]) is ck.checkpoints[1]
    assert ck.latest(positions[0] - 1) is None
    ck.forget_after(positions[1], injected=0)
    assert [cp.position for cp in ck.checkpoints] == positions[:2]


def test_checkpoints_cost_at_most_the_overhead_share_of_the_callers_clock():
    """With a clock (the visualizer passes time.perf_counter; the engine reads none itself), a
    checkpoint waits until the engine worked 1/overhead times as long as the last one took."""
    ticks = {"now": 0.0}

    def clock():            # each reading advances one second: every unit and every take cost 1 s
        ticks["now"] += 1.0
        return ticks["now"]

    def run(ck):
        st = Stepper(Scenario.from_text(json.dumps(_cluster()), "ckpt"))
        ck.attach(st)
        inner, taken_at, units = st._advance_unit, [], [0]

        def counted(until=None):
            before = len(ck.checkpoints)
            did = inner(until)
            units[0] += 1
            if len(ck.checkpoints) > before:
                taken_at.append(units[0])
            return did
        st._advance_unit = counted
        st.advance_until(3600)
        return st, taken_at

    every, every_at = run(Checkpointer(min_events=1, overhead=0))
    st, at = run(Checkpointer(min_events=1, overhead=0.25, clock=clock))
    assert st.events == every.events
    # without a clock: a checkpoint after every unit that emitted something, costing nothing
    assert len(every_at) > 100 and min(b - a for a, b in zip(every_at, every_at[1:])) == 1
    # a take costs 1 s and a unit 1 s: the next checkpoint comes 4 units (4 s of work) later
    assert len(at) > 20
    assert min(b - a for a, b in zip(at, at[1:])) == 4
    assert len(at) < len(every_at) / 3


def test_a_discarded_stepper_is_freed_without_the_garbage_collector():
    """Stepper.discard / Engine.discard break the engine's reference cycles (plugins hold their
    framework, the queue's heaps hold functions bound to the queue): dropping a discarded
    stepper leaves nothing for the cyclic collector, while a dropped engine otherwise does."""
    import gc
    text = json.dumps(_cluster())

    def unreachable_after_dropping(discard):
        st = Stepper(Scenario.from_text(text))
        st.advance_until(3.0)
        cp = take(st.engine, len(st.events), st.injected)
        copy = Stepper.resume(st.scenario, cp, st.events)
        copy.advance_until(4.0)
        gc.collect()
        if discard:
            copy.discard()
        del copy
        found = gc.collect()
        assert len(st.events) > 100 and st.engine.state()["pods"]    # the original is untouched
        return found

    # (a restored engine's pods and nodes are the original's, shared: its own objects are
    # the queue, cache, plugins and frameworks, several hundred here)
    assert unreachable_after_dropping(False) > 200
    assert unreachable_after_dropping(True) == 0


@pytest.mark.parametrize("name,text", [(n, t) for n, t in _scenarios() if n in ("generated", "preemption", "backoff")
                                       or n.startswith("0")][:6], ids=lambda v: v if len(v) < 40 else "")
@pytest.mark.parametrize("timed", [False, True], ids=["every unit", "timed"])
def test_every_checkpoint_is_the_engine_a_replay_to_its_position_reaches(name, text, timed, lesson_plugins):
    """Runs to a time move the clock through units that emit nothing (periodic flushes): no
    checkpoint is filed after such a unit, nor taken late by take_due, since a replay to its
    position stops before them. ("timed": a fake clock makes the overhead rule pass on
    whichever unit comes next, silent ones included.)"""
    sc = Scenario.from_text(text, name)
    head = Stepper(sc)
    ticks = [0.0]

    def clock():
        ticks[0] += 1.0
        return ticks[0]
    ck = Checkpointer(min_events=1, overhead=0.5, clock=clock) if timed else Checkpointer(min_events=1, overhead=0)
    ck.attach(head)
    for t in (0.5, 3, 40, 200, 400):
        head.advance_until(t)
        ck.due, ck._due_at = True, (len(head.events) - 1, head.engine.now)   # a stale due: refused
        assert not ck.take_due(head)
    assert ck.checkpoints
    for cp in ck.checkpoints:
        replay = Stepper(Scenario.from_text(text, name))
        # as far as the last event's time: the flushes due by then run where the queues idle
        replay.reveal_to(cp.position, int(round(head.events[cp.position - 1]["time"] * 1_000_000)))
        assert replay.position == cp.position
        resumed = Stepper.resume(sc, cp, head.events)
        assert resumed.engine.now == replay.engine.now == cp.now, (name, cp.position)
        assert _state(resumed) == _state(replay)


def test_a_restored_engine_shares_pods_and_nodes_and_leaves_the_original_as_it_was():
    """Checkpoints keep pods and nodes by reference (the engine replaces them, never changes
    them in place): a copy that runs on, binding, preempting and deleting, changes nothing the
    original holds, and the original then runs exactly as a run never checkpointed."""
    from engine.objects import Pod
    text = json.dumps(_cluster())
    st = Stepper(Scenario.from_text(text))
    st.advance_until(2.0)
    cp = take(st.engine, len(st.events), st.injected)
    assert any(o.__class__ is Pod for o in cp.shared)
    before = json.dumps(st.engine.state(), sort_keys=True)
    copy = Stepper.resume(st.scenario, cp, st.events)
    copy.advance_until(30.0)
    assert json.dumps(copy.engine.state(), sort_keys=True) != before
    assert json.dumps(st.engine.state(), sort_keys=True) == before
    st.advance_until(30.0)
    plain = Stepper(Scenario.from_text(text))
    plain.advance_until(30.0)
    assert list(st.events) == list(plain.events)
    assert st.engine.state() == plain.engine.state()
