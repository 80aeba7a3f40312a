"""``waymark skip`` and ``waymark close``: leave a step out on purpose, close a plan for good.

Both work on the ledger alone — ``close`` reaches a Prefect server only to read a goal contract
kept in a block — and rewrite the plan's view files (TASKS.md, STATE.md, …) afterwards. Exit
codes: 0 done, 2 bad input or a state that does not allow it (nothing recorded), 3 ``close``
refused: something is unmet (each listed with the command that resolves it; nothing recorded).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import CloseError, MarkerFileError, PlanClosedError
from ..ledger.identity import default_executor
from ..models import EVIDENCE, REASON
from ..plan.spec import BlockRef
from ..run import exit_codes
from ..text.markdown import cell
from ._common import Answer, check_not_renamed, fail, load_or_exit, open_or_exit, workdir_for
from .options import ByOpt, LedgerOpt, MarkersDirOpt, PlanArg, ReasonOpt, WorkdirOpt, bounded

__all__ = ["close", "skip", "skip_answer"]


def _views(spec: Any, led: Any, folder: Path) -> None:
    from ..markers.run_markers import write_views

    try:
        write_views(spec, led, folder)
    except (OSError, MarkerFileError) as exc:
        print(f"waymark: warning: the views (TASKS.md, STATE.md) were not updated: {exc}",
              file=sys.stderr)  # fmt: skip


def skip(
    plan: PlanArg,
    step: Annotated[str, typer.Argument(help="The step to leave out.")],
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            help=f"Why it is left out (required; kept in the ledger; at most {REASON.chars:,} "
            "characters).",
            callback=bounded(REASON, "--reason"),
        ),
    ] = "",
    by: ByOpt = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    markers_dir: MarkersDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Leave a pending, blocked or failed step out on purpose: it counts as done (no result, no
    outputs), the steps after it go on and get None as its value. Runs nothing."""
    said = skip_answer(plan, step, reason, by, workdir, ledger, markers_dir)
    if as_json:
        print(json.dumps(said.document, indent=2, default=str, ensure_ascii=False))
    else:
        print(said.line)


def skip_answer(
    plan: Path,
    step: str,
    reason: str,
    by: str | None = None,
    workdir: Path | None = None,
    ledger: str | None = None,
    markers_dir: Path | None = None,
) -> Answer:
    """``waymark skip``'s answer (the MCP server's ``skip`` tool returns it too)."""
    from ..closing.skip import skip_step
    from ..markers import markers_folder

    spec = load_or_exit(plan)
    if not reason.strip():
        fail(f"--reason: say why step {step!r} is left out (it is kept in the ledger)")
    if step not in {s.id for s in spec.steps}:
        fail(f"unknown step {step!r} in {plan}")
    wd = workdir_for(spec, workdir)
    led = open_or_exit(ledger, wd, create=True, plan=spec)
    assert led is not None  # create=True
    who = by or default_executor()
    with led:
        check_not_renamed(spec, led)  # its history lives under the new id
        try:
            done = skip_step(spec, led, step, reason, who)
        except (CloseError, PlanClosedError) as exc:
            fail(str(exc))
        _views(spec, led, markers_folder(spec, wd, markers_dir))
        states = led.step_states(spec.plan_id)
    open_after = [
        s.id
        for s in spec.steps
        if step in s.depends_on and (states[s.id].status if s.id in states else "") != "completed"
    ]
    then = next_command(spec, states, plan)
    goes_on = f"; the steps after it go on: {', '.join(open_after)}" if open_after else ""
    lines = [f"{spec.plan_id}: {line}" for line in done.notes]
    lines.append(f"{spec.plan_id}: step {step!r} skipped ({cell(reason)}){goes_on}")
    lines.append(f"next: {then}")
    doc = {
        "ok": True,
        "plan_id": spec.plan_id,
        "step": step,
        "reason": reason,
        "by": who,
        "notes": list(done.notes),
        "goes_on": open_after,
        "next": then,
    }
    return Answer(doc, "\n".join(lines))


def next_command(spec: Any, states: dict[str, Any], plan: Path) -> str:
    """What to do after a skip: run the plan, check in an agent's or a person's step, or close
    the plan when every step is done or skipped."""
    from ..ledger.progress_view import build_view

    view = build_view(spec, states)
    if view.complete:
        return f"waymark close {plan}"
    nxt = view.next_step
    if nxt is not None and spec.step(nxt).checked_in:
        return f"waymark next {plan}"
    return f"waymark run {plan}"


def close(
    plan: PlanArg,
    evidence: Annotated[
        list[str] | None,
        typer.Option(
            "--evidence",
            help='"ID: text" for a contract exit condition (E1, …) or acceptance item (A1, …); '
            f"repeat it (each at most {EVIDENCE.chars:,} characters).",
            callback=bounded(EVIDENCE, "--evidence"),
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Close although things are unmet (needs --reason).")
    ] = False,
    reason: ReasonOpt = "",
    by: ByOpt = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    markers_dir: MarkersDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Close a plan for good: every step done or skipped, no open review or action intent,
    evidence for every contract exit condition and acceptance item. Then runs refuse it and the
    views say it is closed; its history stays. Exit 3 lists what is unmet."""
    from ..closing.checks import parse_evidence
    from ..closing.close import close_plan, load_close_contract
    from ..markers import markers_folder

    spec = load_or_exit(plan)
    if force and not reason.strip():
        fail("--force needs --reason: say why the plan closes with things unmet")
    unreadable = None
    contract, source = None, None
    if spec.contract is not None:
        if isinstance(spec.contract, BlockRef):  # the block is on a Prefect server
            from .run_command import configure_prefect

            configure_prefect()
        contract, source, unreadable = load_close_contract(spec)
    try:  # the syntax always; the ids only against a contract that could be read
        given = parse_evidence(evidence or [], contract, unreadable=unreadable is not None)
    except CloseError as exc:
        fail(f"{plan}: {exc}; nothing was recorded")
    wd = workdir_for(spec, workdir)
    # Without a ledger only a forced close creates one: a refusal records nothing.
    led = open_or_exit(ledger, wd, create=force, plan=spec)
    try:
        check_not_renamed(spec, led)  # its history lives under the new id
        try:
            done = close_plan(
                spec,
                led,
                markers_folder(spec, wd, markers_dir),
                contract=contract,
                contract_source=source,
                given=given,
                by=by or default_executor(),
                reason=reason,
                force=force,
                unreadable=unreadable,
            )
        except (CloseError, MarkerFileError) as exc:
            fail(str(exc))
    finally:
        if led is not None:
            led.close()
    check = done.check
    doc: dict[str, Any] = {
        "plan_id": spec.plan_id,
        "closed": done.closed is not None,
        "record": done.closed,
        "unmet": [{"what": u.what, "fix": u.fix} for u in check.unmet],
        "evidence": check.evidence,
        "acceptance": check.acceptance,
    }
    if as_json:
        print(json.dumps(doc, indent=2, default=str, ensure_ascii=False))
    elif done.closed is None:
        print(f"{spec.plan_id}: not closed: {len(check.unmet)} thing(s) unmet:")
        print("\n".join(f"  - {u.line()}" for u in check.unmet))
        print(f'  (or close anyway: `waymark close {plan} --force --reason "..."`)')
    else:
        from ..closing.closed import closed_line

        print(closed_line(spec.plan_id, done.closed))
        for item, text in {**check.acceptance, **check.evidence}.items():
            print(f"  evidence {item}: {text}")
        for u in check.unmet:
            print(f"  left unmet: {u.line()}")
        print(
            f"its history: `waymark status {plan}`, `waymark marker {plan} --history`, "
            f"`waymark export {plan} --format jsonl`"
        )
    raise typer.Exit(exit_codes.OK if done.closed is not None else exit_codes.STOPPED)
