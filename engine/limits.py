"""The engine's bounds on what a scenario may ask for, in one place (docs/limits.md lists them
with the server's own).

Every one is checked *before* the work it bounds is done: a text is measured before it is
parsed, a parsed document's values are counted while it is composed, and a count in an
imported format (a scheduler_perf ``createNodes`` count, a ``createPodSets`` count, ...) is
checked before a single object is generated, so a short file cannot ask for unbounded time or
memory.
"""
from __future__ import annotations

from .yamlload import MAX_BYTES, MAX_DEPTH, MAX_DOCUMENTS, MAX_NODES

#: Cluster objects a scenario may hold: its ``objects`` plus the objects its ``create`` actions
#: make (nodes, pods, and every other kind). An importer checks its counts against the same
#: number (a caller may pass a smaller one, as the web app does: ``SESSION_MAX_OBJECTS``).
MAX_SCENARIO_OBJECTS = 200_000

#: The values (mappings, lists, keys and scalars, as engine/yamlload.py counts them) an object
#: an importer generates may hold on average: a generated object repeats its template, so a
#: large template times a large count is bounded too (upstream's templates hold 10 to 60).
MAX_VALUES_PER_OBJECT = 100

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_DOCUMENTS", "MAX_NODES", "MAX_SCENARIO_OBJECTS", "MAX_VALUES_PER_OBJECT",
           "too_many_objects"]


def too_many_objects(count: int, limit: int) -> str:
    """The message for a scenario (or an import) that would hold ``count`` > ``limit`` objects."""
    return (f"would make {count:,} cluster objects; at most {limit:,} are allowed "
            f"(objects plus the objects the actions create)")
