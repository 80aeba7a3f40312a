"""Read a beads ``issues.jsonl`` (``bd export``: one issue per line; blank lines are allowed).

An issue is the step of its id (kept as it is when it is a valid step id). A ``blocks``
dependency orders (``issue_id`` waits for ``depends_on_id``); ``parent-child`` makes
``depends_on_id`` the parent (an epic: a step that waits for its children, their milestone,
except where that makes a cycle with ``blocks``: see :mod:`.plan_build`);
``related``, ``discovered-from`` and other types do not order. ``closed`` is done, ``tombstone``
is left out; ``open``, ``in_progress``, ``blocked`` and statuses this version does not know are
pending (the unknown ones with a warning). An id that repeats is kept by its first line, a
later line's issue gets the step id ``<id>-2`` (a change, reported). Steps are listed by
priority (0 first) wherever the dependencies allow, the file's order breaking ties.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..plan.reading import shown
from .source import (
    SourceDep,
    SourceDoc,
    SourceItem,
    grouped,
    load_json,
    project_name,
    pydantic_problem,
    slug,
    source_error,
    valid_id,
)

__all__ = ["read_beads"]

OPEN = frozenset({"open", "in_progress", "blocked"})
ORDERING = "blocks"
PARENT = "parent-child"
NOT_ORDERING = frozenset({"related", "discovered-from"})


class _Dependency(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    issue_id: str | None = None
    depends_on_id: str
    type: str = ORDERING


class _Issue(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    id: str
    title: str | None = None
    description: str | None = None
    design: str | None = None
    acceptance_criteria: str | None = None
    notes: str | None = None
    status: str | None = None
    priority: int | None = Field(default=None, ge=0, le=4)
    issue_type: str | None = None
    assignee: str | None = None
    dependencies: list[_Dependency] | None = None


_EXPECTED = {
    "": "a JSON object (an issue)",
    "id": "an issue id (a string)",
    "title": "a string",
    "description": "a string",
    "design": "a string",
    "acceptance_criteria": "a string",
    "notes": "a string",
    "status": "a status string (open, in_progress, blocked, closed, ...)",
    "priority": "an integer from 0 to 4",
    "issue_type": "a string",
    "assignee": "a string",
    "dependencies": "a list of {issue_id, depends_on_id, type} objects",
    "dependencies[]": "an object {issue_id, depends_on_id, type}",
    "issue_id": "an issue id (a string)",
    "depends_on_id": "an issue id (a string)",
    "type": "a dependency type (blocks, parent-child, related, discovered-from)",
}

_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_CONFLICT = ("<<<<<<<", "=======", ">>>>>>>")


def _criteria(text: str | None) -> list[str]:
    """Acceptance criteria: one entry per list item when the text is a list, else the text."""
    lines = [ln.strip() for ln in (text or "").split("\n") if ln.strip()]
    if not any(_BULLET.match(ln) for ln in lines):
        return ["\n".join(lines)] if lines else []
    out: list[str] = []
    for ln in lines:
        m = _BULLET.match(ln)
        if m is not None:
            out.append(m.group(1).strip())
        elif out:
            out[-1] = f"{out[-1]} {ln}"
        else:
            out.append(ln)
    return [c for c in out if c]


def _instructions(issue: _Issue) -> str:
    parts = [(issue.description or "").strip()]
    for label, text in (("Design", issue.design), ("Notes", issue.notes)):
        if text and text.strip():
            parts.append(f"{label}:\n{text.strip()}")
    return "\n\n".join(p for p in parts if p)


def _step_id(raw: str) -> str:
    return raw if valid_id(raw) else re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("-")[:100]


def _parse_lines(file: str, text: str) -> list[tuple[int, _Issue]]:
    out: list[tuple[int, _Issue]] = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        hint = (
            " (a git merge conflict marker: resolve the conflict first)"
            if line.startswith(_CONFLICT)
            else ""
        )
        obj = load_json(
            line, file, "expected one issue object per line, as `bd export` writes", n, hint
        )
        try:
            out.append((n, _Issue.model_validate(obj)))
        except ValidationError as exc:
            raise pydantic_problem(exc, file, "", _EXPECTED, line=n) from None
    return out


def _unique_ids(file: str, issues: list[tuple[int, _Issue]]) -> tuple[dict[int, str], list[str]]:
    """The step id of each line's issue, and the changes made: an id that repeats (or that two
    ids become as step ids) is kept by its first line; a later one gets the first free
    ``<id>-2``, ``<id>-3``... (the same file, the same ids)."""
    natural: dict[int, str] = {}
    for n, issue in issues:
        sid = _step_id(issue.id)
        if not sid:
            raise source_error(file, "id", f"expected an issue id, got {shown(issue.id)}", n)
        natural[n] = sid
    taken = set(natural.values())
    first: dict[str, int] = {}
    out: dict[int, str] = {}
    changes: list[str] = []
    for n, issue in issues:
        sid = natural[n]
        if sid not in first:
            first[sid] = n
            out[n] = sid
            continue
        k = 2
        while f"{sid}-{k}" in taken:
            k += 1
        new = f"{sid}-{k}"
        taken.add(new)
        out[n] = new
        again = "repeats the id of" if sid == issue.id else "is, as a step id, the id of"
        changes.append(
            f"{file}:{n}: id: {shown(issue.id)} {again} line {first[sid]}: this issue is step "
            f"{new} (a dependency on {sid} names line {first[sid]}'s)"
        )
    return out, changes


def read_beads(path: Path, file: str, text: str) -> SourceDoc:
    """Read a beads issues.jsonl."""
    issues = _parse_lines(file, text)
    warnings: list[str] = []
    sid_at, changes = _unique_ids(file, issues)
    ids: dict[str, str] = {}  # beads id -> step id (its first line's)
    for n, issue in issues:
        sid = sid_at[n]
        if issue.id not in ids and sid == _step_id(issue.id) and sid != issue.id:
            warnings.append(f"{file}:{n}: id {shown(issue.id)} is not a valid step id: {sid}")
        ids.setdefault(issue.id, sid)
    items: list[SourceItem] = []
    by_sid: dict[str, SourceItem] = {}
    skipped: dict[str, str] = {}
    by_status: dict[str, list[str]] = {}
    for n, issue in issues:
        sid = sid_at[n]
        st = (issue.status or "open").strip().lower()
        by_status.setdefault(st, []).append(sid)
        if st == "tombstone":
            skipped[sid] = "deleted (a tombstone)"
            continue
        item = SourceItem(
            step_id=sid,
            loc="",
            line=n,
            title=(issue.title or "").strip() or sid,
            instructions=_instructions(issue),
            acceptance=_criteria(issue.acceptance_criteria),
            done=st == "closed",
            status=st,
            owner=(issue.assignee or "").strip() or None,
            priority=2 if issue.priority is None else issue.priority,
        )
        items.append(item)
        by_sid[sid] = item
    other_types: dict[str, list[str]] = {}
    for n, issue in issues:
        for k, dep in enumerate(issue.dependencies or []):
            loc = f"dependencies[{k}]"
            owner_id = dep.issue_id or issue.id
            own = sid_at[n] if owner_id == issue.id else ids.get(owner_id, _step_id(owner_id))
            owner = by_sid.get(own)
            if owner is None:
                continue  # a tombstone's, or an issue not in the file: nothing waits
            target = ids.get(dep.depends_on_id, _step_id(dep.depends_on_id))
            if dep.type == ORDERING:
                owner.deps.append(SourceDep(target, loc, n))
            elif dep.type == PARENT:
                if owner.parent is None:
                    owner.parent = target
                elif owner.parent != target:
                    warnings.append(
                        f"{file}:{n}: {loc}: {owner.step_id} already belongs to {owner.parent}; "
                        f"its parent-child link to {target} is not used"
                    )
            elif dep.type not in NOT_ORDERING:
                other_types.setdefault(dep.type, []).append(owner.step_id)
    for kind, who in other_types.items():
        warnings.append(
            f"{file}: "
            + grouped(f"issues with a {kind!r} dependency", who, "not used for ordering")
        )
    for st, sids in by_status.items():
        if st not in OPEN and st not in ("closed", "tombstone"):
            warnings.append(
                f"{file}: "
                + grouped(
                    f"issues with the status {st!r}, unknown to this importer",
                    sids,
                    "imported as pending",
                )
            )
    started = by_status.get("in_progress", [])
    if started:
        warnings.append(
            f"{file}: "
            + grouped(
                "issues in progress",
                started,
                "imported as pending (an import records only what is done)",
            )
        )
    project = project_name(path)
    return SourceDoc(
        format="beads",
        file=file,
        items=items,
        skipped=skipped,
        warnings=warnings,
        title=f"beads issues of {project}",
        plan_id_hint=slug(project, 100),
        detail=f"{len(issues)} issues",
        cycle_hint="`bd dep cycles` lists them; beads never makes these issues ready",
        changes=changes,
        parent_rule="beads does not hold an epic for its children (only `blocks` holds an issue)",
    )
