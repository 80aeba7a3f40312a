"""A person's answer to a review: accept the current state, re-run the step, or abort the plan.

Used by ``waymark review`` and by a paused flow run answered from the Prefect UI. Every decision
is a ledger event; accepting (or re-running) also records the versions the person saw as the
plan's new accepted versions, never whatever is newest by the time the plan runs again.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ReviewError
from ..ledger import Ledger
from ..ledger.event_payloads import AcceptedVersionsData, StepDecisionData
from ..ledger.event_writers import record_accepted_versions, record_decision
from ..ledger.events import EventKind, ProgressEvent
from ..plan.spec import PlanSpec
from .stale import WHY_OUTPUT, WHY_RERUN, WHY_RESULT, mark_dependents_stale

__all__ = [
    "Decision",
    "ReviewError",
    "abort_event",
    "apply_decision",
]

Decision = Literal["accept", "rerun", "abort"]


def abort_event(ledger: Ledger, plan_id: str) -> ProgressEvent | None:
    """The ``plan_aborted`` event in force, if the plan is aborted."""
    last = ledger.last_event(plan_id, [EventKind.plan_aborted, EventKind.plan_abort_lifted])
    return last if last is not None and last.kind == EventKind.plan_aborted else None


def _seen_versions(details: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any] | None]:
    """The current versions a review showed: what accepting it accepts."""
    refs: dict[str, str] = {}
    contract = None
    for c in details.get("conflicts") or []:
        if c.get("kind") == "contract":
            continue
        if c.get("current") is not None and c.get("problem") == "changed":
            refs[str(c["ref"])] = str(c["current"])
    if details.get("contract"):
        contract = dict(details["contract"])
    return refs, contract


def apply_decision(
    ledger: Ledger,
    plan: PlanSpec,
    decision: Decision,
    *,
    step_id: str | None,
    by: str,
    reason: str = "",
    run_id: str | None = None,
) -> list[str]:
    """Record ``decision``; return what was done, one line each."""
    plan_id = plan.plan_id
    states = ledger.step_states(plan_id)
    reviewing = [sid for sid, st in states.items() if st.status == "needs_review"]
    known = {s.id for s in plan.steps}
    if step_id is not None and step_id not in known:
        raise ReviewError(f"unknown step {step_id!r} in plan {plan_id!r}")
    done: list[str] = []
    if decision == "abort":
        if abort_event(ledger, plan_id) is not None:
            return [f"plan {plan_id!r} is already aborted"]
        ledger.record(
            plan_id,
            EventKind.plan_aborted,
            step_id=step_id,
            run_id=run_id,
            by=by,
            reason=reason,
            reviewing=reviewing,
        )
        return [f"plan {plan_id!r} aborted: `waymark run` will not run it"]
    if step_id is None:
        if not reviewing:
            raise ReviewError(f"no step of plan {plan_id!r} needs review")
        if len(reviewing) > 1:
            raise ReviewError(
                f"several steps need review ({', '.join(sorted(reviewing))}); "
                "choose one with --step, or answer them all with --all"
            )
        step_id = reviewing[0]
    st = states.get(step_id)
    if st is None or st.status != "needs_review":
        status = st.status if st else "pending"
        hint = "; use `waymark rerun` to run a step again" if decision == "rerun" else ""
        raise ReviewError(f"step {step_id!r} is {status}, not needs_review{hint}")
    details = dict(st.review_data)
    if abort_event(ledger, plan_id) is not None:
        ledger.record(plan_id, EventKind.plan_abort_lifted, step_id=step_id, run_id=run_id, by=by)
        done.append(f"plan {plan_id!r} was aborted; this decision lifts the abort")
    refs, contract = _seen_versions(details)
    if refs or contract:
        data: AcceptedVersionsData = {"refs": refs, "reason": f"{decision} by {by}", "by": by}
        if contract is not None:
            data["contract"] = contract
        record_accepted_versions(ledger, plan_id, step_id=step_id, run_id=run_id, **data)
        seen = [f"{k} = {v}" for k, v in refs.items()]
        if contract is not None:
            seen.append(f"contract {contract['goal_id']} v{contract['version']}")
        done.append("accepted: " + ", ".join(seen))
        if contract is not None and contract.get("status") != "accepted":
            done.append(
                f"note: the contract is {contract['status']}; the next run stops again until "
                "a new version is accepted (or --abort)"
            )
    last, why = _record_step_decision(
        ledger, plan, decision, step_id, st.review_reason, details, by, reason, run_id, done
    )
    if why is not None:
        stale = mark_dependents_stale(
            ledger, plan, step_id, why, by=by, reason=reason, run_id=run_id
        )
        if stale:
            done.append(f"stale now ({why} of {step_id!r}): {', '.join(stale)}")
    done.append(last)  # the last line says what the next run does (a paused run says its own)
    return done


def _record_step_decision(
    ledger: Ledger,
    plan: PlanSpec,
    decision: Decision,
    step_id: str,
    review_reason: str | None,
    details: dict[str, Any],
    by: str,
    reason: str,
    run_id: str | None,
    done: list[str],
) -> tuple[str, str | None]:
    """Record accept or rerun of ``step_id``'s stop; return the line that says what the next
    run does, and why the steps after it are stale now (None: they are not)."""
    plan_id, branch = plan.plan_id, plan.step(step_id).branch
    common: StepDecisionData = {"by": by, "reason": reason, "review_reason": review_reason}
    if decision == "accept":
        if "current_hash" in details:
            common["def_hash"] = details["current_hash"]
        record_decision(
            ledger,
            plan_id,
            EventKind.step_review_accepted,
            step_id=step_id,
            branch=branch,
            run_id=run_id,
            **common,
        )
        last = f"step {step_id!r}: review accepted; the next run continues"
        why = WHY_OUTPUT if details.get("current_outputs") else None
    else:
        common["from_review"] = True
        if details.get("reapply"):  # an applied action, stale: a person chose to apply it again
            common["new_key"] = True
        record_decision(
            ledger,
            plan_id,
            EventKind.step_rerun_requested,
            step_id=step_id,
            branch=branch,
            run_id=run_id,
            **common,
        )
        last = f"step {step_id!r} will run again on the next run"
        if details.get("reapply"):
            done.append(f"step {step_id!r}: its action is applied again, once, with a new key")
        why = WHY_RESULT if "result_key" in details else WHY_RERUN
    return last, why
