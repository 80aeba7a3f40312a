"""``waymark hook claude-code EVENT`` and ``waymark hook generic [EVENT] --json``; a bare
``waymark hook [EVENT] --json`` (no command name) is the generic form.

A harness runs the hook once per lifecycle event with the event as JSON on stdin. Both commands
decide the same way (:mod:`prefect_waymark.hooks.decisions`) and differ only in the answer:
Claude Code's hooks protocol (:mod:`prefect_waymark.hooks.claude_code`), or the decision's own
JSON. Unlike the other commands, a hook never exits 2 for bad input — Claude Code reads exit 2
as "block this", and the hook exits 2 only for Claude Code's ``TaskCompleted`` block — nor
fails: bad stdin, a mistyped option, no plan configured, no ledger yet or an error inside are
all an answer without a decision, exit 0, and one line on stderr. Nothing on the hook path
imports Prefect.

:func:`main` is the one parser of ``waymark hook``'s arguments, written with the standard
library: the hook runs before every tool call, and typer (which builds pydantic adapters for
its options) would be most of its cost. The ``waymark`` console script hands it the arguments
after ``hook`` before it loads typer and the other commands (:func:`prefect_waymark.cli.main`);
the typer app's ``hook`` command (what ``waymark --help`` lists) forwards them to it unparsed;
``python -m prefect_waymark.hooks`` runs it. Arguments it cannot use are dropped and named in
the one line on stderr (``arguments ignored: ...``); the options it reads stay. Importing this
module loads none of the deciding (the CLI imports it for the help text): :func:`main` does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .payload import EVENTS, event_name

if TYPE_CHECKING:
    from .decisions import Decision

__all__ = ["COMMANDS", "HELP", "HookArgs", "help_text", "main", "parse_args"]

HELP = (
    "Answer an agent harness's hook events from the plan and its ledger (stdin: the event). "
    "`waymark hook [EVENT] --json` without a command is `waymark hook generic`."
)
#: The commands, with their one-line help.
COMMANDS = {
    "claude-code": "Answer one Claude Code hook event in Claude Code's hooks protocol (exit 0; "
    "exit 2 only to keep a session task that names an unfinished step open).",
    "generic": 'The same decision, harness-neutral: {"event", "decision": allow|deny|block|none, '
    '"reason", "context", ...} (always exit 0). Also `waymark hook [EVENT] --json`.',
}
#: The options that take a value, with their help (the keys of :func:`resolve_settings`).
OPTIONS = {
    "--plan": "Plan file (default: $WAYMARK_PLAN; relative to the project).",
    "--executor": "Who checks in (default: $WAYMARK_EXECUTOR, else user@host).",
    "--every": "Re-anchor reminder every N prompts and tool calls (default: "
    "$WAYMARK_HOOK_EVERY, else 20; 0: never).",
    "--ledger": "Ledger URL (default: as `waymark next`).",
    "--workdir": "Working folder (default: the plan's folder).",
}
_JSON_HELP = "Print the decision as JSON (generic only)."


@dataclass
class HookArgs:
    """``waymark hook``'s arguments, read."""

    command: str = "generic"
    event: str | None = None
    #: The value options given (``plan``, ``executor``, ``every``, ``ledger``, ``workdir``).
    options: dict[str, str] = field(default_factory=dict)
    as_json: bool = False
    #: What was dropped: unknown options, an option without its value, extra arguments.
    ignored: list[str] = field(default_factory=list)
    #: ``--help``: the command's help (``group``: the list of commands) instead of an answer.
    help: str | None = None


def parse_args(args: Sequence[str]) -> HookArgs:
    """Read ``waymark hook``'s arguments (those after ``hook``). Never raises."""
    args = list(args)
    if not args or args[0] in ("--help", "-h"):
        return HookArgs(help="group")
    got = HookArgs()
    if args[0] in COMMANDS:
        got.command = args.pop(0)
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=")
        if arg in ("--help", "-h"):
            got.help = got.command
        elif arg == "--":
            positional = list(rest)
            got.event = got.event or (positional.pop(0) if positional else None)
            got.ignored += positional
        elif name in OPTIONS:
            if not eq:
                given = next(rest, None)
                if given is None:
                    got.ignored.append(f"{arg} (no value)")
                    continue
                value = given
            got.options[name[2:]] = value
        elif arg == "--json" and got.command == "generic":
            got.as_json = True
        elif arg.startswith("-") and arg != "-":
            got.ignored.append(arg)
        elif got.event is None:
            got.event = arg
        else:
            got.ignored.append(arg)
    return got


def help_text(which: str, prog: str = "waymark hook") -> str:
    """``--help``'s text: ``group`` (the commands) or a command's (its options)."""
    from textwrap import fill

    def item(name: str, text: str, width: int) -> str:
        indent = " " * (width + 4)
        return fill(text, 88, initial_indent=f"  {name:<{width}}  ", subsequent_indent=indent)

    if which == "group":
        width = max(map(len, COMMANDS))
        lines = [f"Usage: {prog} COMMAND [EVENT] [OPTIONS]", "", fill(HELP, 88, initial_indent="  ",
                 subsequent_indent="  "), "", "Commands:"]  # fmt: skip
        lines += [item(name, text, width) for name, text in COMMANDS.items()]
        lines += ["", f"`{prog} COMMAND --help` lists a command's options."]
        return "\n".join(lines)
    options = {f"{k} TEXT": v for k, v in OPTIONS.items()}
    if which == "generic":
        options["--json"] = _JSON_HELP
    options["--help"] = "Show this message and exit."
    width = max(map(len, options))
    lines = [f"Usage: {prog} {which} [EVENT] [OPTIONS]", "",
             fill(COMMANDS[which], 88, initial_indent="  ", subsequent_indent="  "), "",
             "Arguments:", item("EVENT", f"The event: {', '.join(EVENTS)} (default: the event's "
             "hook_event_name).", width), "", "Options:"]  # fmt: skip
    lines += [item(name, text, width) for name, text in options.items()]
    return "\n".join(lines)


def _stdin() -> bytes:
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return b""
    buffer = getattr(stream, "buffer", None)
    data = buffer.read() if buffer is not None else stream.read()
    return data if isinstance(data, bytes) else str(data).encode("utf-8", "replace")


def _decide(got: HookArgs) -> Decision:
    """The decision for this call (what escapes is caught by :func:`_safe`)."""
    from .decisions import Decision, decide
    from .payload import HookInput, parse_payload
    from .settings import resolve_settings

    notices: list[str] = []
    if got.ignored:
        notices.append(f"arguments ignored: {' '.join(got.ignored)[:200]}")
    try:
        payload, bad = parse_payload(_stdin()), None
    except (ValueError, OSError) as exc:
        payload, bad = HookInput(), str(exc)
    event = got.event
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
    o = got.options
    settings = resolve_settings(plan=o.get("plan"), executor=o.get("executor"),
                                every=o.get("every"), ledger=o.get("ledger"),
                                workdir=o.get("workdir"))  # fmt: skip
    d = decide(name, payload, settings)
    d.notices[:0] = notices
    return d


def _safe(got: HookArgs) -> Decision:
    from .decisions import Decision

    try:
        return _decide(got)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent's session
        return Decision(event_name(got.event), notices=[f"unexpected {type(exc).__name__}: {exc}"])


def _out(got: HookArgs, d: Decision) -> str:
    if got.command == "claude-code":
        from .claude_code import answer

        try:
            return answer(d)
        except Exception as exc:  # noqa: BLE001 - never a traceback for the harness
            d.notices = [*d.notices, f"answer: {type(exc).__name__}: {exc}"]
            return ""
    if got.as_json:
        return json.dumps(d.as_generic(), indent=2)
    out = f"{d.event or '?'}: {d.decision}" + (f": {d.reason}" if d.reason else "")
    return out + ("\n" + d.context if d.context else "")


def main(args: Sequence[str] | None = None, prog: str = "waymark hook") -> int:
    """Answer one hook event (``args``: those after ``hook``, default ``sys.argv[1:]``); the
    exit code: 0, or 2 for Claude Code's TaskCompleted block (its reason alone on stderr)."""
    got = parse_args(sys.argv[1:] if args is None else args)
    if got.help is not None:
        print(help_text(got.help, prog))
        return 0
    d = _safe(got)
    if got.command == "claude-code":
        from .claude_code import blocks

        if blocks(d):
            print(d.reason or "the step is not checked in", file=sys.stderr)
            return 2
    out = _out(got, d)
    if out:
        print(out)
    if d.notices:
        line = "; ".join(n.replace("\n", " ") for n in d.notices)
        print(f"waymark hook: {line[:2000]}", file=sys.stderr)
    return 0
