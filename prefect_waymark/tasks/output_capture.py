"""A command's output, streamed: a capped log file on disk and a bounded tail in memory.

A step may print for days. Nothing here grows with the amount of output: the bytes go to one log
file per step run (``<workdir>/.waymark/logs/<plan>/<step>/<attempt>-<run_id>.log``, stdout and
stderr interleaved as they arrive), and memory keeps only the last bytes of each stream (for the
ledger's and Prefect's tail) and the last ``file_tail`` bytes of the combined output.

The log file never exceeds ``cap`` bytes. It keeps the first ``cap // 2`` bytes of output; past
that it keeps appending until the file would exceed the cap, then trims it: everything after the
first part is replaced by one note, ``[waymark: N bytes of output dropped here ...]``, followed by
the last ``file_tail`` bytes of output, and appending goes on (``tail -f`` follows the file
through a trim). So the file always holds the beginning, a note that says how much is missing,
and the latest output.
"""

from __future__ import annotations

import codecs
import locale
import os
from collections import deque
from pathlib import Path

__all__ = [
    "LOG_CAP_BYTES",
    "LOG_FILES_KEPT_PER_STEP",
    "STREAM_TAIL_BYTES",
    "OutputCapture",
    "step_log_path",
]

LOG_CAP_BYTES = 50 * 1024 * 1024  # a step run's log file never grows past this
FILE_TAIL_BYTES = 1024 * 1024  # the latest output kept in the file across a trim
STREAM_TAIL_BYTES = 16 * 1024  # per stream, in memory: more than TAIL_CHARS of any encoding
LOG_FILES_KEPT_PER_STEP = 20  # older log files of a step are deleted when a new one starts
CHUNK_BYTES = 64 * 1024
_NOTE_RESERVE = 256  # room for the note; the cap holds with it


def _path_part(name: str) -> str:
    return "_" + name if name in (".", "..") else name  # ids may be '.'/'..' (ID_PATTERN)


def step_log_path(
    workdir: Path, plan_id: str, step_id: str, attempt: int, run_id: str, kind: str = ""
) -> Path:
    """Where a step run's output goes; a name already taken gets ``.2``, ``.3``, ..."""
    folder = workdir / ".waymark" / "logs" / _path_part(plan_id) / _path_part(step_id)
    stem = f"{attempt}-{_path_part(run_id)}{'-' + kind if kind else ''}"
    path = folder / f"{stem}.log"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stem}.{n}.log"
    return path


def _prune(folder: Path, keep: int) -> None:
    try:
        logs = sorted(folder.glob("*.log"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in logs[: max(0, len(logs) - keep)]:
        try:
            old.unlink()
        except OSError:
            continue


class _Tail:
    """The last ``limit`` bytes (at least) of a stream, as a deque of chunks."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.total = 0

    def push(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        self.total += len(data)
        while self.chunks and self.size - len(self.chunks[0]) >= self.limit:
            self.size -= len(self.chunks.popleft())

    def data(self) -> bytes:
        return b"".join(self.chunks)[-self.limit :]

    def text(self, encoding: str) -> str:
        """Decoded as ``subprocess`` text mode does (``errors='replace'``, universal newlines).

        A tail that starts inside a multi-byte character begins with one replacement character;
        callers keep far fewer characters than the tail holds, so it never shows."""
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        text = decoder.decode(b"".join(self.chunks), final=True)
        return text.replace("\r\n", "\n").replace("\r", "\n")


class OutputCapture:
    """Receives a command's output chunks; writes the capped log, keeps the bounded tails."""

    def __init__(
        self,
        log_path: Path | None,
        *,
        cap: int = LOG_CAP_BYTES,
        file_tail: int = FILE_TAIL_BYTES,
        keep_files: int = LOG_FILES_KEPT_PER_STEP,
    ) -> None:
        if cap < 4 * (CHUNK_BYTES + _NOTE_RESERVE):
            raise ValueError(f"log cap {cap} is below {4 * (CHUNK_BYTES + _NOTE_RESERVE)} bytes")
        self.cap = cap
        self.log_path = log_path
        self.log_error: str | None = None  # why the log file is missing or incomplete
        self.dropped = 0  # bytes of output not in the log file
        self.encoding = locale.getpreferredencoding(False)
        self._streams = {"stdout": _Tail(STREAM_TAIL_BYTES), "stderr": _Tail(STREAM_TAIL_BYTES)}
        self._head_left = cap // 2
        self._file_tail = _Tail(min(file_tail, cap // 4))
        self._segment_max = cap - cap // 2 - _NOTE_RESERVE
        self._segment = 0
        self._head_end = 0
        self._fd: int | None = None
        if log_path is not None:
            try:
                log_path.parent.mkdir(parents=True, exist_ok=True)
                _prune(log_path.parent, keep_files - 1)
                self._fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            except OSError as exc:
                self.log_error = f"cannot write {log_path}: {exc.strerror or exc}"

    def feed(self, stream: str, data: bytes) -> None:
        for start in range(0, len(data), CHUNK_BYTES):
            chunk = data[start : start + CHUNK_BYTES]
            self._streams[stream].push(chunk)
            self._to_file(chunk)

    def text(self, stream: str) -> str:
        """The last bytes of ``stream`` (at least :data:`STREAM_TAIL_BYTES`), decoded."""
        return self._streams[stream].text(self.encoding)

    def total(self, stream: str) -> int:
        return self._streams[stream].total

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _to_file(self, data: bytes) -> None:
        if self._fd is None:
            self.dropped += len(data)
            return
        if self._head_left > 0:
            head, data = data[: self._head_left], data[self._head_left :]
            self._write(head)
            self._head_left -= len(head)
            self._head_end += len(head)
            if not data or self._fd is None:
                self.dropped += len(data)
                return
        self._file_tail.push(data)
        if self._segment + len(data) <= self._segment_max:
            self._write(data)
            self._segment += len(data)
            return
        # Trim: after the first part, one note and the latest output.
        kept = self._file_tail.data()
        self.dropped = self._file_tail.total - len(kept)
        note = (
            f"\n[waymark: {self.dropped} bytes of output dropped here to keep this file under "
            f"{self.cap} bytes; the latest output follows]\n"
        ).encode()
        try:
            os.ftruncate(self._fd, self._head_end)
            os.lseek(self._fd, self._head_end, os.SEEK_SET)
        except OSError as exc:
            self._give_up(exc)
            return
        self._write(note + kept)  # the note fits in _NOTE_RESERVE: the cap holds
        self._segment = len(kept)

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            self.dropped += len(data)
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:  # a full disk stops the log, never the step
            self.dropped += len(view)
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        self.log_error = f"writing {self.log_path} failed: {exc.strerror or exc}"
        self.close()
