"""Outputs across machines for check-ins: ``waymark done --results`` keeps a step's outputs in
the result storage (content-addressed, as a flow run with ``--results`` does), and ``waymark
next --results`` restores the upstream outputs this workdir lacks, hash checked — so another
executor in another folder, or a flow run there, finds them (``results/outputs.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..results.outputs import Kept

__all__ = ["keep_outputs", "restore_upstream"]


def _store(results: str) -> Any:
    from ..results.storage import ResultAccess, as_storage

    access = ResultAccess(as_storage(results), keep_outputs=True)
    assert access.outputs is not None
    return access.outputs


def keep_outputs(
    results: str, workdir: Path, hashes: dict[str, str], *, allow_outside: bool = False
) -> Kept:
    """Store the outputs (path -> sha256); an output outside the workdir is never stored
    (``Kept.not_kept`` says so)."""
    kept: Kept = _store(results).put(workdir, hashes, allow_outside=allow_outside)
    return kept


def restore_upstream(results: str, workdir: Path, step_doc: dict[str, Any]) -> list[str]:
    """Restore each upstream output of a ``next`` step that is not here; mark it in the doc
    (``here``, ``restored``); return the paths restored."""
    store = _store(results)
    done: list[str] = []
    for up in step_doc.get("upstream") or []:
        for out in up.get("outputs") or []:
            if out.get("here"):
                continue
            if store.restore(workdir, out["path"], out["sha256"]):
                out.update(
                    here=True, restored=True, abs_path=str((workdir / out["path"]).resolve())
                )
                done.append(out["path"])
    return done
