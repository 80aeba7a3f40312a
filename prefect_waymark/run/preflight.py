"""Before a run records anything: every folder it will write can be created and written.

The ledger's folder (SQLite), the results folder and the markers folder are checked without
creating them: a missing folder's nearest existing parent must be a folder we can create entries
in (probed with a temporary folder, removed at once — permission bits alone would say yes to
root, and not to a read-only file system). A refused run leaves nothing behind, not even an empty
``ledger.db``. Standard library only: ``waymark run`` calls it before Prefect starts.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl, unquote

from ..errors import UnwritablePathError

__all__ = ["check_folder", "preflight_paths", "results_folder", "sqlite_ledger_file"]


def sqlite_ledger_file(url: str) -> Path | None:
    """The file a ``sqlite`` ledger URL names (absolute); ``None`` for any other database."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+", 1)[0].lower() != "sqlite" or not rest.startswith("/"):
        return None
    path, _, query = rest[1:].partition("?")
    database = unquote(path)
    uri = dict(parse_qsl(query)).get("uri", "").lower() in ("true", "1")
    if uri and database.startswith("file:"):  # a SQLite URI filename: file:PATH?options
        database = unquote(database.removeprefix("file:").partition("?")[0])
    if not database or database == ":memory:":
        return None
    return Path(os.path.abspath(database))


def results_folder(result_storage: object | None, workdir: Path) -> Path | None:
    """The local folder step results go to: ``<workdir>/.waymark/results`` by default, the path
    given, or a ``LocalFileSystem`` block's base path; ``None`` for other storage (a block
    slug, remote storage), which is checked when it is written."""
    if result_storage is None:
        return workdir / ".waymark" / "results"
    if isinstance(result_storage, Path):
        return result_storage
    if isinstance(result_storage, str):
        # An absolute path is a folder; anything else a saved block's slug.
        return Path(result_storage) if result_storage.startswith("/") else None
    from prefect.filesystems import LocalFileSystem

    if isinstance(result_storage, LocalFileSystem) and result_storage.basepath:
        return Path(result_storage.basepath)
    return None


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def check_folder(folder: Path, what: str) -> None:
    """Raise :class:`UnwritablePathError` unless ``folder`` exists and is writable, or can be
    created; creates nothing."""
    folder = Path(os.path.abspath(folder))
    existing = folder
    while not os.path.lexists(existing):
        existing = existing.parent
    here = "it" if existing == folder else str(existing)
    if not existing.is_dir():
        if existing.is_symlink() and not existing.exists():
            reason = f"{here} is a broken symbolic link"
        elif existing.exists():
            reason = f"{here} is a file, not a folder"
        else:
            reason = f"{here} cannot be read"
        raise UnwritablePathError(what, str(folder), reason)
    name_max = _name_max(existing)
    if any(len(os.fsencode(p)) > name_max for p in folder.relative_to(existing).parts):
        raise UnwritablePathError(what, str(folder), "a folder name in it is too long")
    try:
        probe = tempfile.mkdtemp(prefix=".waymark-preflight-", dir=existing)
    except OSError as exc:
        detail = exc.strerror or type(exc).__name__
        reason = (
            f"the folder is not writable ({detail})"
            if existing == folder
            else f"it cannot be created: {existing} is not writable ({detail})"
        )
        raise UnwritablePathError(what, str(folder), reason) from None
    os.rmdir(probe)


def _check_ledger_file(path: Path) -> None:
    if path.is_dir():
        raise UnwritablePathError("ledger", str(path), "it is a folder, not a ledger file")
    if path.exists() and not os.access(path, os.W_OK):
        raise UnwritablePathError("ledger", str(path), "the file is read-only")
    check_folder(path.parent, "ledger folder")


def preflight_paths(*, ledger_url: str, results: Path | None, markers: Path | None) -> None:
    """Check every folder a run will write, in the order a run writes them; raise
    :class:`UnwritablePathError` naming the first that cannot be written, and why."""
    ledger_file = sqlite_ledger_file(ledger_url)
    if ledger_file is not None:
        _check_ledger_file(ledger_file)
    if results is not None:
        check_folder(results, "results folder")
    if markers is not None:
        check_folder(markers, "markers folder")
