"""A review answered on either plan reaches the other.

- Answered on the parent (``waymark review PARENT --step STEP``, or the Prefect UI form of the
  parent's pause): the parent step's answer (accept / rerun) is carried to the sub-plan's stops
  that made the parent stop — at once by ``waymark review``, and in any case by the parent step
  itself before it runs the sub-plan again. An abort on the parent also aborts the sub-plans
  stopped under it.
- Answered on the sub-plan (``waymark review SUB.yaml ...``): the parent's next run finds the
  sub-plan's stops answered and accepts its parent step's stop, so the step runs again and the
  sub-plan resumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ledger.events import EventKind
from ..review.decisions import Decision, apply_decision

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec, StepSpec

__all__ = ["answer_subplans", "carry_parent_answer", "settle_answered_subplans"]

_DECISIONS: dict[EventKind, Decision] = {
    EventKind.step_review_accepted: "accept",
    EventKind.step_rerun_requested: "rerun",
}


def _last_stop_and_answer(
    ledger: Ledger, parent: PlanSpec, step_id: str
) -> tuple[list[str], Decision | None]:
    """The sub-plan steps the parent step's last sub-plan stop listed, and the answer given to
    it since (None: not answered)."""
    kinds = [EventKind.step_needs_review, *_DECISIONS]
    stops: list[str] = []
    answer: Decision | None = None
    for ev in ledger.events(parent.plan_id, kinds=kinds):
        if ev.step_id != step_id:
            continue
        if ev.kind == EventKind.step_needs_review:
            sub = (ev.data.get("details") or {}).get("subplan") or {}
            stops = [str(i["step"]) for i in sub.get("needs_review") or []]
            answer = None
        elif stops:
            answer = _DECISIONS[ev.kind]
    return stops, answer


def carry_parent_answer(ledger: Ledger, parent: PlanSpec, step: StepSpec, *, by: str) -> list[str]:
    """Answer the sub-plan's stops that the parent step's last stop listed the way the parent
    step's stop was answered (those still open); return what was done, one line each."""
    sub = step.subplan_spec
    if sub is None:
        return []
    stops, answer = _last_stop_and_answer(ledger, parent, step.id)
    if answer is None:
        return []
    states = ledger.step_states(sub.plan_id)
    done: list[str] = []
    reason = f"answered on {parent.plan_id}/{step.id}"
    for sid in stops:
        st = states.get(sid)
        if st is None or st.status != "needs_review":
            continue  # answered already (on the sub-plan, or by `waymark review` on the parent)
        lines = apply_decision(ledger, sub, answer, step_id=sid, by=by, reason=reason)
        done += [f"sub-plan {sub.plan_id}: {line}" for line in lines]
    return done


def answer_subplans(
    ledger: Ledger, parent: PlanSpec, decision: Decision, *, by: str, reason: str
) -> list[str]:
    """After ``waymark review PARENT``: carry the answer into the sub-plans (see module doc)."""
    done: list[str] = []
    states = ledger.step_states(parent.plan_id)
    for step in parent.steps:
        sub = step.subplan_spec
        if sub is None:
            continue
        if decision != "abort":
            done += carry_parent_answer(ledger, parent, step, by=by)
            continue
        stops, _ = _last_stop_and_answer(ledger, parent, step.id)
        st = states.get(step.id)
        if stops and st is not None and st.status == "needs_review":
            lines = apply_decision(ledger, sub, "abort", step_id=None, by=by, reason=reason)
            done += [f"sub-plan {sub.plan_id}: {line}" for line in lines]
    return done


def settle_answered_subplans(ledger: Ledger, parent: PlanSpec, run_id: str) -> list[str]:
    """At a parent run's start: a parent step stopped for its sub-plan's review whose listed
    stops were all answered on the sub-plan is accepted, so the step runs (and the sub-plan
    resumes) in this run. Returns the steps accepted."""
    steps = [s for s in parent.steps if s.subplan_spec is not None]
    if not steps:
        return []
    states = ledger.step_states(parent.plan_id)
    settled: list[str] = []
    for step in steps:
        st = states.get(step.id)
        sub: Any = st.review_data.get("subplan") if st is not None else None
        if st is None or st.status != "needs_review" or not isinstance(sub, dict):
            continue
        assert step.subplan_spec is not None
        sub_states = ledger.step_states(step.subplan_spec.plan_id)
        listed = [str(i["step"]) for i in sub.get("needs_review") or []]
        if any(
            sub_states.get(sid) is not None and sub_states[sid].status == "needs_review"
            for sid in listed
        ):
            continue
        apply_decision(
            ledger,
            parent,
            "accept",
            step_id=step.id,
            by="waymark",
            reason=f"the stops of sub-plan {step.subplan_spec.plan_id!r} were answered on it",
            run_id=run_id,
        )
        settled.append(step.id)
    return settled
