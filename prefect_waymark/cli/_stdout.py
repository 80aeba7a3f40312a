"""Standard output as the commands see it: control characters escaped, failures noted."""

from __future__ import annotations

import sys
from typing import Any, TextIO


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
