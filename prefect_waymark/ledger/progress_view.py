"""The plan's active view: each step's status, current step per branch, next step, blocked steps
and review reasons — derived from the plan and the ledger's projection, never stored as truth."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..models import StepStatus

__all__ = ["PlanLike", "PlanView", "StateLike", "StepView", "build_view", "stale_words"]


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
    """What the view reads of a plan (a :class:`~prefect_waymark.plan.spec.PlanSpec`)."""

    @property
    def plan_id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def steps(self) -> Sequence[_StepLike]: ...
    def step_hashes(self) -> Mapping[str, str]: ...
    def topological_order(self) -> Sequence[str]: ...


class StateLike(Protocol):
    """What the view reads of a step's state (a :class:`~.step_state.StepState`)."""

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
    @property
    def stale(self) -> dict[str, Any] | None: ...


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
    #: A completed step whose inputs changed after it completed: ``because`` (the upstream
    #: step), ``why``, ``by``, ``at``. The next run runs it again (or stops it for review).
    stale: dict[str, Any] | None = None


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
    _built_from: _Built | None = field(default=None, repr=False, compare=False)

    @property
    def next_start(self) -> str | None:
        """Where the next run starts: a step waiting for review first, then the first failed
        step (in plan order: the next run retries it), else the next ready step."""
        if self.complete:
            return None
        if self.needs_review:
            return str(self.needs_review[0]["step"])
        failed = next((s.id for s in self.steps if s.status == "failed"), None)
        return failed or self.next_step

    def step(self, step_id: str) -> StepView:
        """The view of one step (a dict lookup: pages ask for every step of big plans)."""
        by_id = self._by_id
        if by_id is None or len(by_id) != len(self.steps):
            by_id = self._by_id = {s.id: s for s in self.steps}
        return by_id[step_id]


def stale_words(stale: Mapping[str, Any] | None) -> str:
    """A stale step's why in words: "upstream `fetch` changed (rerun requested)"."""
    if not stale:
        return ""
    return f"upstream `{stale.get('because')}` changed ({stale.get('why')})"


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
    view). Only the steps whose state changed since, and the steps after a step whose status
    changed, are built again; every other step keeps its view object — the end view of a
    5-step run of a 10,000-step plan builds 5 and their next steps (views are read, never
    changed in place: two views may share a step's).
    """
    built = previous._built_from if previous is not None else None
    if previous is not None and built is not None and built.plan is plan:
        return _rebuilt(plan, states, previous, built)
    hashes = plan.step_hashes()
    order = plan.topological_order()
    by_id = {s.id: s for s in plan.steps}
    status_of: dict[str, StepStatus] = {}
    views: dict[str, StepView] = {}
    for sid in order:
        view = _one_step(by_id[sid], states, status_of, hashes)
        views[sid], status_of[sid] = view, view.status
    ordered = [views[s.id] for s in plan.steps]
    return _plan_view(plan, ordered, status_of, states, _Built(plan, dict(states), by_id))


@dataclass
class _Built:
    """What a view was built from, and what a later build from the same plan object needs."""

    plan: PlanLike
    states: dict[str, StateLike]
    by_id: dict[str, _StepLike]
    #: Each step's place in the dependency order and in the plan, and the steps that need it:
    #: made on the first rebuild, kept for the next.
    rank: dict[str, int] | None = None
    index: dict[str, int] | None = None
    needed_by: dict[str, list[str]] | None = None


def _one_step(
    spec: _StepLike,
    states: Mapping[str, StateLike],
    status_of: Mapping[str, StepStatus],
    hashes: Mapping[str, str],
) -> StepView:
    """The view of one step, from its state and the statuses of the steps it needs."""
    sid, deps = spec.id, spec.depends_on
    st = states.get(sid)
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
    return _step_view(
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
            "stale": dict(st.stale) if st is not None and st.stale else None,
        },
    )


def _rebuilt(
    plan: PlanLike, states: Mapping[str, StateLike], previous: PlanView, built: _Built
) -> PlanView:
    """:func:`build_view` from ``previous`` (built from the same plan object): the steps whose
    state changed (or that wait behind another step: ``blocked_on``) are built again, in
    dependency order, and after any step whose status changed, the steps that need it."""
    if built.rank is None or built.index is None or built.needed_by is None:
        built.rank = {sid: i for i, sid in enumerate(plan.topological_order())}
        built.index = {s.id: i for i, s in enumerate(plan.steps)}
        needed_by: dict[str, list[str]] = {}
        for s in plan.steps:
            for d in s.depends_on:
                needed_by.setdefault(d, []).append(s.id)
        built.needed_by = needed_by
    rank, index, needed_by = built.rank, built.index, built.needed_by
    before = built.states
    moved = [
        sid
        for sid in before.keys() | states.keys()
        if sid in rank
        and (
            (st := states.get(sid)) is not (old := before.get(sid))
            and st != old
            or (st is not None and st.blocked_on)
        )
    ]
    ordered = list(previous.steps)
    status_of = {v.id: v.status for v in ordered}
    hashes = plan.step_hashes()
    queue = [(rank[sid], sid) for sid in moved]
    heapq.heapify(queue)
    done: set[str] = set()
    while queue:
        _, sid = heapq.heappop(queue)
        if sid in done:
            continue
        done.add(sid)
        view = _one_step(built.by_id[sid], states, status_of, hashes)
        ordered[index[sid]] = view
        if view.status != status_of[sid]:
            status_of[sid] = view.status
            for after in needed_by.get(sid, ()):
                heapq.heappush(queue, (rank[after], after))
    again = _Built(plan, dict(states), built.by_id, rank, index, needed_by)
    return _plan_view(plan, ordered, status_of, states, again)


def _plan_view(
    plan: PlanLike,
    ordered: list[StepView],
    status_of: Mapping[str, StepStatus],
    states: Mapping[str, StateLike],
    built: _Built,
) -> PlanView:
    """The plan's view from its steps' views (in plan order) and their statuses."""
    order, by_id = plan.topological_order(), built.by_id
    current = {v.branch: v.id for v in ordered if v.status == "in_progress"}
    stale = {sid for sid, st in states.items() if st.stale and status_of.get(sid) == _COMPLETED}
    next_step = None
    for sid in order:
        # a stale step is next once its needs are done (the run runs it again, or stops it)
        if (status_of[sid] in ("pending", "failed") or sid in stale) and all(
            status_of[d] == "completed" and d not in stale for d in by_id[sid].depends_on
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
        complete=all(status == "completed" for status in counts) and not stale,
        active_milestone=milestone,
    )
    view._built_from = built
    return view
