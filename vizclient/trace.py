"""Reading trace events (docs/state-and-trace.md, "Trace event types"): no dependencies."""
from __future__ import annotations

QUEUE_TRANSITION = "QueueTransition"     # the trace event of a queue move


def is_queue_transition(event: dict) -> bool:
    return event.get("type") == QUEUE_TRANSITION


def format_queue_transition(event: dict) -> str:
    """One line for a ``QueueTransition`` event, e.g. ``     3.0s default/urgent:
    unschedulablePods -> activeQ (AssignedPodDelete)`` (``-`` for no queue)."""
    return (f'{event["time"]:>8}s {event["pod"]}: {event.get("from") or "-"} -> {event.get("to") or "-"} '
            f'({event.get("event")})')
