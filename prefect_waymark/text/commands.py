"""The commands waymark prints for a person or an agent to type next, with the options they gave.

A hint must work as written: a folder that runs with ``--results``, ``--ledger`` or
``--workdir`` gets hints that carry them, or the next command it is told to type uses another
storage, ledger or folder. The command line records the options it was given once
(:func:`remember_options`); every hint is built by :func:`waymark_command` (a new one) or
:func:`carry_options` (one written out), which add them. A ledger URL with a password in it is
never printed: the hint names ``$WAYMARK_LEDGER_URL`` when that holds it, else masks it.
"""

from __future__ import annotations

import os
import re
import shlex
from contextvars import ContextVar
from pathlib import Path

__all__ = ["carry_options", "remember_options", "review_command", "waymark_command"]

_GIVEN: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("waymark_given_options", default=())
#: The commands that take ``--results`` (every other one takes ``--workdir`` and ``--ledger``).
_TAKE_RESULTS = frozenset({"run", "resume", "next", "start", "done"})
_PASSWORD = re.compile(r"^([a-z0-9+]+://[^:/@]*):[^@]*@", re.IGNORECASE)


def remember_options(
    *, workdir: Path | str | None = None, ledger: str | None = None, results: str | None = None
) -> None:
    """What this command was given that its hints must carry (``None``: not given)."""
    given: list[tuple[str, str]] = []
    if workdir is not None:
        given.append(("--workdir", str(Path(workdir).resolve())))
    if ledger:
        given.append(("--ledger", _ledger_text(ledger)))
    if results:
        given.append(("--results", results))
    _GIVEN.set(tuple(given))


def _ledger_text(url: str) -> str:
    if not _PASSWORD.match(url):
        return url
    if os.environ.get("WAYMARK_LEDGER_URL") == url:
        return "$WAYMARK_LEDGER_URL"
    return _PASSWORD.sub(r"\1:***@", url)


def _quoted(value: str) -> str:
    return '"$WAYMARK_LEDGER_URL"' if value == "$WAYMARK_LEDGER_URL" else shlex.quote(value)


def carry_options(command: str) -> str:
    """``command`` (``waymark VERB PLAN ...``) with the options given to this command line
    that it does not name already and that its verb takes."""
    words = command.split(maxsplit=2)
    verb = words[1] if len(words) > 1 else ""
    extra = [
        f"{flag} {_quoted(value)}"
        for flag, value in _GIVEN.get()
        if f"{flag} " not in command and (flag != "--results" or verb in _TAKE_RESULTS)
    ]
    return " ".join([command, *extra]) if extra else command


def review_command(plan: Path | str, step: str) -> str:
    """The ``waymark review`` that answers ``step``'s stop (the options given carried)."""
    return waymark_command("review", plan, "--step", step) + " --accept|--rerun|--abort"


def waymark_command(verb: str, plan: Path | str, *rest: str) -> str:
    """``waymark VERB PLAN REST...`` with the options given (the plan path quoted if needed;
    a plan that is no file, ``<memory>``, as it is)."""
    text = str(plan)
    shown = text if text.startswith("<") else shlex.quote(text)
    return carry_options(" ".join(["waymark", verb, shown, *rest]))
