"""A person settles an action whose outcome is unknown: it happened (a receipt is committed, the
action is never run again) or it did not (the key is released, the next run does it).

Used by ``waymark receipt``, ``waymark review --receipt`` and a paused run answered in the
Prefect UI with a receipt.
"""

from __future__ import annotations

from typing import Literal

from ..guards.receipts import receipts_of_action
from ..ledger import Ledger
from ..ledger.event_writers import record_decision
from ..ledger.events import EventKind
from ..ledger.identity import default_executor
from ..ledger.receipts import ReceiptRecord, default_action_key
from ..plan.spec import PlanSpec

__all__ = ["choose_key", "open_intents", "record_receipt", "step_receipts"]


def step_receipts(ledger: Ledger, plan: PlanSpec, step_id: str) -> list[ReceiptRecord]:
    """The step's receipt rows, with those of its action that a step no longer holding it
    claimed (renamed, removed, or the action moved here): the receipt follows the action
    (:func:`~prefect_waymark.guards.receipts.receipts_of_action`)."""
    every = ledger.receipts(plan.plan_id)
    rows = [r for r in every if r.step_id == step_id]
    name = next((s.action for s in plan.steps if s.id == step_id), None)
    if name is not None and not any(r.action == name for r in rows):
        rows += receipts_of_action(plan, step_id, name, every)
    return rows


def open_intents(ledger: Ledger, plan: PlanSpec, step_id: str) -> list[ReceiptRecord]:
    """The step's actions whose outcome is unknown (an intent with no receipt), inherited
    ones included."""
    return [r for r in step_receipts(ledger, plan, step_id) if r.state == "intent"]


def choose_key(
    ledger: Ledger, plan: PlanSpec, step_id: str, action: str | None, key: str | None
) -> tuple[str, str]:
    """The (key, action) a person means: given, or the step's only open intent — its own, or
    one its action inherited from a step that no longer holds it (:func:`step_receipts`)."""
    rows = step_receipts(ledger, plan, step_id)
    if key is not None:
        row = next((r for r in rows if r.key == key), None)
        if row is None and (row := ledger.receipt(key)) is not None and row.step_id != step_id:
            raise ValueError(f"--key {key!r} belongs to step {row.step_id!r}, not {step_id!r}")
        name = row.action if row is not None else action or plan.step(step_id).action
        if name is None:
            raise ValueError(f"--key {key!r} has no intent yet: give --action too")
        return key, name
    if action is not None:
        row = next((r for r in rows if r.action == action and r.state == "intent"), None)
        if row is not None:
            return row.key, action
        return default_action_key(plan.plan_id, step_id, action), action
    open_rows = [r for r in rows if r.state == "intent"]
    if len(open_rows) == 1:
        return open_rows[0].key, open_rows[0].action
    if not open_rows and plan.step(step_id).action:
        name = str(plan.step(step_id).action)
        return default_action_key(plan.plan_id, step_id, name), name
    if not open_rows:
        raise ValueError(f"step {step_id!r} has no action whose outcome is unknown")
    names = ", ".join(f"{r.action} ({r.key})" for r in open_rows)
    raise ValueError(f"step {step_id!r} has several open intents: {names}; choose with --action")


def record_receipt(
    ledger: Ledger,
    plan: PlanSpec,
    step_id: str,
    *,
    outcome: Literal["applied", "not_applied"],
    action: str | None = None,
    key: str | None = None,
    external_id: str | None = None,
    note: str | None = None,
    by: str | None = None,
    release: bool = True,
) -> tuple[ReceiptRecord, bool]:
    """Record a person's answer; return the row and whether the step was released from review.

    With ``release`` the step goes back to pending when it waits at needs_review and no intent
    of it is open any more; its next run finds the receipt (the action is skipped) or runs the
    released action. ``waymark review --accept --receipt`` records the decision itself.
    """
    who = by or default_executor()
    spec = plan.step(step_id)
    chosen_key, name = choose_key(ledger, plan, step_id, action, key)
    rec = ledger.settle_action(
        chosen_key,
        outcome=outcome,
        token=None,
        by=who,
        external_id=external_id,
        source="person",
        note=note,
        branch=spec.branch,
        step=(plan.plan_id, step_id, name),
    )
    state = ledger.step_states(plan.plan_id).get(step_id)
    released = False
    if not release:
        return rec, released
    if state is not None and state.status == "needs_review" and not state.open_actions:
        record_decision(
            ledger,
            plan.plan_id,
            EventKind.step_review_accepted,
            step_id=step_id,
            branch=spec.branch,
            by=who,
            resume_status="pending",
            reason=f"receipt recorded by a person: {name} {outcome}",
        )
        released = True
    return rec, released
