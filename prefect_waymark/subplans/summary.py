"""What a parent plan sees of a sub-plan: one structured summary, read from the ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ledger.progress_view import build_view

if TYPE_CHECKING:
    from ..ledger.base import LedgerReader
    from ..plan.spec import PlanSpec

__all__ = ["subplan_summary"]


def subplan_summary(
    sub: PlanSpec, ledger: LedgerReader, *, result: str, file: str, run_id: str | None = None
) -> dict[str, Any]:
    """The parent step's result: steps done / total, outputs with their hashes, receipts, open
    needs_review with reasons, the sub-plan's next start and its run's result
    (completed / stopped / failed / needs_review)."""
    states = ledger.step_states(sub.plan_id)
    view = build_view(sub, states)
    done = sum(1 for s in view.steps if s.status == "completed")
    outputs = {sid: dict(st.outputs) for sid, st in states.items() if st.outputs}
    receipts = [
        {"step": sid, **{k: r.get(k) for k in ("key", "action", "outcome", "external_id")}}
        for sid, st in states.items()
        for r in st.receipts
    ]
    failed = [s.id for s in view.steps if s.status == "failed"]
    return {
        "plan_id": sub.plan_id,
        "file": file,
        "result": result,
        "run_id": run_id,
        "steps_done": done,
        "steps_total": len(view.steps),
        "outputs": outputs,
        "receipts": receipts,
        "needs_review": [
            {"step": str(item["step"]), "reason": str(item.get("reason") or "")}
            for item in view.needs_review
        ],
        "failed": {sid: view.step(sid).error for sid in failed},
        "next_start": None if view.complete else view.next_step,
    }
