"""``waymark rerun`` and ``waymark rename-plan``: decisions about a plan's recorded history."""

from __future__ import annotations

from typing import Annotated

import typer

from ..ledger.event_writers import record_decision
from ..ledger.events import EventKind
from ._common import check_not_closed, fail, load_or_exit, open_or_exit, workdir_for
from .options import ByOpt, LedgerOpt, MarkersDirOpt, PlanArg, ReasonOpt, WorkdirOpt

__all__ = ["rename_plan", "rerun"]


def rerun(
    plan: PlanArg,
    step: Annotated[str, typer.Argument(help="Step id to run again.")],
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    reason: ReasonOpt = "",
    by: ByOpt = None,
) -> None:
    """Record an explicit re-run of a step; the next ``waymark run`` executes it again."""
    from ..errors import PlanClosedError, TransitionError
    from ..ledger.identity import default_executor
    from ..text.commands import remember_options, waymark_command

    remember_options(workdir=workdir, ledger=ledger)
    spec = load_or_exit(plan)
    if step not in {s.id for s in spec.steps}:
        fail(f"unknown step {step!r} in {plan}")
    led = open_or_exit(ledger, workdir_for(spec, workdir), create=False, plan=spec)
    if led is None:
        fail(f"plan {spec.plan_id!r} has no recorded run: nothing to re-run")
    with led:
        check_not_closed(spec, led)  # a closed plan runs nothing again
        try:
            record_decision(
                led,
                spec.plan_id,
                EventKind.step_rerun_requested,
                step_id=step,
                branch=spec.step(step).branch,
                by=by or default_executor(),
                reason=reason,
            )
        except (TransitionError, PlanClosedError) as exc:  # closed meanwhile
            fail(str(exc))
        # A receipt of a renamed `action:` is another action's; a code step's actions are
        # named in its code (`@action(...)`), so each receipt of it counts.
        action = spec.step(step).action
        rows = led.receipts(spec.plan_id, step)
        applied = [r for r in rows if r.state == "applied" and action in (None, r.action)]
    print(
        f"{spec.plan_id}: step {step!r} will run again on the next `{waymark_command('run', plan)}`"
    )
    by_hand = spec.step(step).checked_in  # an agent's or a person's step: told, not skipped
    for r in applied:
        what = (
            "whoever takes the step is told so (`waymark next`, `waymark start`) and completes "
            "it without a new receipt"
            if by_hand
            else "the step finds the receipt and skips it"
        )
        print(
            f"note: its action {r.action!r} has a committed receipt (key {r.key}): the action "
            f"is not done again — {what}"
        )


def rename_plan(
    plan: PlanArg,
    old_id: Annotated[
        str, typer.Option("--from", help="The plan's previous id (its history is under it).")
    ],
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    markers_dir: MarkersDirOpt = None,
    by: ByOpt = None,
) -> None:
    """Carry a renamed plan's history and action receipts over to the plan file's new id.

    After changing `plan_id` in the plan file, run this once: completed steps stay completed
    and committed actions are not done again under the new id. Runs under the old id are
    refused from then on. EXECUTION_MARKER.json and the views are rewritten under the new id.
    """
    from ..errors import LedgerError, MarkerFileError
    from ..ledger.identity import default_executor
    from ..markers import markers_folder, rebuild_marker_files
    from ..text.commands import remember_options, waymark_command

    remember_options(workdir=workdir, ledger=ledger)
    spec = load_or_exit(plan)
    if old_id == spec.plan_id:
        fail(f"--from {old_id}: {plan} already has plan_id {old_id!r}; change plan_id first")
    wd = workdir_for(spec, workdir)
    led = open_or_exit(ledger, wd, create=False, plan=spec)
    if led is None:
        fail(f"no ledger in {wd}: plan {old_id!r} has no recorded history to carry over")
    with led:
        try:
            counts = led.rename_plan(old_id, spec.plan_id, by=by or default_executor())
        except LedgerError as exc:
            fail(f"cannot rename plan {old_id!r} to {spec.plan_id!r}: {exc}; nothing changed")
        from ..ledger.plan_close import read_closed

        closed = read_closed(led, spec.plan_id)  # a closed plan stays closed under the new id
        folder = markers_folder(spec, wd, markers_dir)
        try:
            runs = rebuild_marker_files(spec, led, folder)
        except (MarkerFileError, OSError) as exc:
            print(
                f"waymark: the ledger is renamed, but the marker files in {folder} were not "
                f"rewritten ({exc}); rewrite them with `waymark marker {plan} --rebuild`"
            )
            runs = -1
    print(
        f"{old_id} → {spec.plan_id}: carried over {counts['events']} events, "
        f"{counts['steps']} steps and {counts['receipts']} action receipt(s)"
        + (f"; {folder / 'EXECUTION_MARKER.json'} rewritten ({runs} runs)" if runs >= 0 else "")
    )
    if closed is None:
        print(f"next: {waymark_command('run', plan)}")
    else:  # a closed plan's history carries over; nothing runs
        print(f"the plan stays closed: `waymark status {plan}` shows its history")
