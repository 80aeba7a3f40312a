"""A manifest of a workdir: each file's size, mtime and sha256, hashed only when its size or
mtime differs from the manifest before it.

The walk goes depth first with each folder's names sorted, so files come in the order of their
path parts (``("a", "x")`` before ``("a.txt",)``); a manifest cut at the cap (``truncated``)
holds exactly the files up to its ``cut``, and comparisons stay within what both cover.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .ignore import Ignore

__all__ = [
    "HASH_MAX_BYTES",
    "MAX_FILES",
    "Entry",
    "Manifest",
    "PathList",
    "list_paths",
    "safe_name",
    "take_manifest",
]

#: At most this many files in a manifest; the rest is left out and the manifest ``truncated``.
MAX_FILES = 20_000
#: Files larger than this are compared by size and mtime only (sha256 ``None``).
HASH_MAX_BYTES = 256 * 1024 * 1024

#: (size, mtime_ns, sha256): a symlink's hash is of its target's text; ``None``: not hashed.
Entry = tuple[int, int, str | None]
Cut = tuple[str, ...]


@dataclass
class PathList:
    """The files found by a walk (names only), and where a walk cut at the cap stopped."""

    paths: set[str] = field(default_factory=set)
    truncated: bool = False
    cut: Cut | None = None  # the last file's path parts, when truncated
    errors: list[str] = field(default_factory=list)


@dataclass
class Manifest:
    files: dict[str, Entry] = field(default_factory=dict)
    truncated: bool = False
    cut: Cut | None = None
    errors: list[str] = field(default_factory=list)
    hashed: int = 0  # files hashed for this manifest (the others' hashes were reused)


def safe_name(name: str) -> str:
    """A file name as a manifest (and every event) records it: valid UTF-8 always. A name the
    file system holds as bytes that are not UTF-8 (``bad\\xff.txt``, which Python reads as
    ``bad\\udcff.txt``) is written with those bytes escaped, ``bad\\xff.txt`` — the same
    text a name made of a backslash and ``xff`` would have, which is fine for a report."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def _walk(
    root: Path, ignore: Ignore, limit: int, errors: list[str]
) -> tuple[list[tuple[str, os.DirEntry[str]]], bool]:
    """(relative path, entry) of each file and symlink, in path-part order, and whether the
    walk stopped at ``limit`` with files left."""
    found: list[tuple[str, os.DirEntry[str]]] = []

    def visit(folder: str, prefix: str) -> bool:  # False: the limit is reached
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            errors.append(f"{prefix or '.'}: not listed ({exc.strerror or exc})")
            return True
        for entry in entries:
            rel = prefix + safe_name(entry.name)
            if ignore.entry(rel):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                kind = is_dir or entry.is_file(follow_symlinks=False) or entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                if not visit(entry.path, rel + "/"):
                    return False
                continue
            if not kind:
                continue  # sockets, fifos, devices: not content
            if len(found) >= limit:
                return False
            found.append((rel, entry))
        return True

    return found, not visit(str(root), "")


def list_paths(root: Path, ignore: Ignore, limit: int = MAX_FILES) -> PathList:
    """The files of ``root`` by name only (no stat, no hash): what a look between steps needs."""
    out = PathList()
    found, out.truncated = _walk(root, ignore, limit, out.errors)
    if out.truncated:
        out.cut = tuple(found[-1][0].split("/")) if found else ()
    out.paths = {rel for rel, _ in found}
    return out


def _sha256(entry: os.DirEntry[str], st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return hashlib.sha256(b"symlink:" + os.fsencode(os.readlink(entry.path))).hexdigest()
    if st.st_size > HASH_MAX_BYTES:
        return None
    digest = hashlib.sha256()
    with open(entry.path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def take_manifest(
    root: Path,
    ignore: Ignore,
    previous: dict[str, Entry] | None = None,
    limit: int = MAX_FILES,
) -> Manifest:
    """Each file's size, mtime_ns and sha256; a file whose size and mtime equal ``previous``'s
    keeps its hash there. A file that vanishes meanwhile is left out; one that cannot be read
    is kept without a hash, with an error."""
    out = Manifest()
    found, out.truncated = _walk(root, ignore, limit, out.errors)
    if out.truncated:
        out.cut = tuple(found[-1][0].split("/")) if found else ()
    before = previous or {}
    for rel, entry in found:
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            out.errors.append(f"{rel}: not read ({exc.strerror or exc})")
            continue
        old = before.get(rel)
        if old is not None and old[0] == st.st_size and old[1] == st.st_mtime_ns and old[2]:
            out.files[rel] = old
            continue
        try:
            sha = _sha256(entry, st)
        except FileNotFoundError:
            continue
        except OSError as exc:
            out.errors.append(f"{rel}: not hashed ({exc.strerror or exc})")
            sha = None
        out.hashed += 1
        out.files[rel] = (st.st_size, st.st_mtime_ns, sha)
    return out
