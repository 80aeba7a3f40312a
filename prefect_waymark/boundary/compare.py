"""Two manifests compared: which files were created, modified and deleted between them."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from .manifest import Cut, Entry

__all__ = ["Changes", "changed", "covered", "narrower", "under_any"]


@dataclass(frozen=True)
class Changes:
    created: list[str]
    modified: list[str]
    deleted: list[str]

    def as_dict(self) -> dict[str, list[str]]:
        return {"created": self.created, "modified": self.modified, "deleted": self.deleted}


def narrower(*cuts: Cut | None) -> Cut | None:
    """The cut that covers least (``None``: a whole manifest)."""
    kept = [c for c in cuts if c is not None]
    return min(kept) if kept else None


def covered(path: str, cut: Cut | None) -> bool:
    """``path`` is within what a manifest cut at ``cut`` holds."""
    return cut is None or tuple(path.split("/")) <= cut


def _differs(old: Entry, new: Entry) -> bool:
    if old[0] != new[0]:
        return True
    if old[1] == new[1]:
        return False  # same size and mtime: the same file (its hash was reused, not re-read)
    if old[2] is not None and new[2] is not None:
        return old[2] != new[2]  # touched, maybe rewritten: the content decides
    return True  # not hashed (too large, unreadable): a new mtime is a change


def changed(
    before: dict[str, Entry],
    after: dict[str, Entry],
    *,
    cut: Cut | None = None,
    keep: Callable[[str], bool] = lambda _p: True,
) -> Changes:
    """Files created, modified and deleted from ``before`` to ``after`` (sorted), among paths
    ``keep`` accepts and within ``cut``."""

    def wanted(p: str) -> bool:
        return covered(p, cut) and keep(p)

    created = sorted(p for p in after.keys() - before.keys() if wanted(p))
    deleted = sorted(p for p in before.keys() - after.keys() if wanted(p))
    modified = sorted(
        p for p in after.keys() & before.keys() if wanted(p) and _differs(before[p], after[p])
    )
    return Changes(created, modified, deleted)


def under_any(path: str, roots: Collection[str]) -> bool:
    """``path`` is one of ``roots`` or inside one of them (a declared output folder)."""
    if path in roots:
        return True
    parts = path.split("/")
    return any("/".join(parts[:i]) in roots for i in range(1, len(parts)))
