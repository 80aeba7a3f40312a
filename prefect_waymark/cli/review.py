"""``waymark review``: answer a stop for review — accept, re-run the step, or abort the plan.

Never starts Prefect: the decision is a ledger event that the next ``waymark run`` follows.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..review.decisions import Decision, ReviewError, apply_decision
from ..run import exit_codes
from ..run.identity import default_executor
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
    with led:
        try:
            done = apply_decision(
                led, spec, decision, step_id=step, by=by or default_executor(), reason=reason
            )
        except ReviewError as exc:
            print(f"waymark: {exc}", file=sys.stderr)
            return exit_codes.BAD_INPUT
    for line in done:
        print(f"{spec.plan_id}: {line}")
    return exit_codes.OK
