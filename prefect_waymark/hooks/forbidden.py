"""Which tool call a goal contract's ``forbidden`` list forbids, decided before the call runs.

Two kinds of entries are enforced; every other entry is only reminded:

``action:<glob>`` (the entries that forbid a step's ``action:``) matches, with
:func:`fnmatch.fnmatchcase`, the *action names* of a tool call:

- a ``waymark-action: NAME`` marker anywhere in a shell command (a ``# waymark-action:
  deploy-prod`` comment, say) or a ``WAYMARK_ACTION=NAME`` assignment in it: the way to say
  which action a command performs;
- in each simple command of a shell command (split at ``;``, ``&&``, ``||``, ``|``, ``&``,
  newlines, parentheses, ``$(...)`` and backticks; ``bash -c``/``sh -c``/``eval`` strings are
  split too; here-document lines are text, not commands), after leading ``VAR=value``
  assignments and the wrappers ``sudo``, ``env``, ``nohup``, ``time``, ``timeout``, ``nice``,
  ``command``, ``exec``: the program, its first argument unless an option (the subcommand:
  ``make deploy-prod``, ``bash deploy-prod.sh``), and after a ``run``, ``exec`` or ``x``
  subcommand the word after it (``npm run deploy-prod``); each word as a name: its last path
  part, without a script suffix (``.sh``, ``.py``, ...), and only if it is then letters,
  digits, ``-`` and ``_`` (a file name such as ``deploy-prod.log`` is no action);
- the tool's name (an MCP tool ``mcp__billing__refund``, say).

A glob without one literal character (``action:*``) matches markers only: "no irreversible
action" must not deny every command.

A backticked command in any other entry (``never run `git push --force```) is a pattern: a
simple command matches when its program (last path part) matches the pattern's first word and
the pattern's other words appear among its arguments in that order (each word a glob), so
``git push origin main --force`` matches and ``git push`` does not. Patterns apply to tool calls
whose input has a ``command`` string (Bash, PowerShell).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["Match", "action_names", "command_patterns", "forbidden_match", "simple_commands"]

ACTION_PREFIX = "action:"
_MARKERS = (
    re.compile(r"waymark-action:\s*([A-Za-z0-9._-]+)"),
    re.compile(r"\bWAYMARK_ACTION=[\"']?([A-Za-z0-9._-]+)"),
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = {"sudo", "doas", "env", "nohup", "time", "timeout", "nice", "command", "exec"}
_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
_RUNNERS = {"run", "exec", "x", "run-script"}
_SCRIPT_SUFFIX = re.compile(r"\.(sh|bash|zsh|py|js|mjs|cjs|ts|rb|pl|ps1)$")
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_BACKTICKED = re.compile(r"`([^`]+)`")
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_MAX_DEPTH = 3


@dataclass(frozen=True)
class Match:
    """The contract entry a tool call breaks, and how it was matched."""

    rule: str  # the forbidden entry, as the contract words it
    pattern: str  # the glob or the backticked command
    matched: str  # the action name, or the simple command, that matched
    how: str  # "marker", "program", "subcommand", "tool name" or "command"


def _words(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: words as the whitespace gives them
        return text.split()


def _strip_prefix(words: list[str]) -> list[str]:
    """``words`` without leading assignments and wrappers (and the wrappers' options)."""
    i, wrapped = 0, False
    while i < len(words):
        w = words[i]
        if _ASSIGNMENT.match(w) or (wrapped and (w.startswith("-") or _DURATION.match(w))):
            i += 1
        elif _base(w) in _WRAPPERS:
            wrapped = True
            i += 1
        else:
            break
    return words[i:]


def simple_commands(command: str, _depth: int = 0) -> list[list[str]]:
    """The simple commands of a shell command, each as its words (prefixes stripped)."""
    text = command.replace("\\\n", " ").replace("`", " ; ")
    found: list[list[str]] = []
    ends: list[str] = []  # the here-documents still open: their lines are text, not commands
    for line in text.splitlines():
        if ends:
            if line.strip() == ends[0]:
                ends.pop(0)
            continue
        ends += [m.group(2) for m in _HEREDOC.finditer(line)]
        current: list[str] = []
        for w in [*_words(line), ";"]:
            if w and all(c in ";&|()" for c in w):
                words = _strip_prefix(current)
                if words:
                    found.append(words)
                current = []
            else:
                current.append(w)
    if _depth < _MAX_DEPTH:
        for words in list(found):
            inner = _inner_script(words)
            if inner is not None:
                found += simple_commands(inner, _depth + 1)
    return found


def _inner_script(words: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` or ``eval SCRIPT ...``."""
    prog = _base(words[0])
    if prog == "eval" and len(words) > 1:
        return " ".join(words[1:])
    if prog in _SHELLS:
        for i, w in enumerate(words[1:-1], 1):
            if w.startswith("-") and not w.startswith("--") and "c" in w:
                return words[i + 1]
    return None


def _base(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def _as_name(word: str) -> str | None:
    name = _SCRIPT_SUFFIX.sub("", _base(word))
    return name if _NAME.match(name) else None


def action_names(command: str) -> list[tuple[str, str]]:
    """The action names of a shell command: ``(name, how)`` pairs, markers first."""
    out: list[tuple[str, str]] = []
    for rx in _MARKERS:
        out += [(m.group(1), "marker") for m in rx.finditer(command)]
    for words in simple_commands(command):
        picks = [(words[0], "program")]
        if len(words) > 1 and not words[1].startswith("-"):
            picks.append((words[1], "subcommand"))
            if words[1] in _RUNNERS and len(words) > 2 and not words[2].startswith("-"):
                picks.append((words[2], "subcommand"))
        for word, how in picks:
            name = _as_name(word)
            if name is not None:
                out.append((name, how))
    return list(dict.fromkeys(out))


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


def _pattern_matches(pattern: list[str], words: list[str]) -> bool:
    if not pattern or not fnmatchcase(_base(words[0]), pattern[0]):
        return False
    rest = iter(words[1:])
    return all(any(fnmatchcase(w, p) for w in rest) for p in pattern[1:])


def _literal(glob: str) -> bool:
    return bool(glob.replace("*", "").replace("?", "").strip())


def forbidden_match(
    forbidden: list[str], tool_name: str | None, tool_input: dict[str, Any] | None
) -> Match | None:
    """The first entry of ``forbidden`` that forbids this tool call, if any."""
    raw = (tool_input or {}).get("command")
    command = raw if isinstance(raw, str) else None
    names = action_names(command) if command else []
    if tool_name:
        names.append((tool_name, "tool name"))
    for rule in forbidden:
        if not rule.startswith(ACTION_PREFIX):
            continue
        glob = rule[len(ACTION_PREFIX) :].strip()
        literal = _literal(glob)
        for name, how in names:
            if (literal or how == "marker") and fnmatchcase(name, glob):
                return Match(rule, glob, name, how)
    if command:
        commands = simple_commands(command)
        for rule, pattern in command_patterns(forbidden):
            p = _words(pattern)
            for words in commands:
                if _pattern_matches(p, words):
                    return Match(rule, pattern, " ".join(words), "command")
    return None
