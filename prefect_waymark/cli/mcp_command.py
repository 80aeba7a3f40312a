"""``waymark mcp``: its options, read before the ``mcp`` SDK is imported (:mod:`.mcp_server`
imports it), so a missing SDK is one line saying how to install it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import fail, load_or_exit
from .options import LedgerOpt, ResultsOpt, WorkdirOpt

__all__ = ["mcp"]


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
