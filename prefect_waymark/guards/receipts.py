"""A receipt that contradicts the ledger stops the plan for review.

The ledger says a step that holds an irreversible ``action:`` completed, but the receipts table
has no applied receipt for it — the receipt was settled "not applied" later, by a person or
another runner, or the row is gone. Neither record may silently win: the step goes to
needs_review with both sides named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import GuardBase, GuardContext, Verdict

if TYPE_CHECKING:
    from ..ledger.receipts import ReceiptRecord
    from ..plan.spec import PlanSpec

__all__ = ["ReceiptConsistencyGuard", "receipts_of_action"]


def _left_behind(rec: ReceiptRecord, plan: PlanSpec) -> bool:
    """The receipt's step no longer holds its action: the step left the plan (removed or
    renamed), or the plan's step of that id now declares another action or none — a ``run:``,
    agent or manual step holds only the action it declares (a ``call:`` step may claim actions
    in its code: only its removal leaves them)."""
    step = next((s for s in plan.steps if s.id == rec.step_id), None)
    return step is None or (step.call is None and step.action != rec.action)


def receipts_of_action(
    plan: PlanSpec, step_id: str, action: str, receipts: list[ReceiptRecord]
) -> list[ReceiptRecord]:
    """The receipt rows of step ``step_id``'s action ``action``, oldest first.

    The receipt follows the action, not the step id: when the step has no row for the action
    but a step that no longer holds it (renamed, removed, or its action moved here) claimed an
    action of the same name, that row is this action's (a "not applied" row is not: its key is
    free). Renaming ``publish`` to ``publish-post`` never publishes a second time."""
    rows = [r for r in receipts if r.action == action]
    own = [r for r in rows if r.step_id == step_id]
    if own:
        return own
    return [r for r in rows if r.state != "not_applied" and _left_behind(r, plan)]


class ReceiptConsistencyGuard(GuardBase):
    """Checks at run start that every completed ``action:`` step has its applied receipt."""

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        action_steps = [s for s in ctx.plan.steps if s.action is not None]
        if not action_steps:
            return []
        states = ctx.states
        receipts = ctx.ledger.receipts(ctx.plan.plan_id)
        verdicts: list[tuple[str, Verdict]] = []
        for step in action_steps:
            assert step.action is not None
            st = states.get(step.id)
            if st is None or st.status != "completed" or st.skipped is not None:
                continue  # a skipped step did not act: it has no receipt to have
            mine = receipts_of_action(ctx.plan, step.id, step.action, receipts)
            if any(r.state == "applied" for r in mine):
                continue
            found = ", ".join(f"{r.key}: {r.state}" for r in mine) or "no receipt at all"
            verdicts.append(
                (
                    step.id,
                    Verdict(
                        "review",
                        f"receipt contradicts the ledger: step completed, but action "
                        f"{step.action!r} has {found}",
                        {
                            "ledger": "completed",
                            "receipts": [{"key": r.key, "state": r.state} for r in mine],
                        },
                    ),
                )
            )
        return verdicts
