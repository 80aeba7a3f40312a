"""The plan's active view: each step's status, current step per branch, next step, blocked steps
and review reasons — derived from the plan and the ledger's projection, never stored as truth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from ..models import StepStatus
from ..plan.spec import PlanSpec
from .step_state import StepState
from .trusted_model import trusted_model

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
    #: The plan object and the step states this view was built from (see ``build_view``'s
    #: ``previous``).
    _built_from: tuple[PlanSpec, dict[str, StepState]] | None = PrivateAttr(default=None)

    def step(self, step_id: str) -> StepView:
        """The view of one step (a dict lookup: pages ask for every step of big plans)."""
        # The private dict itself: ``self._by_id`` goes through pydantic's __getattr__ (~9 us).
        private = self.__pydantic_private__
        by_id: dict[str, StepView] | None = private.get("_by_id") if private else None
        if by_id is None or len(by_id) != len(self.steps):
            by_id = {s.id: s for s in self.steps}
            self._by_id = by_id
        return by_id[step_id]


_PENDING, _COMPLETED = StepStatus.pending, StepStatus.completed
_STOPS = frozenset((StepStatus.failed, StepStatus.needs_review, StepStatus.blocked))


def build_view(
    plan: PlanSpec, states: Mapping[str, StepState], previous: PlanView | None = None
) -> PlanView:
    """Fold the ledger's step states onto the plan, in dependency order.

    ``previous``: a view built before from the same plan object (a run's start view, for its end
    view): a step whose state, and the statuses of whose needs, are as they were then keeps its
    view object, not built again — the end view of a 5-step run of a 10,000-step plan builds 5
    (views are read, never changed in place: two views may share a step's).
    """
    hashes = plan.step_hashes()
    order = plan.topological_order()
    by_id = {s.id: s for s in plan.steps}
    status_of: dict[str, StepStatus] = {}
    views: dict[str, StepView] = {}
    built = previous._built_from if previous is not None else None
    before = built[1] if built is not None and built[0] is plan else None
    was = {v.id: v for v in previous.steps} if before is not None and previous else {}
    for sid in order:
        spec = by_id[sid]
        st = states.get(sid)
        deps = spec.depends_on
        if before is not None:
            old = before.get(sid)
            if (old is st or old == st) and (st is None or not st.blocked_on):
                kept = was[sid]
                if all(status_of[d] == was[d].status for d in deps):
                    views[sid], status_of[sid] = kept, kept.status
                    continue
        blockers = [d for d in deps if status_of[d] in _STOPS] if deps else []
        if st is None:  # most steps of a big plan: never run
            status = StepStatus.blocked if blockers else _PENDING
            changed = False
        else:
            status = st.status
            if status == StepStatus.blocked and st.blocked_on:
                on = states.get(st.blocked_on)
                if on is not None and on.status == _COMPLETED:  # what it waited for: done
                    status = _PENDING
            changed = bool(
                status == "completed"
                and st.skipped is None  # a skipped step has no result a new definition changes
                and st.def_hash
                and st.def_hash != hashes[sid]
            )
            if status == _PENDING and blockers:
                status = StepStatus.blocked
        status_of[sid] = status
        # Trusted values from a validated plan and ledger: no validation.
        views[sid] = trusted_model(
            StepView,
            {
                "id": sid,
                "title": spec.title,
                "status": status,
                "owner": spec.owner,
                "branch": spec.branch,
                "milestone": spec.milestone,
                "depends_on": list(deps),
                "last_event_at": st.last_at if st else None,
                "attempts": st.attempts if st else 0,
                "error": st.error if st else None,
                "review_reason": st.review_reason if st else None,
                "blocked_by": blockers,
                "definition_changed": changed,
                "receipts": list(st.receipts) if st else [],
                "open_actions": list(st.open_actions.values()) if st else [],
                "skipped": st.skipped if st else None,
            },
        )
    ordered = [views[s.id] for s in plan.steps]
    current = {v.branch: v.id for v in ordered if v.status == "in_progress"}
    next_step = None
    for sid in order:
        if status_of[sid] in ("pending", "failed") and all(
            status_of[d] == "completed" for d in by_id[sid].depends_on
        ):
            next_step = sid
            break
    counts: dict[str, int] = {}
    for v in ordered:
        counts[v.status] = counts.get(v.status, 0) + 1
    milestone = None
    for sid in order:
        if status_of[sid] != "completed" and by_id[sid].milestone:
            milestone = by_id[sid].milestone
            break
    view = PlanView(
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
        complete=all(status == "completed" for status in counts),
        active_milestone=milestone,
    )
    view._built_from = (plan, dict(states))
    return view
