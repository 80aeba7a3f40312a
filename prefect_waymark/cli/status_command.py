"""``waymark status`` and its reading of the ledger: the plan view, the keys beyond it and the
exit code. The command prints them (a table, or ``--json``: :mod:`.status_document`); the MCP
server's ``status`` tool returns the same document (cli/mcp_server.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import load_or_exit, open_or_exit, open_reader_or_exit, workdir_for
from .options import LedgerOpt, PlanArg, WorkdirOpt

if TYPE_CHECKING:
    from ..ledger.progress_view import PlanView

__all__ = ["read_status", "status"]


def status(
    plan: PlanArg,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Fold all events again and rewrite the active view.")
    ] = False,
) -> None:
    """Show each step's status from the ledger. Never starts Prefect; creates nothing. When a
    deployment runs the plan, its schedule and next run are read from the Prefect server."""
    view, extra, code = read_status(plan, workdir, ledger, rebuild)
    if as_json:
        from .status_document import print_json

        print_json(view, extra)
    else:
        from .status_output import print_table

        print_table(view, extra)
    raise typer.Exit(code)


def read_status(
    plan: Path, workdir: Path | None = None, ledger: str | None = None, rebuild: bool = False
) -> tuple[PlanView, dict[str, Any], int]:
    """The plan's view, the status document's other keys and ``waymark status``'s exit code.
    Never starts Prefect; creates nothing (``rebuild`` rewrites the active view)."""
    from ..ledger import Ledger
    from ..ledger.progress_view import build_view
    from ..subplans.status import subplan_rows
    from .status_extras import ledger_extras, status_exit_code

    spec = load_or_exit(plan)
    wd = workdir_for(spec, workdir)
    # Plain status opens the ledger read-only; --rebuild writes, so it opens it as a writer.
    led = (
        open_or_exit(ledger, wd, create=False, plan=spec)
        if rebuild
        else open_reader_or_exit(ledger, wd, plan=spec)
    )
    extra: dict[str, Any] = {}
    deployment_id: Any = None
    if led is None:
        states = {}
    else:
        with led:
            if isinstance(led, Ledger) and rebuild:
                before = led.step_states(spec.plan_id)
                states = led.rebuild(spec.plan_id, write=True)
                extra["rebuilt"] = {"steps": len(states), "changed": before != states}
            else:
                states = led.step_states(spec.plan_id)
            # The keys from the plan's last events: the same function as `waymark replay`.
            found, deployment_id = ledger_extras(lambda kinds: led.last_event(spec.plan_id, kinds))
            extra.update(found)
            extra.update(subplan_rows(spec, led.step_states))  # `plan:` steps' progress rows
    if led is not None and deployment_id:  # a deployment runs the plan: its schedule, next run
        from .status_deployment import deployment_status

        extra["deployment"] = deployment_status(str(deployment_id))
    view = build_view(spec, states)
    return view, extra, status_exit_code(view, extra)
