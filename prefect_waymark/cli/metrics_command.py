"""``waymark metrics PLAN``: the seed's eight metrics of a plan, from its ledger. Reads only;
never starts Prefect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import fail, load_or_exit, open_reader_or_exit, workdir_for
from .options import LedgerOpt, PlanArg, WorkdirOpt

if TYPE_CHECKING:
    from ..plan.spec import PlanSpec

__all__ = ["metrics", "metrics_document", "read_metrics"]


def metrics_document(plan_id: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The ``--json`` document: the eight metrics with the plan id and the schema version."""
    from ..metrics import SCHEMA_VERSION

    return {"plan_id": plan_id, "schema_version": SCHEMA_VERSION, **metrics}


def metrics(
    plan: PlanArg,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """The plan's eight metrics (omission, acceptance, drift, verification, resume, duplicate
    side effects, ref freshness, single in_progress), from the ledger. Reads only."""
    spec, result = read_metrics(plan, workdir, ledger)
    if as_json:
        print(json.dumps(metrics_document(spec.plan_id, result), indent=2, default=str))
    else:
        _print_table(spec.plan_id, spec.title, result)
    raise typer.Exit(0)


def read_metrics(
    plan: Path, workdir: Path | None = None, ledger: str | None = None
) -> tuple[PlanSpec, dict[str, Any]]:
    """The plan and its metrics, read from its ledger (exit 2 when it has no history)."""
    from ..ledger import Ledger
    from ..metrics import compute_metrics

    spec = load_or_exit(plan)
    wd = workdir_for(spec, workdir)
    led = open_reader_or_exit(ledger, wd, plan=spec)
    if led is None:
        fail(f"plan {spec.plan_id!r} has no ledger yet (nothing recorded); `waymark run {plan}`")
    with led:
        if not led.count_events(spec.plan_id):
            fail(
                f"plan {spec.plan_id!r} has no history in the ledger {led.url}; "
                f"`waymark run {plan}` records its first run"
            )
        receipts = led.receipts(spec.plan_id) if isinstance(led, Ledger) else None
        return spec, compute_metrics(spec, led, receipts=receipts)  # reads what they need


def _print_table(plan_id: str, title: str, result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..metrics.table import MUST_BE_ZERO, NOT_USED, metric_rows
    from ._stdout import rich_stdout
    from .status_output import escape

    console = Console(width=120, file=rich_stdout())
    title = f"{plan_id}" + (f" — {title}" if title else "")
    table = Table(title=escape(title), title_justify="left")
    for col in ("metric", "value", "made of"):
        table.add_column(col)
    for row in metric_rows(result):
        value = row["value"]
        if row["key"] in MUST_BE_ZERO and value not in ("0", "-", NOT_USED):
            value = f"[red]{value}[/]"
        table.add_row(row["metric"], value, row["made of"])
    console.print(table)
    closed = result["plan_omission_rate"].get("closed")
    console.print("measured at close" if closed else "measured so far (the plan is not closed)")
