"""Helpers shared by the CLI commands: loading plans and ledgers with exit code 2 on bad input."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import typer

from ..errors import LedgerError, LedgerNotFound, PlanError, WaymarkError
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


def preflight_paths_or_exit(
    url: str | None,
    workdir: Path,
    results: Path | None,
    markers: Path | None,
    plan: PlanSpec | None = None,
) -> None:
    """Exit 2 (one line: the path and why) if the ledger URL is bad or a folder the run will
    write cannot be created or written; creates nothing."""
    from ..errors import UnwritablePathError
    from ..run.preflight import preflight_paths

    resolved = ledger_url_or_exit(url, workdir, plan)
    try:
        preflight_paths(ledger_url=resolved, results=results, markers=markers)
    except UnwritablePathError as exc:
        fail(str(exc))


def preflight_run_or_exit(
    spec: PlanSpec,
    wd: Path,
    ledger: str | None,
    markers_dir: Path | None,
    results: str | None = None,
) -> None:
    """Refuse (exit 2) before Prefect starts if the ledger URL is bad, a folder the run writes
    cannot be written, waymark's files would overwrite someone's, the workdir's marker names
    another ledger, or the plan was renamed away from this id."""
    from ..errors import LedgerMismatch
    from ..markers import MarkerFileError, markers_folder, preflight_markers
    from ..run.preflight import results_folder

    folder = markers_folder(spec, wd, markers_dir)
    preflight_paths_or_exit(ledger, wd, results_folder(results, wd), folder, plan=spec)
    check_refs_block_or_exit(spec)
    led = open_or_exit(ledger, wd, create=False, plan=spec)
    try:
        check_not_renamed(spec, led)
        check_not_closed(spec, led)
        preflight_markers(spec, led, folder)
    except (MarkerFileError, LedgerMismatch) as exc:
        fail(str(exc))
    finally:
        if led is not None:
            led.close()


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


def check_refs_block_or_exit(spec: PlanSpec) -> None:
    """Exit 2 if the plan's StateRefs block holds refs that are bad input (a raw secret, fields
    that do not fit their kind): a person must fix the block, no run can. A block that cannot be
    read now (missing, the server is away) is left to the run, which stops for review."""
    from ..errors import RefConfigError, StateRefsBlockError
    from ..plan.spec import BlockRef

    if not isinstance(spec.state_refs, BlockRef):
        return
    from ..guards.sources import load_ref_configs
    from .run_command import configure_prefect

    configure_prefect()
    try:
        load_ref_configs(spec)
    except (StateRefsBlockError, RefConfigError) as exc:
        fail(f"{spec.source}: state_refs (block {spec.state_refs.block!r}): {exc}; nothing ran")
    except Exception:  # noqa: BLE001 - unreadable now: the run records it as a conflict
        return
