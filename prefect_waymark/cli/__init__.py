"""The ``waymark`` command line. Prefect is imported only by the commands that run plans; typer
and the command modules load when ``app`` is first asked for."""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from .._lazy import _lazy_exports

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
    from .commands import app

    out = sys.stdout = _Stdout(sys.stdout, failures=[])
    try:
        try:
            app()
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


class _Stdout:
    """``sys.stdout`` for the commands: control characters in what they print are shown as
    escapes (:func:`~prefect_waymark.text.controls.visible`), and a write or flush that fails
    is noted, so the error is known to be standard output's (a closed pipe, a full disk).
    :meth:`for_rich` is the same stream without the escaping, for rich's own colour codes
    (rich's callers escape the text they put in)."""

    def __init__(self, stream: TextIO, *, escape: bool = True, failures: list[OSError]) -> None:
        self._stream = stream
        self._escape = escape
        self.failures = failures

    def for_rich(self) -> _Stdout:
        return _Stdout(self._stream, escape=False, failures=self.failures)

    def write(self, text: str) -> int:
        if self._escape:
            from ..text.controls import visible

            text = visible(text)
        try:
            return self._stream.write(text)
        except OSError as exc:
            self.failures.append(exc)
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self.failures.append(exc)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def rich_stdout() -> TextIO:
    """The stream a rich console of a command writes to: standard output, less the escaping
    (rich writes its own colour codes; the text a command hands rich is escaped already)."""
    out = sys.stdout
    return out.for_rich() if isinstance(out, _Stdout) else out  # type: ignore[return-value]


__getattr__ = _lazy_exports(__name__, {"app": ".commands"})
