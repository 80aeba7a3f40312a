"""``waymark hook claude-code EVENT`` and ``waymark hook generic [EVENT] --json``; a bare
``waymark hook [EVENT] --json`` (no command name) is the generic form.

A harness runs the hook once per lifecycle event with the event as JSON on stdin. Both commands
decide the same way (:mod:`prefect_waymark.hooks.decisions`) and differ only in the answer:
Claude Code's hooks protocol (:mod:`prefect_waymark.hooks.claude_code`), or the decision's own
JSON. Unlike the other commands, a hook never exits 2 — Claude Code reads exit 2 as "block
this" — nor fails: bad stdin, a mistyped option, no plan configured, no ledger yet or an error
inside are all an answer without a decision, exit 0, and one line on stderr. Nothing on the hook
path imports Prefect.

Registered by ``prefect_waymark.cli.commands`` as ``app.add_typer(hook_app, name="hook")``;
``python -m prefect_waymark.hooks`` runs the same commands.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from .claude_code import answer
from .decisions import Decision, decide
from .payload import EVENTS, HookInput, event_name, parse_payload
from .settings import resolve_settings

__all__ = ["hook_app"]


class _GenericByDefault(TyperGroup):
    """``waymark hook --json`` / ``waymark hook EVENT --json``: arguments that do not start
    with a command's name (nor ask for help) go to ``generic``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["generic", *args]
        return list(super().parse_args(ctx, args))


hook_app = typer.Typer(
    name="hook",
    cls=_GenericByDefault,
    help="Answer an agent harness's hook events from the plan and its ledger (stdin: the "
    "event). `waymark hook [EVENT] --json` without a command is `waymark hook generic`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _Lenient(TyperCommand):
    """A command whose bad arguments are a notice, not click's exit 2 (a block in Claude Code):
    on a usage error it parses again with the event alone and says what it dropped."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # ``Any``: typer's click (vendored since typer 0.2x, the click package before).
        try:
            return list(super().parse_args(ctx, args))
        except Exception as exc:
            if getattr(exc, "exit_code", None) != 2:  # click's UsageError family exits 2
                raise
            fmt = getattr(exc, "format_message", None)
            ctx.meta["waymark_usage"] = fmt() if callable(fmt) else str(exc)
            ctx.params.clear()
            keep = [a for a in args[:1] if not a.startswith("-")]
            return list(super().parse_args(ctx, keep))


_LENIENT = {"allow_extra_args": True, "ignore_unknown_options": True}
EventArg = Annotated[
    str | None,
    typer.Argument(
        help=f"The event: {', '.join(EVENTS)} (default: the event's hook_event_name).",
        show_default=False,
    ),
]
PlanOpt = Annotated[
    str | None,
    typer.Option("--plan", help="Plan file (default: $WAYMARK_PLAN; relative to the project)."),
]
ExecutorOpt = Annotated[
    str | None,
    typer.Option("--executor", help="Who checks in (default: $WAYMARK_EXECUTOR, else user@host)."),
]
EveryOpt = Annotated[
    str | None,
    typer.Option(
        "--every",
        help="Re-anchor reminder every N prompts and tool calls (default: $WAYMARK_HOOK_EVERY, "
        "else 20; 0: never).",
    ),
]
LedgerOpt = Annotated[
    str | None, typer.Option("--ledger", help="Ledger URL (default: as `waymark next`).")
]
WorkdirOpt = Annotated[
    str | None, typer.Option("--workdir", help="Working folder (default: the plan's folder).")
]


def _stdin() -> bytes:
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return b""
    buffer = getattr(stream, "buffer", None)
    data = buffer.read() if buffer is not None else stream.read()
    return data if isinstance(data, bytes) else str(data).encode("utf-8", "replace")


def _decide(ctx: typer.Context, event: str | None, options: dict[str, Any]) -> Decision:
    """The decision for this call (what escapes is caught by :func:`_safe`)."""
    notices: list[str] = []
    if ctx.meta.get("waymark_usage"):
        notices.append(f"arguments ignored: {ctx.meta['waymark_usage']}")
    extra = list(ctx.args)
    if event is not None and event.startswith("-"):  # an unknown option took the event's place
        extra.insert(0, event)
        event = next((a for a in extra if event_name(a)), None)
        if event is not None:
            extra.remove(event)
    if extra:
        notices.append(f"arguments ignored: {' '.join(extra)[:200]}")
    try:
        payload, bad = parse_payload(_stdin()), None
    except (ValueError, OSError) as exc:
        payload, bad = HookInput(), str(exc)
    name = event_name(event) or event_name(payload.hook_event_name)
    if event and event_name(event) is None:
        notices.append(f"event {event!r} is not one of {', '.join(EVENTS)}")
    elif name is None and bad is None:
        given = payload.hook_event_name
        notices.append(
            f"event {given!r} is not one of {', '.join(EVENTS)}"
            if given
            else f"no event: give EVENT ({', '.join(EVENTS)}) or hook_event_name on stdin"
        )
    if name is None or bad is not None:
        bad_line = [bad] if bad is not None else []
        d = Decision(name, notices=[*notices, *bad_line])
        if name == "SessionStart":
            d.user_message = f"waymark hook: {bad}"
        return d
    d = decide(name, payload, resolve_settings(**options))
    d.notices[:0] = notices
    return d


def _finish(d: Decision, out: str) -> None:
    if out:
        print(out)
    if d.notices:
        line = "; ".join(n.replace("\n", " ") for n in d.notices)
        print(f"waymark hook: {line[:2000]}", file=sys.stderr)
    raise typer.Exit(0)


def _safe(ctx: typer.Context, event: str | None, options: dict[str, Any]) -> Decision:
    try:
        return _decide(ctx, event, options)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent's session
        return Decision(event_name(event), notices=[f"unexpected {type(exc).__name__}: {exc}"])


@hook_app.command("claude-code", cls=_Lenient, context_settings=_LENIENT)
def claude_code(
    ctx: typer.Context,
    event: EventArg = None,
    plan: PlanOpt = None,
    executor: ExecutorOpt = None,
    every: EveryOpt = None,
    ledger: LedgerOpt = None,
    workdir: WorkdirOpt = None,
) -> None:
    """Answer one Claude Code hook event in Claude Code's hooks protocol (always exit 0)."""
    opts = {"plan": plan, "executor": executor, "every": every, "ledger": ledger,
            "workdir": workdir}  # fmt: skip
    d = _safe(ctx, event, opts)
    try:
        out = answer(d)
    except Exception as exc:  # noqa: BLE001 - never a traceback for the harness
        out, d.notices = "", [*d.notices, f"answer: {type(exc).__name__}: {exc}"]
    _finish(d, out)


@hook_app.command("generic", cls=_Lenient, context_settings=_LENIENT)
def generic(
    ctx: typer.Context,
    event: EventArg = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
    plan: PlanOpt = None,
    executor: ExecutorOpt = None,
    every: EveryOpt = None,
    ledger: LedgerOpt = None,
    workdir: WorkdirOpt = None,
) -> None:
    """The same decision, harness-neutral: {"event", "decision": allow|deny|block|none,
    "reason", "context", ...} (always exit 0). Also `waymark hook [EVENT] --json`."""
    opts = {"plan": plan, "executor": executor, "every": every, "ledger": ledger,
            "workdir": workdir}  # fmt: skip
    d = _safe(ctx, event, opts)
    if as_json:
        out = json.dumps(d.as_generic(), indent=2)
    else:
        out = f"{d.event or '?'}: {d.decision}" + (f": {d.reason}" if d.reason else "")
        if d.context:
            out += "\n" + d.context
    _finish(d, out)
