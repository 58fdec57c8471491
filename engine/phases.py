"""What the loop's event heap holds (engine/scheduler.py): the phases of SPEC §4, in the order
work due at one instant is done (timeline actions, then completions in the order they were
scheduled, then the backoff and the leftover flushes), and the flushes' periods (upstream
``scheduler.go``: flushBackoffQCompleted every second, flushUnschedulablePodsLeftover every 30
s). Below every piece that puts work on the heap."""
from __future__ import annotations

from .quantity import US

PHASE_ACTION, PHASE_COMPLETION, PHASE_FLUSH_BACKOFF, PHASE_FLUSH_LEFTOVER = 1, 2, 3, 4
BACKOFF_FLUSH_PERIOD = 1 * US
LEFTOVER_FLUSH_PERIOD = 30 * US
