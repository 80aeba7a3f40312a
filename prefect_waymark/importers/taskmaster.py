"""Read Task Master's ``.taskmaster/tasks/tasks.json``: the tagged format
(``{"<tag>": {"tasks": [...], "metadata": {...}}}``, one tag chosen) and the legacy one
(``{"tasks": [...]}``).

Ids: task ``115`` is step ``task-115``, its subtask ``1`` is ``task-115.1``. A task's
dependency ``7`` names task 7 and ``"115.1"`` a subtask; a subtask's bare number names a sibling
subtask of the same task (the way Task Master writes them), else the top-level task of that id.
Only ``done`` / ``completed`` count as done; ``cancelled`` tasks (and their subtasks) are left out,
``deferred`` ones kept as pending steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ..plan.reading import shown
from ..plan.spec import ID_MAX
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
    where,
)

__all__ = ["read_taskmaster"]

DONE = frozenset({"done", "completed"})
CANCELLED = frozenset({"cancelled", "canceled"})
STARTED = frozenset({"in-progress", "review"})
KNOWN = DONE | CANCELLED | STARTED | {"pending", "blocked", "deferred"}


class _Subtask(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    id: int | str
    title: str | None = None
    description: str | None = None
    details: str | None = None
    testStrategy: str | None = None  # noqa: N815 - Task Master's own field name
    status: str | None = None
    dependencies: list[int | str] | None = None
    assignee: str | None = None


class _Task(_Subtask):
    subtasks: list[_Subtask] | None = None


_TASKS = TypeAdapter(list[_Task])

_EXPECTED = {
    "": "an object (a task)",
    "id": "a task id: a number, or a string of letters, digits, '.', '_', '-'",
    "title": "a string",
    "description": "a string",
    "details": "a string",
    "testStrategy": "a string",
    "status": "a status string (pending, in-progress, done, review, deferred, cancelled, blocked)",
    "dependencies": "a list of task ids",
    "dependencies[]": 'a task id (a number, or a string such as "115.1")',
    "assignee": "a string",
    "subtasks": "a list of subtasks",
    "subtasks[]": "an object (a subtask)",
}

_SHAPE = 'expected Task Master\'s tasks.json: {"master": {"tasks": [...]}} or {"tasks": [...]}'


def _key(raw: int | str) -> str:
    """An id as Task Master compares them: numbers without leading zeros, "1.02" as "1.2".
    (Zeros are stripped, not converted with ``int()``: that refuses more than 4,300 digits.)"""
    parts = str(raw).strip().split(".")
    return ".".join(p.lstrip("0") or "0" if p.isascii() and p.isdigit() else p for p in parts)


def _select(doc: Any, file: str, tag: str | None) -> tuple[str, Any, str, str, str | None]:
    """The task list to read: (its field path, the list, plan title, detail, the tag)."""
    if not isinstance(doc, dict):
        raise source_error(file, "", f"{_SHAPE}, got {type(doc).__name__}")
    if "tasks" in doc:
        if tag not in (None, "master"):
            raise source_error(
                file,
                "",
                f"--tag {tag}: the file is in the legacy format (one task list, no tags); "
                "leave --tag out",
            )
        meta = doc.get("meta", doc.get("metadata"))  # "meta" in the oldest files
        name = meta.get("projectName") if isinstance(meta, dict) else None
        title = name if isinstance(name, str) and name.strip() else "Task Master tasks"
        return "tasks", doc["tasks"], title, "legacy format", None
    chosen = tag or "master"
    tags = [k for k, v in doc.items() if isinstance(v, dict) and "tasks" in v]
    if chosen not in doc:
        if not tags:
            keys = ", ".join(shown(k) for k in list(doc)[:8]) or "none"
            raise source_error(file, "", f"{_SHAPE}; its top-level keys: {keys}")
        raise source_error(
            file,
            "",
            f"unknown tag {chosen!r}; expected one of the file's tags: {', '.join(tags)} "
            "(choose with --tag)",
        )
    body = doc[chosen]
    if not isinstance(body, dict) or "tasks" not in body:
        raise source_error(
            file, chosen, f'expected an object with a "tasks" list, got {shown(body)}'
        )
    meta = body.get("metadata")
    desc = meta.get("description") if isinstance(meta, dict) else None
    title = desc if isinstance(desc, str) and desc.strip() else f"Task Master tasks ({chosen})"
    return f"{chosen}.tasks", body["tasks"], title, f"tag {chosen}", chosen


def _text(*parts: str | None) -> str:
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def _item(sid: str, loc: str, t: _Subtask, status: str) -> SourceItem:
    first = (t.description or "").strip().split("\n")[0]
    title = (t.title or "").strip() or first or sid
    strategy = (t.testStrategy or "").strip()
    return SourceItem(
        step_id=sid,
        loc=loc,
        title=title,
        instructions=_text(t.description, t.details),
        acceptance=[strategy] if strategy else [],
        done=status in DONE,
        status=status,
        owner=(t.assignee or "").strip() or None,
    )


class _Reader:
    def __init__(self, file: str, prefix: str, tasks: list[_Task]) -> None:
        self.file = file
        self.prefix = prefix
        self.tasks = tasks
        self.top: dict[str, int] = {}
        self.subs: dict[str, dict[str, str]] = {}  # task key -> local key -> step id
        self.seen_at: dict[str, str] = {}  # step id -> loc
        self.warnings: list[str] = []
        self.by_status: dict[str, list[str]] = {}

    def claim(self, sid: str, loc: str, raw: int | str) -> None:
        if not valid_id(sid):
            why = (
                f"the step id it makes is longer than {ID_MAX} characters; expected a shorter id"
                if len(sid) > ID_MAX
                else f"expected {_EXPECTED['id']}"
            )
            raise source_error(self.file, f"{loc}.id", f"{why}, got {shown(raw)}")
        if sid in self.seen_at:
            raise source_error(
                self.file, f"{loc}.id", f"duplicate id {shown(raw)} (also {self.seen_at[sid]})"
            )
        self.seen_at[sid] = loc

    def index(self) -> None:
        for i, t in enumerate(self.tasks):
            k = _key(t.id)
            loc = f"{self.prefix}[{i}]"
            self.claim(f"task-{k}", loc, t.id)
            self.top[k] = i
            local: dict[str, str] = {}
            for j, s in enumerate(t.subtasks or []):
                sk = _sub_local(k, s.id)
                sid = f"task-{k}.{sk}"
                self.claim(sid, f"{loc}.subtasks[{j}]", s.id)
                local[sk] = sid
            self.subs[k] = local

    def dep_target(self, raw: int | str, parent: str | None, loc: str) -> str:
        dk = _key(raw)
        if parent is None:
            return f"task-{dk}"
        if "." in dk:
            return f"task-{dk}"
        local = self.subs.get(parent, {})
        if dk in local:
            return local[dk]
        if dk in self.top:
            if dk != parent:
                self.warnings.append(
                    f"{where(self.file, loc)}: task-{parent} has no subtask {dk}; taken as "
                    f"task-{dk}"
                )
            return f"task-{dk}"
        return f"task-{parent}.{dk}"

    def status(self, raw: str | None, sid: str) -> str:
        st = (raw or "pending").strip().lower()
        self.by_status.setdefault(st, []).append(sid)
        return st

    def read(self) -> tuple[list[SourceItem], dict[str, str]]:
        self.index()
        items: list[SourceItem] = []
        skipped: dict[str, str] = {}
        for i, t in enumerate(self.tasks):
            k = _key(t.id)
            loc = f"{self.prefix}[{i}]"
            sid = f"task-{k}"
            st = self.status(t.status, sid)
            if st in CANCELLED:
                skipped[sid] = "cancelled"
                for s in t.subtasks or []:
                    skipped[self.subs[k][_sub_local(k, s.id)]] = f"in cancelled {sid}"
                continue
            for j, s in enumerate(t.subtasks or []):
                ssid = self.subs[k][_sub_local(k, s.id)]
                sloc = f"{loc}.subtasks[{j}]"
                sst = self.status(s.status, ssid)
                if sst in CANCELLED:
                    skipped[ssid] = "cancelled"
                    continue
                item = _item(ssid, sloc, s, sst)
                item.parent = sid
                item.deps = [
                    SourceDep(
                        self.dep_target(d, k, f"{sloc}.dependencies[{n}]"),
                        f"{sloc}.dependencies[{n}]",
                    )
                    for n, d in enumerate(s.dependencies or [])
                ]
                items.append(item)
            item = _item(sid, loc, t, st)
            item.deps = [
                SourceDep(self.dep_target(d, None, ""), f"{loc}.dependencies[{n}]")
                for n, d in enumerate(t.dependencies or [])
            ]
            items.append(item)
        return items, skipped

    def status_warnings(self) -> list[str]:
        out: list[str] = []
        b = self.by_status
        deferred = b.get("deferred", [])
        if deferred:
            out.append(
                grouped(
                    "deferred tasks",
                    deferred,
                    "imported as pending steps (what depends on them still waits); remove "
                    "them from the plan if they are not to be done",
                )
            )
        cancelled = [s for st in CANCELLED for s in b.get(st, [])]
        if cancelled:
            out.append(
                grouped("cancelled tasks", cancelled, "left out of the plan, with their subtasks")
            )
        started = [s for st in sorted(STARTED) for s in b.get(st, [])]
        if started:
            out.append(
                grouped(
                    "tasks in progress or in review",
                    started,
                    "imported as pending (an import records only what is done)",
                )
            )
        for st, ids in b.items():
            if st not in KNOWN:
                out.append(
                    grouped(f"tasks with the unknown status {st!r}", ids, "imported as pending")
                )
        return [f"{self.file}: {w}" for w in out]


def _sub_local(k: str, raw: int | str) -> str:
    """A subtask's id local to its task ``k`` (Task Master also writes it in full: "115.1")."""
    sk = _key(raw)
    return sk[len(k) + 1 :] if sk.startswith(f"{k}.") and sk != k else sk


def read_taskmaster(path: Path, file: str, text: str, *, tag: str | None) -> SourceDoc:
    """Read a Task Master tasks.json (``tag``: the tag to read, default ``master``)."""
    doc = load_json(text, file, _SHAPE)
    prefix, raw_tasks, title, detail, chosen = _select(doc, file, tag)
    if not isinstance(raw_tasks, list):
        raise source_error(file, prefix, f"expected a list of tasks, got {shown(raw_tasks)}")
    try:
        tasks = _TASKS.validate_python(raw_tasks)
    except ValidationError as exc:
        raise pydantic_problem(exc, file, prefix, _EXPECTED) from None
    reader = _Reader(file, prefix, tasks)
    items, skipped = reader.read()
    hint = project_name(path) + (f"-{chosen}" if chosen not in (None, "master") else "")
    return SourceDoc(
        format="taskmaster",
        file=file,
        items=items,
        skipped=skipped,
        warnings=reader.warnings + reader.status_warnings(),
        title=title,
        plan_id_hint=slug(hint, 100),
        detail=detail,
        cycle_hint="`task-master validate-dependencies` lists them, `task-master "
        "fix-dependencies` repairs them",
    )
