"""The ``waymark`` command line. A command imports what it uses and no more: the console script
(:func:`main`) builds the typer app with the one command its arguments name, from the registry
of commands (:mod:`._registry`), so ``waymark status`` loads the status command's module and not
the other commands'; ``waymark --help``, ``waymark`` alone and a word that is no command get the
full app (:data:`app`, module :mod:`.commands`). Prefect is imported only by the commands that
run plans. ``waymark hook``, which an agent's harness runs before every tool call, goes to the
hooks' own parser without typer (:func:`prefect_waymark.hooks.command.main`; the app's ``hook``
command forwards to it too)."""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING

from .._lazy import _lazy_exports
from ._stdout import _Stdout, rich_stdout

if TYPE_CHECKING:
    from .commands import app

__all__ = ["app", "main", "rich_stdout"]

#: What a write to a closed pipe, a full disk or a gone terminal raises.
_STDOUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF})


def main() -> None:
    """The ``waymark`` console script. A standard output that is closed (``| head``) or full
    (``> /dev/full``) ends the command cleanly: quietly for a closed pipe, one line on stderr
    and exit 1 when output was lost — never a traceback."""
    from ..errors import LedgerDamaged

    out = sys.stdout = _Stdout(sys.stdout, failures=[])
    try:
        try:
            if sys.argv[1:2] == ["hook"]:  # before every tool call: without typer (hooks/command)
                from ..hooks.command import main as hook_main

                sys.exit(hook_main(sys.argv[2:]))
            import typer.main

            from ._registry import build_app, verb_of

            verb = verb_of(sys.argv[1:])
            app = build_app(None if verb is None else [verb])
            typer.main.get_group(app)()  # a group even with one command: `waymark VERB ...`
        finally:  # a full disk is found here, not by the interpreter's own flush at exit
            sys.stdout.flush()
    except LedgerDamaged as exc:  # found while reading, by any command: bad input
        print(f"waymark: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _STDOUT_ERRNOS:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())  # the exit's flush too
        if exc.errno == errno.EPIPE:  # the reader has what it wanted
            sys.exit(0)
        where = "standard output" if any(f is exc for f in out.failures) else "a file"
        print(f"waymark: cannot write to {where}: {exc.strerror}", file=sys.stderr)
        sys.exit(1)


__getattr__ = _lazy_exports(__name__, {"app": ".commands"})
