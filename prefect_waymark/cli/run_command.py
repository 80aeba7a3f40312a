"""``waymark run`` (and ``resume``): choose the Prefect server, run the flow, print the summary,
map exit codes."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer

from ..ledger.identity import default_executor
from ..run import exit_codes
from ..run.summary import RunSummary, summary_from_state
from .options import (
    DaskAddressOpt,
    ExecutorOpt,
    LedgerOpt,
    MarkersDirOpt,
    MaxStepsOpt,
    PlanArg,
    ResultsOpt,
    TaskRunnerOpt,
    UntilOpt,
    WorkdirOpt,
)

__all__ = ["configure_prefect", "default_executor", "print_ui_links", "run", "run_from_cli"]


def run(
    plan: PlanArg,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    max_steps: MaxStepsOpt = None,
    until: UntilOpt = None,
    executor: ExecutorOpt = None,
    markers_dir: MarkersDirOpt = None,
    results: ResultsOpt = None,
    task_runner: TaskRunnerOpt = None,
    dask_address: DaskAddressOpt = None,
) -> None:
    """Run a plan, or continue it where the last run stopped.

    Exit codes: 0 completed, 1 a step failed, 2 bad input, 3 stopped with steps remaining,
    4 stopped for review.
    """
    code = run_from_cli(
        plan_path=plan,
        workdir=workdir,
        ledger_url=ledger,
        max_steps=max_steps,
        until=until,
        executor=executor,
        markers_dir=markers_dir,
        results=results,
        task_runner=task_runner,
        dask_address=dask_address,
    )
    raise typer.Exit(code)


def configure_prefect() -> str:
    """Point Prefect at a server before it is imported; return a description of the choice.

    The Prefect client retries a failing API call ``$WAYMARK_PREFECT_API_RETRIES`` times (default
    2; Prefect's own ``PREFECT_CLIENT_MAX_RETRIES`` wins when set), so a dead server costs a run
    tens of seconds, not minutes: the ledger, not Prefect, holds the plan's outcome.

    ``PREFECT_API_URL`` set: that server. ``WAYMARK_PREFECT_SERVER=ephemeral``: Prefect's
    in-process server, with a startup timeout long enough for a cold start. Otherwise: the local
    server waymark starts once and reuses (``waymark server start|stop|status``).
    """
    os.environ.setdefault(
        "PREFECT_CLIENT_MAX_RETRIES", os.environ.get("WAYMARK_PREFECT_API_RETRIES") or "2"
    )
    if os.environ.get("PREFECT_API_URL"):
        return f"Prefect server {os.environ['PREFECT_API_URL']}"
    if os.environ.get("WAYMARK_PREFECT_SERVER", "local") == "ephemeral":
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
        os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        return "Prefect's ephemeral server"
    from ..prefect_server.local import ensure_local_server

    info = ensure_local_server(echo=True)
    os.environ["PREFECT_API_URL"] = info.api_url
    return f"local Prefect server {info.api_url} (UI: {info.ui_url})"


def run_from_cli(
    *,
    plan_path: Path,
    workdir: Path | None,
    ledger_url: str | None,
    max_steps: int | None,
    until: str | None,
    executor: str | None,
    markers_dir: Path | None = None,
    results: str | None = None,
    task_runner: str | None = None,
    dask_address: str | None = None,
) -> int:
    """Check the run's options before Prefect starts (a bad input: exit 2, one line, no flow
    run; run/options.py), run the plan in a flow run that takes them, and map its end to
    an exit code."""
    from ..errors import LedgerDamaged, LedgerUnavailable, WaymarkError
    from ..run.options import check_run
    from ..text.commands import remember_options

    remember_options(workdir=workdir, ledger=ledger_url, results=results)
    executor = executor or default_executor()
    parameters: dict[str, Any] = {  # the flow run's parameters, as the Prefect UI shows them
        "plan": str(plan_path),
        "workdir": str(workdir) if workdir is not None else None,
        "ledger_url": ledger_url,
        "max_steps": max_steps,
        "until": until,
        "executor": executor,
        "markers_dir": str(markers_dir) if markers_dir is not None else None,
        "result_storage": results,
        "task_runner": task_runner,
        "dask_address": dask_address,
    }
    try:
        options = check_run(**parameters, command_line=configure_prefect)
    except WaymarkError as exc:
        print(f"waymark: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    parameters["workdir"] = str(options.workdir)
    try:
        where = configure_prefect()
    except WaymarkError as exc:
        print(f"waymark: {exc}", file=sys.stderr)
        return exit_codes.STEP_FAILED
    print(f"waymark: running {plan_path} on {where}", file=sys.stderr)
    storage = options.result_storage  # --results, else the plan file's `results:`
    if isinstance(storage, str) and (problem := storage_problem(storage)) is not None:
        given = "--results" if results is not None else f"results: in {plan_path}:"
        print(f"waymark: {given} {storage}: {problem}; nothing ran", file=sys.stderr)
        return exit_codes.BAD_INPUT
    from ..flows.run_plan import run_plan
    from ..run.signals import end_on_record

    end_on_record()  # SIGHUP, SIGQUIT, ... end the run on record, as SIGTERM does

    wd = options.workdir
    since = datetime.now(timezone.utc)
    try:
        # The flow run names and tags itself (run/prefect_ui.py `run_name`): `prefect.tags(...)`
        # here would tag every step's task run too: a concurrency call per tagged task run.
        state = run_plan(**parameters, options=options.as_parameter(), return_state=True)
    except Exception as exc:  # noqa: BLE001 - e.g. the Prefect API went away mid-run
        summary = _recorded_summary(plan_path, wd, ledger_url, executor, since)
        if summary is None:
            print(f"waymark: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return exit_codes.STEP_FAILED
        print(summary.text())
        print(
            f"waymark: the run's end could not be reported to Prefect ({type(exc).__name__}: "
            f"{exc}); the ledger has it: result {summary.result}",
            file=sys.stderr,
        )
        return summary.exit_code
    found = summary_from_state(state)
    if isinstance(found, LedgerDamaged):  # the ledger, not a step: bad input
        print(f"waymark: {found}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    if isinstance(found, LedgerUnavailable):  # locked, a full disk, the file gone: a failure
        print(f"waymark: {found}", file=sys.stderr)
        return exit_codes.STEP_FAILED
    if isinstance(found, BaseException):
        summary = _recorded_summary(plan_path, wd, ledger_url, executor, since)
        if summary is None:
            print(f"waymark: the run failed: {found}", file=sys.stderr)
            return exit_codes.STEP_FAILED
        print(
            f"waymark: Prefect reports the flow run {state.name}, but the ledger has its end: "
            f"result {summary.result}",
            file=sys.stderr,
        )
    else:
        summary = found
    print(summary.text())
    print_ui_links(summary.flow_run_id, summary.plan_id)
    return summary.exit_code


def print_ui_links(flow_run_id: str | None, plan_id: str) -> None:
    """Where to look in the Prefect UI: this flow run, and the plan page (the artifact
    ``waymark-<plan id>``, updated by every run)."""
    from ..run.prefect_ui import ui_links

    try:
        links = ui_links(flow_run_id, plan_id)
    except Exception:  # noqa: BLE001 - a link is never worth the run's exit code
        return
    for label, url in links.items():
        print(f"  {label}: {url}")


def storage_problem(slug: str) -> str | None:
    """Why ``slug`` cannot hold results (no such block, not a writable file system), if so."""
    from ..results.storage import ResultAccess

    try:
        ResultAccess(slug)
    except (ValueError, TypeError) as exc:
        return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return None


def _recorded_summary(
    plan_path: Path, workdir: Path, ledger_url: str | None, executor: str, since: datetime
) -> RunSummary | None:
    """The summary this run recorded in the ledger (its ``run_finished`` event), if it got that
    far: the plan's outcome does not depend on Prefect hearing of it."""
    from ..ledger import open_ledger, resolve_ledger_url
    from ..ledger.events import EventKind
    from ..plan.loader import load_plan

    try:
        spec = load_plan(plan_path)
        url = resolve_ledger_url(ledger_url, workdir, pin=spec.ledger, pin_source=spec.source)
        with open_ledger(url, create=False) as led:
            last = led.last_event(spec.plan_id, [EventKind.run_finished])
    except Exception:  # noqa: BLE001 - no ledger, no record: the caller says the run failed
        return None
    if last is None or last.at < since or last.data.get("executor") != executor:
        return None
    return RunSummary.model_validate(last.data)
