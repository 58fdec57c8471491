"""What a control, a form or a session change can fail with (below every module that raises or
catches them: runner, injections, changes, consumers)."""
from __future__ import annotations


class ControlError(ValueError):
    """A control the presenter sent cannot be carried out; ``problems`` says why."""

    def __init__(self, problems, title="That did not work"):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.title = title
        super().__init__("; ".join(self.problems))


class Conflict(ControlError):
    """The session was changed by another process since this one last read it."""


class OverBudget(ControlError):
    """The session would pass its memory budget (``settings.SESSION_MEMORY_BUDGET_MB``)."""
