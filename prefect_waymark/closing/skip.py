"""``waymark skip``: leave a step out on purpose, with a reason.

The ``step_skipped`` event folds to ``completed`` with :attr:`StepState.skipped` set to the reason,
no result and no outputs (ledger/step_state.py): the steps after it go on, and a step that
depends on it gets ``None`` as its upstream value. Only a pending, blocked or failed step can be
skipped; every other status is refused with what to do instead — except a step left in progress
by a run that is gone (its hold's lease ran out, or its process here is dead), which is recorded
interrupted first, as a run's take-over would, then skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CloseError, LedgerError, TransitionError
from ..ledger import Ledger
from ..ledger.event_writers import record_step_interrupted
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.step_state import StepState
from ..plan.spec import PlanSpec
from ..text.commands import review_command
from ..text.lists import capped_list
from .closed import check_not_closed

__all__ = ["SkipOutcome", "skip_step"]


def _refusal(plan: PlanSpec, step_id: str, st: StepState) -> str | None:
    """Why ``st`` cannot be skipped and what to do instead; ``None`` if it can."""
    src = plan.source
    if st.status == "in_progress":
        since = f" since {st.last_at[:19].replace('T', ' ')}" if st.last_at else ""
        if st.run_id and st.run_id.startswith("agent:"):
            who = st.run_id.removeprefix("agent:")
            how = (
                f"its executor ends it (`waymark done|fail {src} {step_id} --executor {who}`), "
                f"or end it for them: `waymark fail {src} {step_id} --executor {who} --reason "
                '"..."`; then skip it'
            )
        else:
            how = f"let it end (`waymark status {src}` shows it), then skip it if it failed"
        return (
            f"step {step_id!r} is in progress (run {st.run_id}{since}, still alive); a running "
            f"step is not skipped: {how}"
        )
    if st.status == "needs_review":
        return (
            f"step {step_id!r} needs review ({st.review_reason}); answer it first: "
            f"`{review_command(src, step_id)}` (a step that is "
            "then pending or failed can be skipped)"
        )
    if st.open_actions:
        key = next(iter(st.open_actions))
        return (
            f"step {step_id!r} has an action whose outcome is unknown (key {key}: an intent "
            f"without a receipt); record what happened first: `waymark receipt {src} {step_id} "
            "--applied|--not-applied`"
        )
    if st.status == "completed" and st.skipped is not None:
        return f"step {step_id!r} was already skipped ({st.skipped}); nothing to do"
    if st.status == "completed":
        return (
            f"step {step_id!r} is completed; there is nothing to skip (its result stands: "
            f"`waymark status {src}`)"
        )
    return None


@dataclass
class SkipOutcome:
    """The ``step_skipped`` event, and what was recorded before it (a dead run's step)."""

    event: ProgressEvent
    notes: list[str] = field(default_factory=list)


def _take_over_dead(plan: PlanSpec, ledger: Ledger, step_id: str, by: str) -> list[str]:
    """A step left in_progress by a run whose hold is stale (lease ran out, or its process on
    this machine is dead) is recorded interrupted first, as a run's take-over would."""
    notes: list[str] = []
    for hold in ledger.holds(plan.plan_id):
        if hold.step_id != step_id or not hold.is_stale():
            continue
        try:
            record_step_interrupted(
                ledger,
                plan.plan_id,
                step_id=step_id,
                branch=hold.branch,
                run_id=f"skip:{by}"[:200],
                dead_run=hold.run_id,
                reason=(
                    f"interrupted: run {hold.run_id} on {hold.host} (pid {hold.pid}) stopped "
                    "while the step was in_progress (found by `waymark skip`)"
                ),
            )
        except TransitionError:
            continue  # a run took it over first
        except LedgerError as exc:  # its hold moved meanwhile
            raise CloseError(f"step {step_id!r}: {exc}; nothing was recorded") from None
        notes.append(f"step {step_id!r} was left in progress by run {hold.run_id}, which is "
                     "gone: recorded interrupted")  # fmt: skip
    return notes


def skip_step(plan: PlanSpec, ledger: Ledger, step_id: str, reason: str, by: str) -> SkipOutcome:
    """Record ``step_skipped`` for ``step_id``; raise :class:`CloseError` (nothing recorded) for
    a blank reason, an unknown step or a status that cannot be skipped, and
    :class:`~prefect_waymark.errors.PlanClosedError` for a closed plan. A step a dead run left
    in progress is recorded interrupted first, then skipped."""
    if not reason.strip():
        raise CloseError("--reason: say why the step is left out (it is kept in the ledger)")
    try:
        step = plan.step(step_id)
    except KeyError:
        known = capped_list([s.id for s in plan.steps])
        raise CloseError(
            f"{plan.source}: plan {plan.plan_id!r} has no step {step_id!r} (steps: {known})"
        ) from None
    check_not_closed(ledger, plan.plan_id, plan.source)
    notes: list[str] = []
    st = ledger.step_states(plan.plan_id).get(step_id)
    if st is not None and st.status == "in_progress" and not st.open_actions:
        notes = _take_over_dead(plan, ledger, step_id, by)
        if notes:
            st = ledger.step_states(plan.plan_id).get(step_id)
    if st is not None and (why := _refusal(plan, step_id, st)) is not None:
        raise CloseError(why)
    try:
        event = ledger.record(
            plan.plan_id,
            EventKind.step_skipped,
            step_id=step_id,
            branch=step.branch,
            reason=reason.strip(),
            by=by,
        )
    except TransitionError as exc:  # another run moved it meanwhile
        raise CloseError(f"{exc}; nothing was recorded") from None
    return SkipOutcome(event, notes)
