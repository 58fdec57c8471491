"""KeyedHeap.  Mirrors upstream v1.28.0 ``internal/heap/heap_test.go`` (a heap of
(name, value) objects ordered by value), plus the simulator's insertion-sequence tie-break
and ``ordered()``."""
import pytest

from engine.queue.heap import KeyedHeap


def obj(name, value):
    """upstream mkHeapObj."""
    return {"name": name, "value": value}


def make_heap():
    """upstream New(testHeapObjectKeyFunc, compareInts)."""
    return KeyedHeap(lambda it: it["value"])


def push(h, *items):
    for it in items:
        h.add(it["name"], it)


def pop_values(h):
    out = []
    while True:
        it = h.pop()
        if it is None:
            return out
        out.append(it["value"])


def pop_names(h):
    out = []
    while True:
        it = h.pop()
        if it is None:
            return out
        out.append(it["name"])


def test_empty_heap():
    h = make_heap()
    assert len(h) == 0
    assert h.peek() is None
    assert h.pop() is None
    assert h.ordered() == []
    assert h.items() == []
    assert h.get("x") is None
    assert "x" not in h
    assert h.delete("x") is False


def test_heap_basic():
    # heap_test.go TestHeapBasic: 500 items added in descending order; the head is always
    # the smallest so far, and pops come out ascending.
    h = make_heap()
    amount = 500
    for i in range(amount, 0, -1):
        h.add(f"a{i}", obj(f"a{i}", i))
        assert h.peek()["value"] == i
    assert pop_values(h) == list(range(1, amount + 1))


def test_heap_add():
    # heap_test.go TestHeap_Add.
    h = make_heap()
    push(h, obj("foo", 10), obj("bar", 1), obj("baz", 11), obj("zab", 30))
    h.add("foo", obj("foo", 13))  # this updates "foo"
    assert len(h) == 4
    assert h.pop()["value"] == 1
    assert h.pop()["value"] == 11
    assert h.delete("baz") is False  # nothing is deleted (already popped)
    h.add("foo", obj("foo", 14))     # foo is updated
    assert h.pop()["value"] == 14
    assert h.pop()["value"] == 30
    assert len(h) == 0


def test_heap_delete():
    # heap_test.go TestHeap_Delete.
    h = make_heap()
    push(h, obj("foo", 10), obj("bar", 1), obj("bal", 31), obj("baz", 11))
    assert h.delete("bar") is True          # delete the head, by key only
    assert h.pop()["value"] == 10
    push(h, obj("zab", 30), obj("faz", 30))
    n = len(h)
    assert h.delete("non-existent") is False
    assert len(h) == n
    assert h.delete("bal") is True          # delete the tail
    assert h.delete("zab") is True          # one of the items with value 30
    assert h.pop()["value"] == 11
    assert h.pop()["value"] == 30
    assert len(h) == 0


def test_heap_update():
    # heap_test.go TestHeap_Update.
    h = make_heap()
    push(h, obj("foo", 10), obj("bar", 1), obj("bal", 31), obj("baz", 11))
    h.update("baz", obj("baz", 0))           # pushed to the head
    assert h.peek()["name"] == "baz"
    assert h.pop()["value"] == 0
    h.update("bar", obj("bar", 100))         # pushed farther back
    assert h.peek()["name"] == "foo"
    assert pop_names(h) == ["foo", "bal", "bar"]


def test_heap_get():
    # heap_test.go TestHeap_Get / TestHeap_GetByKey: lookup by key only.
    h = make_heap()
    push(h, obj("foo", 10), obj("bar", 1), obj("bal", 31), obj("baz", 11))
    assert h.get("baz")["value"] == 11
    assert "baz" in h
    assert h.get("non-existing") is None
    assert "non-existing" not in h


def test_heap_list():
    # heap_test.go TestHeap_List.
    h = make_heap()
    assert h.items() == []
    items = {"foo": 10, "bar": 1, "bal": 30, "baz": 11, "faz": 30}
    for k, v in items.items():
        h.add(k, obj(k, v))
    got = h.items()
    assert len(got) == len(items)
    for it in got:
        assert items[it["name"]] == it["value"]


def test_heap_len_tracks_add_delete_pop():
    # heap_test.go TestHeapWithRecorder (the count the recorder sees is the heap's length).
    h = make_heap()
    push(h, obj("foo", 10), obj("bar", 1), obj("baz", 100), obj("qux", 11))
    assert len(h) == 4
    h.delete("bar")
    assert len(h) == 3
    h.pop()
    assert len(h) == 2


# --------------------------------------------------------------- simulator additions

def test_equal_values_pop_in_insertion_order():
    # Upstream leaves the order of equal items to the heap's internals; the simulator pops
    # them in the order they were pushed (UPSTREAM-v1.28.md section 2, "SIM").
    h = make_heap()
    push(h, obj("c", 5), obj("a", 5), obj("b", 5), obj("first", 1))
    assert pop_names(h) == ["first", "c", "a", "b"]


def test_add_of_an_existing_key_takes_a_new_sequence():
    # add() re-inserts: among equal values the re-added item now goes last.
    h = make_heap()
    push(h, obj("a", 5), obj("b", 5))
    h.add("a", obj("a", 5))
    assert len(h) == 2
    assert pop_names(h) == ["b", "a"]


def test_update_keeps_the_insertion_sequence():
    # update() replaces in place: among equal values the item keeps its place.
    h = make_heap()
    push(h, obj("a", 5), obj("b", 5), obj("c", 5))
    h.update("a", obj("a", 5))
    h.update("b", obj("b", 5))
    assert h.get("a") is not None
    assert pop_names(h) == ["a", "b", "c"]


def test_update_of_a_missing_key_adds_it():
    h = make_heap()
    h.update("x", obj("x", 3))
    assert len(h) == 1 and h.get("x")["value"] == 3


def test_deleted_head_is_skipped_by_peek_and_pop():
    h = make_heap()
    push(h, obj("a", 1), obj("b", 2))
    h.delete("a")
    assert h.peek()["name"] == "b"
    assert h.pop()["name"] == "b"
    assert h.pop() is None


def test_ordered_is_pop_order_and_leaves_the_heap_unchanged():
    h = make_heap()
    push(h, obj("c", 3), obj("a", 1), obj("b2", 2), obj("b1", 2))
    h.delete("c")
    h.update("a", obj("a", 9))
    assert [it["name"] for it in h.ordered()] == ["b2", "b1", "a"]
    assert len(h) == 3
    assert pop_names(h) == ["b2", "b1", "a"]


@pytest.mark.parametrize("n", [1, 7, 50])
def test_many_items_sorted_with_ties(n):
    h = make_heap()
    for i in range(n):
        h.add(f"p{i}", obj(f"p{i}", (i * 37) % 11))
    expect = [f"p{i}" for i in sorted(range(n), key=lambda i: ((i * 37) % 11, i))]
    assert [it["name"] for it in h.ordered()] == expect
    assert pop_names(h) == expect
