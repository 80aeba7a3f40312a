"""What every step of one run shares: the plan, the ledger, the guards and the review gate."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NeedsReview, StepError
from ..guards.base import GuardContext, Guards, Verdict

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec, StepSpec
    from ..review.gate import ReviewGate

__all__ = ["StepRuntime", "raise_for_verdict"]


class StepRuntime:
    """One run's shared state. A plain class so Prefect does not walk into it."""

    def __init__(
        self,
        plan: PlanSpec,
        workdir: Path,
        ledger: Ledger,
        run_id: str,
        *,
        guards: Guards | None = None,
        gate: ReviewGate | None = None,
        executor: str | None = None,
        forbidden: Callable[[], list[str]] | None = None,
        run_subplan: Callable[..., Any] | None = None,
    ) -> None:
        self.plan = plan
        self.workdir = workdir
        self.ledger = ledger
        self.run_id = run_id
        self.guards = guards or Guards([])
        self.gate = gate
        self.executor = executor  # who runs: recorded in action receipts
        self.context = GuardContext(plan=plan, ledger=ledger, workdir=workdir, run_id=run_id)
        self._forbidden = forbidden
        #: What runs a ``plan:`` step's sub-plan, given the step's context: the ``run_plan``
        #: flow hands it down (a module-level function of flows/, so a step task in another
        #: process receives it by reference; the step task never imports the flow).
        self.run_subplan = run_subplan
        #: step id -> (task run id, attempt, value) its task body last returned in this process:
        #: the scheduler takes the value instead of reading the persisted copy back.
        self.returned: dict[str, tuple[Any, int, Any]] = {}
        self.returned_lock = threading.Lock()

    @property
    def forbidden(self) -> list[str]:
        """The goal contract's forbidden list as last re-read (the plan's own before that)."""
        if self._forbidden is not None:
            return self._forbidden()
        return self.plan.inline_forbidden()

    def tick(self, step: StepSpec, every: int) -> None:
        """``ctx.tick()`` inside a long step: the guards re-check; a stop raises
        :class:`NeedsReview` (or :class:`StepError` for a ref with ``on_error: fail``)."""
        raise_for_verdict(step, self.guards.on_tick(self.context, step, every))

    def after_failed_attempt(self, step: StepSpec, error: str) -> None:
        """After a failed attempt of ``step``, before Prefect retries it: the guards' turn."""
        self.guards.after_failed_attempt(self.context, step, error)

    def __repr__(self) -> str:
        return f"StepRuntime(plan={self.plan.plan_id!r}, run={self.run_id!r})"


def raise_for_verdict(step: StepSpec, verdict: Verdict | None) -> None:
    """A tick's verdict inside the step: nothing, :class:`StepError` for a refusal (a ref with
    ``on_error: fail``), else :class:`NeedsReview`."""
    if verdict is None:
        return
    if verdict.kind == "refuse":
        raise StepError(f"step {step.id!r}: {verdict.reason}")
    raise NeedsReview(verdict.reason, verdict.details)
