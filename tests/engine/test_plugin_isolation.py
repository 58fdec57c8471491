"""A plugin's bug is a finding, not a crash (issue 9; engine.framework.guard).

Upstream turns an error a plugin returns into an Error status (RunFilterPlugins: "running %q
filter plugin: %w"), the cycle fails and handleSchedulingFailure requeues the pod.  Here an
out-of-tree plugin that raises, or returns what its extension point does not return, gets the
same treatment, and the trace shows the exception and the plugin's own frames.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine import Engine, Scenario, Trace
from engine.framework import Code, Status
from engine.framework.interface import (ClusterEvent, ClusterEventWithHint, EnqueueExtensions,
                                        FilterPlugin, GVK, ActionType, PermitPlugin,
                                        PostBindPlugin, PreFilterPlugin, QueueSortPlugin,
                                        ReservePlugin, ScorePlugin)
from engine.plugins import registry

ROOT = Path(__file__).resolve().parents[2]
THIS = os.path.basename(__file__)


def nodes(*names, cpu="4"):
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
             "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}} for n in names]


def pod(name, cpu="100m", priority=None):
    m = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
    if priority is not None:
        m["spec"]["priority"] = priority
    return m


def run(plugin_cls, points, objects, *, gates=None, actions=(), until=None):
    """Register ``plugin_cls`` as an out-of-tree plugin, enable it at ``points`` and run."""
    registry.register(plugin_cls.name, lambda args, handle: plugin_cls())
    try:
        d = {"kind": "Scenario", "metadata": {"name": "t"},
             "scheduler": {"profiles": [{"plugins": {p: {"enabled": [{"name": plugin_cls.name}]} for p in points}}]},
             "objects": objects}
        if gates:
            d["simulation"] = {"featureGates": gates}
        if actions:
            d["actions"] = list(actions)
        events = []
        tr = Trace()
        tr.add_sink(events.append)
        eng = Engine(Scenario.from_dict(d), tr)
        eng.run(until)
        return eng, events
    finally:
        registry.unregister(plugin_cls.name)


def of(events, type_, **match):
    return [e for e in events if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


# ----------------------------------------------------------------------------- Filter

class RaisesOnN2(FilterPlugin):
    name = "RaisesOnN2"

    def filter(self, state, pod, node_info):
        if node_info.name == "n2":
            raise ValueError(f"cannot judge {node_info.name}")
        return None


def test_filter_exception_becomes_the_calls_error_status_and_the_cycle_fails():
    eng, events = run(RaisesOnN2, ["filter"], nodes("n1", "n2") + [pod("a")], until=0)
    [bad] = of(events, "PluginResult", plugin="RaisesOnN2", node="n2")
    assert bad["code"] == "Error"
    assert bad["error"]["type"] == "ValueError" and bad["error"]["message"] == "cannot judge n2"
    # the plugin's own frame, no engine frame
    assert len(bad["error"]["frames"]) == 1 and THIS in bad["error"]["frames"][0]
    assert bad["error"]["frames"][0].endswith(" in filter")
    assert bad["reasons"] == [f"ValueError: cannot judge n2 at {bad['error']['frames'][0].split(' in ')[0]}"]
    [end] = of(events, "CycleEnd", pod="default/a")
    assert end["result"] == "Error" and end["message"].startswith("running 'RaisesOnN2' filter plugin: ValueError")
    # the pod went back to a queue as a failed attempt, and the engine carries on
    assert of(events, "QueueTransition", pod="default/a", event="ScheduleAttemptFailure")
    st = eng.state()
    assert st["pods"]["default/a"]["queue"] in ("unschedulablePods", "backoffQ")
    [(err, pod_key, cycle)] = eng.plugin_errors()
    assert (err.plugin, err.point, err.node, pod_key, cycle) == ("RaisesOnN2", "Filter", "n2", "default/a", 1)


def test_other_pods_still_schedule_when_the_plugin_passes_them():
    class OnlyA(FilterPlugin):
        name = "OnlyA"

        def filter(self, state, pod, node_info):
            if pod.name == "a":
                return {}["missing"]
            return None
    eng, events = run(OnlyA, ["filter"], nodes("n1") + [pod("a"), pod("b")], until=0)
    assert eng.state()["pods"]["default/b"]["phase"] == "Running"
    assert of(events, "CycleEnd", pod="default/a")[0]["result"] == "Error"


@pytest.mark.parametrize("value,why", [
    (False, "Filter returned False (bool); expected a Status or None"),
    ("ok", "Filter returned 'ok' (str); expected a Status or None"),
    ((None, None), "Filter returned (None, None) (tuple); expected a Status or None"),
])
def test_filter_returning_the_wrong_type_is_an_error(value, why):
    class Wrong(FilterPlugin):
        name = "Wrong"

        def filter(self, state, pod, node_info):
            return value
    _, events = run(Wrong, ["filter"], nodes("n1") + [pod("a")], until=0)
    [r] = of(events, "PluginResult", plugin="Wrong")
    assert r["code"] == "Error" and r["reasons"] == [why]
    assert (r["error"]["type"], r["error"]["message"]) == ("InvalidReturn", why)
    [where] = r["error"]["frames"]                    # where the method that returned it is defined
    assert THIS in where and where.endswith(" in filter")


# ----------------------------------------------------------------------------- Score

class FloatScore(ScorePlugin):
    name = "FloatScore"

    def score(self, state, pod, node_name):
        return (0.5 if node_name == "n2" else 10), None


def test_a_float_score_is_an_error_on_that_node():
    _, events = run(FloatScore, ["score"], nodes("n1", "n2") + [pod("a")], until=0)
    [r] = of(events, "PluginResult", plugin="FloatScore", point="Score")
    assert (r["node"], r["code"]) == ("n2", "Error")
    assert r["reasons"] == ["Score returned (0.5, None): 0.5 (float) is not an int"]
    [end] = of(events, "CycleEnd", pod="default/a")
    assert end["result"] == "Error" and "plugin 'FloatScore' failed with" in end["message"]


def test_a_wrong_length_tuple_from_score_is_an_error():
    class Triple(ScorePlugin):
        name = "Triple"

        def score(self, state, pod, node_name):
            return 1, None, "extra"
    _, events = run(Triple, ["score"], nodes("n1", "n2") + [pod("a")], until=0)
    [r] = of(events, "PluginResult", plugin="Triple", point="Score")
    assert r["code"] == "Error" and "expected a pair (int, Status or None)" in r["reasons"][0]


# ----------------------------------------------------------------------------- other points

def test_pre_filter_returning_none_instead_of_a_pair():
    class Bare(PreFilterPlugin):
        name = "Bare"

        def pre_filter(self, state, pod):
            return None
    _, events = run(Bare, ["preFilter"], nodes("n1") + [pod("a")], until=0)
    [r] = of(events, "PluginResult", plugin="Bare", point="PreFilter")
    assert r["code"] == "Error" and "expected a pair (PreFilterResult or None, Status or None)" in r["reasons"][0]
    assert of(events, "CycleEnd", pod="default/a")[0]["result"] == "Error"


def test_reserve_exception_unreserves_and_requeues():
    calls = []

    class BadReserve(ReservePlugin):
        name = "BadReserve"

        def reserve(self, state, pod, node_name):
            raise RuntimeError("no room in my ledger")

        def unreserve(self, state, pod, node_name):
            calls.append(pod.key)
            raise KeyError("also broken")
    eng, events = run(BadReserve, ["reserve"], nodes("n1") + [pod("a")], until=0)
    [r] = of(events, "PluginResult", plugin="BadReserve", point="Reserve")
    assert r["code"] == "Error" and r["error"]["type"] == "RuntimeError"
    assert calls == ["default/a"]
    [pe] = of(events, "PluginError", plugin="BadReserve")
    assert pe["point"] == "Unreserve" and pe["error"]["type"] == "KeyError"
    assert eng.state()["pods"]["default/a"]["phase"] == "Pending"


def test_permit_returning_a_bare_status():
    class BarePermit(PermitPlugin):
        name = "BarePermit"

        def permit(self, state, pod, node_name):
            return Status(Code.Success)
    _, events = run(BarePermit, ["permit"], nodes("n1") + [pod("a")], until=0)
    [r] = of(events, "PluginResult", plugin="BarePermit", point="Permit")
    assert r["code"] == "Error" and "expected a pair (Status or None, timeout seconds or None)" in r["reasons"][0]


def test_post_bind_exception_is_recorded_and_the_pod_stays_bound():
    class Loud(PostBindPlugin):
        name = "Loud"

        def post_bind(self, state, pod, node_name):
            raise OSError("webhook down")
    eng, events = run(Loud, ["postBind"], nodes("n1") + [pod("a")], until=1)
    [r] = of(events, "PluginResult", plugin="Loud", point="PostBind")
    assert r["code"] == "Error" and r["error"]["message"] == "webhook down"
    assert eng.state()["pods"]["default/a"]["phase"] == "Running"


def test_queue_sort_exception_orders_nothing_and_is_recorded():
    class BadSort(QueueSortPlugin):
        name = "BadSort"

        def less(self, a, b):
            if "b" in (a.pod.name, b.pod.name):
                raise TypeError("cannot compare")
            return a.pod.priority > b.pod.priority
    d_objects = nodes("n1") + [pod("a"), pod("b"), pod("c")]
    registry.register("BadSort", lambda args, handle: BadSort())
    try:
        d = {"kind": "Scenario", "metadata": {"name": "t"},
             "scheduler": {"profiles": [{"plugins": {"queueSort": {"enabled": [{"name": "BadSort"}],
                                                                   "disabled": [{"name": "*"}]}}}]},
             "objects": d_objects}
        events = []
        tr = Trace()
        tr.add_sink(events.append)
        eng = Engine(Scenario.from_dict(d), tr)
        eng.run()
    finally:
        registry.unregister("BadSort")
    assert {p["phase"] for p in eng.state()["pods"].values()} == {"Running"}
    errs = of(events, "PluginError", plugin="BadSort")
    assert errs and errs[0]["point"] == "QueueSort" and errs[0]["error"]["type"] == "TypeError"


class HintRaises(FilterPlugin, EnqueueExtensions):
    name = "HintRaises"

    def filter(self, state, pod, node_info):
        if node_info.node.labels.get("ok") != "yes":
            return Status(Code.Unschedulable, ["needs ok=yes"])
        return None

    def events_to_register(self):
        def hint(pod, old, new):
            raise AttributeError("hint broke")
        return [ClusterEventWithHint(ClusterEvent(GVK.Node, ActionType.Add), hint)]


def test_a_raising_queueing_hint_means_queue_after_backoff():
    new_node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "labels": {"ok": "yes"}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    eng, events = run(HintRaises, ["filter"], nodes("n1") + [pod("a")],
                      gates={"SchedulerQueueingHints": True}, actions=[{"at": "3s", "create": new_node}])
    [pe] = of(events, "PluginError", plugin="HintRaises")
    assert pe["point"] == "QueueingHint" and pe["error"]["message"] == "hint broke"
    assert eng.state()["pods"]["default/a"]["nodeName"] == "n2"


def test_events_to_register_failure_refuses_the_profile_with_the_place():
    class BadEvents(FilterPlugin, EnqueueExtensions):
        name = "BadEvents"

        def filter(self, state, pod, node_info):
            return None

        def events_to_register(self):
            return ["NodeAdd"]
    from engine.errors import ConfigError
    with pytest.raises(ConfigError) as info:
        run(BadEvents, ["filter"], nodes("n1"))
    assert "plugin 'BadEvents': EventsToRegister failed: TypeError: events_to_register returned ['NodeAdd']" in str(info.value)


def test_in_tree_plugins_are_not_guarded():
    from engine.framework.guard import GuardedPlugin
    d = {"kind": "Scenario", "metadata": {"name": "t"}, "objects": nodes("n1")}
    eng = Engine(Scenario.from_dict(d), Trace(enabled=False))
    fwk = next(iter(eng.frameworks.values()))
    assert not any(isinstance(p, GuardedPlugin) for p in fwk.filter_plugins)


# ----------------------------------------------------------------------------- the CLI

PLUGIN_FILE = '''
from engine.framework.interface import FilterPlugin


def helper(name):
    return {"b": 1}[name]


class Flaky(FilterPlugin):
    name = "Flaky"

    def filter(self, state, pod, node_info):
        helper(pod.name)
        return None


PLUGINS = {"Flaky": lambda args, handle: Flaky()}
'''


def test_cli_finishes_the_run_and_exits_3_with_a_summary(tmp_path):
    (tmp_path / "flaky.py").write_text(textwrap.dedent(PLUGIN_FILE))
    sc = {"kind": "Scenario", "metadata": {"name": "t"},
          "scheduler": {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Flaky"}]}}}]},
          "objects": nodes("n1", "n2") + [pod("a"), pod("b")]}
    (tmp_path / "s.yaml").write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "engine", "run", "s.yaml", "--plugins", "flaky.py", "--state", "-"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 3, r.stderr
    state = json.loads(r.stdout)                      # the run finished and wrote its state
    assert state["pods"]["default/b"]["phase"] == "Running"
    lines = r.stderr.splitlines()
    assert lines[0].startswith("python -m engine: ") and "out-of-tree plugin call" in lines[0]
    assert lines[1] == "  - Flaky Filter: KeyError: 'a' (1x; first: pod default/a, cycle 1, node n1)"
    assert lines[2:4] == ["      flaky.py:13 in filter", "      flaky.py:6 in helper"]
    assert "Traceback" not in r.stderr
