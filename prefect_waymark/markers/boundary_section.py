"""The run marker artifact's "Workdir changes" section: the run's execution boundary in words
(prefect_waymark.boundary computes it; ``waymark marker PLAN --changes`` prints it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..text.markdown import code

__all__ = ["boundary_section"]

_LISTED = 20


def _names(paths: list[str], total: int) -> str:
    shown = ", ".join(code(p) for p in paths[:_LISTED])
    more = f" and {total - min(len(paths), _LISTED)} more" if total > _LISTED else ""
    return f"{total} — {shown}{more}" if total else "none"


def boundary_section(marker: Mapping[str, Any]) -> list[str]:
    """Lines of Markdown; none for a marker without a boundary."""
    b = marker.get("boundary")
    if not isinstance(b, dict):
        return []
    out = ["", "## Workdir changes beyond the declared outputs", ""]
    git = b.get("git")
    if isinstance(git, dict):
        state = {True: "dirty", False: "clean", None: "?"}
        before, after = git.get("before"), git.get("after")
        out.append(
            f"- git: {code(str(before)[:12]) if before else 'no commit'} "
            f"({state[git.get('dirty_before')]}) → "
            f"{code(str(after)[:12]) if after else 'no commit'} ({state[git.get('dirty_after')]})"
        )
    counts = b.get("counts") or {}
    for name in ("created", "modified", "deleted", "temporary"):
        paths = list(b.get(name) or [])
        out.append(f"- {name}: {_names(paths, int(counts.get(name, len(paths))))}")
    between = b.get("between_runs")
    if isinstance(between, dict) and any(between.values()):
        parts = [
            f"{name} {_names(list(between[name]), len(between[name]))}"
            for name in ("created", "modified", "deleted")
            if between.get(name)
        ]
        out.append(f"- changed since the last run's end, by no run: {'; '.join(parts)}")
    out.append(
        f"- ledger: after seq {b.get('seq_start')} through {b.get('seq_end')}; "
        f"{b.get('manifest_files', 0)} files compared"
        + (" (truncated)" if b.get("truncated") else "")
    )
    return out
