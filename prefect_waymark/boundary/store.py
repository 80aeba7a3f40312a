"""The last run's end manifest, kept in ``<workdir>/.waymark/manifest-<plan_id>.json`` (one file
per plan: two plans may share a workdir) so the plan's next run can tell what changed in between
that no run made.

A file, not the ledger: it is a property of this workdir (a ledger may serve several copies of
a plan, on other machines), it can hold 20,000 entries without growing every run's events, and
losing it only means one run reports no between-runs changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files.atomic import atomic_file
from .ignore import Ignore
from .manifest import Cut, Entry, Manifest

__all__ = ["StoredManifest", "manifest_file", "read_manifest", "write_manifest"]

_VERSION = 1


@dataclass(frozen=True)
class StoredManifest:
    plan_id: str
    run_id: str
    written_at: str
    ignore: Ignore  # what that run's manifest left out
    files: dict[str, Entry]
    cut: Cut | None


def manifest_file(workdir: Path, plan_id: str) -> Path:
    """Where the plan's last run left its end manifest (a plan id is a file name: ID_PATTERN)."""
    return workdir / ".waymark" / f"manifest-{plan_id}.json"


def read_manifest(workdir: Path, plan_id: str) -> StoredManifest | None:
    """The plan's stored manifest; ``None`` if there is none. Raises ``OSError`` /
    ``ValueError`` for one that cannot be read or that another plan's run wrote."""
    path = manifest_file(workdir, plan_id)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("version") != _VERSION:
        raise ValueError(f"{path}: not a version-{_VERSION} manifest")
    if doc.get("plan_id") != plan_id:
        raise ValueError(f"{path}: written for plan {doc.get('plan_id')!r}, not {plan_id!r}")
    files: dict[str, Entry] = {}
    for path, value in dict(doc["files"]).items():
        size, mtime, sha = value
        files[str(path)] = (int(size), int(mtime), str(sha) if sha else None)
    cut = doc.get("cut")
    return StoredManifest(
        plan_id=str(doc.get("plan_id")),
        run_id=str(doc.get("run_id")),
        written_at=str(doc.get("written_at")),
        ignore=Ignore(
            globs=tuple(str(g) for g in doc.get("ignore") or []),
            exact=frozenset(str(p) for p in doc.get("ignore_exact") or []),
        ),
        files=files,
        cut=tuple(str(p) for p in cut) if cut is not None else None,
    )


def write_manifest(
    workdir: Path, manifest: Manifest, *, plan_id: str, run_id: str, at: str, ignore: Ignore
) -> None:
    """Replace the stored manifest atomically (temp file and rename)."""
    doc: dict[str, Any] = {
        "version": _VERSION,
        "plan_id": plan_id,
        "run_id": run_id,
        "written_at": at,
        "ignore": list(ignore.globs),
        "ignore_exact": sorted(ignore.exact),
        "cut": list(manifest.cut) if manifest.cut is not None else None,
        "files": {p: list(e) for p, e in sorted(manifest.files.items())},
    }
    target = manifest_file(workdir, plan_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(target) as fh:  # the owner's only (0600), no fsync: the next run redoes it
        fh.write(json.dumps(doc, separators=(",", ":")).encode("utf-8"))
