"""``waymark review``: answer a stop for review — accept, re-run the step, or abort the plan.

The decision is a ledger event that the next ``waymark run`` follows. Prefect is contacted only
when a deployment's flow run is suspended for this answer: it is resumed with it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import PlanClosedError
from ..ledger import Ledger
from ..ledger.identity import default_executor
from ..models import utcnow
from ..review.decisions import Decision, ReviewError, apply_decision
from ..review.suspend import (
    SUSPENSION_EVENT_KINDS,
    Suspension,
    open_suspensions,
    resume_suspended,
)
from ..run import exit_codes
from ..subplans.answers import answer_subplans
from ._common import fail, load_or_exit, open_or_exit, workdir_for

__all__ = ["review_command"]


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
) -> int:
    decision = _decision(accept, rerun, abort)
    spec = load_or_exit(plan)
    led = open_or_exit(ledger_url, workdir_for(spec, workdir), create=False, plan=spec)
    if led is None:
        fail(f"{plan}: no ledger yet; the plan has not run, so nothing needs review")
    who = by or default_executor()
    with led:
        unanswered = {s.flow_run_id for s in _suspensions(led, spec.plan_id) if not s.answered}
        try:
            done = apply_decision(led, spec, decision, step_id=step, by=who, reason=reason)
            # A `plan:` step's stop: the same answer for its sub-plan's stops (subplans/).
            done += answer_subplans(led, spec, decision, by=who, reason=reason)
        except (ReviewError, PlanClosedError) as exc:  # closed: the ledger takes no rerun
            print(f"waymark: {exc}", file=sys.stderr)
            return exit_codes.BAD_INPUT
        # Flow runs suspended for the stop this answer just closed (none is resumed twice).
        waiting = [
            s
            for s in _suspensions(led, spec.plan_id)
            if s.answered and s.flow_run_id in unanswered and not s.waits_for_checkin
        ]
    for line in done:
        print(f"{spec.plan_id}: {line}")
    if waiting:  # resume them with the answer (issue 12, item 5)
        answer = {"decision": decision, "receipt": "", "reason": reason, "by": who}
        for line in resume_suspended(waiting, answer):
            print(f"{spec.plan_id}: {line}")
    return exit_codes.OK


def _suspensions(led: Ledger, plan_id: str) -> list[Suspension]:
    events = led.events(plan_id, kinds=list(SUSPENSION_EVENT_KINDS))
    return open_suspensions(events, now=utcnow())
