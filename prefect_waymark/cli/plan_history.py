"""``waymark rerun``, ``rename-plan``, ``rename-step`` and ``diff``: decisions about a plan's
recorded history, and what an edit of the plan file does to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..ledger.event_payloads import StepDecisionData
from ..ledger.event_writers import record_decision
from ..ledger.events import EventKind
from ._common import check_not_closed, fail, load_or_exit, open_or_exit, workdir_for
from .options import ByOpt, LedgerOpt, MarkersDirOpt, PlanArg, ReasonOpt, WorkdirOpt

__all__ = ["diff", "rename_plan", "rename_step", "rerun"]


def rerun(
    plan: PlanArg,
    step: Annotated[str, typer.Argument(help="Step id to run again.")],
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    reason: ReasonOpt = "",
    by: ByOpt = None,
    only: Annotated[
        bool,
        typer.Option(
            "--only",
            help="Run this step alone: the completed steps after it are kept as they are, on "
            "purpose (recorded; they are not stale).",
        ),
    ] = False,
) -> None:
    """Record an explicit re-run of a step; the next ``waymark run`` executes it again.

    The completed steps after it become stale: the next run runs them again after it, in
    dependency order (a step whose action was applied, or an agent's or a person's step, stops
    for review instead). ``--only`` keeps them as they are.
    """
    from ..errors import PlanClosedError, TransitionError
    from ..ledger.identity import default_executor
    from ..review.stale import WHY_RERUN, completed_dependents, mark_dependents_stale
    from ..text.commands import remember_options, waymark_command

    remember_options(workdir=workdir, ledger=ledger)
    spec = load_or_exit(plan)
    if step not in {s.id for s in spec.steps}:
        fail(f"unknown step {step!r} in {plan}")
    led = open_or_exit(ledger, workdir_for(spec, workdir), create=False, plan=spec)
    if led is None:
        fail(f"plan {spec.plan_id!r} has no recorded run: nothing to re-run")
    who = by or default_executor()
    with led:
        check_not_closed(spec, led)  # a closed plan runs nothing again
        after = completed_dependents(spec, led.step_states(spec.plan_id), step)
        data: StepDecisionData = {"by": who, "reason": reason}
        if only:
            data["kept"] = after
        try:
            record_decision(
                led,
                spec.plan_id,
                EventKind.step_rerun_requested,
                step_id=step,
                branch=spec.step(step).branch,
                **data,
            )
        except (TransitionError, PlanClosedError) as exc:  # closed meanwhile
            fail(str(exc))
        stale = [] if only else mark_dependents_stale(led, spec, step, WHY_RERUN, by=who)
        # A receipt of a renamed `action:` is another action's; a code step's actions are
        # named in its code (`@action(...)`), so each receipt of it counts.
        action = spec.step(step).action
        rows = led.receipts(spec.plan_id, step)
        applied = [r for r in rows if r.state == "applied" and action in (None, r.action)]
    print(
        f"{spec.plan_id}: step {step!r} will run again on the next `{waymark_command('run', plan)}`"
    )
    if only and after:
        print(f"kept as they are, on purpose (--only, by {who}): {', '.join(after)}")
    elif stale:
        print(
            f"stale now: {', '.join(stale)} — the next run runs them again after {step!r}, in "
            "this order (a step whose action was applied, or an agent's or a person's step, "
            f"stops for review instead); `{waymark_command('rerun', plan, step, '--only')}` "
            "would have kept them"
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
    from ..ledger.plan_rename import renamed_to
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
        # Another folder of the plan (the same pinned ledger) carried it over already: this
        # folder's marker files, still under the old id, are all that is left to rewrite.
        folder = markers_folder(spec, wd, markers_dir)
        done = (
            renamed_to(led.last_event(old_id, [EventKind.plan_renamed])) == spec.plan_id
            and _marker_plan_id(folder) == old_id
        )
        try:
            counts = (
                None if done else led.rename_plan(old_id, spec.plan_id, by=by or default_executor())
            )
        except LedgerError as exc:
            fail(f"cannot rename plan {old_id!r} to {spec.plan_id!r}: {exc}; nothing changed")
        from ..ledger.plan_close import read_closed

        closed = read_closed(led, spec.plan_id)  # a closed plan stays closed under the new id
        try:
            runs = rebuild_marker_files(spec, led, folder)
        except (MarkerFileError, OSError) as exc:
            print(
                f"waymark: the ledger is renamed, but the marker files in {folder} were not "
                f"rewritten ({exc}); rewrite them with `waymark marker {plan} --rebuild`"
            )
            runs = -1
    rewritten = f"{folder / 'EXECUTION_MARKER.json'} rewritten ({runs} runs)" if runs >= 0 else ""
    if counts is None:
        print(
            f"{old_id} → {spec.plan_id}: the history was carried over already (another folder "
            "of the plan); " + (rewritten or "nothing else to do")
        )
    else:
        print(
            f"{old_id} → {spec.plan_id}: carried over {counts['events']} events, "
            f"{counts['steps']} steps and {counts['receipts']} action receipt(s)"
            + (f"; {rewritten}" if rewritten else "")
        )
    if closed is None:
        print(f"next: {waymark_command('run', plan)}")
    else:  # a closed plan's history carries over; nothing runs
        print(f"the plan stays closed: `waymark status {plan}` shows its history")


def _marker_plan_id(folder: Path) -> str | None:
    """The plan id of the marker file in ``folder`` (None: none, or unreadable)."""
    from ..errors import MarkerFileError
    from ..markers import MARKER_FILE, read_marker_file

    try:
        doc = read_marker_file(folder / MARKER_FILE)
    except (MarkerFileError, OSError):
        return None
    return str(doc["plan_id"]) if doc and doc.get("plan_id") else None


def diff(
    plan: PlanArg,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """What changed in the plan file since the ledger last saw it, and what each change will do
    to progress: steps added, removed (kept in history), renamed (completion kept), changed
    (the next run stops a completed one for review). Records nothing; runs nothing.

    Exit codes: 0 the comparison (also when nothing changed), 2 bad input.
    """
    from ..guards.plan_edits import compare, last_seen

    spec = load_or_exit(plan)
    wd = workdir_for(spec, workdir)
    led = open_or_exit(ledger, wd, create=False, plan=spec)
    if led is None:
        old, states = None, {}
    else:
        with led:
            old, states = last_seen(led, spec.plan_id), led.step_states(spec.plan_id)
    edits = compare(old, spec, states)
    if as_json:
        doc: dict[str, Any] = {
            "plan_id": spec.plan_id,
            "compared": not edits.first,
            "changes": edits.doc(),
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    if edits.first:
        print(f"{spec.plan_id}: the ledger saw no earlier plan: nothing to compare")
    elif not edits.edits:
        print(f"{spec.plan_id}: no change since the plan the ledger saw last")
    else:
        print(f"{spec.plan_id}: {len(edits.edits)} change(s) since the plan the ledger saw last")
        for edit in edits.edits:
            print(f"  {edit.line()}")


def rename_step(
    plan: PlanArg,
    old_id: Annotated[str, typer.Option("--from", help="The step's previous id.")],
    new_id: Annotated[str, typer.Option("--to", help="The step's id in the plan file.")],
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    by: ByOpt = None,
) -> None:
    """Carry a renamed step's history, completion and action receipts over to its new id.

    After changing a step's id in the plan file, a run, `next` or a check-in finds the rename
    itself when the definition (or the action) is the same; this records it explicitly (two
    steps of one definition, or a rename with other changes). Refused when the old id has no
    history or the new one has.
    """
    from ..errors import LedgerError
    from ..guards.plan_edits import see_plan
    from ..ledger.identity import default_executor

    spec = load_or_exit(plan)
    ids = {s.id for s in spec.steps}
    if new_id not in ids:
        fail(f"--to {new_id}: {plan} has no step {new_id!r}; change the step's id first")
    if old_id in ids:
        fail(f"--from {old_id}: {plan} still has a step {old_id!r}; change its id first")
    wd = workdir_for(spec, workdir)
    led = open_or_exit(ledger, wd, create=False, plan=spec)
    if led is None:
        fail(f"no ledger in {wd}: step {old_id!r} has no recorded history to carry over")
    with led:
        check_not_closed(spec, led)
        try:
            edits = see_plan(
                led, spec, by=by or default_executor(), source="rename-step",
                force={old_id: new_id},
            )  # fmt: skip
        except LedgerError as exc:
            fail(f"cannot rename step {old_id!r} to {new_id!r}: {exc}; nothing changed")
    assert edits is not None
    print(f"{old_id} → {new_id}: history, completion and action receipts carried over")
    for line in edits.lines():
        print(line)
    print(f"next: waymark run {plan}")
