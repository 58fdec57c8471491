"""Custom resources (issue 11): objects of other API groups kept as manifests, their actions,
the handle's get_object/list_objects, and their events moving pods as upstream's dynamic
informers do (eventhandlers.go addAllEventHandlers / buildEvtResHandler, v1.28.0)."""
import pytest

from engine import Engine, Scenario, ScenarioError, Trace, US
from engine.framework import interface as fwi
from engine.framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, Code, QueueingHint, Status
from engine.objects import guess_plural
from engine.plugins import registry

API = "example.io/v1"


def node(name):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"}}}


def pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


def ticket(name, ns=None, **spec):
    md = {"name": name}
    if ns:
        md["namespace"] = ns
    return {"apiVersion": API, "kind": "Ticket", "metadata": md, "spec": spec}


class NeedsTicket(fwi.PreFilterPlugin, fwi.EnqueueExtensions):
    """PreFilter rejects a pod until a Ticket named after it exists with spec.ok true."""
    name = "NeedsTicket"

    def __init__(self, handle, actions, hint):
        self.handle = handle
        self.actions = actions
        self.hint = hint

    def pre_filter(self, state, p):
        t = self.handle.get_object(API, "Ticket", p.namespace, p.name)
        if t is None or not (t.get("spec") or {}).get("ok"):
            return None, Status(Code.UnschedulableAndUnresolvable, [f"no ticket for {p.name}"])
        return None, None

    def pre_filter_extensions(self):
        return None

    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent("tickets.v1.example.io", self.actions), self.hint)]


@pytest.fixture
def needs_ticket():
    conf = {"actions": ActionType.Add | ActionType.Update, "hint": None}

    def factory(args, handle):
        return NeedsTicket(handle, conf["actions"], conf["hint"])
    registry.register("NeedsTicket", factory)
    yield conf
    registry.unregister("NeedsTicket")


def doc(objects, actions=(), gates=None):
    d = {"kind": "Scenario", "metadata": {"name": "tickets"},
         "scheduler": {"profiles": [{"plugins": {"preFilter": {"enabled": [{"name": "NeedsTicket"}]}}}]},
         "objects": list(objects), "actions": list(actions)}
    if gates:
        d["simulation"] = {"featureGates": gates}
    return d


def run(d, until=None):
    events = []
    t = Trace()
    t.add_sink(events.append)
    e = Engine(Scenario.from_dict(d), t)
    e.run(until)
    return e, events


def test_plural_guess_follows_apimachinery():
    assert [guess_plural(k) for k in ("PodGroup", "Policy", "Status", "Ticket")] == \
        ["podgroups", "policies", "statuses", "tickets"]


def test_creating_the_object_moves_the_rejected_pod(needs_ticket):
    e, events = run(doc([node("n1"), pod("p")], [{"at": "5s", "create": ticket("p", ok=True)}]))
    moves = [ev for ev in events if ev["type"] == "QueueTransition" and ev["pod"] == "default/p" and ev["event"] == "TicketsAdd"]
    assert len(moves) == 1 and moves[0]["time"] == 5.0 and moves[0]["from"] == "unschedulablePods"
    assert e.state()["pods"]["default/p"]["phase"] == "Running"
    assert e.state()["customObjects"] == {f"{API}/Ticket": {"default/p": ticket("p", ok=True)}}


def test_update_and_delete_and_what_is_registered(needs_ticket):
    needs_ticket["actions"] = ActionType.Update          # Add not registered: no move on create
    e, events = run(doc([node("n1"), pod("p")], [{"at": "2s", "create": ticket("p")},
                                                 {"at": "4s", "update": ticket("p", ok=True)},
                                                 {"at": "6s", "delete": {"apiVersion": API, "kind": "Ticket", "name": "p"}}]))
    labels = [ev["event"] for ev in events if ev["type"] == "QueueTransition" and ev["pod"] == "default/p"
              and ev["from"] == "unschedulablePods"]
    assert labels == ["TicketsUpdate"]
    assert e.state()["pods"]["default/p"]["phase"] == "Running"
    assert e.state()["customObjects"] == {}


def test_actions_on_missing_or_existing_objects_are_skipped(needs_ticket):
    e, events = run(doc([node("n1"), ticket("a")], [{"at": "1s", "create": ticket("a")},
                                                    {"at": "1s", "update": ticket("b")},
                                                    {"at": "1s", "delete": {"apiVersion": API, "kind": "Ticket", "name": "c"}}]))
    skipped = [(ev["action"], ev["reason"]) for ev in events if ev["type"] == "ActionSkipped"]
    assert skipped == [("create", "Ticket default/a already exists"), ("update", "Ticket default/b does not exist"),
                       ("delete", "Ticket default/c does not exist")]


def test_queueing_hint_decides_with_the_manifests(needs_ticket):
    seen = []

    def hint(p, old, new):
        seen.append((p.key, old, new))
        return QueueingHint.QueueAfterBackoff if (new.get("spec") or {}).get("ok") else QueueingHint.QueueSkip
    needs_ticket["hint"] = hint
    e, events = run(doc([node("n1"), pod("p")], [{"at": "2s", "create": ticket("p")},
                                                 {"at": "4s", "update": ticket("p", ok=True)}],
                        gates={"SchedulerQueueingHints": True}))
    assert [(k, o is None, n["spec"]) for k, o, n in seen] == [("default/p", True, {}), ("default/p", False, {"ok": True})]
    moved = [ev["time"] for ev in events if ev["type"] == "QueueTransition" and ev["pod"] == "default/p"
             and ev["from"] == "unschedulablePods"]
    assert moved == [4.0]


def test_handle_lists_and_gets_copies(needs_ticket):
    e, _ = run(doc([node("n1"), ticket("b", ns="x"), ticket("a"), ticket("c")]), until=0)
    fwk = e.frameworks["default-scheduler"]
    assert [m["metadata"]["name"] for m in fwk.list_objects(API, "Ticket")] == ["a", "c", "b"]
    assert [m["metadata"]["name"] for m in fwk.list_objects(API, "Ticket", "x")] == ["b"]
    got = fwk.get_object(API, "Ticket", "default", "a")
    got["spec"]["ok"] = True
    assert fwk.get_object(API, "Ticket", "default", "a")["spec"] == {}
    assert fwk.get_object(API, "Ticket", "default", "zzz") is None


@pytest.mark.parametrize("obj,problem", [
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
     'objects[0].kind: "Deployment" is not one of Node, Pod, PriorityClass, PodDisruptionBudget'),
    ({"apiVersion": "example.io/v1", "kind": "Ticket", "metadata": {"name": "Bad_Name"}},
     "objects[0].metadata.name: \"Bad_Name\" is not a valid name (lower case letters, digits, '-' and '.')"),
    ({"apiVersion": "example.io/v1", "kind": "Ticket", "metadata": {}}, "objects[0].metadata.name: is required"),
    ({"apiVersion": "example.io/beta", "kind": "Ticket", "metadata": {"name": "t"}},
     'objects[0].apiVersion: "example.io/beta" does not end with a version such as v1 or v1alpha1'),
    ({"apiVersion": "example.io/v1", "kind": "ticket", "metadata": {"name": "t"}},
     'objects[0].kind: "ticket" is not a kind name (e.g. PodGroup)'),
    ({"apiVersion": "example.io/v1", "kind": "Ticket", "metadata": {"name": "t", "namespace": "Not OK"}},
     'objects[0].metadata.namespace: "Not OK" is not a valid namespace name'),
])
def test_common_fields_are_validated_with_their_place(obj, problem):
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "x"}, "objects": [obj]})
    assert problem in str(info.value)


def test_duplicates_are_refused_per_kind():
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "x"},
                            "objects": [ticket("a"), ticket("a"), dict(ticket("a"), kind="Other")]})
    assert str(info.value).count("is already defined") == 1


def test_no_custom_objects_key_without_custom_objects():
    e, _ = run({"kind": "Scenario", "metadata": {"name": "plain"}, "objects": [node("n1"), pod("p")]})
    assert "customObjects" not in e.state()


def test_kubectl_import_keeps_custom_resources_and_drops_builtin_kinds():
    import yaml
    from engine.importers import import_files
    dump = {"apiVersion": "v1", "kind": "List", "items": [
        node("n1"),
        {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
         "metadata": {"name": "gang", "namespace": "default", "uid": "u1", "managedFields": [{}]},
         "spec": {"minMember": 2}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}]}
    r = import_files([("dump.yaml", yaml.safe_dump(dump))])
    objs = r.scenario["objects"]
    assert {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": "default"}, "spec": {"minMember": 2}} in objs
    assert not any(o["kind"] == "Deployment" for o in objs)
    assert r.report.kept["PodGroup"] == 1
    assert r.report.fields_ignored["PodGroup"]["metadata.uid"] == 1


def test_export_carries_custom_objects_and_their_future_actions(needs_ticket):
    from engine.export import scenario_at
    d = doc([node("n1"), pod("p"), ticket("q", ok=True)],
            [{"at": "2s", "update": ticket("q", ok=False)},
             {"at": "5s", "create": ticket("p", ok=True)},
             {"at": "6s", "delete": {"apiVersion": API, "kind": "Ticket", "name": "q"}}])
    e, _ = run(d, until=3 * US)
    out = scenario_at(e)
    assert [o["metadata"]["name"] for o in out["objects"] if o["kind"] == "Ticket"] == ["q"]
    assert [o["spec"] for o in out["objects"] if o["kind"] == "Ticket"] == [{"ok": False}]
    assert out["actions"][-1] == {"at": 3, "delete": {"apiVersion": API, "kind": "Ticket", "name": "q",
                                                      "namespace": "default"}}
    full, _ = run(d)
    again = Engine(Scenario.from_dict(out), Trace())
    again.run()
    assert again.state()["pods"]["default/p"]["phase"] == full.state()["pods"]["default/p"]["phase"] == "Running"
    assert again.state()["customObjects"] == full.state()["customObjects"]
