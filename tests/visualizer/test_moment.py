"""Every panel shows the same moment: at every revealed position of every lesson, stepped by
event, the page's queues, pod in flight, nodes, nominations and figures are the engine's own
state at that event (moment_reference.py: a full ``engine.state()`` taken by a trace sink at
every event and at every unit's end, with its two stated adjustments)."""
from pathlib import Path
from types import SimpleNamespace

import pytest

import importlib.util

from engine import Scenario
from engine.stepper import Stepper
from visualizer import moment, presenters

# the lessons that use an example plugin (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("lesson_plugins")

_spec = importlib.util.spec_from_file_location("moment_reference", Path(__file__).with_name("moment_reference.py"))
moment_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(moment_reference)

FIXTURES = sorted(Path(__file__).resolve().parents[2].joinpath("fixtures").glob("*.yaml"))


def _walk(path):
    return moment_reference.walk(path, attach=moment.attach)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_position_of_every_lesson_shows_one_moment(path):
    st = check_every_position(path)
    if path.stem.startswith(("06", "11")):
        assert st.partial_positions, "the lesson steps inside units of work"


def check_every_position(path):
    """Step the scenario at ``path`` event by event and check each moment against the
    reference; returns the stepper (with ``partial_positions``: how many were inside a unit)."""
    st, reference = _walk(path)
    index = presenters.TraceIndex(st.events, [])
    partial_positions = 0
    while st.step_event():
        p = st.position
        index.extend()
        mom = moment.moment(st, st.state(), index)
        ref = reference(p)
        where = f"{path.name} after event {p} ({st.events[p - 1]['type']})"
        partial_positions += mom["partial"]
        assert {q: set(keys) for q, keys in mom["queues"].items()} == \
            {q: set(keys) for q, keys in ref["queues"].items()}, where
        assert mom["queues"]["activeQ"] == ref["queues"]["activeQ"], where
        assert mom["metrics"] == ref["metrics"], where
        assert (mom["time"], mom["schedulingCycle"], mom["moveRequestCycle"]) == \
            (ref["time"], ref["schedulingCycle"], ref["moveRequestCycle"]), where
        assert {n: keys for n, keys in mom["nominatedPods"].items() if keys} == \
            {n: keys for n, keys in ref["nominatedPods"].items() if keys}, where
        # every pending pod is in exactly one place: a queue, in flight, waiting, or not ours
        pending = {k for k, v in ref["pods"].items() if v["phase"] == "Pending"}
        places = [k for keys in mom["queues"].values() for k in keys] + [w["key"] for w in mom["waiting"]] + \
            [p["key"] for p in mom["not_ours"]]
        if mom["in_flight"]:
            places.append(mom["in_flight"]["key"])
        assert sorted(places) == sorted(pending), where
        # the queue columns count what the metrics count
        pp = mom["metrics"]["pending_pods"]
        assert (len(mom["queues"]["activeQ"]), len(mom["queues"]["backoffQ"]),
                len(mom["queues"]["unschedulablePods"])) == \
            (pp["active"], pp["backoff"], pp["unschedulable"] + pp["gated"]), where
        # the node cards hold the pods bound, binding or terminating on them, in their phase
        cards = presenters.nodes(SimpleNamespace(stepper=st, position=p, last_change=(p, p)), mom)["cards"]
        shown = {(pod["key"], card["name"], pod["phase"]) for card in cards for pod in card["pods"]}
        expected = {(k, v["nodeName"], v["phase"]) for k, v in ref["pods"].items()
                    if v["phase"] in ("Running", "Binding", "Terminating", "Waiting")}
        assert shown == expected, where
        # pods waiting on Permit (scenarios with a Permit plugin only)
        assert mom["waitingPods"] == ref.get("waitingPods"), where
        assert mom["customObjects"] == ref.get("customObjects"), where
        # the node overview (large clusters) colours each node by the same moment's pods
        assert _overview_pod_levels(st, p, mom) == _expected_pod_levels(st, expected), where
    assert st.position == len(st.events) and st.position > 0
    st.partial_positions = partial_positions
    return st


def _overview_pod_levels(st, p, mom) -> dict:
    """{node: the tenth of its cpu requested/allocatable the node overview shows}, the overview forced
    on whatever the cluster's size."""
    import re
    from visualizer.panels import nodes as nodes_panel
    limit = nodes_panel.NODE_CARD_LIMIT
    nodes_panel.NODE_CARD_LIMIT = -1
    try:
        ctx = presenters.nodes(SimpleNamespace(stepper=st, position=p, last_change=(p, p)), mom, {"colour": "cpu"})
    finally:
        nodes_panel.NODE_CARD_LIMIT = limit
    if not ctx["overview"]:
        return {}
    return {name: int(level) for name, level in re.findall(r'<i data-n="([^"]+)" class="h(\d+)', str(ctx["cells"]))}


def _expected_pod_levels(st, on_nodes) -> dict:
    """The same from the reference's pods on nodes and their requests."""
    engine, levels = st.engine, {}
    removed = {info["key"]: info for info in st._moment_recorder.removed.values()}
    used = {}
    for key, node, _phase in on_nodes:
        pod = engine.pods.get(key)
        requests = pod.requests if pod is not None else removed[key]["requests"]
        used[node] = used.get(node, 0) + requests.get("cpu", 0)
    for name in engine.cache.node_tree.list():
        node = engine.cache.nodes[name].node
        if node is None:
            continue
        total, count = node.allocatable.get("cpu", 0), used.get(name, 0)
        levels[name] = (11 if count > total else min(10, 10 * count // total)) if total else (11 if count else 0)
    return levels


def _shown(st, index):
    mom = moment.moment(st, st.state(), index.extend())
    cards = presenters.nodes(SimpleNamespace(stepper=st, position=st.position, last_change=(st.position, st.position)), mom)["cards"]
    return (mom["queues"], mom["metrics"], mom["time"], mom["schedulingCycle"], mom["nominatedPods"],
            mom["waiting"], mom["in_flight"], [(c["name"], c["pods"], c["resources"]) for c in cards],
            _overview_pod_levels(st, st.position, mom))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_position_looks_the_same_however_it_was_reached(path):
    """Stepping by point or by cycle runs the engine further ahead (to peek at the next event)
    than stepping by event: the page at a position must not depend on that."""
    st, _ = _walk(path)
    index = presenters.TraceIndex(st.events, [])
    by_event = {}
    while st.step_event():
        by_event[st.position] = _shown(st, index)
    for kind in ("point", "cycle"):
        other = Stepper(Scenario.from_text(path.read_text(encoding="utf-8"), path.name))
        moment.attach(other)
        other_index = presenters.TraceIndex(other.events, [])
        while getattr(other, f"step_{kind}")():
            assert _shown(other, other_index) == by_event[other.position], \
                f"{path.name} by {kind}, after event {other.position}"


def test_travelling_to_a_position_keeps_few_snapshots_and_shows_the_same_moment():
    """A rebuild reveals up to its position in one go: the recorder keeps only what that
    position (and later ones) can show, and the page there is the same as stepped by event."""
    path = next(p for p in FIXTURES if p.stem.startswith("03"))
    st, _ = _walk(path)
    index = presenters.TraceIndex(st.events, [])
    by_event = {}
    while st.step_event():
        by_event[st.position] = _shown(st, index)
    total = st.position
    partial = 0
    for target in range(1, total + 1, 7):
        other = Stepper(Scenario.from_text(path.read_text(encoding="utf-8"), path.name))
        recorder = moment.attach(other)
        other.reveal_to(target)
        assert len(recorder.snaps) + len(recorder.unit_ends) <= 40, (target, len(recorder.snaps))
        assert _shown(other, presenters.TraceIndex(other.events, [])) == by_event[target], target
        partial += not other.at_unit_boundary
    assert partial > 10
    other = Stepper(Scenario.from_text(path.read_text(encoding="utf-8"), path.name))
    recorder = moment.attach(other)
    other.run_until(30)
    assert len(recorder.snaps) <= 2 and len(recorder.unit_ends) <= 1
