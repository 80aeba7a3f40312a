"""Helpers shared by the CLI commands: loading plans and ledgers with exit code 2 on bad input."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from ..errors import CommandRefused, LedgerError, LedgerNotFound, PlanError, WaymarkError
from ..ledger import open_ledger, open_reader, resolve_ledger_url
from ..run import exit_codes

if TYPE_CHECKING:  # loaded by the commands that read a plan or a ledger, when they do
    from ..ledger import Ledger, LedgerReader
    from ..plan.spec import PlanSpec


@dataclass(frozen=True)
class Answer:
    """What a command answers: the ``--json`` document, the text it prints without ``--json``,
    and its exit code. The check-ins, ``skip`` and ``review`` return one (or raise
    :class:`~prefect_waymark.errors.CommandRefused`); the command prints it, the MCP server's
    tool returns it (cli/mcp_server.py)."""

    document: dict[str, Any]
    line: str
    code: int = exit_codes.OK


def fail(message: str, code: int = exit_codes.BAD_INPUT) -> NoReturn:
    """Say ``message`` on stderr and exit with ``code``; the exit is raised from a
    :class:`~prefect_waymark.errors.CommandRefused` that carries both (``waymark mcp`` reads
    it)."""
    print(f"waymark: {message}", file=sys.stderr)
    raise typer.Exit(code) from CommandRefused(message, code)


def refusal_of(exc: typer.Exit) -> CommandRefused:
    """The refusal a command's exit was raised from (:func:`fail`), or one naming its code."""
    cause = exc.__cause__
    if isinstance(cause, CommandRefused):
        return cause
    return CommandRefused(f"the command ended with exit code {exc.exit_code}", exc.exit_code)


def load_or_exit(plan_path: Path) -> PlanSpec:
    from ..plan.loader import load_plan

    try:
        return load_plan(plan_path)
    except PlanError as exc:
        fail(str(exc))


def workdir_for(plan: PlanSpec, workdir: Path | None) -> Path:
    """``--workdir`` (which must exist), else the plan file's folder."""
    if workdir is not None and not workdir.is_dir():
        fail(f"--workdir {workdir}: no such folder")
    base = workdir if workdir is not None else (plan.base_dir or Path.cwd())
    return base.resolve()


def ledger_url_or_exit(url: str | None, workdir: Path, plan: PlanSpec | None) -> str:
    """The run's ledger URL (``--ledger``, the plan's pinned ledger, ``$WAYMARK_LEDGER_URL`` or
    the default), checked; exit 2 with one line if it is bad or a required pin cannot be had."""
    pin = plan.ledger if plan is not None else None
    try:
        if pin is not None and pin.secret is not None:  # the block is on the Prefect server
            from .run_command import configure_prefect

            configure_prefect()
        return resolve_ledger_url(
            url,
            workdir,
            source="--ledger",
            pin=pin,
            pin_source=plan.source if plan is not None else "the plan file",
        )
    except (LedgerError, WaymarkError) as exc:
        fail(str(exc))


def open_or_exit(
    url: str | None, workdir: Path, *, create: bool, plan: PlanSpec | None = None
) -> Ledger | None:
    """Open the ledger; with ``create=False`` a ledger that does not exist yet gives ``None``."""
    resolved = ledger_url_or_exit(url, workdir, plan)
    try:
        return open_ledger(resolved, create=create)
    except LedgerNotFound:  # only without create: nothing recorded there yet
        return None
    except LedgerError as exc:
        fail(str(exc))


def open_reader_or_exit(
    url: str | None, workdir: Path, plan: PlanSpec | None = None
) -> LedgerReader | None:
    """Open the ledger read-only (it creates nothing); ``None`` if it does not exist."""
    resolved = ledger_url_or_exit(url, workdir, plan)
    try:
        return open_reader(resolved)
    except LedgerNotFound:
        return None
    except LedgerError as exc:
        fail(str(exc))


def check_not_renamed(spec: PlanSpec, led: LedgerReader | None) -> None:
    """Exit 2 if the ledger says this plan id was renamed: its history lives under the new id."""
    from ..ledger.plan_rename import check_not_renamed as check

    if led is not None:
        try:
            check(led, spec.plan_id, spec.source)
        except LedgerError as exc:
            fail(str(exc))


def check_not_closed(spec: PlanSpec, led: LedgerReader | None) -> None:
    """Exit 2 if the plan was closed (``waymark close``): nothing runs or is recorded."""
    from ..closing.closed import check_not_closed as check

    try:
        check(led, spec.plan_id, spec.source)
    except WaymarkError as exc:
        fail(str(exc))
