"""The folder, keys and files of the plan caches (:mod:`.plan_cache`: validated plans;
:mod:`.status_digest`: what ``waymark status`` needs of one). Standard library only: the quick
path of ``waymark status`` looks a digest up without loading pydantic or PyYAML.

An entry's key is a sha256 over a fingerprint of the code, the plan file's path (as given and
resolved) and its text: the same bytes at the same path, read by the same code, give the same
validated plan. The folder is the user's own (mode 0700); one that another user owns or may
write into is not read.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from importlib.util import find_spec
from pathlib import Path

__all__ = [
    "CACHE_MAX_ENTRIES",
    "MAX_PLAN_BYTES",
    "cache_folder",
    "code_fingerprint",
    "entry_name",
    "owned",
    "plan_text",
    "read_regular_plan",
    "write_entry",
]

MAX_PLAN_BYTES = 4 * 1024 * 1024
"""A plan file's size limit (4 MiB; a 10,000-step plan is about 1.3 MB)."""

#: Entries kept of each kind; the oldest go first.
CACHE_MAX_ENTRIES = 32

#: The packages whose code validates a plan besides this one: pydantic (and its core), PyYAML
#: (and whether its C loader is there), SQLAlchemy (a ref URL's checks).
_VALIDATING_PACKAGES = ("pydantic", "pydantic_core", "yaml", "sqlalchemy")

_FINGERPRINT: str | None = None
_STARTED_NS = time.time_ns()  # when this module was imported: about when the process started


def cache_folder() -> Path | None:
    """The cache's folder, or None when ``WAYMARK_PLAN_CACHE=off``."""
    given = os.environ.get("WAYMARK_PLAN_CACHE", "")
    if given.lower() in ("off", "0", "no", "false"):
        return None
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prefect-waymark" / "plans"


def plan_text(data: bytes) -> str:
    """A plan file's text as the loader reads it: UTF-8, newlines as text mode reads them
    (``\\r\\n`` and ``\\r`` become ``\\n``)."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def read_regular_plan(path: Path) -> str | None:
    """A regular file's text as the loader reads it, or ``None`` for anything else: not a
    regular file (a pipe is read once, by the loader), over :data:`MAX_PLAN_BYTES`, unreadable,
    not UTF-8."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            data = fh.read(MAX_PLAN_BYTES + 1)
        return plan_text(data) if len(data) <= MAX_PLAN_BYTES else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def code_fingerprint() -> str | None:
    """What validated the plan: this package's modules (size and modification time), Python,
    the installed files of :data:`_VALIDATING_PACKAGES` (found, not imported: an upgrade
    rewrites them) and the distributions installed (a resolver plug-in installed or removed
    changes what a plan's state refs must hold). None when a module of this package changed on
    disk after this process started: the code in memory is not the code on disk, so no entry
    is read or written."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.sha256(sys.version.encode())
        for name in _VALIDATING_PACKAGES:
            h.update(f"\n{name}:{_installed(name)}".encode())
        h.update(_distributions().encode())
        root = Path(__file__).resolve().parents[1]
        for name, st in _modules(str(root)):
            if st.st_mtime_ns > _STARTED_NS:
                _FINGERPRINT = ""
                break
            h.update(f"\n{name}:{st.st_size}:{st.st_mtime_ns}".encode())
        else:
            _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT or None


def _modules(root: str) -> list[tuple[str, os.stat_result]]:
    """Every ``*.py`` file under ``root`` (its path relative to ``root``) and its ``stat``,
    sorted by path: ``os.scandir``'s entries carry what ``pathlib``'s walk would ask again."""
    found: list[tuple[str, os.stat_result]] = []
    folders = [(root, "")]
    while folders:
        folder, prefix = folders.pop()
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                folders.append((entry.path, f"{prefix}{entry.name}/"))
            elif entry.name.endswith(".py"):
                found.append((f"{prefix}{entry.name}", entry.stat()))
    found.sort(key=lambda item: Path(item[0]).parts)
    return found


def _installed(package: str) -> str:
    """The files at the top of an installed package's folder, with sizes and modification
    times (its version file among them); ``-`` when it is not installed."""
    spec = find_spec(package)
    if spec is None or not spec.origin:
        return "-"
    folder = Path(spec.origin).parent
    parts = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_file():
            st = entry.stat()
            parts.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    return f"{folder}|{'|'.join(parts)}"


def _distributions() -> str:
    """The distributions installed (the ``*.dist-info`` / ``*.egg-info`` folders, with
    modification times, of the site folders and ``$PYTHONPATH``), where entry points such as
    resolver plug-ins come from. Not the script's folder or the current one (``sys.path[0]``):
    the same installation gives the same key to ``waymark`` and to ``python -c``."""
    import site

    folders = [*site.getsitepackages(), site.getusersitepackages()]
    folders += [f for f in os.environ.get("PYTHONPATH", "").split(os.pathsep) if f]
    parts = []
    for folder in dict.fromkeys(folders):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:  # missing, a zip file: nothing listed
            continue
        for entry in entries:
            if entry.name.endswith((".dist-info", ".egg-info")):
                parts.append(f"{folder}/{entry.name}:{entry.stat().st_mtime_ns}")
    return "|".join(parts)


def entry_name(fingerprint: str, source: str, resolved: str, text: str, suffix: str) -> str:
    """The file name of the entry for ``text`` read from ``source`` (``resolved``)."""
    h = hashlib.sha256(fingerprint.encode())
    for part in (source, resolved, text):
        h.update(b"\0" + part.encode("utf-8", "surrogatepass"))
    return f"{h.hexdigest()}{suffix}"


def owned(folder: Path) -> bool:
    """The folder is this user's and nobody else may write into it."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def write_entry(folder: Path, name: str, data: bytes) -> None:
    """Write one entry atomically (a reader sees the old file or the whole new one) and drop
    the oldest entries of its kind beyond :data:`CACHE_MAX_ENTRIES`."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not owned(folder):
        return
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, folder / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    suffix = name[name.index(".") :]
    entries = sorted(folder.glob(f"*{suffix}"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-CACHE_MAX_ENTRIES]:
        old.unlink(missing_ok=True)
