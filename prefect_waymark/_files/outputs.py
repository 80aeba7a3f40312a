"""Declared outputs are the workdir's own files: the one way waymark finds, opens and hashes a
step's output (``outputs:``, ``waymark done --output``) — when a step completes in a flow run,
at ``waymark done``, when outputs are compared at a run's start, kept in the result storage and
restored from it.

:func:`resolve_output` follows the declared path (symbolic links included) to where it leads
and refuses, with :class:`~prefect_waymark.errors.OutputRefused` naming the path:

1. a path that leaves the workdir — an absolute one, one that climbs out with ``..``, or a
   symbolic link whose target is outside (``notes.txt -> ~/.ssh/id_ed25519``) — unless the plan
   says ``allow_outside_workdir: true``; such an output is then hashed where it is but never
   copied into the result storage (``ResolvedOutput.inside`` is False and callers say so);
2. a FIFO, a socket or a device — at once, from its ``lstat``, before anything opens it (a FIFO
   would block the reader, ``/dev/zero`` never ends);
3. a directory (declare the files in it) and a link loop.

A missing output is not refused here (``exists`` is False): a flow run records it ``absent``,
``waymark done`` refuses it, a restore writes it.

:func:`open_output` then opens the file it resolved with ``O_NOFOLLOW | O_NONBLOCK`` and checks
with ``fstat`` that what it holds is that same regular file (device and inode): a FIFO or a link
swapped in between the two is refused, never read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import OutputRefused
from .atomic import file_kind

__all__ = ["ResolvedOutput", "open_output", "output_sha256", "resolve_output"]

_ALLOW = "set allow_outside_workdir: true at the top of the plan"


@dataclass(frozen=True)
class ResolvedOutput:
    """A declared output, resolved: where it is named and where it leads."""

    declared: str
    #: the path as named: ``workdir / declared`` (an absolute declared path as it is)
    path: Path
    #: where it leads, every symbolic link followed
    real: Path
    #: whether ``real`` is inside the workdir (only False when the plan allows outside paths)
    inside: bool
    #: whether a regular file is there (False: nothing is there)
    exists: bool
    #: the regular file's (device, inode), to check that the file opened is the one resolved
    ident: tuple[int, int] | None = None


def _leaving_link(workdir: Path, named: Path, base: Path) -> tuple[Path, str] | None:
    """The first symbolic link on the way from the workdir to ``named`` whose target leads out
    of ``base``, and its target as written; None if no link leads out."""
    try:
        parts = named.relative_to(workdir).parts
        cur = workdir
    except ValueError:
        parts, cur = named.parts, Path(named.anchor)
        parts = parts[1:]
    for part in parts:
        cur = cur / part
        if os.path.islink(cur):
            real = Path(os.path.realpath(cur))
            if real != base and not real.is_relative_to(base):
                return cur, os.readlink(cur)
    return None


def resolve_output(workdir: Path, declared: str, *, allow_outside: bool = False) -> ResolvedOutput:
    """Resolve ``declared`` (relative to ``workdir``, or absolute) as described in the module;
    raise :class:`OutputRefused` for what is refused."""
    named = Path(declared)
    path = named if named.is_absolute() else workdir / named
    base = Path(os.path.realpath(workdir))
    real = Path(os.path.realpath(path))
    inside = real != base and real.is_relative_to(base)
    shown = f"output {declared!r}"
    if not inside and not allow_outside:
        if real == base:
            raise OutputRefused(
                declared, str(real), "directory",
                f"{shown}: {path} is the workdir itself; outputs are files: declare the files "
                "in it",
            )  # fmt: skip
        link = _leaving_link(workdir, path, base)
        if link is not None:
            raise OutputRefused(
                declared, str(real), "outside",
                f"{shown}: {link[0]} is a symbolic link to {link[1]}, outside the workdir "
                f"{base}: outputs are the workdir's own files, so it was not read. Copy the "
                f"file into the workdir, or {_ALLOW} to hash it where it is (it is then never "
                "kept in the result storage)",
            )  # fmt: skip
        raise OutputRefused(
            declared, str(real), "outside",
            f"{shown}: {path} is outside the workdir {base} (an absolute path, or one that "
            f"climbs out with '..'); outputs are paths inside the workdir. To hash a file "
            f"outside it on purpose, {_ALLOW}",
        )  # fmt: skip
    via = f" (through the symbolic link {path})" if os.path.islink(path) else ""
    try:
        st = os.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return ResolvedOutput(declared, path, real, inside, exists=False)
    except OSError as exc:
        raise OutputRefused(
            declared, str(real), "special", f"{shown}: {path} cannot be read ({exc.strerror})"
        ) from None
    kind = file_kind(st.st_mode)
    if kind == "a folder":
        raise OutputRefused(
            declared, str(real), "directory",
            f"{shown}: {real}{via} is a directory; outputs are files: declare the files in it "
            f"(e.g. {declared.rstrip('/')}/report.md)",
        )  # fmt: skip
    if kind == "a symbolic link":  # still a link once resolved: it leads round in a loop
        raise OutputRefused(
            declared, str(real), "loop", f"{shown}: {path} is a symbolic link loop, not a file"
        )
    if kind is not None:
        raise OutputRefused(
            declared, str(real), "special",
            f"{shown}: {real}{via} is {kind}, not a file; it was not opened (a FIFO would wait "
            "for a writer, a device never ends): declare a regular file",
        )  # fmt: skip
    return ResolvedOutput(declared, path, real, inside, exists=True, ident=(st.st_dev, st.st_ino))


@contextmanager
def open_output(resolved: ResolvedOutput) -> Iterator[BinaryIO]:
    """The resolved output, open for reading. Opened without following a link and without
    waiting (``O_NOFOLLOW | O_NONBLOCK``), then checked with ``fstat``: it must be the regular
    file :func:`resolve_output` saw, or :class:`OutputRefused` (``changed``) is raised."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    shown = f"output {resolved.declared!r}: {resolved.real}"
    try:
        fd = os.open(resolved.real, flags)
    except FileNotFoundError:  # removed since it was resolved: the caller's "absent"
        raise
    except OSError as exc:  # ELOOP: a link put in its place
        raise OutputRefused(
            resolved.declared, str(resolved.real), "changed",
            f"{shown} changed while it was read ({exc.strerror}); not read",
        ) from None  # fmt: skip
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != resolved.ident:
            kind = file_kind(st.st_mode) or "another file"
            raise OutputRefused(
                resolved.declared, str(resolved.real), "changed",
                f"{shown} changed while it was read (it is now {kind}); not read",
            )  # fmt: skip
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def output_sha256(resolved: ResolvedOutput) -> str:
    """sha256 of a resolved output that exists, read through :func:`open_output`."""
    digest = hashlib.sha256()
    with open_output(resolved) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
