"""The plan's active view: each step's status, current step per branch, next step, blocked steps
and review reasons — derived from the plan and the ledger's projection, never stored as truth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..statuses import StepStatus

__all__ = ["PlanLike", "PlanView", "StateLike", "StepView", "build_view"]


class _StepLike(Protocol):
    """What the view reads of a plan's step (:class:`~prefect_waymark.plan.spec.StepSpec`)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def owner(self) -> str | None: ...
    @property
    def branch(self) -> str: ...
    @property
    def milestone(self) -> str | None: ...
    @property
    def depends_on(self) -> Sequence[str]: ...


class PlanLike(Protocol):
    """What the view reads of a plan: a :class:`~prefect_waymark.plan.spec.PlanSpec`, or the
    plan's status digest (:mod:`prefect_waymark.plan.status_digest`)."""

    @property
    def plan_id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def steps(self) -> Sequence[_StepLike]: ...
    def step_hashes(self) -> Mapping[str, str]: ...
    def topological_order(self) -> Sequence[str]: ...


class StateLike(Protocol):
    """What the view reads of a step's state: a :class:`~.step_state.StepState`, or a projection
    row read without pydantic (:mod:`prefect_waymark.ledger.plain_rows`)."""

    @property
    def status(self) -> StepStatus: ...
    @property
    def blocked_on(self) -> str | None: ...
    @property
    def def_hash(self) -> str | None: ...
    @property
    def skipped(self) -> str | None: ...
    @property
    def last_at(self) -> str | None: ...
    @property
    def attempts(self) -> int: ...
    @property
    def error(self) -> str | None: ...
    @property
    def review_reason(self) -> str | None: ...
    @property
    def review_data(self) -> dict[str, Any]: ...
    @property
    def receipts(self) -> list[dict[str, Any]]: ...
    @property
    def open_actions(self) -> dict[str, dict[str, Any]]: ...


@dataclass(eq=True)
class StepView:
    """One step as the views show it. A plain dataclass (no pydantic): ``waymark status
    --json`` builds views without loading pydantic."""

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
    blocked_by: list[str] = field(default_factory=list)
    definition_changed: bool = False
    receipts: list[dict[str, Any]] = field(default_factory=list)
    #: Actions whose intent has no receipt: outcome unknown.
    open_actions: list[dict[str, Any]] = field(default_factory=list)
    #: ``waymark skip``'s reason: the step is completed without running (no result, no outputs).
    skipped: str | None = None


@dataclass(eq=True)
class PlanView:
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

    _by_id: dict[str, StepView] | None = field(default=None, repr=False, compare=False)
    #: The plan object and the step states this view was built from (see ``build_view``'s
    #: ``previous``).
    _built_from: tuple[PlanLike, dict[str, StateLike]] | None = field(
        default=None, repr=False, compare=False
    )

    def step(self, step_id: str) -> StepView:
        """The view of one step (a dict lookup: pages ask for every step of big plans)."""
        by_id = self._by_id
        if by_id is None or len(by_id) != len(self.steps):
            by_id = self._by_id = {s.id: s for s in self.steps}
        return by_id[step_id]


_new_view = object.__new__
_set = object.__setattr__


def _step_view(values: dict[str, Any]) -> StepView:
    """A :class:`StepView` whose fields are ``values`` (every field given, trusted values from a
    validated plan and the ledger): no ``__init__`` call per step of a big plan."""
    view = _new_view(StepView)
    _set(view, "__dict__", values)
    return view


_PENDING, _COMPLETED = StepStatus.pending, StepStatus.completed
_STOPS = frozenset((StepStatus.failed, StepStatus.needs_review, StepStatus.blocked))


def build_view(
    plan: PlanLike, states: Mapping[str, StateLike], previous: PlanView | None = None
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
        views[sid] = _step_view(
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
