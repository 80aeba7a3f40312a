"""``waymark mcp``: the check-in commands as an MCP server, on the official ``mcp`` SDK.

One path per job: each tool calls the function its command calls and returns the document the
command prints with ``--json``:

=========  =============================================  ==================================
tool       function (shared with the command)             document
=========  =============================================  ==================================
next       :func:`.agent_commands.next_answer`            ``waymark next --json``
start      :func:`.agent_commands.start_answer`           ``waymark start --json``
tick       :func:`.agent_commands.tick_answer`            ``waymark tick --json``
done       :func:`.agent_commands.done_answer`            ``waymark done --json``
fail       :func:`.agent_commands.fail_answer`            ``waymark fail --json``
block      :func:`.agent_commands.block_answer`           ``waymark block --json``
skip       :func:`.close_command.skip_answer`             ``waymark skip --json``
status     :func:`.status_command.read_status`            ``waymark status --json``
metrics    :func:`.metrics_command.read_metrics`          ``waymark metrics --json``
review     :func:`.review.review_answer`                  ``waymark review --json``
=========  =============================================  ==================================

A command's refusal is a tool error (``is_error``) whose text is the command's ``waymark: ...``
line and the meaning of its exit code: a :class:`~prefect_waymark.errors.CommandRefused` that a
check-in raises, or that :func:`~._common.fail` raises the command's exit from. The code is in
the result's ``_meta`` (``waymark/exit_code``), as it is for an answer that is not 0 (``next``
with nothing ready: 3; ``status`` of a plan in review: 4). Anything else a tool raises is a tool
error too (exit code 1): the server never ends because of a call.

The tools run one at a time (a lock): the commands keep a little state per process (the options
the hints they print carry), and the ledger serialises its writers anyway.

Imported only by ``waymark mcp``: the ``mcp`` SDK stays out of the CLI's start-up.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent
from pydantic import Field, StringConstraints

from ..errors import CommandRefused, LedgerDamaged
from ..models import EVIDENCE, REASON
from ..run import exit_codes
from ._common import Answer, refusal_of
from .agent_commands import (
    LEASE_DEFAULT,
    LEASE_MAX,
    LEASE_MIN,
    block,
    block_answer,
    done,
    done_answer,
    fail_answer,
    fail_command,
    next_answer,
    next_command,
    start,
    start_answer,
    tick,
    tick_answer,
)

__all__ = ["ServerOptions", "build_server"]

#: The key of the exit code in a tool result's ``_meta``.
EXIT_CODE_META = "waymark/exit_code"


@dataclass(frozen=True)
class ServerOptions:
    """``waymark mcp``'s options: the defaults of every tool call."""

    plan: Path | None = None
    executor: str | None = None
    workdir: Path | None = None
    ledger: str | None = None
    results: str | None = None
    allow_review: bool = False


PlanIn = Annotated[
    str | None,
    Field(description="Plan file (YAML or JSON); default: the server's --plan or $WAYMARK_PLAN."),
]
StepIn = Annotated[str, Field(description="Step id.", min_length=1)]
ExecutorIn = Annotated[
    str | None,
    Field(
        description="Who checks in (default: the server's --executor, else $WAYMARK_EXECUTOR, "
        "else user@host)."
    ),
]
LeaseIn = Annotated[
    float,
    Field(
        description="Seconds the hold lives without a tick (default: an hour).",
        ge=LEASE_MIN,
        le=LEASE_MAX,
    ),
]
ItemId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$")]


class _Calls:
    """The tools' shared part: the server's defaults, one call at a time, results and errors."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self._lock = threading.Lock()

    def plan(self, given: str | None) -> Path:
        if given:
            return Path(given)
        if self.options.plan is None:
            raise CommandRefused(
                "give `plan` (a plan file): the server has no --plan", exit_codes.BAD_INPUT
            )
        return self.options.plan

    def executor(self, given: str | None) -> str | None:
        return given or self.options.executor

    def answer(self, build: Callable[[], Answer]) -> CallToolResult:
        """Call ``build`` (a command's own function) and return its document, or its refusal
        as a tool error."""
        with self._lock:
            try:
                said = build()
            except CommandRefused as exc:  # a check-in the ledger refused
                return _error(exc.message, exc.code, exc.document)
            except typer.Exit as exc:  # the command said why and exited (_common.fail)
                refused = refusal_of(exc)
                return _error(refused.message, refused.code)
            except LedgerDamaged as exc:  # as `waymark` itself answers it (cli/__init__.py)
                return _error(str(exc), exit_codes.BAD_INPUT)
            except Exception as exc:  # noqa: BLE001 - a tool error; the server goes on
                first = (str(exc).strip().splitlines() or [""])[0][:300]
                return _error(f"{type(exc).__name__}: {first}", exit_codes.STEP_FAILED)
        return _result(said.document, said.code)


def _result(doc: dict[str, Any], code: int, text: str | None = None) -> CallToolResult:
    """``doc`` as ``--json`` prints it (the text) and as its parsed value (the structured
    content): values JSON cannot hold are strings, as the command's ``default=str`` makes them."""
    text = text if text is not None else json.dumps(doc, indent=2, default=str, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=json.loads(text),
        _meta={EXIT_CODE_META: code},
    )


def _error(message: str, code: int, doc: dict[str, Any] | None = None) -> CallToolResult:
    meaning = exit_codes.MEANINGS.get(code, "failed")
    return CallToolResult(
        content=[
            TextContent(type="text", text=f"waymark: {message}\n(exit code {code}: {meaning})")
        ],
        structured_content=json.loads(json.dumps(doc, default=str)) if doc is not None else None,
        is_error=True,
        _meta={EXIT_CODE_META: code},
    )


def _status(calls: _Calls, plan: str | None) -> Answer:
    from .status_command import read_status
    from .status_document import status_document

    view, extra, code = read_status(calls.plan(plan), calls.options.workdir, calls.options.ledger)
    return Answer(status_document(view, extra), "", code)


def build_server(options: ServerOptions) -> MCPServer[Any]:
    """The MCP server of ``waymark mcp``: its tools and resources."""
    from importlib.metadata import version

    server: MCPServer[Any] = MCPServer(
        name="waymark",
        version=version("prefect-waymark"),
        instructions=(
            "Check in the steps of a waymark plan: `next` says the step to work on (its "
            "instructions, acceptance items and the goal contract), `start` takes it, `tick` "
            "renews the hold, `done` checks it in with outputs and evidence per acceptance item; "
            "`fail`, `block` and `skip` say why not. `status` and `metrics` read the plan."
        ),
    )
    calls = _Calls(options)
    o = options
    _checkin_tools(server, calls)
    _reading_tools(server, calls)
    if o.allow_review:
        _review_tool(server, calls)
    if o.plan is not None:
        _resources(server, calls)
    return server


def _checkin_tools(server: MCPServer[Any], calls: _Calls) -> None:  # noqa: C901 - one per tool
    o = calls.options

    @server.tool(name="next", description=_doc(next_command))
    def next_(plan: PlanIn = None, executor: ExecutorIn = None) -> CallToolResult:
        return calls.answer(
            lambda: next_answer(
                calls.plan(plan), calls.executor(executor), o.workdir, o.ledger, o.results
            )
        )

    @server.tool(name="start", description=_doc(start))
    def start_tool(
        step: StepIn,
        plan: PlanIn = None,
        executor: ExecutorIn = None,
        lease: LeaseIn = LEASE_DEFAULT,
    ) -> CallToolResult:
        return calls.answer(
            lambda: start_answer(
                calls.plan(plan), step, calls.executor(executor), o.workdir, o.ledger, lease,
                o.results,
            )
        )  # fmt: skip

    @server.tool(name="tick", description=_doc(tick))
    def tick_tool(
        step: StepIn,
        plan: PlanIn = None,
        executor: ExecutorIn = None,
        every: Annotated[int, Field(description="Re-anchor on every N-th tick.", ge=1)] = 10,
        lease: LeaseIn = LEASE_DEFAULT,
    ) -> CallToolResult:
        return calls.answer(
            lambda: tick_answer(
                calls.plan(plan), step, calls.executor(executor), every, o.workdir, o.ledger, lease
            )
        )

    @server.tool(name="done", description=_doc(done))
    def done_tool(
        step: StepIn,
        plan: PlanIn = None,
        executor: ExecutorIn = None,
        outputs: Annotated[
            list[str], Field(description="Files the step made (paths in the workdir).")
        ] = [],  # noqa: B006 - pydantic copies defaults
        evidence: Annotated[
            dict[ItemId, Annotated[str, StringConstraints(max_length=EVIDENCE.chars)]],
            Field(description='Evidence per acceptance item: {"A1": "text", ...}.'),
        ] = {},  # noqa: B006
        receipts: Annotated[
            dict[ItemId, str],
            Field(description='An action step\'s receipt: {"external_id": "...", ...}.'),
        ] = {},  # noqa: B006
    ) -> CallToolResult:
        return calls.answer(
            lambda: done_answer(
                calls.plan(plan),
                step,
                calls.executor(executor),
                outputs,
                [f"{item}: {text}" for item, text in evidence.items()],
                [f"{key}={value}" for key, value in receipts.items()],
                o.workdir,
                o.ledger,
                o.results,
            )
        )

    @server.tool(name="fail", description=_doc(fail_command))
    def fail_(
        step: StepIn,
        reason: Annotated[str, Field(description="What went wrong.", max_length=REASON.chars)],
        plan: PlanIn = None,
        executor: ExecutorIn = None,
    ) -> CallToolResult:
        return calls.answer(
            lambda: fail_answer(
                calls.plan(plan), step, reason, calls.executor(executor), o.workdir, o.ledger
            )
        )

    @server.tool(name="block", description=_doc(block))
    def block_tool(
        step: StepIn,
        on: Annotated[str | None, Field(description="The step it waits behind.")] = None,
        reason: Annotated[
            str, Field(description="Why it cannot go on.", max_length=REASON.chars)
        ] = "",
        plan: PlanIn = None,
        executor: ExecutorIn = None,
    ) -> CallToolResult:
        return calls.answer(
            lambda: block_answer(
                calls.plan(plan), step, on, reason, calls.executor(executor), o.workdir, o.ledger
            )
        )

    @server.tool(description=_doc(_skip_doc()))
    def skip(
        step: StepIn,
        reason: Annotated[
            str,
            Field(description="Why it is left out (kept in the ledger).", max_length=REASON.chars),
        ],
        plan: PlanIn = None,
        executor: ExecutorIn = None,
    ) -> CallToolResult:
        from .close_command import skip_answer

        return calls.answer(
            lambda: skip_answer(
                calls.plan(plan), step, reason, calls.executor(executor), o.workdir, o.ledger
            )
        )


def _reading_tools(server: MCPServer[Any], calls: _Calls) -> None:
    o = calls.options

    @server.tool(description="The plan's standing: each step's status, from the ledger "
                 "(`waymark status --json`). Reads only.")  # fmt: skip
    def status(plan: PlanIn = None) -> CallToolResult:
        return calls.answer(lambda: _status(calls, plan))

    @server.tool(description="The plan's eight metrics, from the ledger "
                 "(`waymark metrics --json`). Reads only.")  # fmt: skip
    def metrics(plan: PlanIn = None) -> CallToolResult:
        from .metrics_command import metrics_document, read_metrics

        def build() -> Answer:
            spec, result = read_metrics(calls.plan(plan), o.workdir, o.ledger)
            return Answer(metrics_document(spec.plan_id, result), "")

        return calls.answer(build)


def _review_tool(server: MCPServer[Any], calls: _Calls) -> None:
    o = calls.options

    @server.tool(description="Answer a stop for review (`waymark review --json`): accept the "
                 "current state, re-run the step, or abort the plan.")  # fmt: skip
    def review(
        decision: Annotated[Literal["accept", "rerun", "abort"], Field(description="The answer.")],
        step: Annotated[
            str | None, Field(description="Step to answer (default: the one in review).")
        ] = None,
        reason: Annotated[
            str, Field(description="Why, for the record.", max_length=REASON.chars)
        ] = "",
        every: Annotated[
            bool, Field(description="accept or rerun: answer every step in review the same way.")
        ] = False,
        plan: PlanIn = None,
        executor: ExecutorIn = None,
    ) -> CallToolResult:
        from .review import review_answer

        return calls.answer(
            lambda: review_answer(
                calls.plan(plan), step, decision, o.workdir, o.ledger, reason,
                calls.executor(executor), every=every,
            )
        )  # fmt: skip


def _resources(server: MCPServer[Any], calls: _Calls) -> None:
    """With ``--plan``: the plan's standing and the current step, as JSON documents."""
    o = calls.options

    def read(build: Callable[[], Answer]) -> str:
        got = calls.answer(build)
        text = got.content[0].text if isinstance(got.content[0], TextContent) else ""
        if got.is_error:
            raise ResourceError(text)
        return text

    @server.resource("waymark://plan/status", name="standing", mime_type="application/json",
                     description="The plan's standing (`waymark status --json`).")  # fmt: skip
    def standing() -> str:
        return read(lambda: _status(calls, None))

    @server.resource("waymark://plan/next", name="current-step", mime_type="application/json",
                     description="The step to work on now: its instructions, acceptance items "
                     "and the goal contract (`waymark next --json`).")  # fmt: skip
    def current_step() -> str:
        return read(
            lambda: next_answer(calls.plan(None), o.executor, o.workdir, o.ledger, o.results)
        )


def _doc(fn: Any) -> str:
    """A command's help (its docstring), as the tool's description."""
    text = fn if isinstance(fn, str) else (fn.__doc__ or "")
    return " ".join(text.split())


def _skip_doc() -> str:
    from .close_command import skip

    return skip.__doc__ or ""


def serve(options: ServerOptions, http: tuple[str, int] | None) -> None:
    """Run the server: on stdio, or streamable HTTP at ``http`` (host, port; path ``/mcp``)."""
    server = build_server(options)
    if http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=http[0], port=http[1])
