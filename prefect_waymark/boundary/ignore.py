"""What a workdir manifest leaves out: ``.waymark`` and ``.git`` folders, waymark's marker files,
and the plan's ``ignore:`` globs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = ["Ignore", "ignore_for"]

#: Never in a manifest, at any depth: waymark's folder (ledger, results, logs, manifest) — this
#: plan's, or another plan copy's below the workdir.
WAYMARK_DIR = ".waymark"
#: Never in a manifest, at any depth: a repository's folder (or a worktree's ``.git`` file).
GIT_DIR = ".git"


@dataclass(frozen=True)
class Ignore:
    """Paths (relative to the workdir, posix) a manifest leaves out.

    A glob matches the relative path or any of its parent folders (``fnmatch``, where ``*``
    also crosses ``/``); a glob without ``/`` also matches any single name in the path, as in
    ``.gitignore`` (``node_modules`` leaves out ``web/node_modules/``). A trailing ``/`` is
    dropped. ``exact`` are paths left out as they are (the marker files)."""

    globs: tuple[str, ...] = ()
    exact: frozenset[str] = field(default_factory=frozenset)

    def _hit(self, rel: str) -> bool:
        if rel in self.exact:
            return True
        name = rel.rsplit("/", 1)[-1]
        if name in (GIT_DIR, WAYMARK_DIR):
            return True
        for glob in self.globs:
            if fnmatchcase(rel, glob) or ("/" not in glob and fnmatchcase(name, glob)):
                return True
        return False

    def entry(self, rel: str) -> bool:
        """``rel`` is left out, judged by itself (the walk does not enter a left-out folder)."""
        return self._hit(rel)

    def path(self, rel: str) -> bool:
        """``rel`` or one of its parent folders is left out."""
        parts = rel.split("/")
        return any(self._hit("/".join(parts[: i + 1])) for i in range(len(parts)))


def _relative(path: Path, workdir: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(workdir.resolve())
    except ValueError:
        return None
    return rel.as_posix()


def ignore_for(
    globs: list[str], workdir: Path, markers_folder: Path, marker_files: tuple[str, ...]
) -> Ignore:
    """The plan's globs, and waymark's generated files in the markers folder (with the temp
    files their atomic writes leave while writing) when that folder is inside the workdir."""
    exact: set[str] = set()
    extra: list[str] = []
    base = _relative(markers_folder, workdir)
    if base is not None:
        prefix = "" if base in ("", ".") else base + "/"
        for name in marker_files:
            exact.add(prefix + name)
            extra.append(f"{prefix}.{name}.*.tmp")
    cleaned = [g.strip().rstrip("/") for g in globs if g.strip().rstrip("/")]
    return Ignore(
        globs=tuple(os.path.normpath(g).replace(os.sep, "/") for g in cleaned) + tuple(extra),
        exact=frozenset(exact),
    )
