"""``waymark import``: write a plan file from Task Master, beads or a Markdown checklist, and
record in the ledger the progress the source already has (once per plan)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import fail, open_or_exit, workdir_for
from .options import LedgerOpt, WorkdirOpt

if TYPE_CHECKING:
    from ..importers import PreparedImport
    from ..ledger import LedgerReader
    from ..ledger.events import ProgressEvent

__all__ = ["import_plan"]

SourceArg = Annotated[
    Path,
    typer.Argument(
        help="The file to import: Task Master's .taskmaster/tasks/tasks.json, a beads "
        "issues.jsonl, or a Markdown checklist (TASKS.md, TODO.md, tasks.md)."
    ),
]
FromOpt = Annotated[
    str, typer.Option("--from", help="The file's format: taskmaster, beads or markdown.")
]
OutOpt = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="The plan file to write (.yaml); its folder is the workdir unless --workdir says "
        "otherwise.",
    ),
]
TagOpt = Annotated[
    str | None, typer.Option("--tag", help="Task Master: the tag to import (default: master).")
]
PlanIdOpt = Annotated[
    str | None,
    typer.Option("--plan-id", help="The plan's id (default: the project's folder name)."),
]
KindOpt = Annotated[
    str,
    typer.Option(
        "--kind", help="Who does the imported steps: agent (default) or manual (a person)."
    ),
]

MAX_WARNINGS = 50


def _warn(warnings: list[str]) -> None:
    for w in warnings[:MAX_WARNINGS]:
        print(f"waymark: warning: {w}", file=sys.stderr)
    if len(warnings) > MAX_WARNINGS:
        more = len(warnings) - MAX_WARNINGS
        print(f"waymark: warning: ... and {more} more warnings", file=sys.stderr)


def _changed(out: Path, changes: list[str]) -> None:
    """The import report's list of changes (all of them are at the top of the plan file)."""
    if not changes:
        return
    n = len(changes)
    things = f"{n} thing{'s' if n > 1 else ''}"
    print(f"changed {things} to read the source as a plan (listed at the top of {out}):")
    for c in changes[:MAX_WARNINGS]:
        print(f"  - {c}")
    if n > MAX_WARNINGS:
        print(f"  ... and {n - MAX_WARNINGS} more (in {out})")


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _check_args(fmt: str, tag: str | None, plan_id: str | None, kind: str, out: Path) -> None:
    from ..importers import FORMATS, KINDS, valid_id

    if fmt not in FORMATS:
        fail(f"--from {fmt!r}: expected one of {', '.join(FORMATS)}")
    if tag is not None and fmt != "taskmaster":
        fail("--tag goes with --from taskmaster (a Task Master tag)")
    if kind not in KINDS:
        fail(f"--kind {kind!r}: expected agent or manual")
    if plan_id is not None and not valid_id(plan_id):
        fail(
            f"--plan-id {plan_id[:80]!r}: expected letters, digits, '.', '_' and '-' (at most 100)"
        )
    if out.suffix.lower() not in (".yaml", ".yml"):
        fail(f"-o {out}: expected a .yaml or .yml file (the plan file to write)")
    if out.is_dir():
        fail(f"-o {out}: is a folder; expected the plan file to write")


def _wrote_line(out: Path, prep: PreparedImport) -> str:
    detail = f", {prep.doc.detail}" if prep.doc.detail else ""
    return (
        f"wrote {out}: plan {prep.spec.plan_id!r} with {_steps(len(prep.spec.steps))} "
        f"(from {prep.format} {prep.source}{detail})"
    )


def _next_line(out: Path, workdir: Path | None, ledger: str | None) -> str:
    from ..ledger.urls import shown_url

    extra = (f" --workdir {workdir}" if workdir is not None else "") + (
        f" --ledger {shown_url(ledger)}" if ledger else ""
    )
    return f"next: waymark status {out}{extra}"


def _check_ledger(led: LedgerReader, prep: PreparedImport) -> ProgressEvent | None:
    """The plan's ``imported`` event if this very source was imported into it already; exit 2
    if another source was, a live run holds the plan's branch now, or the ledger has another
    plan of this id (its events, and no import: the import would complete that plan's steps)."""
    from ..importers import busy_holds, earlier_import, foreign_events

    plan_id = prep.spec.plan_id
    earlier = earlier_import(led, plan_id)
    if earlier is not None:
        sha = str(earlier.data.get("source_sha256", ""))
        if sha == prep.sha256:
            return earlier
        path = earlier.data.get("source_path", "?")
        fail(
            f"plan {plan_id!r} was already imported from {path} (sha256 {sha[:12]}…); "
            f"{prep.source} (sha256 {prep.sha256[:12]}…) is another source: a plan is "
            "imported once. Nothing written; import it as a new plan (--plan-id NEW -o NEW.yaml)"
        )
    busy = busy_holds(led, plan_id, prep.sha256)
    if busy:
        h = busy[0]
        fail(
            f"plan {plan_id!r}: run {h.run_id} holds branch {h.branch!r} (step {h.step_id}); "
            "nothing written: import when the run has finished"
        )
    foreign = foreign_events(led, plan_id, prep.sha256)
    if foreign:
        e = foreign[0]
        what = str(e.kind) + (f" {e.step_id}" if e.step_id else "")
        what += f", run {e.run_id}" if e.run_id else ""
        fail(
            f"plan id {plan_id!r} is taken: the ledger has {len(foreign)} events of another "
            f"plan {plan_id!r} (the first: {what}, {e.at:%Y-%m-%d %H:%M} UTC) and no import "
            "of it. Nothing written; import under a new plan id: --plan-id NEW_ID"
        )
    return None


def _check_output(out: Path, prep: PreparedImport) -> None:
    """Exit 2 unless ``out`` is missing or holds exactly what this import writes: any other
    file is someone's (another import's, a hand-written plan, this import's plan edited)."""
    from ..importers import imported_sha, is_written

    found = imported_sha(out)
    if found is None or is_written(out, prep.text):
        return
    if found != prep.sha256:
        why = f"an import of another source (sha256 {found[:12]}…)" if found else "no import"
        fail(
            f"-o {out}: the file exists and is not this import's ({why} wrote it); "
            "nothing written: choose another -o, or remove the file"
        )
    fail(
        f"-o {out}: the file was edited since the import wrote it (or the import's options "
        "differ); nothing written or recorded: keep your edits and choose another -o"
    )


def _again(
    led: LedgerReader, prep: PreparedImport, out: Path, earlier: ProgressEvent, next_line: str
) -> None:
    """This source was imported into the plan already: nothing to do, or, if the plan file is
    gone, write it again (the ledger has the progress: nothing is recorded again)."""
    from ..importers import imported_definitions, is_written, write_plan_file

    plan_id = prep.spec.plan_id
    sha = prep.sha256
    path = earlier.data.get("source_path", "?")
    told = f"({path}, sha256 {sha[:12]}…, recorded {earlier.at:%Y-%m-%d %H:%M} UTC)"
    if os.path.lexists(out):
        note = (
            ""
            if is_written(out, prep.text)
            else (
                f"; {out} is not what this import writes now (edited, or other options) and "
                "is left as it is"
            )
        )
        print(f"{out}: plan {plan_id!r} already has this import {told}: nothing to do{note}")
        return
    steps = {s.id: s for s in prep.spec.steps}
    for sid, def_hash in imported_definitions(led, plan_id, sha).items():
        if sid not in steps or steps[sid].definition_hash() != def_hash:
            fail(
                f"-o {out}: plan {plan_id!r} was imported from this source with other options "
                f"(step {sid} is not defined as it was then: another --kind or --tag?); nothing "
                "written: run the import as it was first run to write its plan file again"
            )
    _warn(prep.warnings)
    try:
        write_plan_file(out, prep.text)
    except OSError as exc:
        fail(f"-o {out}: cannot write the plan file: {exc.strerror or exc}")
    print(_wrote_line(out, prep))
    _changed(out, prep.changes)
    print(f"the ledger has this import's progress already {told}: nothing recorded again")
    print(next_line)


def import_plan(
    source: SourceArg,
    source_format: FromOpt,
    out: OutOpt = Path("plan.yaml"),
    tag: TagOpt = None,
    plan_id: PlanIdOpt = None,
    kind: KindOpt = "agent",
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
) -> None:
    """Import a plan from Task Master, beads or a Markdown checklist.

    Writes the plan file (every task a step: `kind: agent`, or `manual` with --kind) and records
    the tasks the source has done as completed steps in the ledger, with one `imported` event
    naming the source and its sha256. Importing the same file again changes nothing (a deleted
    plan file is written again); importing another file into a plan that was imported, or into
    a plan id another plan has in the ledger, is refused. An existing plan file is written over
    only if it holds exactly what this import writes.
    """
    from ..errors import LedgerError, PlanError
    from ..importers import first_problem, prepare_import, record_import, write_plan_file
    from ..ledger.urls import shown_url

    fmt = source_format.strip().lower()
    _check_args(fmt, tag, plan_id, kind, out)
    try:
        prep = prepare_import(source, fmt, out=out, tag=tag, plan_id=plan_id, kind=kind)
    except PlanError as exc:
        fail(first_problem(exc))
    spec = prep.spec
    wd = workdir_for(spec, workdir)
    next_line = _next_line(out, workdir, ledger)
    led = open_or_exit(ledger, wd, create=False, plan=spec)
    try:
        if led is not None:
            earlier = _check_ledger(led, prep)
            if earlier is not None:
                _again(led, prep, out, earlier, next_line)
                return
        _check_output(out, prep)
        _warn(prep.warnings)
        try:
            write_plan_file(out, prep.text)
        except OSError as exc:
            fail(f"-o {out}: cannot write the plan file: {exc.strerror or exc}")
        if led is None:
            led = open_or_exit(ledger, wd, create=True, plan=spec)
            assert led is not None
        try:
            rec = record_import(
                led,
                spec,
                prep.built.done,
                source_format=fmt,
                source_path=str(source.resolve()),
                sha256=prep.sha256,
            )
        except LedgerError as exc:
            fail(
                f"{out} is written, but the ledger did not take the import's progress: {exc}. "
                "Run the same import again to record it"
            )
        url = shown_url(led.url)
    finally:
        if led is not None:
            led.close()
    for sid, status in rec.left:
        print(f"waymark: warning: {sid} is {status} in the ledger: left as it is", file=sys.stderr)
    print(_wrote_line(out, prep))
    _changed(out, prep.changes)
    already = f"; {_steps(len(rec.already))} completed already" if rec.already else ""
    print(
        f"recorded {_steps(len(rec.completed))} as completed{already}, and the import "
        f"(sha256 {prep.sha256[:12]}…), in {url}"
    )
    print(next_line)
