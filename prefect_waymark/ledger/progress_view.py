"""The plan's active view: each step's status, current step per branch, next step, blocked steps
and review reasons — derived from the plan and the ledger's projection, never stored as truth."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from ..models import StepStatus
from ..plan.spec import PlanSpec
from .step_state import StepState

__all__ = ["PlanView", "StepView", "build_view"]


class StepView(BaseModel):
    id: str
    title: str
    status: StepStatus
    owner: str | None
    branch: str
    milestone: str | None
    depends_on: list[str]
    last_event_at: str | None = None
    attempts: int = 0
    error: str | None = None
    review_reason: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    definition_changed: bool = False
    receipts: list[dict[str, Any]] = Field(default_factory=list)
    open_actions: list[dict[str, Any]] = Field(
        default_factory=list, description="Actions whose intent has no receipt: outcome unknown."
    )
    #: ``waymark skip``'s reason: the step is completed without running (no result, no outputs).
    skipped: str | None = None


class PlanView(BaseModel):
    plan_id: str
    title: str
    steps: list[StepView]
    current_step: dict[str, str]
    next_step: str | None
    blocked: list[str]
    needs_review: list[dict[str, Any]]
    counts: dict[str, int]
    complete: bool
    active_milestone: str | None = None

    _by_id: dict[str, StepView] | None = PrivateAttr(default=None)

    def step(self, step_id: str) -> StepView:
        """The view of one step (a dict lookup: pages ask for every step of big plans)."""
        if self._by_id is None or len(self._by_id) != len(self.steps):
            self._by_id = {s.id: s for s in self.steps}
        return self._by_id[step_id]


def build_view(plan: PlanSpec, states: dict[str, StepState]) -> PlanView:
    """Fold the ledger's step states onto the plan, in dependency order."""
    hashes = plan.step_hashes()
    order = plan.topological_order()
    by_id = {s.id: s for s in plan.steps}
    views: dict[str, StepView] = {}
    for sid in order:
        spec = by_id[sid]
        st = states.get(sid)
        status = st.status if st else StepStatus.pending
        if status == StepStatus.blocked and st is not None and st.blocked_on:
            on = states.get(st.blocked_on)
            if on is not None and on.status == StepStatus.completed:  # what it waited for: done
                status = StepStatus.pending
        changed = bool(
            st
            and status == "completed"
            and st.skipped is None  # a skipped step has no result a new definition would change
            and st.def_hash
            and st.def_hash != hashes[sid]
        )
        blockers = [
            d for d in spec.depends_on if views[d].status in ("failed", "needs_review", "blocked")
        ]
        if status == StepStatus.pending and blockers:
            status = StepStatus.blocked
        # Trusted values from a validated plan and ledger: skip validation (7 views of a
        # 1,000-step plan per run cost ~0.13 s of validation otherwise).
        views[sid] = StepView.model_construct(
            id=sid,
            title=spec.title,
            status=status,
            owner=spec.owner,
            branch=spec.branch,
            milestone=spec.milestone,
            depends_on=list(spec.depends_on),
            last_event_at=st.last_at if st else None,
            attempts=st.attempts if st else 0,
            error=st.error if st else None,
            review_reason=st.review_reason if st else None,
            blocked_by=blockers,
            definition_changed=changed,
            receipts=list(st.receipts) if st else [],
            open_actions=list(st.open_actions.values()) if st else [],
            skipped=st.skipped if st else None,
        )
    ordered = [views[s.id] for s in plan.steps]
    current = {v.branch: v.id for v in ordered if v.status == "in_progress"}
    next_step = None
    for sid in order:
        v = views[sid]
        if v.status in ("pending", "failed") and all(
            views[d].status == "completed" for d in v.depends_on
        ):
            next_step = sid
            break
    counts: dict[str, int] = {}
    for v in ordered:
        counts[v.status] = counts.get(v.status, 0) + 1
    milestone = None
    for sid in order:
        if views[sid].status != "completed" and by_id[sid].milestone:
            milestone = by_id[sid].milestone
            break
    return PlanView(
        plan_id=plan.plan_id,
        title=plan.title,
        steps=ordered,
        current_step=current,
        next_step=next_step,
        blocked=[v.id for v in ordered if v.status == "blocked"],
        needs_review=[
            {"step": v.id, "reason": v.review_reason, **(states[v.id].review_data)}
            for v in ordered
            if v.status == "needs_review"
        ],
        counts=counts,
        complete=all(v.status == "completed" for v in ordered),
        active_milestone=milestone,
    )
