"""Arguments and options the ``waymark`` commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "ByOpt",
    "DaskAddressOpt",
    "ExecutorOpt",
    "LedgerOpt",
    "MarkersDirOpt",
    "MaxStepsOpt",
    "PlanArg",
    "ReasonOpt",
    "ResultsOpt",
    "TaskRunnerOpt",
    "UntilOpt",
    "WorkdirOpt",
]

PlanArg = Annotated[Path, typer.Argument(help="Plan file (YAML or JSON).")]
WorkdirOpt = Annotated[
    Path | None, typer.Option("--workdir", help="Working folder (default: the plan's folder).")
]
LedgerOpt = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        help="Ledger SQLAlchemy URL (default: the plan file's pinned `ledger:`, else "
        "$WAYMARK_LEDGER_URL, else sqlite:///<workdir>/.waymark/ledger.db).",
    ),
]
ReasonOpt = Annotated[str, typer.Option("--reason", help="Why, for the record.")]
ByOpt = Annotated[str | None, typer.Option("--by", help="Who records it (default: user@host).")]

MarkersDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--markers-dir",
        help="Folder for EXECUTION_MARKER.json, TASKS.md, STATE.md, IMPLEMENTATION_LOG.md "
        "(default: the workdir: the plan's folder unless --workdir moves it).",
    ),
]
MaxStepsOpt = Annotated[
    int | None, typer.Option("--max-steps", help="Run at most N steps, then stop (exit 3).")
]
UntilOpt = Annotated[
    str | None, typer.Option("--until", help="Stop once this step (and what it needs) is done.")
]
ExecutorOpt = Annotated[
    str | None, typer.Option("--executor", help="Who runs this (default: user@host).")
]
ResultsOpt = Annotated[
    str | None,
    typer.Option(
        "--results",
        help="Result storage shared by every runner: an absolute folder path or a saved "
        "file-system block's slug (e.g. "
        "local-file-system/team-results); step results and declared outputs are kept there "
        "(default: the plan file's pinned `results:`, else <workdir>/.waymark/results).",
    ),
]
TaskRunnerOpt = Annotated[
    str | None,
    typer.Option(
        "--task-runner",
        help="Where the steps run: threads (default: Prefect's thread pool), processes "
        "(ProcessPoolTaskRunner) or dask (DaskTaskRunner: pip install 'prefect-waymark[dask]').",
    ),
]
DaskAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--dask-address",
        help="With --task-runner dask: the scheduler, e.g. tcp://HOST:8786 "
        "(default: a temporary local cluster).",
    ),
]
