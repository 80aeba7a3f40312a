"""What a ``call:`` step receives: the plan, its step, the workdir and its upstream values."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..plan.spec import PlanSpec, StepSpec
from .actions import Action, Probe

if TYPE_CHECKING:
    from ..ledger import Ledger

__all__ = ["StepContext"]


@dataclass
class StepContext:
    """Passed to a ``call:`` step's function as its only argument."""

    plan: PlanSpec
    step: StepSpec
    workdir: Path
    upstream: dict[str, Any]
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger]
    run_id: str
    attempt: int = 1
    forbidden: list[str] = field(default_factory=list)
    ledger: Ledger | None = None
    executor: str | None = None
    on_tick: Callable[[int], None] | None = None

    @property
    def plan_id(self) -> str:
        return self.plan.plan_id

    @property
    def step_id(self) -> str:
        return self.step.id

    def path(self, relative: str) -> Path:
        """A path inside the workdir."""
        return self.workdir / relative

    def tick(self, every: int = 10) -> None:
        """Mark one unit of work in a long step; every ``every`` ticks the run re-reads the goal
        contract and the step's state refs, and a conflict raises
        :class:`~prefect_waymark.errors.NeedsReview` (the step stops at needs_review)."""
        if self.on_tick is not None:
            self.on_tick(every)

    def action(
        self,
        name: str,
        *,
        key: str | None = None,
        probe: Probe | None = None,
        not_applied_on: tuple[type[BaseException], ...] = (),
    ) -> Action:
        """An irreversible action, done at most once per idempotency key (see ``actions.py``).

        ``key`` defaults to ``plan_id/step_id/name``. ``probe(key)`` asks the business system
        whether an intent without a receipt was applied (True/False/None for unknown); without
        one such an intent stops the step at needs_review. Exceptions of ``not_applied_on``
        types raised by the body mean the effect did not happen (the key may be claimed again).
        """
        return Action(self, name, key=key, probe=probe, not_applied_on=not_applied_on)
