"""``waymark skip``: leave a step out on purpose, with a reason.

The ``step_skipped`` event folds to ``completed`` with :attr:`StepState.skipped` set to the reason,
no result and no outputs (ledger/step_state.py): the steps after it go on, and a step that
depends on it gets ``None`` as its upstream value. Only a pending, blocked or failed step can be
skipped; every other status is refused with what to do instead.
"""

from __future__ import annotations

from ..errors import CloseError, TransitionError
from ..ledger import Ledger
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.step_state import StepState
from ..plan.spec import PlanSpec
from .closed import check_not_closed

__all__ = ["skip_step"]


def _refusal(plan: PlanSpec, step_id: str, st: StepState) -> str | None:
    """Why ``st`` cannot be skipped and what to do instead; ``None`` if it can."""
    src = plan.source
    if st.status == "in_progress":
        since = f" since {st.last_at[:19].replace('T', ' ')}" if st.last_at else ""
        return (
            f"step {step_id!r} is in progress (run {st.run_id}{since}); a running step is not "
            f"skipped: let it end (`waymark status {src}` shows it), then skip it if it failed"
        )
    if st.status == "needs_review":
        return (
            f"step {step_id!r} needs review ({st.review_reason}); answer it first: "
            f"`waymark review {src} --step {step_id} --accept|--rerun|--abort` (a step that is "
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


def skip_step(plan: PlanSpec, ledger: Ledger, step_id: str, reason: str, by: str) -> ProgressEvent:
    """Record ``step_skipped`` for ``step_id``; raise :class:`CloseError` (nothing recorded) for
    a blank reason, an unknown step or a status that cannot be skipped, and
    :class:`~prefect_waymark.errors.PlanClosedError` for a closed plan."""
    if not reason.strip():
        raise CloseError("--reason: say why the step is left out (it is kept in the ledger)")
    try:
        step = plan.step(step_id)
    except KeyError:
        known = ", ".join(s.id for s in plan.steps[:20])
        raise CloseError(
            f"{plan.source}: plan {plan.plan_id!r} has no step {step_id!r} (steps: {known})"
        ) from None
    check_not_closed(ledger, plan.plan_id, plan.source)
    st = ledger.step_states(plan.plan_id).get(step_id)
    if st is not None and (why := _refusal(plan, step_id, st)) is not None:
        raise CloseError(why)
    try:
        return ledger.record(
            plan.plan_id,
            EventKind.step_skipped,
            step_id=step_id,
            branch=step.branch,
            reason=reason.strip(),
            by=by,
        )
    except TransitionError as exc:  # another run moved it meanwhile
        raise CloseError(f"{exc}; nothing was recorded") from None
