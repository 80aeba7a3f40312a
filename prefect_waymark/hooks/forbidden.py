"""Which tool call a goal contract's ``forbidden`` list forbids, decided before the call runs.

Two kinds of entries are enforced; every other entry is only reminded. Names, programs and
patterns are compared case-folded (``GIT push --force``, ``./DEPLOY-prod.sh``).

``action:<glob>`` (the entries that forbid a step's ``action:``) matches, with
:func:`fnmatch.fnmatchcase`, the *action names* of a tool call:

- a ``waymark-action: NAME`` marker anywhere in a shell command (a ``# waymark-action:
  deploy-prod`` comment, say) or a ``WAYMARK_ACTION=NAME`` assignment in it: the way to say
  which action a command performs;
- in each simple command the shell command runs (:mod:`.shell_commands`: split at operators
  and unquoted newlines, keywords, assignments and wrappers stripped, ``bash -c`` strings,
  substitutions and scripts fed to a shell read too): the program, and for a known runner
  (``make``, ``just``, ``npm``, ``uv``, shells, interpreters, ... :data:`~.programs.RUNNERS`)
  the operands that name what it runs — each word as a name: its last path part, without a
  script suffix (``.sh``, ``.py``, ...), and only if it is then letters, digits, ``-`` and
  ``_`` (a file name such as ``deploy-prod.log`` is no action). Another program's arguments are
  data: ``cat deploy-prod.sh`` and ``grep deploy-prod`` name no action;
- the tool's name (an MCP tool ``mcp__billing__refund``, say) and, for an MCP tool
  (``mcp__<server>__<tool>``), the tool's own name, its last part (``refund``): ``action:refund``
  and ``action:delete-*`` match ``mcp__search__delete-index`` without naming the server.

A glob without one literal character (``action:*``) matches markers only: "no irreversible
action" must not deny every command.

A backticked command in any other entry (``never run `git push --force```) is a pattern: a
simple command matches when its program (last path part) matches the pattern's first word and
the pattern's other words appear among its arguments in that order (each word a glob; a short
option cluster such as ``-rf`` also matches ``-r -f`` and ``-fr``), so ``git push origin main
--force`` matches and ``git push`` does not. Patterns apply to tool calls whose input has a
``command`` string (Bash, PowerShell).

A command nested deeper than :data:`~.shell_lexer.MAX_NESTING` (a ``bash -c`` in a ``bash -c``
in ...) cannot be read to the end: while the contract has an enforced entry, it is denied
(``how`` ``"unreadable"``) rather than let through unread.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .programs import program_key, short_option
from .shell_commands import Command, commands
from .shell_lexer import lex

__all__ = [
    "Entry",
    "Match",
    "action_names",
    "command_patterns",
    "entry_kinds",
    "forbidden_match",
    "simple_commands",
]

ACTION_PREFIX = "action:"
_MARKERS = (
    re.compile(r"waymark-action:\s*([A-Za-z0-9._-]+)"),
    re.compile(r"\bWAYMARK_ACTION=[\"']?([A-Za-z0-9._-]+)"),
)
_SCRIPT_SUFFIX = re.compile(
    r"\.(sh|bash|zsh|ksh|fish|py|js|mjs|cjs|ts|mts|rb|pl|php|lua|go|r|ps1|bat|cmd)$", re.I
)
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_CLUSTER = re.compile(r"^-[a-z0-9]+$")  # a short option cluster in a pattern (casefolded)
_BACKTICKED = re.compile(r"`([^`]+)`")
_GLOB = re.compile(r"[*?\[]")
_NO_CWD = "/\ue000unknown-cwd"  # no cwd in the event: relative paths compare as written


@dataclass(frozen=True)
class Match:
    """The contract entry a tool call breaks, and how it was matched."""

    rule: str  # the forbidden entry, as the contract words it
    pattern: str  # the glob or the backticked command
    matched: str  # the action name, or the simple command, that matched
    # "marker", "program", "subcommand", "script", "tool name", "MCP tool name", "command",
    # "unreadable"
    how: str


def simple_commands(command: str) -> list[list[str]]:
    """The simple commands of a shell command, each as its words (prefixes stripped)."""
    return [c.words for c in commands(command).found]


def _base(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def _as_name(word: str) -> str | None:
    name = _SCRIPT_SUFFIX.sub("", _base(word))
    return name if _NAME.match(name) else None


def _names(found: list[Command], command: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for rx in _MARKERS:
        out += [(m.group(1), "marker") for m in rx.finditer(command)]
    for c in found:
        for word, how in c.names:
            name = _as_name(word)
            if name is not None:
                out.append((name, how))
    return list(dict.fromkeys(out))


def action_names(command: str) -> list[tuple[str, str]]:
    """The action names of a shell command: ``(name, how)`` pairs, markers first."""
    return _names(commands(command).found, command)


def command_patterns(forbidden: list[str]) -> list[tuple[str, str]]:
    """The backticked commands of the entries that are not ``action:`` globs:
    ``(entry, pattern)`` pairs."""
    return [
        (rule, p.strip())
        for rule in forbidden
        if not rule.startswith(ACTION_PREFIX)
        for p in _BACKTICKED.findall(rule)
        if p.strip()
    ]


@dataclass(frozen=True)
class Entry:
    """How one forbidden entry is checked: ``enforced`` (a tool call that matches is denied;
    a step's ``action:`` is refused) or only shown (in ``next``, reminders, the plan page)."""

    rule: str
    enforced: bool
    how: str


def entry_kinds(forbidden: list[str]) -> list[Entry]:
    """Each entry of a forbidden list, and how the hook and a run check it."""
    out: list[Entry] = []
    patterns: dict[str, list[str]] = {}
    for rule, pattern in command_patterns(forbidden):
        patterns.setdefault(rule, []).append(pattern)
    for rule in forbidden:
        if rule.startswith(ACTION_PREFIX):
            glob = rule[len(ACTION_PREFIX) :].strip()
            how = (
                f"action names matching `{glob}` (a step's action:, a tool, a program, what a "
                "runner runs, a marker)"
                if _literal(glob)
                else f"markers only (`{glob}` has no literal character; a step's action:, a marker)"
            )
            out.append(Entry(rule, True, how))
        elif rule in patterns:
            shown = ", ".join(f"`{p}`" for p in patterns[rule])
            out.append(Entry(rule, True, f"shell commands matching {shown}"))
        else:
            out.append(Entry(rule, False, "shown only: no backticked command, no action: glob"))
    return out


def _path(word: str, cwd: str) -> str:
    """The folder (or file) ``word`` names, from ``cwd``: ``./data``, ``data/`` and
    ``/work/data`` are all ``/work/data`` (no link is followed: nothing on disk is read)."""
    if word.startswith("~"):
        word = posixpath.expanduser(word)
    return posixpath.normpath(posixpath.join(cwd, word)).casefold()


def _same(p: str, arg: str, dirs: list[str]) -> bool:
    """Pattern word ``p`` matches argument ``arg`` (both casefolded): as globs, or as the
    path they name from the command's working directory (``dirs[0]``; a relative argument also
    from each folder a ``cd`` before it went to)."""
    if fnmatchcase(arg, p) or (_GLOB.search(arg) and fnmatchcase(p, arg)):
        return True
    if p.startswith("-") or arg.startswith("-"):
        return False
    want = _path(p, dirs[0])
    for d in dirs:
        there = _path(arg, d)
        if fnmatchcase(there, want) or (_GLOB.search(arg) and fnmatchcase(want, there)):
            return True
    return False


def _has_options(p: str, args: list[str]) -> bool:
    """Option ``p`` (its short form) is among ``args``, anywhere: ``-rf`` is ``-r -f``,
    ``-fr``, ``-Rf``; ``--force`` is ``-f``."""
    if any(fnmatchcase(a, p) for a in args):
        return True
    if not _CLUSTER.match(p):
        return False
    need = set(p[1:])
    for a in args:
        if a == "--":
            break
        if a.startswith("-") and not a.startswith("--"):
            need -= set(a[1:])
        if not need:
            return True
    return False


def _pattern_matches(pattern: list[str], words: list[str], dirs: list[str]) -> bool:
    """The program matches the pattern's first word (a program the shell expands from a
    pattern, ``/bin/r?``, matches if it can be that word); the pattern's options are among the
    arguments, anywhere (long ones as their short forms); its other words appear in order."""
    prog, want = _base(words[0]).casefold(), pattern[0].casefold() if pattern else ""
    if not pattern or not (
        fnmatchcase(prog, want) or (_GLOB.search(prog) and fnmatchcase(want, prog))
    ):
        return False
    key = program_key(want)
    args = [short_option(key, w.casefold()) for w in words[1:]]
    pos = 0
    for p in (short_option(key, w.casefold()) for w in pattern[1:]):
        if p.startswith("-") and len(p) > 1:
            if not _has_options(p, args):
                return False
            continue
        pos = next((j + 1 for j in range(pos, len(args)) if _same(p, args[j], dirs)), -1)
        if pos < 0:
            return False
    return True


def _folders(found: list[Command], cwd: str) -> list[list[str]]:
    """For each command, the folders a relative path in it may be taken from: the working
    directory, and every folder a ``cd`` / ``pushd`` before it went to."""
    dirs, out = [cwd], []
    for c in found:
        out.append(list(dirs))
        if program_key(c.words[0]) in ("cd", "pushd") and len(c.words) > 1:
            target = c.words[-1]
            if target not in ("-", "--") and not target.startswith("-"):
                dirs.append(_path(target, dirs[-1]))
    return out


def _literal(glob: str) -> bool:
    return bool(glob.replace("*", "").replace("?", "").strip())


def _tool_names(tool_name: str | None) -> list[tuple[str, str]]:
    """The tool's name as an action name, and an MCP tool's own name: the last part of
    ``mcp__<server>__<tool>``."""
    if not tool_name:
        return []
    parts = tool_name.split("__")
    mcp = len(parts) >= 3 and parts[0] == "mcp" and parts[-1]
    return [(tool_name, "tool name")] + ([(parts[-1], "MCP tool name")] if mcp else [])


def forbidden_match(
    forbidden: list[str],
    tool_name: str | None,
    tool_input: dict[str, Any] | None,
    cwd: str | None = None,
) -> Match | None:
    """The first entry of ``forbidden`` that forbids this tool call, if any; ``cwd`` is the
    folder the command runs in (the event's ``cwd``), for paths."""
    raw = (tool_input or {}).get("command")
    command = raw if isinstance(raw, str) else None
    read = commands(command) if command else None
    names = _names(read.found, command) if read and command else []
    names += _tool_names(tool_name)
    enforced: list[str] = []
    for rule in forbidden:
        if not rule.startswith(ACTION_PREFIX):
            continue
        glob = rule[len(ACTION_PREFIX) :].strip()
        literal = _literal(glob)
        if literal:
            enforced.append(rule)
        for name, how in names:
            if (literal or how == "marker") and fnmatchcase(name.casefold(), glob.casefold()):
                return Match(rule, glob, name, how)
    if read is None:
        return None
    patterns = command_patterns(forbidden)
    folders = _folders(read.found, posixpath.normpath(cwd or _NO_CWD)) if patterns else []
    for rule, pattern in patterns:
        p = [t.text for t in lex(pattern).tokens if not t.op]
        for c, dirs in zip(read.found, folders, strict=True):
            if _pattern_matches(p, c.words, dirs):
                return Match(rule, pattern, " ".join(c.words), "command")
    enforced += [rule for rule, _ in patterns]
    unread = read.unread or next((c.computed for c in read.found if c.computed), None)
    if unread is not None and enforced:
        return Match(enforced[0], unread, str(command)[:80], "unreadable")
    return None
