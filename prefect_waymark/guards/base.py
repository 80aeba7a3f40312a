"""Hook points of a run where checks decide whether a step may go ahead.

The run calls every guard at the seed's risk points: at run start / resume, before each step,
after each completed step and after a failed attempt. A guard answers ``None`` (go on) or a
:class:`Verdict`: ``review`` stops the step at needs_review (and the plan for a human), ``refuse``
refuses it before it runs (a forbidden action). Guards are built per run by :func:`build_guards`;
the contracts issue adds re-anchoring, the receipts issue adds action checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..plan.spec import StepSpec
    from ..tasks.step_task import StepRuntime

__all__ = ["GuardBase", "StepGuard", "Verdict", "build_guards", "tick_guards"]


@dataclass(frozen=True)
class Verdict:
    kind: Literal["review", "refuse"]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


class StepGuard(Protocol):
    """A guard may also define ``on_run_end(runtime) -> None``: called once when the run's loop
    ends, however it ends (the re-anchoring guard announces review stops there)."""

    def on_run_start(self, runtime: StepRuntime) -> list[tuple[str, Verdict]]:
        """Checks at run start / resume; returns (step_id, verdict) pairs to record."""
        ...

    def before_step(self, runtime: StepRuntime, step: StepSpec) -> Verdict | None:
        """Checks just before ``step`` is claimed."""
        ...

    def after_step(self, runtime: StepRuntime, step: StepSpec, value: Any) -> None:
        """Called after ``step`` completed (e.g. accept the new version of refs it writes)."""
        ...

    def after_failed_attempt(self, runtime: StepRuntime, step: StepSpec, error: str) -> None:
        """Called after a failed attempt, before Prefect retries it."""
        ...


class GuardBase:
    """No-op defaults for every hook: a guard overrides only the hooks it needs."""

    def on_run_start(self, runtime: StepRuntime) -> list[tuple[str, Verdict]]:
        return []

    def before_step(self, runtime: StepRuntime, step: StepSpec) -> Verdict | None:
        return None

    def after_step(self, runtime: StepRuntime, step: StepSpec, value: Any) -> None:
        return None

    def after_failed_attempt(self, runtime: StepRuntime, step: StepSpec, error: str) -> None:
        return None


def build_guards(runtime: StepRuntime) -> list[StepGuard]:
    """The guards of one run, in the order they are asked.

    Re-anchoring comes first: a contract or state conflict stops a step before other checks.
    """
    from .reanchor import ReanchorGuard
    from .receipts import ReceiptConsistencyGuard

    guards: list[StepGuard] = [ReanchorGuard(runtime), ReceiptConsistencyGuard()]
    return guards


def tick_guards(runtime: StepRuntime, step: StepSpec, every: int) -> None:
    """``ctx.tick()`` inside a long step: guards with an ``on_tick`` method re-check; they raise
    :class:`~prefect_waymark.errors.NeedsReview` to stop the step."""
    for guard in runtime.guards:
        hook = getattr(guard, "on_tick", None)
        if hook is not None:
            hook(runtime, step, every)
