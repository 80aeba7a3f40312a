"""Observers of a run: they watch it (e.g. keep a progress bar current) and never decide (the
guards beside them decide); they hear of the same points of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..plan.spec import StepSpec
    from .base import GuardContext

__all__ = ["RunObserver"]


class RunObserver:
    """Every point an observer hears of, each a no-op by default."""

    def run_started(self, ctx: GuardContext) -> None:
        """The run's steps are about to start (after the run-start checks)."""
        return None

    def step_completed(self, ctx: GuardContext, step: StepSpec) -> None:
        """``step`` completed in this run."""
        return None

    def step_failed(self, ctx: GuardContext, step: StepSpec, error: str) -> None:
        """``step`` failed in this run (recorded ``failed``; its retries are spent)."""
        return None

    def run_ended(self, ctx: GuardContext) -> None:
        """The run's loop ended, however it ended."""
        return None
