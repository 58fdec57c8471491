"""The page's moment with pods waiting on Permit: at every event of a scenario where pods wait,
are allowed, time out, are rejected by a sibling and are deleted while waiting, the queues,
node cards (Waiting pods on their node) and the ``waitingPods`` figures match the engine's
state at that event (the same check as every lesson's, tests/visualizer/test_moment.py)."""
from types import SimpleNamespace

import pytest
import yaml

from engine.framework import interface as fwi
from engine.framework.interface import Code, Status
from engine.plugins import registry
from visualizer import moment, presenters

from .test_moment import check_every_position


class Gate(fwi.PermitPlugin):
    """Waits 5 s for pods labelled ``wait``; ``release`` allows them all; ``reject-all`` rejects them."""
    name = "Gate"

    def __init__(self, handle):
        self.handle = handle

    def permit(self, state, pod, node_name):
        if pod.labels.get("release"):
            self.handle.iterate_over_waiting_pods(lambda wp: wp.allow("Gate"))
        elif pod.labels.get("reject-all"):
            self.handle.iterate_over_waiting_pods(lambda wp: wp.reject("Gate", "released by reject-all"))
        elif pod.labels.get("wait"):
            return Status(Code.Wait), 5
        return None, 0


def _pod(name, cpu="1", **labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


SCENARIO = {
    "kind": "Scenario", "metadata": {"name": "permit-moments"},
    "scheduler": {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "Gate"}]}}}]},
    "simulation": {"bindDuration": "500ms"},
    "objects": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "10", "memory": "4Gi", "pods": "110"}}},
        _pod("a", wait="1"), _pod("b", wait="1"), _pod("big", cpu="9")],
    "actions": [
        {"at": "1s", "create": {"apiVersion": "example.io/v1", "kind": "Ticket", "metadata": {"name": "t"},
                                "spec": {"seats": 1}}},
        {"at": "1500ms", "update": {"apiVersion": "example.io/v1", "kind": "Ticket", "metadata": {"name": "t"},
                                    "spec": {"seats": 2}}},
        {"at": "2s", "create": _pod("go", release="1")},            # a and b allowed, bound at 2.5 s
        {"at": "3s", "create": _pod("c", wait="1")},                # waits; times out at 8 s
        {"at": "9s", "create": _pod("d", wait="1")},
        {"at": "10s", "delete": {"kind": "Pod", "name": "d"}},      # removed while waiting
        {"at": "11s", "create": _pod("e", wait="1")},
        {"at": "12s", "create": _pod("stop", **{"reject-all": "1"})},
        {"at": "13s", "delete": {"apiVersion": "example.io/v1", "kind": "Ticket", "name": "t"}},
    ],
}


@pytest.fixture
def gate():
    registry.register("Gate", lambda args, handle: Gate(handle))
    yield
    registry.unregister("Gate")


def test_every_position_with_waiting_pods_shows_one_moment(gate, tmp_path):
    path = tmp_path / "permit-moments.yaml"
    path.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    st = check_every_position(path)
    types = {e["type"] for e in st.events}
    assert {"PermitWait", "PermitAllow", "PermitTimeout", "PermitReject", "BindFailed"} <= types
    rejects = [e for e in st.events if e["type"] == "PermitReject"]
    assert [(e["pod"], e["plugin"]) for e in rejects] == [("default/d", None), ("default/e", "Gate")]
    assert st.state()["customObjects"] == {}
    assert [e["action"] for e in st.events if e["type"] == "Action" and e["kind"] == "Ticket"] == \
        ["create", "update", "delete"]


def test_the_fourth_group_and_the_node_card_show_a_waiting_pod(gate, tmp_path):
    from engine import Scenario
    from engine.stepper import Stepper
    st = Stepper(Scenario.from_dict(SCENARIO))
    moment.attach(st)
    index = presenters.TraceIndex(st.events, [])
    st.run_until(1)
    mom = moment.moment(st, st.state(), index.extend())
    live = SimpleNamespace(stepper=st, position=st.position, last_change=(st.position, st.position))
    group = presenters.queues(live, mom)["permit"]
    assert [(p["key"], p["node"], p["remaining"]) for p in group] == [("default/a", "n1", "4"), ("default/b", "n1", "4")]
    assert group[0]["plugins"] == [{"name": "Gate", "deadline": "5", "remaining": "4"}]
    nodes = presenters.nodes(live, mom)
    assert nodes["custom"] == [{"kind": "Ticket", "api_version": "example.io/v1", "key": "default/t",
                                "fields": ["seats: 1"]}]
    card = nodes["cards"][0]
    waiting = {p["key"]: p for p in card["pods"] if p["phase"] == "Waiting"}
    assert set(waiting) == {"default/a", "default/b"}
    assert waiting["default/a"]["permit_remaining"] == "4" and waiting["default/a"]["permit_plugin"] == "Gate"


def test_no_fourth_group_without_permit_plugins():
    from engine import Scenario
    from engine.stepper import Stepper
    doc = {"kind": "Scenario", "metadata": {"name": "plain"}, "objects": [SCENARIO["objects"][0], _pod("x")]}
    st = Stepper(Scenario.from_dict(doc))
    moment.attach(st)
    st.run_until(1)
    mom = moment.moment(st, st.state(), presenters.TraceIndex(st.events, []).extend())
    live = SimpleNamespace(stepper=st, position=st.position, last_change=(st.position, st.position))
    assert presenters.queues(live, mom)["permit"] is None
    assert presenters.nodes(live, mom)["custom"] is None
