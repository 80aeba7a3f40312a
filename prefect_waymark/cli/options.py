"""Arguments and options the ``waymark`` commands share."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from ..models import EVIDENCE, REASON, TextLimit
from ..run.exit_codes import BAD_INPUT

__all__ = [
    "ByOpt",
    "EvidenceFileOpt",
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
    "bounded",
    "read_bounded",
]

_V = TypeVar("_V")


def _refuse(message: str) -> typer.Exit:
    print(f"waymark: {message}", file=sys.stderr)
    return typer.Exit(BAD_INPUT)


def bounded(limit: TextLimit, option: str) -> Callable[[_V], _V]:
    """A typer callback that holds an option's text (each text of a repeated option) to
    ``limit``: a longer one is exit 2 naming the option and the limit, before anything is
    read or recorded."""

    def check(value: _V) -> _V:
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if isinstance(text, str) and (why := limit.problem(text)) is not None:
                raise _refuse(f"{option}: {why}")
        return value

    return check


def read_bounded(where: str, limit: TextLimit, option: str) -> str:
    """The text of the file at ``where`` (``-``: standard input) for ``option``, held to
    ``limit``: never more than the limit's worth of bytes is read. A missing, unreadable,
    non-UTF-8 or too long file is exit 2 naming it."""
    cap = limit.chars * 4  # UTF-8: at most four bytes a character
    name = "standard input" if where == "-" else where
    try:
        if where == "-":
            raw = sys.stdin.buffer.read(cap + 1)
        else:
            with open(where, "rb") as fh:
                raw = fh.read(cap + 1)
    except OSError as exc:
        raise _refuse(f"{option} {name}: cannot read it: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(raw) <= cap:
            raise _refuse(f"{option} {name}: not UTF-8 text ({exc.reason})") from None
        text = raw.decode("utf-8", "ignore")  # cut inside a character: too long anyway
    if len(raw) > cap:
        raise _refuse(
            f"{option} {name}: expected {limit.what} of at most {limit.chars:,} characters, "
            f"got more than {cap:,} bytes"
        )
    if (why := limit.problem(text)) is not None:
        raise _refuse(f"{option} {name}: {why}")
    return text


def _read_evidence_files(value: list[str] | None) -> list[str] | None:
    if value and value.count("-") > 1:
        raise _refuse("--evidence-file: standard input ('-') can be read once")
    return [read_bounded(v, EVIDENCE, "--evidence-file") for v in value or []] or None


PlanArg = Annotated[Path, typer.Argument(help="Plan file (YAML or JSON).")]
WorkdirOpt = Annotated[
    Path | None, typer.Option("--workdir", help="Working folder (default: the plan's folder).")
]
LedgerOpt = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        help="Ledger URL (default: the plan file's pinned `ledger:`, else "
        "$WAYMARK_LEDGER_URL, else sqlite:///<workdir>/.waymark/ledger.db).",
    ),
]


def _at_most(limit: TextLimit) -> str:
    """How an option's help states its bound."""
    return f"at most {limit.chars:,} characters"


ReasonOpt = Annotated[
    str,
    typer.Option(
        "--reason",
        help=f"Why, for the record ({_at_most(REASON)}).",
        callback=bounded(REASON, "--reason"),
    ),
]
EvidenceFileOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--evidence-file",
        help="A file holding one 'ITEM: text' evidence, for evidence too long for an argument "
        f"({_at_most(EVIDENCE)}); '-' reads standard input; repeat it. Not with --evidence.",
        callback=_read_evidence_files,
    ),
]
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
