"""Wire an agent harness to a plan: what ``waymark init --agent NAME`` writes into a project.

Each harness gets the files it reads, merged with what is there and written only when something
changes (a second ``init`` changes nothing):

- ``claude-code``: ``.claude/settings.json`` — ``env`` (``WAYMARK_PLAN``, ``WAYMARK_EXECUTOR``)
  and the hooks (``SessionStart``, ``UserPromptSubmit``, ``PreToolUse`` on every tool, ``Stop``)
  that run ``waymark hook claude-code EVENT``; ``.mcp.json`` — the ``waymark mcp`` server;
  ``CLAUDE.md`` — the loop the agent follows.
- ``codex``: ``.codex/config.toml`` — the ``waymark mcp`` server (Codex reads a project's file
  in a trusted project); ``AGENTS.md`` — the same loop (Codex runs no hooks here: the forbidden
  list is the instructions' and a run's to enforce, not a guard before each command).
- ``generic``: ``AGENTS.md``; the harness's own hook settings call
  ``waymark hook generic EVENT --json`` (printed, not written).

Merging never takes anything away: an ``env`` value the user set differently, a hook a person
configured for the same event, and the text outside waymark's marked section are kept as they
are. A file that is not what its harness reads (a settings file that is not a JSON object, say)
is :class:`~prefect_waymark.errors.HarnessFileError`, and then no file is written.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files.atomic import atomic_write
from ..errors import HarnessFileError

__all__ = ["HARNESSES", "HOOK_EVENTS", "FileChange", "apply", "harness_changes", "loop_text"]

#: The harnesses ``waymark init --agent`` knows.
HARNESSES = ("claude-code", "codex", "generic")
#: Claude Code's events waymark answers, with their matcher (``None``: the event has none) and
#: the hook's timeout in seconds (``SessionStart`` runs ``waymark next``).
HOOK_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 60),
    "UserPromptSubmit": (None, 10),
    "PreToolUse": ("*", 10),
    "Stop": (None, 10),
    "TaskCompleted": (None, 10),
    "SubagentStart": (None, 10),
}
BEGIN = "<!-- waymark:begin (written by `waymark init --agent`; edit outside these lines) -->"
END = "<!-- waymark:end -->"


@dataclass(frozen=True)
class FileChange:
    """One file of the wiring: what changes in it (``what``), and its new text (``None``:
    nothing to write)."""

    path: Path
    what: str
    text: str | None


def loop_text(plan: str, executor: str, mcp: bool = False) -> str:
    """The agent's loop for ``plan`` (a path from the project's root), as Markdown; ``mcp``:
    the project has the ``waymark`` MCP server too."""
    p, e = shlex.quote(plan), shlex.quote(executor)
    cmd = f"waymark {{}} {p} {{}}--executor {e}"
    return "\n".join(
        [
            "## Working on the plan (waymark)",
            "",
            f"The work in this project follows the plan `{plan}`: a goal contract and steps, "
            "tracked by waymark in its ledger. Work on one step at a time, in this loop:",
            "",
            f"1. `{cmd.format('next', '')}` — the one step to work on now: its instructions, "
            "its acceptance items (`A1`, `A2`, …), the goal and what the contract forbids. "
            "When nothing is ready it says why: stop and report that.",
            f"2. `{cmd.format('start', 'STEP ')}` — take the step.",
            f"3. Do the work. In long work, `{cmd.format('tick', 'STEP ')}` keeps the step yours.",
            f'4. `{cmd.format("done", "STEP ")} --evidence "A1: …" --evidence "A2: …"` — '
            "one piece of evidence per acceptance item (`--evidence-file` for a long one).",
            "",
            f'If the step cannot be finished: `{cmd.format("block", "STEP ")} --reason "…"` '
            f'(it waits for a person) or `{cmd.format("fail", "STEP ")} --reason "…"`. '
            "Never do what the contract forbids, and never repeat an irreversible action: "
            "waymark keeps its receipts. A stop for review is a person's to answer, not yours.",
            "",
            "If you keep a task list, name the step's task `STEP: title` (its id first): the "
            "step's task closes only after the step's `done` with its evidence; your own "
            "smaller tasks close freely.",
            *(
                [
                    "",
                    "The `waymark` MCP server offers the same commands as tools (`next`, "
                    "`start`, `tick`, `done`, `fail`, `block`, `status`): use them or the "
                    "commands, the ledger is the same.",
                ]
                if mcp
                else []
            ),
        ]
    )


def harness_changes(
    project: Path, harness: str, plan: str, executor: str, waymark: str
) -> list[FileChange]:
    """What wiring ``harness`` to ``plan`` changes in ``project``; ``waymark`` is the command
    that runs waymark from the harness (``waymark``, or a path)."""
    mcp_args = ["mcp", "--plan", plan, "--executor", executor]
    if harness == "claude-code":
        return [
            _claude_settings(project / ".claude" / "settings.json", plan, executor, waymark),
            _mcp_json(project / ".mcp.json", _program(waymark), mcp_args),
            _section(project / "CLAUDE.md", loop_text(plan, executor, mcp=True)),
        ]
    if harness == "codex":
        return [
            _codex_config(project / ".codex" / "config.toml", _program(waymark), mcp_args),
            _section(project / "AGENTS.md", loop_text(plan, executor, mcp=True)),
        ]
    if harness == "generic":
        return [_section(project / "AGENTS.md", loop_text(plan, executor))]
    raise HarnessFileError(f"no harness {harness!r}: expected one of {', '.join(HARNESSES)}")


def apply(changes: list[FileChange]) -> None:
    """Write the files that change (each whole or not at all)."""
    for change in changes:
        if change.text is not None:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(change.path, change.text)


def _read(path: Path) -> str | None:
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessFileError(f"{path}: cannot be read as UTF-8 text ({exc})") from exc


def _section(path: Path, section: str) -> FileChange:
    """``path`` (Markdown) with waymark's section: added at the end, or replaced in place."""
    old = _read(path)
    block = f"{BEGIN}\n{section}\n{END}\n"
    if old is None:
        return FileChange(path, "created: the agent's loop", block)
    start, end = old.find(BEGIN), old.find(END)
    if start >= 0 and end > start:
        new = old[:start] + block + old[end + len(END) :].lstrip("\n")
        if new == old:
            return FileChange(path, "unchanged", None)
        return FileChange(path, "updated: the agent's loop (waymark's section)", new)
    if start >= 0 or end >= 0:
        raise HarnessFileError(
            f"{path}: waymark's section has only one of its marker lines ({BEGIN!r} … {END!r});"
            " remove the other and run `waymark init --agent` again"
        )
    gap = "" if not old else ("\n" if old.endswith("\n") else "\n\n")
    return FileChange(path, "updated: the agent's loop added at the end", old + gap + block)


def _json_object(path: Path) -> tuple[str | None, dict[str, Any]]:
    """A JSON settings file's text (``None``: no file) and its object (``{}`` if empty or
    absent); anything else is :class:`HarnessFileError` naming the file."""
    old = _read(path)
    try:
        doc: Any = json.loads(old) if old is not None and old.strip() else {}
    except json.JSONDecodeError as exc:
        raise HarnessFileError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(doc, dict):
        raise HarnessFileError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    return old, doc


def _claude_settings(path: Path, plan: str, executor: str, waymark: str) -> FileChange:
    """``.claude/settings.json`` with waymark's ``env`` and hooks merged in."""
    old, doc = _json_object(path)
    done: list[str] = []
    env = _object(doc, "env", path)
    for key, value in (("WAYMARK_PLAN", plan), ("WAYMARK_EXECUTOR", executor)):
        if key not in env:
            env[key] = value
            done.append(f"env {key}")
        elif env[key] != value:
            done.append(f"env {key} kept as {env[key]!r}")
    hooks = _object(doc, "hooks", path)
    for event, (matcher, timeout) in HOOK_EVENTS.items():
        command = f"{waymark} hook claude-code {event}"
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise HarnessFileError(f"{path}: hooks.{event}: expected a list of hook groups")
        if any(_runs_waymark_hook(g, event) for g in groups):
            continue
        group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        groups.append(group)
        done.append(f"hook {event}")
    added = [d for d in done if " kept as " not in d]
    if not added:
        return FileChange(path, "unchanged" + _kept(done), None)
    verb = "created" if old is None else "updated"
    return FileChange(
        path, f"{verb}: {', '.join(added)}{_kept(done)}", json.dumps(doc, indent=2) + "\n"
    )


def _program(waymark: str) -> str:
    """The program of an MCP server entry (no shell reads it): the hooks' command without its
    ``$CLAUDE_PROJECT_DIR`` prefix or quotes — a path from the project's root, which is the
    server's working folder."""
    words = shlex.split(waymark.replace('"$CLAUDE_PROJECT_DIR"/', "./"))
    return words[0] if words else "waymark"


def _mcp_json(path: Path, program: str, args: list[str]) -> FileChange:
    """``.mcp.json`` with the ``waymark`` server added (one already there is kept)."""
    old, doc = _json_object(path)
    servers = _object(doc, "mcpServers", path)
    if "waymark" in servers:
        return FileChange(path, "unchanged (server waymark: yours, left as it is)", None)
    servers["waymark"] = {"command": program, "args": args}
    verb = "created" if old is None else "updated"
    return FileChange(path, f"{verb}: MCP server waymark", json.dumps(doc, indent=2) + "\n")


_CODEX_TABLE = re.compile(r'^\s*\[\s*mcp_servers\s*\.\s*("waymark"|waymark)\s*\]', re.MULTILINE)


def _codex_config(path: Path, program: str, args: list[str]) -> FileChange:
    """``.codex/config.toml`` with an ``[mcp_servers.waymark]`` table (one already there is
    kept); the rest of the file is left byte for byte."""
    old = _read(path)
    if old is not None and _CODEX_TABLE.search(old):
        return FileChange(path, "unchanged (server waymark: yours, left as it is)", None)
    table = "\n".join(
        [
            "[mcp_servers.waymark]",
            f"command = {json.dumps(program)}",
            f"args = [{', '.join(json.dumps(a) for a in args)}]",
            "",
        ]
    )
    if old is None:
        return FileChange(path, "created: MCP server waymark", table)
    gap = "" if not old else ("\n" if old.endswith("\n") else "\n\n")
    return FileChange(path, "updated: MCP server waymark", old + gap + table)


def _kept(done: list[str]) -> str:
    kept = [d for d in done if " kept as " in d]
    return f" ({'; '.join(kept)}: yours, left as it is)" if kept else ""


def _object(doc: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = doc.setdefault(key, {})
    if not isinstance(value, dict):
        raise HarnessFileError(f"{path}: {key}: expected a JSON object")
    return value


def _runs_waymark_hook(group: Any, event: str) -> bool:
    """True if a hook group already runs waymark's hook for ``event`` (any spelling of the
    program: ``waymark``, a path to it, ``python -m prefect_waymark.hooks``)."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    for hook in hooks if isinstance(hooks, list) else []:
        command = hook.get("command") if isinstance(hook, dict) else None
        if (
            isinstance(command, str)
            and f"claude-code {event}" in command
            and ("waymark" in command or "prefect_waymark" in command)
        ):
            return True
    return False
