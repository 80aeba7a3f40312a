"""``waymark export``, ``waymark replay`` and ``waymark restore``: a plan's history written out
as JSON lines, its active view at a past point, and a ledger rebuilt from an export
(:mod:`prefect_waymark.audit`)."""

from __future__ import annotations

import itertools
import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._common import fail, ledger_url_or_exit, load_or_exit, open_or_exit, workdir_for
from .options import LedgerOpt, PlanArg, WorkdirOpt

if TYPE_CHECKING:
    from ..audit.replay import ReplayPoint
    from ..ledger.events import ProgressEvent

__all__ = ["export", "replay", "restore"]

_FORMATS = ("jsonl",)


def export(
    plan: PlanArg,
    format: Annotated[  # noqa: A002 - the option's name
        str, typer.Option("--format", help="The export's format: jsonl (one JSON object a line).")
    ] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file (default: standard output)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --output when it exists.")
    ] = False,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
) -> None:
    """Write every event, marker and receipt of the plan, one JSON object a line, header first.
    Reads the ledger; writes nothing there."""
    if format not in _FORMATS:
        fail(f"--format {format!r}: not a format waymark exports; expected one of: jsonl")
    spec = load_or_exit(plan)
    wd = workdir_for(spec, workdir)
    if output is not None:
        _check_output(output, ledger_url_or_exit(ledger, wd, spec), spec.plan_id, force)
    led = open_or_exit(ledger, wd, create=False, plan=spec)
    if led is None:
        fail(f"plan {spec.plan_id!r} has no ledger in {wd}: nothing recorded, nothing to export")
    from ..audit.export import export_lines, write_export, write_export_file
    from ..ledger.plan_archive import PlanArchive

    with led:
        if not isinstance(led, PlanArchive):  # pragma: no cover - every ledger is a SqlLedger
            fail(f"the ledger {led.url} cannot be exported")
        lines = export_lines(led, spec.plan_id, ledger_id=led.ledger_id, url=led.url)
        header = next(lines)
        counts = header["counts"]
        if not counts["events"]:
            fail(f"plan {spec.plan_id!r} has no events in this ledger: nothing to export")
        everything = itertools.chain([header], lines)
        if output is None:
            try:
                sys.stdout.flush()
                write_export(everything, sys.stdout.buffer)  # UTF-8 whatever the locale says
                sys.stdout.buffer.flush()
            except BrokenPipeError:  # `| head`: the reader has what it wanted
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return
        try:
            write_export_file(everything, output)
        except OSError as exc:
            fail(f"--output {output}: cannot write it: {exc.strerror or exc}")
    print(
        f"exported plan {spec.plan_id!r}: {counts['events']} events ({counts['markers']} "
        f"markers), {counts['receipts']} receipts, up to seq {header['last_seq']}, to {output}",
        file=sys.stderr,
    )


def _check_output(output: Path, url: str, plan_id: str, force: bool) -> None:
    """``--output`` names a new file (or, with ``--force``, one to replace) that is not a
    ledger's file nor in a ``.waymark`` folder: waymark's own (ledger, results, manifests) —
    an export is written to leave the machine, never over the history it was read from."""
    from ..ledger.urls import sqlite_path

    if output.is_dir():
        fail(f"--output {output}: is a folder; name a file")
    if not output.parent.is_dir():
        fail(f"--output {output}: no such folder {output.parent}")
    elsewhere = f"write it elsewhere, e.g. -o {plan_id}.jsonl"
    from .._files.atomic import check_replaceable
    from ..errors import NotARegularFile

    try:
        check_replaceable(output)  # never /dev/null, a FIFO or a link turned into a plain file
    except NotARegularFile as exc:
        fail(f"--output {output}: is {exc.kind}; waymark replaces only regular files; {elsewhere}")
    target = output.resolve()
    db = sqlite_path(url)
    if db is not None:
        db = db.resolve()
        own = [db] + [db.with_name(db.name + end) for end in ("-wal", "-shm", "-journal")]
        if target in own or any(_same_file(output, f) for f in own):
            fail(f"--output {output}: is the ledger's own file ({db}); {elsewhere}")
    if ".waymark" in target.parent.parts:
        fail(
            f"--output {output}: is inside a .waymark folder, where waymark keeps its ledger, "
            f"results and manifests; {elsewhere}"
        )
    if output.exists() and not force:
        fail(f"--output {output}: the file exists; add --force to replace it")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def replay(
    plan: PlanArg,
    at: Annotated[
        str,
        typer.Option(
            "--at",
            help="A ledger sequence number (42) or an ISO 8601 time with its timezone "
            "(2026-12-01T09:30:00Z).",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
) -> None:
    """Show the plan's status as it was at one point of its history: what `waymark status`
    showed then (without the deployment line, which is read live). Reads the ledger only."""
    from ..audit.replay import events_until, fold_states, parse_point
    from ..ledger.progress_view import build_view
    from ..subplans.status import subplan_rows
    from ._common import open_reader_or_exit
    from .status_document import print_json
    from .status_extras import last_event_in, ledger_extras, status_exit_code
    from .status_output import print_table

    try:
        point = parse_point(at)
    except ValueError as exc:
        fail(f"--at: {exc}")
    spec = load_or_exit(plan)
    wd = workdir_for(spec, workdir)
    led = open_reader_or_exit(ledger, wd, plan=spec)
    events: list[ProgressEvent] = []
    # A parent's `plan:` steps: their sub-plans' states at the same point (same ledger, so
    # the same seq numbers and clock), for the rows `waymark status` shows.
    sub_ids = [s.subplan_spec.plan_id for s in spec.steps if s.subplan_spec is not None]
    sub_events: dict[str, list[ProgressEvent]] = {}
    if led is not None:
        with led:
            events = led.events(spec.plan_id)
            sub_events = {pid: led.events(pid) for pid in sub_ids}
    shown = events_until(events, point)
    _say_where(point, events, shown, spec.plan_id)
    extra, _deployment = ledger_extras(last_event_in(shown))
    extra.update(
        subplan_rows(spec, lambda pid: fold_states(events_until(sub_events.get(pid, []), point)))
    )
    view = build_view(spec, fold_states(shown))
    if as_json:
        print_json(view, extra)
    else:
        last = shown[-1] if shown else None
        print(
            f"replayed at {point.describe()}: "
            + (f"last event seq {last.seq}, {last.at.isoformat()}" if last else "no event yet")
        )
        print_table(view, extra)
    raise typer.Exit(status_exit_code(view, extra))


def _say_where(
    point: ReplayPoint, events: list[ProgressEvent], shown: list[ProgressEvent], plan_id: str
) -> None:
    """A line on stderr when the point is before the plan's first event or after its last."""
    if not events:
        print(f"waymark: plan {plan_id!r} has no events: the view before any run", file=sys.stderr)
    elif not shown:
        first = events[0]
        print(
            f"waymark: before the first event of plan {plan_id!r} (seq {first.seq}, "
            f"{first.at.isoformat()}): the view before any run",
            file=sys.stderr,
        )
    elif len(shown) == len(events):
        last = events[-1]
        print(
            f"waymark: at or after the last event of plan {plan_id!r} (seq {last.seq}, "
            f"{last.at.isoformat()}): the current view",
            file=sys.stderr,
        )


def restore(
    export_file: Annotated[Path, typer.Argument(help="An export written by `waymark export`.")],
    ledger: LedgerOpt = None,
    workdir: WorkdirOpt = None,
    keep_identity: Annotated[
        bool,
        typer.Option(
            "--keep-identity",
            help="Take the exported ledger's identity (ledger_id), so the workdir's markers "
            "match: for a ledger that replaces a lost one. Only into a ledger with no history.",
        ),
    ] = False,
) -> None:
    """Rebuild a plan's history in a ledger from an export: its events (same order, times, runs,
    data), receipts and active view, in one transaction. Every line is checked first; a ledger
    that already has the plan is refused. Nothing is written when refused."""
    from ..audit.restore import read_export
    from ..errors import ExportFileError, LedgerError
    from ..ledger import open_ledger
    from ..ledger.sql_ledger import SqlLedger
    from ..ledger.urls import shown_url, sqlite_path

    try:
        contents = read_export(export_file)
    except ExportFileError as exc:
        fail(str(exc))
    header = contents.header
    if keep_identity and header.ledger_id is None:
        fail(
            f"{export_file}:1: ledger_id: null — the exported ledger had no identity (a ledger "
            "of schema 1, from before identities): there is none to keep; restore without "
            "--keep-identity"
        )
    wd = workdir_for_restore(workdir)
    url = ledger_url_or_exit(ledger, wd, None)
    path = sqlite_path(url)
    created = _new_paths(path)
    try:
        led = open_ledger(url, create=True)
    except LedgerError as exc:
        _remove(created)
        fail(str(exc))
    if not isinstance(led, SqlLedger):  # pragma: no cover - every ledger is one
        fail(f"the ledger {shown_url(url)} cannot be restored into")
    try:
        with led:
            counts = led.restore_plan(
                header.plan_id,
                contents.events,
                contents.receipts,
                ledger_id=header.ledger_id if keep_identity else None,
            )
    except (
        LedgerError,
        led.database_error,
        sqlite3.Error,
    ) as exc:  # refused, or the database said no
        _remove(created)  # leave no empty ledger (nor its folder) behind
        why = exc if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {exc}"
        fail(f"{export_file}: {why}; nothing written")
    shift = counts["seq_offset"]
    print(
        f"restored plan {header.plan_id!r} into {shown_url(url)}: {counts['events']} events "
        f"({header.counts.markers} markers), {counts['steps']} steps, {counts['receipts']} "
        "receipts"
        + (f"; every seq moved up by {shift} (the ledger had used those numbers)" if shift else "")
        + f". {_read_hint(url, ledger)}"
    )


def _read_hint(url: str, given: str | None) -> str:
    """How to read the restored plan: a command that works as printed, never with a password
    in it (a URL with one is named by the variable waymark reads, which then has to hold it)."""
    from ..ledger.urls import shown_url

    if shown_url(url) == url:
        return f"Read it with `waymark status <plan file> --ledger {url}`"
    if given is None:  # it came from $WAYMARK_LEDGER_URL: that still says where
        return "Read it with `waymark status <plan file>` ($WAYMARK_LEDGER_URL names it)"
    return (
        'Read it with `waymark status <plan file> --ledger "$WAYMARK_LEDGER_URL"` once '
        "WAYMARK_LEDGER_URL holds the URL you gave --ledger (its password is not printed here)"
    )


def _new_paths(db: Path | None) -> list[Path]:
    """What opening a new SQLite ledger at ``db`` creates: its folders that do not exist yet
    (outermost last) and its files — to remove when the restore is refused."""
    if db is None or db.exists():
        return []
    folders = [p for p in db.absolute().parents if not p.exists()]
    ends = ("", "-wal", "-shm", "-journal")
    return [db.with_name(db.name + end) for end in ends] + folders


def _remove(paths: list[Path]) -> None:
    for p in paths:  # files first, then the folders, innermost first (only when empty)
        try:
            if p.is_dir():
                p.rmdir()
            else:
                p.unlink(missing_ok=True)
        except OSError:
            pass


def workdir_for_restore(workdir: Path | None) -> Path:
    """``--workdir`` (which must exist), else the current folder: where the default ledger is."""
    if workdir is not None and not workdir.is_dir():
        fail(f"--workdir {workdir}: no such folder")
    return (workdir or Path.cwd()).resolve()
