"""Step statuses and the enum they are made with: standard library only, so that a command that
only reads (``waymark status --json``) loads them without pydantic. :mod:`prefect_waymark.models`
names :class:`StepStatus` among the domain records."""

from __future__ import annotations

from enum import Enum

__all__ = ["StepStatus", "ValueEnum"]


class ValueEnum(str, Enum):
    """A str enum that shows its bare value (``completed``), never ``StepStatus.completed``, in
    texts, markers and JSON (like Python 3.11's ``StrEnum``; this package supports 3.10)."""

    # ``_value_`` (a plain attribute), not ``value`` (a descriptor): the views of a 10,000-step
    # plan format a status ~20,000 times a run.
    def __str__(self) -> str:
        return str(self._value_)

    def __format__(self, spec: str) -> str:
        return str(self._value_).__format__(spec)


class StepStatus(ValueEnum):
    """Progress of one step. ``blocked`` is derived: a pending step behind a failed one."""

    pending = "pending"
    in_progress = "in_progress"
    blocked = "blocked"
    needs_review = "needs_review"
    completed = "completed"
    failed = "failed"
