"""``waymark status`` of a parent plan: each ``plan:`` step is one row with its sub-plan's
progress (``sub-plan research: 3/5 done``); ``--json`` gives the row a ``subplan`` object.
``waymark status SUB.yaml`` shows the sub-plan's own detail from the same ledger."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ledger.progress_view import build_view

if TYPE_CHECKING:
    from ..ledger.step_state import StepState
    from ..plan.spec import PlanSpec

__all__ = ["subplan_cell", "subplan_rows"]


def subplan_rows(
    spec: PlanSpec, step_states: Callable[[str], dict[str, StepState]]
) -> dict[str, Any]:
    """``{"subplans": {step id: row}}`` for the status document (empty without plan steps)."""
    rows: dict[str, Any] = {}
    for step in spec.steps:
        sub = step.subplan_spec
        if sub is None:
            continue
        view = build_view(sub, step_states(sub.plan_id))
        rows[step.id] = {
            "plan_id": sub.plan_id,
            "file": str(step.subplan_path or step.plan),
            "steps_done": sum(1 for s in view.steps if s.status == "completed"),
            "steps_total": len(view.steps),
            "complete": view.complete,
            "next_step": view.next_step,
            "needs_review": [str(i["step"]) for i in view.needs_review],
            "failed": [s.id for s in view.steps if s.status == "failed"],
        }
    return {"subplans": rows} if rows else {}


def subplan_cell(row: dict[str, Any]) -> str:
    """The progress a parent's status table shows on the step's row."""
    return f"sub-plan {row['plan_id']}: {row['steps_done']}/{row['steps_total']} done"
