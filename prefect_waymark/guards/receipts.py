"""A receipt that contradicts the ledger stops the plan for review.

The ledger says a step that holds an irreversible ``action:`` completed, but the receipts table
has no applied receipt for it — the receipt was settled "not applied" later, by a person or
another runner, or the row is gone. Neither record may silently win: the step goes to
needs_review with both sides named.
"""

from __future__ import annotations

from .base import GuardBase, GuardContext, Verdict

__all__ = ["ReceiptConsistencyGuard"]


class ReceiptConsistencyGuard(GuardBase):
    """Checks at run start that every completed ``action:`` step has its applied receipt."""

    def on_run_start(self, ctx: GuardContext) -> list[tuple[str, Verdict]]:
        action_steps = [s for s in ctx.plan.steps if s.action]
        if not action_steps:
            return []
        states = ctx.states
        receipts = ctx.ledger.receipts(ctx.plan.plan_id)
        verdicts: list[tuple[str, Verdict]] = []
        for step in action_steps:
            st = states.get(step.id)
            if st is None or st.status != "completed" or st.skipped is not None:
                continue  # a skipped step did not act: it has no receipt to have
            mine = [r for r in receipts if r.step_id == step.id and r.action == step.action]
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
