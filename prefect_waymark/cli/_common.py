"""Helpers shared by the CLI commands: loading plans and ledgers with exit code 2 on bad input."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import typer

from ..errors import LedgerError, LedgerNotFound, PlanError
from ..ledger import Ledger, LedgerReader, open_ledger, open_reader, resolve_ledger_url
from ..plan.loader import load_plan
from ..plan.spec import PlanSpec
from ..run import exit_codes


def fail(message: str, code: int = exit_codes.BAD_INPUT) -> NoReturn:
    print(f"waymark: {message}", file=sys.stderr)
    raise typer.Exit(code)


def load_or_exit(plan_path: Path) -> PlanSpec:
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


def open_or_exit(url: str | None, workdir: Path, *, create: bool) -> Ledger | None:
    """Open the ledger; with ``create=False`` a ledger that does not exist yet gives ``None``."""
    try:
        return open_ledger(resolve_ledger_url(url, workdir, source="--ledger"), create=create)
    except LedgerNotFound:  # only without create: nothing recorded there yet
        return None
    except LedgerError as exc:
        fail(str(exc))


def open_reader_or_exit(url: str | None, workdir: Path) -> LedgerReader | None:
    """Open the ledger read-only (SQLite without SQLAlchemy); ``None`` if it does not exist."""
    try:
        return open_reader(resolve_ledger_url(url, workdir, source="--ledger"))
    except LedgerNotFound:
        return None
    except LedgerError as exc:
        fail(str(exc))


def preflight_paths_or_exit(
    url: str | None, workdir: Path, results: Path | None, markers: Path | None
) -> None:
    """Exit 2 (one line: the path and why) if the ledger URL is bad or a folder the run will
    write cannot be created or written; creates nothing."""
    from ..errors import UnwritablePathError
    from ..run.preflight import preflight_paths

    try:
        resolved = resolve_ledger_url(url, workdir, source="--ledger")
        preflight_paths(ledger_url=resolved, results=results, markers=markers)
    except (LedgerError, UnwritablePathError) as exc:
        fail(str(exc))
