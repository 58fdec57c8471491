"""A keyed binary heap (upstream ``pkg/scheduler/internal/heap/heap.go``).

Items are looked up by key (``namespace/name``); ordering comes from a sort key the owner
computes.  The scheduling queue's keys end with ``QueuedPodInfo.seq`` (the order the queue
timestamps were taken), so they never tie and re-pushing an item never changes its place among
equals.  The heap's own push counter is only a guard for owners whose keys can tie (items are
not comparable); those pop in push order.  Deletion is lazy.
"""
from __future__ import annotations

import heapq
import itertools


class KeyedHeap:
    __slots__ = ("_heap", "_entries", "_sort_key", "_counter")

    def __init__(self, sort_key):
        self._heap: list = []
        self._entries: dict = {}
        self._sort_key = sort_key
        self._counter = itertools.count()

    def __len__(self):
        return len(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def get(self, key):
        e = self._entries.get(key)
        return e[2] if e is not None else None

    def add(self, key, item) -> None:
        """Add, or replace and re-sort an item with the same key."""
        old = self._entries.pop(key, None)
        if old is not None:
            old[3] = False
        entry = [self._sort_key(item), next(self._counter), item, True, key]
        self._entries[key] = entry
        heapq.heappush(self._heap, entry)

    def update(self, key, item) -> None:
        """Replace the item in place, keeping its insertion sequence."""
        old = self._entries.get(key)
        if old is None:
            self.add(key, item)
            return
        old[3] = False
        entry = [self._sort_key(item), old[1], item, True, key]
        self._entries[key] = entry
        heapq.heappush(self._heap, entry)

    def delete(self, key) -> bool:
        e = self._entries.pop(key, None)
        if e is None:
            return False
        e[3] = False
        return True

    def _clean(self):
        h = self._heap
        while h and not h[0][3]:
            heapq.heappop(h)

    def peek(self):
        self._clean()
        return self._heap[0][2] if self._heap else None

    def pop(self):
        self._clean()
        if not self._heap:
            return None
        e = heapq.heappop(self._heap)
        del self._entries[e[4]]
        return e[2]

    def ordered(self) -> list:
        """Every item in pop order (does not change the heap)."""
        return [e[2] for e in sorted(self._entries.values(), key=lambda e: (e[0], e[1]))]

    def items(self):
        return [e[2] for e in self._entries.values()]
