"""``waymark`` commands: validate, schema, status, run/resume, rerun, server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..hooks.command import HELP as HOOK_HELP
from ..models import REASON
from ._common import (
    fail,
    load_or_exit,
)
from .agent_commands import block, done, fail_command, next_command, start, tick
from .audit_command import export, replay, restore
from .close_command import close, skip
from .deploy_command import deploy, serve, worker
from .import_command import import_plan
from .init_command import init
from .metrics_command import metrics
from .options import (
    ByOpt,
    DaskAddressOpt,
    ExecutorOpt,
    LedgerOpt,
    MarkersDirOpt,
    MaxStepsOpt,
    PlanArg,
    ReasonOpt,
    ResultsOpt,
    TaskRunnerOpt,
    UntilOpt,
    WorkdirOpt,
    bounded,
)
from .plan_history import diff, rename_plan, rename_step, rerun

if TYPE_CHECKING:
    from ..plan.spec import PlanSpec

app = typer.Typer(
    name="waymark",
    help="Run long multi-week plans on Prefect and resume them where they stopped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def validate(plan: PlanArg) -> None:
    """Check a plan file; print every problem, and which forbidden entries the hooks and a
    run enforce (the others are only shown). Writes nothing."""
    spec = load_or_exit(plan)
    print(f"{plan}: valid plan {spec.plan_id!r} with {len(spec.steps)} steps")
    _print_forbidden(spec)


def _print_forbidden(spec: PlanSpec) -> None:
    """Which forbidden entries the hook and a run enforce, and which are only shown."""
    from ..hooks.forbidden import entry_kinds
    from ..models import GoalContract

    c = spec.contract
    if c is None:
        return
    if not isinstance(c, GoalContract):
        print(f"forbidden: in the goal contract block {c.block!r} (read when a run or "
              "`waymark next` re-anchors; `waymark validate` reads no Prefect)")  # fmt: skip
        return
    entries = entry_kinds(list(c.forbidden))
    if not entries:
        return
    enforced = sum(e.enforced for e in entries)
    print(f"forbidden ({c.goal_id} v{c.version}): {enforced} enforced, "
          f"{len(entries) - enforced} shown only")  # fmt: skip
    for e in entries:
        print(f"  {'enforced' if e.enforced else 'shown   '}  {e.rule}  — {e.how}")


@app.command()
def schema() -> None:
    """Print the plan file's JSON Schema."""
    from ..plan.spec import PlanSpec

    doc = PlanSpec.model_json_schema()
    for internal in ("source", "base_dir"):  # set by the loader; not plan file fields
        doc["properties"].pop(internal, None)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "prefect-waymark plan"
    print(json.dumps(doc, indent=2))


@app.command()
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
    from .status_command import read_status
    from .status_document import print_json
    from .status_output import print_table

    view, extra, code = read_status(plan, workdir, ledger, rebuild)
    if as_json:
        print_json(view, extra)
    else:
        print_table(view, extra)
    raise typer.Exit(code)


def _run(
    plan: Path,
    workdir: Path | None,
    ledger: str | None,
    max_steps: int | None,
    until: str | None,
    executor: str | None,
    markers_dir: Path | None = None,
    results: str | None = None,
    task_runner: str | None = None,
    dask_address: str | None = None,
) -> None:
    from .run_command import run_from_cli

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


@app.command()
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
    _run(
        plan, workdir, ledger, max_steps, until, executor, markers_dir, results, task_runner,
        dask_address,
    )  # fmt: skip


# `waymark resume` is the same command under the name people reach for the next day.
app.command(name="resume", help="Same as `run`: continue the plan where the last run stopped.")(run)
app.command()(rerun)
app.command(name="rename-plan")(rename_plan)
app.command(name="rename-step")(rename_step)
app.command()(diff)
app.command()(skip)
app.command()(close)
app.command()(init)
app.command()(deploy)
app.command()(serve)
app.command()(worker)
app.command(name="next")(next_command)
app.command()(start)
app.command()(tick)
app.command()(done)
app.command(name="fail")(fail_command)
app.command()(block)
app.command("import")(import_plan)
app.command()(metrics)
app.command()(export)
app.command()(replay)
app.command()(restore)


@app.command()
def marker(
    plan: PlanArg,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    markers_dir: MarkersDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the marker as JSON.")] = False,
    history: Annotated[bool, typer.Option("--history", help="Every run's marker.")] = False,
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Rewrite EXECUTION_MARKER.json and views from the ledger."),
    ] = False,
    from_prefect: Annotated[
        bool,
        typer.Option("--from-prefect", help="Read the latest marker artifact from Prefect's API."),
    ] = False,
    changes: Annotated[
        bool,
        typer.Option(
            "--changes",
            help="The run's execution boundary: ledger range, git before/after, files it "
            "created, modified, deleted or used temporarily, edits made between runs.",
        ),
    ] = False,
) -> None:
    """Show the latest execution marker: what the last run did and where the next one starts."""
    from .marker_command import marker_command

    code = marker_command(
        plan, workdir, ledger, markers_dir, as_json, history, rebuild, from_prefect, changes
    )
    raise typer.Exit(code)


@app.command()
def receipt(
    plan: PlanArg,
    step: Annotated[str, typer.Argument(help="Step whose action's outcome you checked.")],
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    applied: Annotated[
        bool, typer.Option("--applied", help="It happened: commit a receipt (never run again).")
    ] = False,
    not_applied: Annotated[
        bool, typer.Option("--not-applied", help="It did not happen: the next run does it.")
    ] = False,
    action: Annotated[
        str | None, typer.Option("--action", help="Action name (default: the open one).")
    ] = None,
    key: Annotated[str | None, typer.Option("--key", help="Idempotency key.")] = None,
    external_id: Annotated[
        str | None, typer.Option("--external-id", help="The business system's id.")
    ] = None,
    note: Annotated[
        str | None,
        typer.Option(
            "--note",
            help=f"What you checked (at most {REASON.chars:,} characters).",
            callback=bounded(REASON, "--note"),
        ),
    ] = None,
    by: ByOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Record what happened to an action whose outcome is unknown, or list a step's receipts."""
    from .receipts import receipt_command

    raise typer.Exit(
        receipt_command(
            plan,
            step,
            workdir,
            ledger,
            applied,
            not_applied,
            action,
            key,
            external_id,
            note,
            by,
            as_json,
        )
    )


@app.command()
def review(
    plan: PlanArg,
    step: Annotated[
        str | None, typer.Option("--step", help="Step to answer (default: the one in review).")
    ] = None,
    accept: Annotated[
        bool, typer.Option("--accept", help="Accept the current state; the step goes on.")
    ] = False,
    rerun: Annotated[
        bool, typer.Option("--rerun", help="Accept the current state and run the step again.")
    ] = False,
    abort: Annotated[
        bool, typer.Option("--abort", help="Abort the plan: `waymark run` will not run it.")
    ] = False,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    reason: ReasonOpt = "",
    by: ByOpt = None,
    receipt: Annotated[
        str | None,
        typer.Option(
            "--receipt",
            help="For an action whose outcome is unknown: 'applied' or 'not-applied' "
            "(what you checked in the business system).",
        ),
    ] = None,
    external_id: Annotated[
        str | None, typer.Option("--external-id", help="With --receipt applied: its id.")
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all", help="With --accept or --rerun: answer every step in review the same way."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Answer a stop for review: --accept, --rerun or --abort. Records an event; runs nothing."""
    from .review import review_command

    if every and (step is not None or receipt is not None):
        fail("--all answers every stop: it goes without --step and --receipt")
    if receipt is not None:
        from .receipts import review_receipt

        review_receipt(
            plan, step, receipt, external_id, (accept, rerun, abort), workdir, ledger, reason, by
        )
    code = review_command(
        plan, step, accept, rerun, abort, workdir, ledger, reason, by, every=every, as_json=as_json
    )
    raise typer.Exit(code)


@app.command()
def mcp(
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            envvar="WAYMARK_PLAN",
            help="The plan the tools check in (default: $WAYMARK_PLAN; without one, each "
            "call names its plan file).",
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            help="Who checks in when a call does not say (default: $WAYMARK_EXECUTOR, else "
            "user@host).",
        ),
    ] = None,
    workdir: WorkdirOpt = None,
    ledger: LedgerOpt = None,
    results: ResultsOpt = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
        ),
    ] = None,
    allow_review: Annotated[
        bool,
        typer.Option("--allow-review", help="Offer the `review` tool: answer stops for review."),
    ] = False,
) -> None:
    """An MCP server (stdio, or streamable HTTP with --http) whose tools are the check-ins:
    next, start, tick, done, fail, block, skip, status, metrics (and review with
    --allow-review). Each returns the document the command prints with --json."""
    try:
        from .mcp_server import ServerOptions, serve
    except ImportError as exc:
        fail(f"the MCP server needs the `mcp` package ({exc}): pip install 'prefect-waymark[mcp]'")
    if plan is not None:
        load_or_exit(plan)  # a bad plan file is said now, not at the first call
    address = _host_port(http) if http is not None else None
    options = ServerOptions(
        plan=plan,
        executor=executor,
        workdir=workdir,
        ledger=ledger,
        results=results,
        allow_review=allow_review,
    )
    serve(options, address)


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        fail(f"--http {text!r}: expected HOST:PORT (e.g. 127.0.0.1:8765)")
    return host.strip("[]"), int(port)


server_app = typer.Typer(
    help="A local Prefect server that waymark runs reuse.", no_args_is_help=True
)
app.add_typer(server_app, name="server")


@app.command(
    "hook",
    help=f"{HOOK_HELP} Commands: `claude-code EVENT`, `generic [EVENT] --json`; `waymark hook "
    "COMMAND --help` lists their options.",
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def hook(ctx: typer.Context) -> None:
    """The hooks' own parser reads the arguments (:func:`prefect_waymark.hooks.command.main`;
    the console script calls it without loading typer)."""
    from ..hooks.command import main as hook_main

    raise typer.Exit(hook_main(list(ctx.args)))


@server_app.command("start")
def server_start() -> None:
    """Start (or find) the local Prefect server and print its API URL."""
    from ..prefect_server.local import ensure_local_server

    info = ensure_local_server(echo=True)
    print(info.api_url)


@server_app.command("stop")
def server_stop() -> None:
    """Stop the local Prefect server waymark started."""
    from ..prefect_server.local import stop_local_server

    print("stopped" if stop_local_server() else "no local server was running")


@server_app.command("status")
def server_status() -> None:
    """Say whether the local Prefect server is up, and where."""
    from ..prefect_server.local import find_local_server

    info = find_local_server()
    if info is None:
        print("no local server running")
        raise typer.Exit(1)
    print(f"{info.api_url} (pid {info.pid}); UI at {info.ui_url}")


def _one_line_summaries(group: typer.Typer) -> None:
    """Each command's line in ``waymark --help``: its help's first paragraph on one line (typer's
    rich help keeps a docstring's single line breaks there, mid-sentence)."""
    import inspect

    for info in group.registered_commands:
        text = info.help or (info.callback.__doc__ if info.callback else None)
        if info.short_help is None and text:
            info.short_help = " ".join(inspect.cleandoc(text).split("\n\n")[0].split())


_one_line_summaries(app)
_one_line_summaries(server_app)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
