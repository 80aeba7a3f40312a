"""``waymark receipt``: a person records what happened to an action whose outcome is unknown.

An intent without a receipt stops its step at needs_review ("outcome unknown") when no probe can
ask the business system. Whoever checked by hand records the answer here: ``--applied`` commits a
receipt (the action is never run again), ``--not-applied`` releases the key (the next run does
it). Either way the step goes back to pending, and ``waymark run`` continues. Without
``--applied``/``--not-applied`` the command lists the step's intents and receipts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from ..errors import LedgerError
from ..ledger import Ledger
from ..ledger.events import EventKind
from ..ledger.receipt_records import ReceiptRecord, default_action_key
from ..plan.spec import PlanSpec
from ..run import exit_codes
from ..run.identity import default_executor
from ._common import fail, load_or_exit, open_or_exit, workdir_for

__all__ = ["choose_key", "receipt_command", "record_receipt", "review_receipt"]


def choose_key(
    ledger: Ledger, plan: PlanSpec, step_id: str, action: str | None, key: str | None
) -> tuple[str, str]:
    """The (key, action) a person means: given, or the step's only open intent."""
    rows = ledger.receipts(plan.plan_id, step_id)
    if key is not None:
        row = next((r for r in rows if r.key == key), None) or ledger.receipt(key)
        if row is not None and row.step_id != step_id:
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
        ledger.record(
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


def _show(rows: list[ReceiptRecord]) -> None:
    if not rows:
        print("no intents or receipts")
    for r in rows:
        what = r.outcome or "intent (outcome unknown)"
        ext = f" external id {r.external_id}" if r.external_id else ""
        when = r.settled_at or r.intent_at
        print(f"{r.key}: {r.action} {what}{ext} at {when} by {r.settled_by or r.intent_by}")


def receipt_command(
    plan_path: Path,
    step: str,
    workdir: Path | None,
    ledger_url: str | None,
    applied: bool,
    not_applied: bool,
    action: str | None,
    key: str | None,
    external_id: str | None,
    note: str | None,
    by: str | None,
    as_json: bool,
) -> int:
    spec = load_or_exit(plan_path)
    if step not in {s.id for s in spec.steps}:
        fail(f"unknown step {step!r} in {plan_path}")
    if applied and not_applied:
        fail("--applied and --not-applied exclude each other")
    if external_id is not None and not applied:
        fail("--external-id goes with --applied")
    wd = workdir_for(spec, workdir)
    led = open_or_exit(ledger_url, wd, create=False)
    if led is None:
        fail(f"no ledger for plan {spec.plan_id!r} in {wd}: nothing was recorded yet")
    with led:
        if not (applied or not_applied):
            rows = led.receipts(spec.plan_id, step)
            if as_json:
                print(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
            else:
                _show(rows)
            return exit_codes.OK
        try:
            rec, released = record_receipt(
                led,
                spec,
                step,
                outcome="applied" if applied else "not_applied",
                action=action,
                key=key,
                external_id=external_id,
                note=note,
                by=by,
            )
        except (ValueError, LedgerError) as exc:
            fail(str(exc))
    doc: dict[str, Any] = {"receipt": rec.model_dump(mode="json"), "step_released": released}
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        what = "receipt committed" if applied else "recorded as not applied"
        print(f"{spec.plan_id}: step {step!r} action {rec.action!r} (key {rec.key}): {what}")
        if released:
            print(f"step {step!r} is pending again: `waymark run` continues the plan")
    return exit_codes.OK


def review_receipt(
    plan_path: Path,
    step: str | None,
    receipt: str,
    external_id: str | None,
    decisions: tuple[bool, bool, bool],
    workdir: Path | None,
    ledger_url: str | None,
    reason: str,
    by: str | None,
) -> None:
    """``waymark review --accept|--rerun --receipt applied|not-applied``: settle the open intent
    of the step in review first; the review decision that follows sends the step on."""
    outcomes: dict[str, Literal["applied", "not_applied"]] = {
        "applied": "applied",
        "not-applied": "not_applied",
        "not_applied": "not_applied",
    }
    if receipt not in outcomes:
        fail(f"--receipt: expected 'applied' or 'not-applied', got {receipt!r}")
    accept, rerun, abort = decisions
    if abort or (accept + rerun) != 1:
        fail("--receipt goes with exactly one of --accept or --rerun")
    if external_id is not None and outcomes[receipt] != "applied":
        fail("--external-id goes with --receipt applied")
    spec = load_or_exit(plan_path)
    led = open_or_exit(ledger_url, workdir_for(spec, workdir), create=False)
    if led is None:
        fail(f"{plan_path}: no ledger yet; the plan has not run, so nothing needs review")
    with led:
        states = led.step_states(spec.plan_id)
        if step is None:
            open_steps = [s for s, st in states.items() if st.open_actions]
            if len(open_steps) != 1:
                fail("--receipt: choose the step with --step (" + ", ".join(open_steps) + ")")
            step = open_steps[0]
        if step not in {s.id for s in spec.steps}:
            fail(f"unknown step {step!r} in {plan_path}")
        try:
            rec, _ = record_receipt(
                led,
                spec,
                step,
                outcome=outcomes[receipt],
                external_id=external_id,
                note=reason or None,
                by=by,
                release=False,
            )
        except (ValueError, LedgerError) as exc:
            fail(str(exc))
    print(f"{spec.plan_id}: step {step!r} action {rec.action!r} (key {rec.key}): {rec.outcome}")
