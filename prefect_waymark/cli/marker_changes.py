"""``waymark marker PLAN --changes``: each run's execution boundary from its marker — the
ledger range, git before → after, the files it created, modified, deleted or used only
temporarily beyond its declared outputs, and the edits made since the run before it."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["print_changes"]

_LISTS = ("created", "modified", "deleted", "temporary")


def _short(commit: Any) -> str:
    return str(commit)[:12] if commit else "no commit"


def _dirty(flag: Any) -> str:
    return "?" if flag is None else ("dirty" if flag else "clean")


def _paths(label: str, paths: list[str], total: int | None = None) -> list[str]:
    count = total if total is not None else len(paths)
    if not count:
        return [f"  {label}: none"]
    more = f" (first {len(paths)} shown)" if count > len(paths) else ""
    return [f"  {label}: {count}{more}"] + [f"    {p}" for p in paths]


def boundary_lines(m: dict[str, Any]) -> list[str]:
    """One run's boundary in words."""
    head = f"{m['executed_at']}  {m['result']:<12} run {str(m['run_id'])[:12]} by {m['executor']}"
    b = m.get("boundary")
    if not isinstance(b, dict):
        return [head, "  no boundary recorded (a run from before boundaries were recorded)"]
    lines = [head]
    start, end = b.get("seq_start"), b.get("seq_end")
    lines.append(f"  ledger: after seq {start} through seq {end} (then run_finished)")
    git = b.get("git")
    if isinstance(git, dict):
        lines.append(
            f"  git: {_short(git.get('before'))} ({_dirty(git.get('dirty_before'))}) → "
            f"{_short(git.get('after'))} ({_dirty(git.get('dirty_after'))})"
            + ("" if git.get("before") == git.get("after") else " — commits made")
        )
    else:
        lines.append("  git: not a repository")
    counts = b.get("counts") or {}
    for name in _LISTS:
        lines += _paths(name, list(b.get(name) or []), counts.get(name))
    between = b.get("between_runs")
    if isinstance(between, dict):
        since = b.get("previous_run")
        edits = sum(len(between.get(k) or []) for k in ("created", "modified", "deleted"))
        lines.append(
            f"  between runs (since run {str(since)[:12]}'s end, by no run): "
            + ("none" if not edits else f"{edits}")
        )
        for name in ("created", "modified", "deleted"):
            lines += [f"    {name}: {p}" for p in between.get(name) or []]
    else:
        lines.append("  between runs: not known (no earlier run's manifest in this workdir)")
    trunc = " — truncated: only the first files were compared" if b.get("truncated") else ""
    skipped = b.get("looks_skipped") or 0
    looks = f"; looked after {b.get('looks', 0)} step(s)" + (
        f", {skipped} skipped" if skipped else ""
    )
    lines.append(f"  manifest: {b.get('manifest_files', 0)} files{trunc}{looks}")
    for err in b.get("errors") or []:
        lines.append(f"  problem: {err}")
    return lines


def print_changes(
    plan_id: str, markers: list[dict[str, Any]], as_json: bool, history: bool
) -> None:
    """The latest run's boundary (every run's with ``history``), in words or as JSON: the
    boundary object itself, or with ``history`` a list of ``{run_id, executed_at, boundary}``."""
    shown = markers if history else markers[-1:]
    if as_json:
        if history:
            doc: Any = {
                "plan_id": plan_id,
                "runs": [
                    {
                        "run_id": m["run_id"],
                        "executed_at": m["executed_at"],
                        "boundary": m.get("boundary"),
                    }
                    for m in shown
                ],
            }
        else:
            doc = shown[0].get("boundary")
        print(json.dumps(doc, indent=2))
        return
    for m in shown:
        print("\n".join(boundary_lines(m)))
