"""The hook points of a run where guards decide whether a step may go ahead.

Every point where guard code runs, in one line (:data:`HookPoint`)::

    run_start -> (before_step -> [tick ...] -> after_failed_attempt | after_step)* -> run_end

Each hook gets one frozen :class:`GuardContext`. A guard only decides: it answers ``None`` (go
on) or a :class:`Verdict` — ``review`` (stop the step at needs_review, with reasons) or
``refuse`` (refuse it before it runs). Guards never record a stop themselves: the run hands
every verdict to the review gate (:mod:`prefect_waymark.review.gate`), the one place that
records, announces, waits for and applies answers. Guards are assembled in one place, the flow
(:func:`prefect_waymark.flows.run_plan.run_plan`), into a :class:`Guards` set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..ledger.progress_view import PlanView
    from ..ledger.step_state import StepState
    from ..plan.spec import PlanSpec, StepSpec

__all__ = [
    "HOOK_POINTS",
    "GuardBase",
    "GuardContext",
    "Guards",
    "HookPoint",
    "StepGuard",
    "Verdict",
]

HookPoint = Literal[
    "run_start", "before_step", "tick", "after_failed_attempt", "after_step", "run_end"
]
#: Every hook point, in the order a run passes them.
HOOK_POINTS: tuple[HookPoint, ...] = get_args(HookPoint)


@dataclass(frozen=True)
class Verdict:
    """A guard's decision about one step: stop it for review, or refuse it before it runs."""

    kind: Literal["review", "refuse"]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    #: With a refusal: the ``drift`` event to record (what the plan drifted to, and why).
    drift: dict[str, Any] | None = None


@dataclass(frozen=True)
class GuardContext:
    """What every hook of one run sees. ``states`` are the step states read at run start (the
    run re-reads them once after recording run-start verdicts); ``aborted`` says the plan is
    aborted (the review gate stops it; guards need not re-anchor)."""

    plan: PlanSpec
    ledger: Ledger
    workdir: Path
    run_id: str
    states: Mapping[str, StepState] = field(default_factory=dict)
    aborted: bool = False

    @cached_property
    def view(self) -> PlanView:
        """The plan's view of ``states``, built on first use."""
        from ..ledger.progress_view import build_view

        return build_view(self.plan, dict(self.states))


class GuardBase:
    """A guard: every hook point declared, each a no-op; a guard overrides the ones it needs."""

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        """At run start / resume: (step_id, verdict) pairs for the review gate."""
        return []

    def before_step(self, ctx: GuardContext, step: StepSpec) -> Verdict | None:
        """Just before ``step`` is claimed."""
        return None

    def on_tick(self, ctx: GuardContext, step: StepSpec, every: int) -> Verdict | None:
        """``ctx.tick(every)`` inside a long ``call:`` step (the guard counts the ticks)."""
        return None

    def after_failed_attempt(self, ctx: GuardContext, step: StepSpec, error: str) -> None:
        """After a failed attempt, before Prefect retries it."""
        return None

    def after_step(self, ctx: GuardContext, step: StepSpec, value: Any) -> None:
        """After ``step`` completed (e.g. accept the new version of the refs it writes)."""
        return None

    def on_run_end(self, ctx: GuardContext) -> None:
        """Once when the run's loop ends, however it ends."""
        return None


#: Any object with the hooks of :class:`GuardBase` is a guard.
StepGuard = GuardBase


class Guards:
    """The guards of one run, asked in order; the first verdict wins."""

    def __init__(self, guards: Sequence[GuardBase]) -> None:
        self.members: tuple[GuardBase, ...] = tuple(guards)

    def on_run_start(self, ctx: GuardContext, gate: Callable[[str, Verdict], bool]) -> GuardContext:
        """Ask each guard in turn and hand its verdicts to ``gate`` (True when it recorded a
        stop). After a recorded stop the next guard sees the step states re-read; the context
        the run goes on with is returned."""
        for guard in self.members:
            recorded = False
            for step_id, verdict in guard.on_run_start(ctx):
                recorded = gate(step_id, verdict) or recorded
            if recorded:
                ctx = replace(ctx, states=ctx.ledger.step_states(ctx.plan.plan_id))
        return ctx

    def before_step(self, ctx: GuardContext, step: StepSpec) -> Verdict | None:
        for guard in self.members:
            verdict = guard.before_step(ctx, step)
            if verdict is not None:
                return verdict
        return None

    def on_tick(self, ctx: GuardContext, step: StepSpec, every: int) -> Verdict | None:
        for guard in self.members:
            verdict = guard.on_tick(ctx, step, every)
            if verdict is not None:
                return verdict
        return None

    def after_failed_attempt(self, ctx: GuardContext, step: StepSpec, error: str) -> None:
        for guard in self.members:
            guard.after_failed_attempt(ctx, step, error)

    def after_step(self, ctx: GuardContext, step: StepSpec, value: Any) -> None:
        for guard in self.members:
            guard.after_step(ctx, step, value)

    def on_run_end(self, ctx: GuardContext) -> None:
        for guard in self.members:
            guard.on_run_end(ctx)
