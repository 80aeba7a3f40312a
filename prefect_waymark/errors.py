"""One error tree for prefect-waymark.

WaymarkError
├── PlanError                 bad plan input (exit code 2); carries every problem found
├── LedgerError               the ledger cannot be opened or written
│   ├── LedgerVersionError    the ledger was written by a newer prefect-waymark
│   ├── BranchBusyError       another run holds the branch's single in_progress slot
│   └── TransitionError       a status change the progress rules do not allow
├── StepError                 a step failed (its command exited non-zero, its callable raised)
│   └── ForbiddenActionError  a step tried an action the goal contract forbids
└── NeedsReview               a step must stop for a person (the run records needs_review)
    └── OutcomeUnknownError   an action's intent was written but no receipt: did it happen?
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BranchBusyError",
    "ForbiddenActionError",
    "LedgerError",
    "LedgerVersionError",
    "NeedsReview",
    "OutcomeUnknownError",
    "PlanError",
    "PlanProblem",
    "StepError",
    "TransitionError",
    "WaymarkError",
]


class WaymarkError(Exception):
    """Base class of every error prefect-waymark raises on purpose."""


@dataclass(frozen=True)
class PlanProblem:
    """One thing wrong with a plan: where it is and what was expected."""

    file: str
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" {self.path}:" if self.path else ""
        return f"{where}:{field} {self.message}"


class PlanError(WaymarkError):
    """The plan is invalid. ``problems`` lists every problem found, each naming file and field."""

    def __init__(self, problems: list[PlanProblem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"invalid plan ({len(problems)} {noun}):\n{lines}")


class LedgerError(WaymarkError):
    """The ledger could not be opened, read or written."""


class LedgerVersionError(LedgerError):
    """The ledger's schema is newer than this version of prefect-waymark understands."""


class BranchBusyError(LedgerError):
    """Another step already holds the single in_progress slot of this (plan, branch)."""

    def __init__(self, plan_id: str, branch: str, holder_step: str, holder_run: str) -> None:
        self.plan_id = plan_id
        self.branch = branch
        self.holder_step = holder_step
        self.holder_run = holder_run
        super().__init__(
            f"plan {plan_id!r} branch {branch!r} already has step {holder_step!r} in_progress "
            f"(run {holder_run}); one step per branch may be in_progress at a time"
        )


class TransitionError(LedgerError):
    """A status change the progress rules forbid (e.g. completed -> in_progress without rerun)."""

    def __init__(
        self, plan_id: str, step_id: str, current: str, wanted: str, hint: str = ""
    ) -> None:
        self.plan_id = plan_id
        self.step_id = step_id
        self.current = current
        self.wanted = wanted
        msg = f"step {step_id!r} of plan {plan_id!r} is {current}; cannot move to {wanted}"
        super().__init__(msg + (f" ({hint})" if hint else ""))


class StepError(WaymarkError):
    """A step's body failed: a non-zero exit code or an exception from its callable."""


class ForbiddenActionError(StepError):
    """A step tried an irreversible action that the goal contract's ``forbidden`` list names."""

    def __init__(self, step_id: str, action: str, rule: str) -> None:
        self.step_id = step_id
        self.action = action
        self.rule = rule
        super().__init__(
            f"step {step_id!r}: action {action!r} is forbidden by the goal contract ({rule!r}); "
            "nothing was done"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.step_id, self.action, self.rule))


class NeedsReview(WaymarkError):
    """Raised inside a step: stop it at needs_review with ``reason`` (the run records it)."""

    def __init__(self, reason: str, details: dict[str, Any] | None = None) -> None:
        self.reason = reason
        self.details = dict(details or {})
        super().__init__(reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.details))


class OutcomeUnknownError(NeedsReview):
    """An action's intent was recorded but no receipt: it may or may not have happened.

    Without a probe to ask the business system, the action is never run again blindly; a person
    records what happened (``waymark receipt``) and the plan continues.
    """

    def __init__(self, reason: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(reason, details)
