"""Files written whole or not at all: the one way waymark replaces a file.

:func:`atomic_file` writes through a temporary file beside the target (``.<name>.<random>.tmp``,
what the boundary's ignore list expects) and renames it over the target: a reader sees the old
file or the whole new one, never part of it. On any failure (Ctrl-C included) the temporary file
is removed, the target is left as it was, and the error goes on.

Only a regular file is ever replaced (:func:`check_replaceable`): a device, a FIFO, a socket, a
folder, a symbolic link or a file this process may not write is refused with
:class:`~prefect_waymark.errors.NotARegularFile` before anything is written — ``os.replace``
would otherwise turn ``/dev/null`` into a plain file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..errors import NotARegularFile

__all__ = ["atomic_file", "atomic_write", "check_replaceable", "file_kind", "file_mode"]

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str | None:
    """What a file of this ``st_mode`` is, in words (``"a FIFO (named pipe)"``); None for a
    regular file. Not followed: a link's own mode says "a symbolic link"."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "a special file"


def check_replaceable(path: Path) -> None:
    """Raise :class:`NotARegularFile` unless ``path`` is absent or a regular file this process
    may write. A link is refused, not followed: replacing it would cut it, and writing through
    it would reach a file outside the folder the user named."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    kind = file_kind(mode)
    if kind is not None:
        raise NotARegularFile(str(path), kind)
    if not mode & 0o222 or not os.access(path, os.W_OK):  # root may write any: the bits say
        raise NotARegularFile(str(path), "a read-only file")


def file_mode() -> int:
    """0666 less the process's umask: the mode any other new file of this process gets. Read
    from /proc (Linux) so no thread ever sees the umask changed; elsewhere set and restored."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_file(path: Path, *, mode: int | None = None, fsync: bool = False) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to; renamed over ``path`` when the block
    ends without an error. ``mode``: its mode bits (default: ``mkstemp``'s 0600, the owner's
    only); ``fsync``: on disk before the rename, so a crash of the machine leaves the old
    content or the new one. The folder must exist; ``path`` must be absent or a regular file
    (:func:`check_replaceable`), checked before and again just before the rename."""
    check_replaceable(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            if fsync:
                os.fsync(fh.fileno())
        check_replaceable(path)  # a FIFO or link put there while the content was written
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all, fsynced, with the mode a new file
    of this process gets (the umask's, not ``mkstemp``'s 0600); makes the folder if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, mode=file_mode(), fsync=True) as fh:
        fh.write(text.encode("utf-8") if isinstance(text, str) else text)
