"""Nominator.  Mirrors the nominator parts of upstream v1.28.0
``internal/queue/scheduling_queue_test.go`` (TestPriorityQueue_Add's nominator checks,
TestPriorityQueue_NominatedPodsForNode, TestPriorityQueue_NominatedPodDeleted,
TestPriorityQueue_UpdateNominatedPodForNode) and UPSTREAM-v1.28.md section 5.

Upstream keys nominations by UID; the engine by ``namespace/name``."""
import pytest

from engine.framework.interface import MODE_NOOP, MODE_OVERRIDE, NominatingInfo
from engine.queue.nominator import Nominator
from tests.engine.queue.queue_helpers import HIGH, LOW, MEDIUM, make_qpod, updated


def override(node):
    return NominatingInfo(node, MODE_OVERRIDE)


def noop():
    return NominatingInfo("", MODE_NOOP)


# Upstream's fixtures.
def hpp():
    return make_qpod("hpp", "ns1", HIGH).obj()


def hpp_nominated():
    return make_qpod("hpp", "ns1", HIGH).nominated_node_name("node1").obj()


def mpp():
    return make_qpod("mpp", "ns2", MEDIUM).annotation("annot2", "val2").nominated_node_name("node1").obj()


def up():
    return (make_qpod("up", "ns1", LOW).annotation("annot2", "val2").nominated_node_name("node1")
            .condition_unschedulable().obj())


def state(n):
    """(nominatedPodToNode, {node: [keys]}) for comparisons like upstream's cmp.Diff."""
    return dict(n.nominated_pod_to_node), {node: [p.key for p in pods] for node, pods in n.nominated_pods.items()}


# --------------------------------------------------------------------- add

def test_add_noop_uses_status_nominated_node_name():
    # TestPriorityQueue_Add: pods with status.nominatedNodeName are nominated, in add order.
    n = Nominator()
    m, u, h = mpp(), up(), hpp()
    for p in (m, u, h):
        n.add_nominated_pod(p, None)
    assert state(n) == ({"ns2/mpp": "node1", "ns1/up": "node1"}, {"node1": ["ns2/mpp", "ns1/up"]})
    assert n.nominated_node_of("ns1/hpp") is None


def test_add_noop_mode_info_is_like_nil():
    n = Nominator()
    n.add_nominated_pod(mpp(), noop())
    n.add_nominated_pod(hpp(), noop())
    assert state(n) == ({"ns2/mpp": "node1"}, {"node1": ["ns2/mpp"]})


def test_add_override_wins_over_status():
    # TestPriorityQueue_UpdateNominatedPodForNode: Override nominates to a node other than
    # the one in the pod's status (or to a node when the status names none).
    n = Nominator()
    n.add_nominated_pod(mpp(), None)
    n.add_nominated_pod(up(), override("node5"))
    n.add_nominated_pod(hpp(), override("node2"))
    assert state(n) == (
        {"ns2/mpp": "node1", "ns1/hpp": "node2", "ns1/up": "node5"},
        {"node1": ["ns2/mpp"], "node2": ["ns1/hpp"], "node5": ["ns1/up"]})
    # Re-nominating moves the pod (the old entry is always deleted first).
    n.add_nominated_pod(hpp(), override("node4"))
    assert state(n) == (
        {"ns2/mpp": "node1", "ns1/hpp": "node4", "ns1/up": "node5"},
        {"node1": ["ns2/mpp"], "node4": ["ns1/hpp"], "node5": ["ns1/up"]})


def test_add_override_with_empty_name_clears():
    # UPSTREAM-v1.28.md section 5: Override "" is the scheduler's "clear nomination"; upstream
    # stores the pod under node "" (no node has that name), the engine drops it.
    n = Nominator()
    n.add_nominated_pod(mpp(), None)
    n.add_nominated_pod(mpp(), override(""))
    assert state(n) == ({}, {})
    assert n.nominated_pods_for_node("") == []


def test_add_again_moves_the_pod_to_the_end_of_its_node_list():
    # addNominatedPodUnlocked deletes first, then appends.
    n = Nominator()
    a = make_qpod("a").nominated_node_name("node1").obj()
    b = make_qpod("b").nominated_node_name("node1").obj()
    n.add_nominated_pod(a, None)
    n.add_nominated_pod(b, None)
    n.add_nominated_pod(a, None)
    assert state(n)[1] == {"node1": ["default/b", "default/a"]}
    assert len(n.nominated_pods_for_node("node1")) == 2


def test_add_same_pod_twice_keeps_one_entry():
    n = Nominator()
    p = mpp()
    n.add_nominated_pod(p, None)
    n.add_nominated_pod(p, None)
    assert state(n) == ({"ns2/mpp": "node1"}, {"node1": ["ns2/mpp"]})


def test_add_stores_the_latest_pod_object():
    n = Nominator()
    n.add_nominated_pod(mpp(), None)
    newer = updated(mpp(), **{"metadata.annotations.x": "y"})
    n.add_nominated_pod(newer, None)
    assert n.nominated_pods_for_node("node1")[0] is newer


# --------------------------------------------------------------------- pod lister

def test_pod_lister_alive_pod_is_nominated():
    # TestPriorityQueue_NominatedPodDeleted "alive pod gets added into PodNominator".
    p = mpp()
    n = Nominator(pod_lister={p.key: p}.get)
    n.add_nominated_pod(p, None)
    assert len(n.nominated_pods_for_node("node1")) == 1


def test_pod_lister_refuses_a_deleted_pod():
    # TestPriorityQueue_NominatedPodDeleted "deleted pod shouldn't be added into PodNominator"
    # and TestPriorityQueue_UpdateNominatedPodForNode "nominate a pod that was deleted".
    p = hpp_nominated()
    n = Nominator(pod_lister={}.get)
    n.add_nominated_pod(p, None)
    assert n.nominated_pods_for_node("node1") == []
    n.add_nominated_pod(p, override("node1"))
    assert state(n) == ({}, {})


def test_pod_lister_without_nominated_node_name():
    # TestPriorityQueue_NominatedPodDeleted "pod without .status.nominatedPodName specified
    # shouldn't be added into PodNominator".
    p = hpp()
    n = Nominator(pod_lister={p.key: p}.get)
    n.add_nominated_pod(p, None)
    assert state(n) == ({}, {})


def test_pod_lister_refuses_an_assigned_pod():
    # TestPriorityQueue_UpdateNominatedPodForNode: "nominate a pod that was already scheduled
    # in the informer cache. Nothing should change."  The lister's copy is bound; the copy
    # handed to the nominator is not.
    sp_unbound = make_qpod("sp", "ns1").obj()
    sp_bound = make_qpod("sp", "ns1").node("foo").obj()
    n = Nominator(pod_lister={sp_bound.key: sp_bound}.get)
    n.add_nominated_pod(sp_unbound, override("node1"))
    assert state(n) == ({}, {})


def test_pod_lister_refusal_still_removes_an_older_nomination():
    # The old entry is deleted before the lister is consulted.
    p = mpp()
    pods = {p.key: p}
    n = Nominator(pod_lister=pods.get)
    n.add_nominated_pod(p, None)
    del pods[p.key]
    n.add_nominated_pod(p, override("node2"))
    assert state(n) == ({}, {})


# --------------------------------------------------------------------- delete

def test_delete_is_order_preserving():
    n = Nominator()
    ps = [make_qpod(f"p{i}").nominated_node_name("node1").obj() for i in range(4)]
    for p in ps:
        n.add_nominated_pod(p, None)
    n.delete_nominated_pod_if_exists(ps[1])
    assert state(n)[1] == {"node1": ["default/p0", "default/p2", "default/p3"]}
    n.delete_nominated_pod_if_exists(ps[0])
    assert state(n)[1] == {"node1": ["default/p2", "default/p3"]}


def test_delete_drops_empty_node_entries():
    # TestPriorityQueue_UpdateNominatedPodForNode: deleting a pod nominated only in memory.
    n = Nominator()
    n.add_nominated_pod(mpp(), None)
    n.add_nominated_pod(up(), override("node5"))
    n.add_nominated_pod(hpp(), override("node4"))
    n.delete_nominated_pod_if_exists(hpp())
    assert state(n) == ({"ns2/mpp": "node1", "ns1/up": "node5"},
                        {"node1": ["ns2/mpp"], "node5": ["ns1/up"]})
    assert "node4" not in n.nominated_pods


def test_delete_of_an_unknown_pod_is_a_no_op():
    n = Nominator()
    n.add_nominated_pod(mpp(), None)
    n.delete_nominated_pod_if_exists(hpp())
    assert state(n) == ({"ns2/mpp": "node1"}, {"node1": ["ns2/mpp"]})


# --------------------------------------------------------------------- update

def test_update_keeps_an_in_memory_nomination_when_neither_status_has_one():
    # updateNominatedPodUnlocked: "an Update event with no NominatedNode present is received
    # right after a node is reserved for this pod in memory" -> keep reserving it.
    n = Nominator()
    old = hpp()
    n.add_nominated_pod(old, override("node2"))
    new = updated(old, **{"metadata.labels.x": "y"})
    n.update_nominated_pod(old, new)
    assert state(n) == ({"ns1/hpp": "node2"}, {"node2": ["ns1/hpp"]})
    assert n.nominated_pods_for_node("node2")[0] is new


def test_update_adds_a_nomination_from_the_new_status():
    # (1) NominatedNode info is added.
    n = Nominator()
    old = hpp()
    new = hpp_nominated()
    n.update_nominated_pod(old, new)
    assert state(n) == ({"ns1/hpp": "node1"}, {"node1": ["ns1/hpp"]})


def test_update_changes_the_nomination_to_the_new_status():
    # (2) NominatedNode info is updated: the status wins over the in-memory node.
    n = Nominator()
    old = hpp_nominated()
    n.add_nominated_pod(old, override("node9"))
    new = updated(old, **{"status.nominatedNodeName": "node3"})
    n.update_nominated_pod(old, new)
    assert state(n) == ({"ns1/hpp": "node3"}, {"node3": ["ns1/hpp"]})


def test_update_removes_the_nomination_when_the_status_clears_it():
    # (3) NominatedNode info is removed.
    n = Nominator()
    old = hpp_nominated()
    n.add_nominated_pod(old, None)
    new = updated(old, **{"status.nominatedNodeName": None})
    assert new.nominated_node_name == ""
    n.update_nominated_pod(old, new)
    assert state(n) == ({}, {})


def test_update_of_a_never_nominated_pod_stays_unnominated():
    n = Nominator()
    old = hpp()
    n.update_nominated_pod(old, updated(old, **{"metadata.labels.x": "y"}))
    assert state(n) == ({}, {})


def test_update_moves_the_pod_to_the_end_of_its_node_list():
    n = Nominator()
    a = make_qpod("a").nominated_node_name("node1").obj()
    b = make_qpod("b").nominated_node_name("node1").obj()
    n.add_nominated_pod(a, None)
    n.add_nominated_pod(b, None)
    n.update_nominated_pod(a, updated(a, **{"metadata.labels.x": "y"}))
    assert state(n)[1] == {"node1": ["default/b", "default/a"]}


# --------------------------------------------------------------------- views

def test_nominated_pods_for_node_returns_a_copy():
    # TestPriorityQueue_NominatedPodsForNode: callers may mutate the returned list.
    n = Nominator()
    m, u, h = mpp(), up(), hpp()
    for p in (m, u, h):
        n.add_nominated_pod(p, None)
    got = n.nominated_pods_for_node("node1")
    assert [p.key for p in got] == ["ns2/mpp", "ns1/up"]
    got.clear()
    assert len(n.nominated_pods_for_node("node1")) == 2
    assert n.nominated_pods_for_node("node2") == []


@pytest.mark.parametrize("key,node", [("ns2/mpp", "node1"), ("ns1/hpp", None)])
def test_nominated_node_of(key, node):
    n = Nominator()
    n.add_nominated_pod(mpp(), None)
    n.add_nominated_pod(hpp(), None)
    assert n.nominated_node_of(key) == node
