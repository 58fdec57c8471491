"""Time travel replays the units before the last one with the trace off (Stepper.fast_forward):
a stepper rebuilt at any position, from a checkpoint or from the start, around injections, must
be exactly the one the traced replay gives: the same revealed events, state, moment, page, and
the same run from there on."""
import json
import random

import pytest

from engine import Scenario
from engine.stepper import Stepper
from visualizer import presenters, runner

pytestmark = pytest.mark.django_db

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late"},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}


def _cluster(seed):
    """A busy small cluster: pods of three priorities, preemption, bind delays, flushes."""
    rng = random.Random(seed)
    objects = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {"cpu": str(rng.choice([2, 4])), "memory": "8Gi", "pods": "110"}}}
               for i in range(rng.randrange(4, 9))]
    actions = []
    for i in range(rng.randrange(40, 80)):
        spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": rng.choice(["500m", "1", "2", "3"])}}}],
                "priority": rng.choice([0, 5, 10]), "terminationGracePeriodSeconds": rng.choice([0, 2])}
        actions.append({"at": f"{rng.randrange(0, 20)}s", "create": {"apiVersion": "v1", "kind": "Pod",
                                                                     "metadata": {"name": f"p{i}"}, "spec": spec}})
    actions.sort(key=lambda a: int(a["at"][:-1]))
    return json.dumps({"kind": "Scenario", "metadata": {"name": f"ff-{seed}"}, "objects": objects,
                       "actions": actions, "simulation": {"bindDuration": rng.choice(["0s", "300ms"])}})


def _shown(live):
    st = live.stepper
    return (st.position, list(st.revealed()), json.dumps(st.state(), sort_keys=True, default=str),
            [(k, h.replace(live.presenter_token, "P").replace(live.follower_token, "F"))
             for k, h in presenters.render_panels(live)])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", [{"min_events": 300, "overhead": 0}, {"min_events": 10 ** 12}],
                         ids=["checkpoints", "from the start"])
def test_a_fast_forwarded_replay_is_the_traced_replay(seed, options, monkeypatch):
    monkeypatch.setattr(runner, "CHECKPOINT_OPTIONS", options)
    session = runner.create_session(_cluster(seed), "ff.yaml")
    runner.control(session.pk, {"action": "run-until", "until": 6})
    runner.control(session.pk, {"action": "inject", "form": "yaml", "verb": "create", "manifest": json.dumps(NODE)})
    runner.control(session.pk, {"action": "run-until", "until": 40})
    with runner.open_live(session.pk) as live:
        head = live.high_water
        live.presenter_token, live.follower_token = session.presenter_token, session.follower_token
    rng = random.Random(seed)
    ran = []
    real = Stepper.fast_forward

    def counting(self, *a):
        n = real(self, *a)
        ran.append(n)
        return n
    monkeypatch.setattr(Stepper, "fast_forward", counting)
    for target in sorted(rng.sample(range(1, head), 12)) + [head - 1, head // 2]:
        runner.control(session.pk, {"action": "jump", "position": target})
        with runner.open_live(session.pk) as live:
            live.presenter_token, live.follower_token = session.presenter_token, session.follower_token
            fast = _shown(live)
            # the same position replayed with the trace on throughout
            live.stepper = runner.rebuild(live.scenario, live.injections, target, checkpoints=live.checkpointer,
                                          timeline=live.timeline)
            slow = _shown(live)
            assert fast == slow
            # and the run goes on alike from both: two cycles further, event by event
            a = runner.rebuild(live.scenario, live.injections, target, checkpoints=live.checkpointer,
                               timeline=live.timeline, unit_ends=live.head.unit_ends)
            b = runner.rebuild(live.scenario, live.injections, target, checkpoints=live.checkpointer,
                               timeline=live.timeline)
            for _ in range(2):
                assert a.step_cycle() == b.step_cycle()
            assert a.state() == b.state()
        runner.reset()
    assert sum(ran) > 20, ran         # units were replayed with the trace off


def test_units_run_uncounted_turn_the_fast_forward_off():
    sc = Scenario.from_text(_cluster(1), "ff.yaml")
    st = Stepper(sc)
    st.step_cycle()
    assert st.unit_ends is not None and len(st.unit_ends) > 0
    st.run_to_end()
    assert st.unit_ends is None
    other = Stepper(sc)
    assert other.fast_forward(st.events, st.unit_ends, len(st.events)) == 0
