"""The reference the page's moment is checked against (tests/visualizer/test_moment.py and the
browser test stepping every lesson): the engine's own ``state()``, taken

- at the end of a unit of work, when the position is where a unit ended;
- otherwise as the position's last event was emitted (a trace sink).

Two facts of the engine's bookkeeping are adjusted, each a rule the page states:

- a pod whose bind completion runs is Binding (``Engine.binding`` drops it before PreBind and
  Bind run, so ``state()`` says Pending meanwhile); it is assumed on its node all along;
- an event the engine emits before carrying it out (Action create Pod, PodDeleted,
  PodRemoved) is shown carried out: the created pod exists (in no queue yet), the deleted pod
  is terminating (or gone, if it was pending, with the queue's count), the removed pod is
  gone, and a preemption victim is counted once deleted.
"""
import copy

from engine import Scenario
from engine.stepper import Stepper

PENDING_KEY = {"activeQ": "active", "backoffQ": "backoff"}


def walk(path, attach=None):
    """(stepper, reference) for the lesson at ``path``; ``attach(stepper)`` runs before the
    first step (the page's recorder); ``reference(p)`` is the state after p events once the
    stepper has revealed them."""
    st = Stepper(Scenario.from_text(path.read_text(encoding="utf-8"), path.name))
    if attach is not None:
        attach(st)
    at_event, at_unit_end, binding_at = {}, {}, {}
    binding = {}

    def sink(e):
        if e["type"] == "CycleEnd" and e.get("result") == "Scheduled":
            binding[e["pod"]] = e["node"]
        elif e["type"] in ("Bound", "BindFailed"):
            binding.pop(e["pod"], None)
        at_event[e["seq"]] = st.engine.state()
        binding_at[e["seq"]] = dict(binding)
    st.trace.add_sink(sink)
    advance = st._advance_unit

    def advance_unit(until=None):
        did = advance(until)
        at_unit_end[len(st.events)] = st.engine.state()
        return did
    st._advance_unit = advance_unit

    def reference(p):
        if p in at_unit_end:
            return at_unit_end[p]
        ref = copy.deepcopy(at_event[p - 1])
        bound = binding_at[p - 1]
        ref["pods"] = {k: dict(v, phase="Binding", nodeName=bound[k]) if v["phase"] == "Pending" and k in bound
                       else v for k, v in ref["pods"].items()}
        e = st.events[p - 1]
        key = e.get("pod")
        if e["type"] == "Action" and e.get("action") == "create" and e.get("kind") == "Pod":
            end = at_unit_end[min(q for q in at_unit_end if q >= p)]
            if e["name"] in end["pods"]:
                ref["pods"][e["name"]] = dict(end["pods"][e["name"]], queue=None)
        elif e["type"] == "PodDeleted" and key in ref["pods"]:
            pod = ref["pods"][key]
            if ref.get("waitingPods"):
                ref["waitingPods"].pop(key, None)
            if pod["phase"] in ("Pending", "Waiting"):   # not bound: removed at once
                del ref["pods"][key]
                for name, keys in ref["queues"].items():
                    if key in keys:
                        keys.remove(key)
                        pending = PENDING_KEY.get(name) or ("gated" if pod["gated"] else "unschedulable")
                        ref["metrics"]["pending_pods"][pending] -= 1
                ref["nominatedPods"] = {n: [k for k in keys if k != key] for n, keys in ref["nominatedPods"].items()}
            else:
                pod["phase"] = "Terminating"
            if e.get("reason") == "Preempted":
                ref["metrics"]["preemption_victims_total"] += 1
        elif e["type"] == "PodRemoved":
            ref["pods"].pop(key, None)
        return ref
    return st, reference
