"""The moment's queue undo (visualizer.moment._Keys) keeps the order list operations give:
seeded random sequences of undone QueueTransitions, applied to lists the plain way and to
_Keys, end in the same queues."""
import random

from visualizer.moment import _Keys, _undo_queue_transition

QUEUES = ("activeQ", "backoffQ", "unschedulablePods")


def _undo_with_lists(queues, e, restore_source=True):
    pod, src, dst = e["pod"], e.get("from"), e.get("to")
    if dst in queues and pod in queues[dst]:
        queues[dst].remove(pod)
    if restore_source and src in queues and pod not in queues[src]:
        if src == "activeQ":
            queues[src].insert(0, pod)
        elif src == "unschedulablePods":
            queues[src] = sorted(queues[src] + [pod])
        else:
            queues[src].append(pod)


def test_undoing_queue_moves_keeps_the_order_of_list_operations():
    for seed in range(200):
        rng = random.Random(seed)
        pods = [f"default/p{i:03d}" for i in range(rng.randrange(1, 40))]
        start = {"activeQ": [], "backoffQ": [], "unschedulablePods": []}
        for p in pods:
            q = rng.choice(QUEUES + (None,))
            if q:
                start[q].append(p)
        start["unschedulablePods"].sort()
        plain = {k: list(v) for k, v in start.items()}
        fast = {k: _Keys(v, k == "unschedulablePods") for k, v in start.items()}
        for _ in range(rng.randrange(1, 80)):
            e = {"pod": rng.choice(pods), "from": rng.choice(QUEUES + (None,)), "to": rng.choice(QUEUES + (None,))}
            restore = rng.random() < 0.8
            _undo_with_lists(plain, e, restore)
            _undo_queue_transition(fast, e, restore)
        assert {k: v.keys() for k, v in fast.items()} == plain, seed
