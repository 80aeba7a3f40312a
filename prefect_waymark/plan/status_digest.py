"""A plan's status digest: what ``waymark status`` reads of a validated plan (its id and title,
each step's id, title, owner, branch, milestone and needs, the definition hashes and the
dependency order), kept as JSON beside the plan cache's entries under the same kind of key.

``waymark status`` keeps one for the plan it loaded; the quick path of ``waymark status``
(the table or ``--json``: :mod:`prefect_waymark.cli.quick_status`) reads it back without
loading pydantic or PyYAML, while the file's text, its path and the code are those it was made
from. Standard library only. Never kept for a plan that pins a ledger (its URL may need a
variable, a block or Prefect) or that the plan cache would not keep (``plan:`` steps, a
plug-in's refs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache_files import cache_folder, code_fingerprint, entry_name, owned, write_entry

if TYPE_CHECKING:
    from .spec import PlanSpec

__all__ = ["DigestStep", "PlanDigest", "cached_digest", "digest_of", "store_digest"]

_SUFFIX = ".status.json"
#: The digest's format; another number is a miss.
_VERSION = 1


@dataclass(frozen=True)
class DigestStep:
    """A step as the status view reads it."""

    id: str
    title: str
    owner: str | None
    branch: str
    milestone: str | None
    depends_on: list[str]


@dataclass(frozen=True)
class PlanDigest:
    """What the status view reads of a plan (a :class:`~..ledger.progress_view.PlanLike`)."""

    plan_id: str
    title: str
    base_dir: Path
    steps: list[DigestStep]
    hashes: dict[str, str]
    order: list[str]

    def step_hashes(self) -> dict[str, str]:
        return self.hashes

    def topological_order(self) -> list[str]:
        return self.order


def digest_of(spec: PlanSpec) -> dict[str, Any]:
    """The digest of a validated plan, as JSON values."""
    return {
        "version": _VERSION,
        "plan_id": spec.plan_id,
        "title": spec.title,
        "base_dir": str(spec.base_dir) if spec.base_dir is not None else None,
        "steps": [
            [s.id, s.title, s.owner, s.branch, s.milestone, list(s.depends_on)] for s in spec.steps
        ],
        "hashes": spec.step_hashes(),
        "order": spec.topological_order(),
    }


def _from_json(doc: dict[str, Any]) -> PlanDigest | None:
    """The digest, if it is one of this format and whole: every step once in the order and
    the hashes, every need a step of the plan (else ``None``: the full command answers)."""
    if doc.get("version") != _VERSION or not isinstance(doc.get("base_dir"), str):
        return None
    steps = [DigestStep(*row) for row in doc["steps"]]
    ids = {s.id for s in steps}
    hashes, order = doc["hashes"], doc["order"]
    whole = (
        isinstance(doc["plan_id"], str)
        and isinstance(doc["title"], str)
        and len(ids) == len(steps) == len(order) == len(hashes)
        and ids == set(order) == set(hashes)
        and all(isinstance(h, str) for h in hashes.values())
        and all(isinstance(s.title, str) and isinstance(s.branch, str) for s in steps)
        and all(set(s.depends_on) <= ids for s in steps)
    )
    if not whole:
        return None
    return PlanDigest(
        plan_id=doc["plan_id"],
        title=doc["title"],
        base_dir=Path(doc["base_dir"]),
        steps=steps,
        hashes=hashes,
        order=order,
    )


def cached_digest(source: str, resolved: str, text: str) -> PlanDigest | None:
    """The digest kept for these bytes at this path by this code, if any; never raises."""
    try:
        folder, fingerprint = cache_folder(), code_fingerprint()
        if folder is None or fingerprint is None or not owned(folder):
            return None
        entry = folder / entry_name(fingerprint, source, resolved, text, _SUFFIX)
        try:
            doc = json.loads(entry.read_bytes())
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a torn or foreign entry: the full path answers
            entry.unlink(missing_ok=True)
            return None
        return _from_json(doc) if isinstance(doc, dict) else None
    except Exception:  # noqa: BLE001 - no home folder, an odd entry: the full path answers
        return None


def store_digest(source: str, resolved: str, text: str, spec: PlanSpec) -> None:
    """Keep the digest of ``spec`` (validated from ``text``) unless one is kept already; never
    raises."""
    from .plan_cache import cacheable

    try:
        folder, fingerprint = cache_folder(), code_fingerprint()
        if folder is None or fingerprint is None or spec.ledger is not None:
            return
        name = entry_name(fingerprint, source, resolved, text, _SUFFIX)
        if (folder / name).exists() or not cacheable(spec):
            return
        write_entry(folder, name, json.dumps(digest_of(spec)).encode())
    except Exception:  # noqa: BLE001 - a digest that cannot be written only costs time
        return
