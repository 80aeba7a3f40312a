"""Stale steps: a completed step whose inputs changed after it completed.

An upstream step's rerun (``waymark rerun``, a review's rerun), its output edited and accepted
in review, or its result replaced makes every completed step after it *stale*: the ledger
records ``step_stale`` for each (:func:`mark_dependents_stale`), the one place that decides which.
A run then runs a stale step again once the steps it needs are completed and not stale
(:func:`stale_verdict` says whether it may: a step whose action was applied, or an agent's or a
person's step, stops for review instead). ``waymark rerun --only`` keeps them on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import TransitionError
from ..guards.base import Verdict
from ..ledger.events import EventKind
from ..ledger.progress_view import stale_words

if TYPE_CHECKING:
    from ..ledger import Ledger
    from ..ledger.step_state import StepState
    from ..plan.spec import PlanSpec

__all__ = [
    "WHY_OUTPUT",
    "WHY_RERUN",
    "WHY_RESULT",
    "completed_dependents",
    "mark_dependents_stale",
    "stale_verdict",
    "stale_words",
]

WHY_RERUN = "rerun requested"
WHY_OUTPUT = "output edited and accepted"
WHY_RESULT = "result replaced"


def _dependents(plan: PlanSpec, step_id: str) -> list[str]:
    """Every step after ``step_id`` (its dependents, theirs, ...), in dependency order."""
    after: set[str] = {step_id}
    found: list[str] = []
    for sid in plan.topological_order():
        if sid != step_id and any(d in after for d in plan.step(sid).depends_on):
            after.add(sid)
            found.append(sid)
    return found


def completed_dependents(
    plan: PlanSpec, states: Mapping[str, StepState], step_id: str
) -> list[str]:
    """The completed steps after ``step_id`` that ran on its old output (a skipped step did not
    run: it has no inputs to go stale), in dependency order."""
    return [
        sid
        for sid in _dependents(plan, step_id)
        if (st := states.get(sid)) is not None and st.status == "completed" and st.skipped is None
    ]


def mark_dependents_stale(
    ledger: Ledger,
    plan: PlanSpec,
    step_id: str,
    why: str,
    *,
    by: str,
    reason: str = "",
    run_id: str | None = None,
) -> list[str]:
    """Record ``step_stale`` for each completed step after ``step_id``; return them in order."""
    states = ledger.step_states(plan.plan_id)
    marked: list[str] = []
    for sid in completed_dependents(plan, states, step_id):
        try:
            ledger.record(
                plan.plan_id,
                EventKind.step_stale,
                step_id=sid,
                branch=plan.step(sid).branch,
                run_id=run_id,
                because=step_id,
                why=why,
                by=by,
                reason=reason,
            )
        except TransitionError:  # another runner moved it on meanwhile: its word stands
            continue
        marked.append(sid)
    return marked


def stale_verdict(plan: PlanSpec, step_id: str, state: StepState) -> Verdict | None:
    """What a run does with a stale step whose needs are all done: ``None`` runs it again; a
    review stop when running it again is not the run's to decide — its action was applied
    (a committed receipt), or it is an agent's or a person's step."""
    spec = plan.step(step_id)
    stale = dict(state.stale or {})
    because = stale.get("because")
    details: dict[str, Any] = {"stale": stale}
    if spec.checked_in:  # its executor is told of a committed receipt (agents/): no new key
        details["checked_in"] = True
        reason = (
            f"upstream `{because}` changed after `{step_id}` was checked in: accept keeps it, "
            f"rerun hands it back to its executor"
        )
    elif state.receipts:
        details["applied"] = [str(r.get("key")) for r in state.receipts]
        details["reapply"] = True
        reason = (
            f"upstream `{because}` changed after `{step_id}` was applied: accept keeps it, "
            "rerun applies it again with a new key"
        )
    else:
        return None
    return Verdict("review", reason, details)
