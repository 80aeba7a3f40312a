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
from typing import Annotated, Any, Literal

import typer

from ..errors import LedgerError
from ..ledger.receipts import ReceiptRecord
from ..models import REASON
from ..review.receipts import record_receipt
from ..run import exit_codes
from ._common import fail, load_or_exit, open_or_exit, workdir_for
from .options import ByOpt, LedgerOpt, PlanArg, WorkdirOpt, bounded

__all__ = ["receipt", "receipt_command", "review_receipt"]


def receipt(
    plan: PlanArg,
    step: Annotated[str, typer.Argument(help="Step whose action's outcome you checked.")],
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    applied: Annotated[
        bool, typer.Option("--applied", help="It happened: commit a receipt (never run again).")
    ] = False,
    not_applied: Annotated[
        bool, typer.Option("--not-applied", help="It did not happen: the next run does it.")
    ] = False,
    action: Annotated[
        str | None, typer.Option("--action", help="Action name (default: the open one).")
    ] = None,
    key: Annotated[str | None, typer.Option("--key", help="Idempotency key.")] = None,
    external_id: Annotated[
        str | None, typer.Option("--external-id", help="The business system's id.")
    ] = None,
    note: Annotated[
        str | None,
        typer.Option(
            "--note",
            help=f"What you checked (at most {REASON.chars:,} characters).",
            callback=bounded(REASON, "--note"),
        ),
    ] = None,
    by: ByOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Record what happened to an action whose outcome is unknown, or list a step's receipts."""
    raise typer.Exit(
        receipt_command(
            plan,
            step,
            workdir,
            ledger,
            applied,
            not_applied,
            action,
            key,
            external_id,
            note,
            by,
            as_json,
        )
    )


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
    led = open_or_exit(ledger_url, wd, create=False, plan=spec)
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
        from ..ledger.plan_close import read_closed

        closed = read_closed(led, spec.plan_id)
    doc: dict[str, Any] = {"receipt": rec.model_dump(mode="json"), "step_released": released}
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        what = "receipt committed" if applied else "recorded as not applied"
        print(f"{spec.plan_id}: step {step!r} action {rec.action!r} (key {rec.key}): {what}")
        if released and closed is None:
            print(f"step {step!r} is pending again: `waymark run` continues the plan")
        elif released:  # a closed plan runs nothing again
            print(f"step {step!r} is pending again; the plan is closed, so no run continues it")
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
    led = open_or_exit(ledger_url, workdir_for(spec, workdir), create=False, plan=spec)
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
