"""``waymark review``: answer a stop for review — accept, re-run the step, or abort the plan.

The decision is a ledger event that the next ``waymark run`` follows. Prefect is contacted only
when a deployment's flow run is suspended for this answer: it is resumed with it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import PlanClosedError
from ..ledger import Ledger
from ..ledger.identity import default_executor
from ..models import utcnow
from ..plan.spec import PlanSpec
from ..review.decisions import Decision, ReviewError, apply_decision
from ..review.suspend import (
    SUSPENSION_EVENT_KINDS,
    Suspension,
    open_suspensions,
    resume_suspended,
)
from ..run import exit_codes
from ..subplans.answers import answer_subplans
from ._common import Answer, fail, load_or_exit, open_or_exit, workdir_for
from .options import ByOpt, LedgerOpt, PlanArg, ReasonOpt, WorkdirOpt

__all__ = ["review", "review_answer", "review_command"]


def review(
    plan: PlanArg,
    step: Annotated[
        str | None, typer.Option("--step", help="Step to answer (default: the one in review).")
    ] = None,
    accept: Annotated[
        bool, typer.Option("--accept", help="Accept the current state; the step goes on.")
    ] = False,
    rerun: Annotated[
        bool, typer.Option("--rerun", help="Accept the current state and run the step again.")
    ] = False,
    abort: Annotated[
        bool, typer.Option("--abort", help="Abort the plan: `waymark run` will not run it.")
    ] = False,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    reason: ReasonOpt = "",
    by: ByOpt = None,
    receipt: Annotated[
        str | None,
        typer.Option(
            "--receipt",
            help="For an action whose outcome is unknown: 'applied' or 'not-applied' "
            "(what you checked in the business system).",
        ),
    ] = None,
    external_id: Annotated[
        str | None, typer.Option("--external-id", help="With --receipt applied: its id.")
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all", help="With --accept or --rerun: answer every step in review the same way."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Answer a stop for review: --accept, --rerun or --abort. Records an event; runs nothing."""
    if every and (step is not None or receipt is not None):
        fail("--all answers every stop: it goes without --step and --receipt")
    if receipt is not None:
        from .receipts import review_receipt

        review_receipt(
            plan, step, receipt, external_id, (accept, rerun, abort), workdir, ledger, reason, by
        )
    code = review_command(
        plan, step, accept, rerun, abort, workdir, ledger, reason, by, every=every, as_json=as_json
    )
    raise typer.Exit(code)


def _decision(accept: bool, rerun: bool, abort: bool) -> Decision:
    chosen = [name for name, on in (("accept", accept), ("rerun", rerun), ("abort", abort)) if on]
    if len(chosen) != 1:
        fail("choose exactly one of --accept, --rerun, --abort")
    decision: Decision = chosen[0]  # type: ignore[assignment]
    return decision


def review_command(
    plan: Path,
    step: str | None,
    accept: bool,
    rerun: bool,
    abort: bool,
    workdir: Path | None,
    ledger_url: str | None,
    reason: str,
    by: str | None,
    *,
    every: bool = False,
    as_json: bool = False,
) -> int:
    said = review_answer(
        plan, step, _decision(accept, rerun, abort), workdir, ledger_url, reason, by, every=every
    )
    if as_json:
        print(json.dumps(said.document, indent=2, default=str, ensure_ascii=False))
    elif said.line:
        print(said.line)
    for line in said.document["refused"]:
        print(f"waymark: not answered: {line}", file=sys.stderr)
    return said.code


def review_answer(
    plan: Path,
    step: str | None,
    decision: Decision,
    workdir: Path | None,
    ledger_url: str | None,
    reason: str,
    by: str | None,
    *,
    every: bool = False,
) -> Answer:
    """``waymark review``'s answer: the stops answered, the flow runs resumed, and (``every``)
    the stops that refused the answer (exit 2)."""
    if every and decision == "abort":
        fail("--all goes with --accept or --rerun (--abort stops the whole plan by itself)")
    from ..text.commands import remember_options

    remember_options(workdir=workdir, ledger=ledger_url)  # the hints it prints carry them
    spec = load_or_exit(plan)
    led = open_or_exit(ledger_url, workdir_for(spec, workdir), create=False, plan=spec)
    if led is None:
        fail(f"{plan}: no ledger yet; the plan has not run, so nothing needs review")
    who = by or default_executor()
    with led:
        unanswered = {s.flow_run_id for s in _suspensions(led, spec.plan_id) if not s.answered}
        steps = _in_review(led, spec, plan) if every else [step]
        done: list[str] = []
        refused: list[str] = []
        try:
            for one in steps:
                try:
                    done += apply_decision(led, spec, decision, step_id=one, by=who, reason=reason)
                except ReviewError as exc:  # --all: the other stops are still answered
                    if not every:
                        raise
                    refused.append(f"step {one!r}: {exc}")
            # A `plan:` step's stop: the same answer for its sub-plan's stops (subplans/).
            done += answer_subplans(led, spec, decision, by=who, reason=reason)
        except (ReviewError, PlanClosedError) as exc:  # closed: the ledger takes no rerun
            fail(str(exc))
        # Flow runs suspended for the stop this answer just closed (none is resumed twice).
        waiting = [
            s
            for s in _suspensions(led, spec.plan_id)
            if s.answered and s.flow_run_id in unanswered and not s.waits_for_checkin
        ]
    resumed: list[str] = []
    if waiting:  # resume them with the answer
        answer = {"decision": decision, "receipt": "", "reason": reason, "by": who}
        resumed = list(resume_suspended(waiting, answer))
    doc = {
        "ok": not refused,
        "plan_id": spec.plan_id,
        "decision": decision,
        "by": who,
        "answered": done,
        "resumed": resumed,
        "refused": refused,
    }
    line = "\n".join(f"{spec.plan_id}: {one}" for one in [*done, *resumed])
    return Answer(doc, line, exit_codes.BAD_INPUT if refused else exit_codes.OK)


def _in_review(led: Ledger, spec: PlanSpec, plan: Path) -> list[str | None]:
    """``--all``: every step in review, in plan order."""
    states = led.step_states(spec.plan_id)
    steps: list[str | None] = [
        s.id for s in spec.steps if (st := states.get(s.id)) and st.status == "needs_review"
    ]
    if not steps:
        fail(f"{plan}: no step of plan {spec.plan_id!r} needs review")
    return steps


def _suspensions(led: Ledger, plan_id: str) -> list[Suspension]:
    events = led.events(plan_id, kinds=list(SUSPENSION_EVENT_KINDS))
    return open_suspensions(events, now=utcnow())
