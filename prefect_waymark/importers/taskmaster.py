"""Read Task Master's ``.taskmaster/tasks/tasks.json``: the tagged format
(``{"<tag>": {"tasks": [...], "metadata": {...}}}``, one tag chosen) and the legacy one
(``{"tasks": [...]}``).

Ids: task ``115`` is step ``task-115``, its subtask ``1`` is ``task-115.1``. A task's
dependency ``7`` names task 7 and ``"115.1"`` a subtask; a subtask's bare number names a sibling
subtask of the same task (the way Task Master writes them), else the top-level task of that id.
An id that repeats (a task's subtasks all written with one id happen) is kept by the first one,
as Task Master's lookups find it; a later one gets the step id ``task-115.1-2`` (a change,
reported).
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
        self.top: set[str] = set()  # the tasks' keys
        self.task_sid: list[str] = []  # the step id of tasks[i]
        self.sub_sid: list[list[str]] = []  # the step id of tasks[i].subtasks[j]
        self.local: list[dict[str, str]] = []  # tasks[i]'s subtask keys -> step id (the first)
        self.warnings: list[str] = []
        self.changes: list[str] = []
        self.by_status: dict[str, list[str]] = {}

    def check(self, sid: str, loc: str, raw: int | str) -> None:
        if not valid_id(sid):
            why = (
                f"the step id it makes is longer than {ID_MAX} characters; expected a shorter id"
                if len(sid) > ID_MAX
                else f"expected {_EXPECTED['id']}"
            )
            raise source_error(self.file, f"{loc}.id", f"{why}, got {shown(raw)}")

    def index(self) -> None:
        """Every task's and subtask's step id. An id that repeats is kept by the first
        (Task Master finds a task or subtask by id with ``find``: the first one); a later one
        gets the first free ``<step id>-2``, ``-3``... (the same file, the same ids)."""
        natural: list[tuple[str, str, int | str]] = []  # (step id, loc, raw id), in file order
        for i, t in enumerate(self.tasks):
            k = _key(t.id)
            loc = f"{self.prefix}[{i}]"
            natural.append((f"task-{k}", loc, t.id))
            self.top.add(k)
            for j, sub in enumerate(t.subtasks or []):
                sub_sid = f"task-{k}.{_sub_local(k, sub.id)}"
                natural.append((sub_sid, f"{loc}.subtasks[{j}]", sub.id))
        for sid, loc, raw in natural:
            self.check(sid, loc, raw)
        taken = {sid for sid, _, _ in natural}
        first: dict[str, str] = {}
        unique = iter(self.renamed(natural, taken, first))
        for t in self.tasks:
            k = _key(t.id)
            self.task_sid.append(next(unique))
            subs = [next(unique) for _ in t.subtasks or []]
            self.sub_sid.append(subs)
            local: dict[str, str] = {}
            for sub, sid in zip(t.subtasks or [], subs, strict=True):
                local.setdefault(_sub_local(k, sub.id), sid)
            self.local.append(local)

    def renamed(
        self, natural: list[tuple[str, str, int | str]], taken: set[str], first: dict[str, str]
    ) -> list[str]:
        out: list[str] = []
        for sid, loc, raw in natural:
            if sid not in first:
                first[sid] = loc
                out.append(sid)
                continue
            n = 2
            while f"{sid}-{n}" in taken:
                n += 1
            new = f"{sid}-{n}"
            taken.add(new)
            out.append(new)
            self.changes.append(
                f"{self.file}: {loc}.id: {shown(raw)} repeats the id of {first[sid]}: this one is "
                f"step {new} (a dependency on {sid} names {first[sid]}, as Task Master finds it)"
            )
        return out

    def dep_target(self, raw: int | str, i: int | None, loc: str) -> str:
        """The step a dependency names: of a task (``i`` None) or of a subtask of tasks[i]."""
        dk = _key(raw)
        if i is None or "." in dk:
            return f"task-{dk}"
        local = self.local[i]
        if dk in local:
            return local[dk]
        parent = _key(self.tasks[i].id)
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
            loc = f"{self.prefix}[{i}]"
            sid = self.task_sid[i]
            st = self.status(t.status, sid)
            if st in CANCELLED:
                skipped[sid] = "cancelled"
                for ssid in self.sub_sid[i]:
                    skipped[ssid] = f"in cancelled {sid}"
                continue
            for j, (s, ssid) in enumerate(zip(t.subtasks or [], self.sub_sid[i], strict=True)):
                sloc = f"{loc}.subtasks[{j}]"
                sst = self.status(s.status, ssid)
                if sst in CANCELLED:
                    skipped[ssid] = "cancelled"
                    continue
                item = _item(ssid, sloc, s, sst)
                item.parent = sid
                item.deps = [
                    SourceDep(
                        self.dep_target(d, i, f"{sloc}.dependencies[{n}]"),
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
        changes=reader.changes,
        title=title,
        plan_id_hint=slug(hint, 100),
        detail=detail,
        cycle_hint="`task-master validate-dependencies` lists them, `task-master "
        "fix-dependencies` repairs them",
        parent_rule="Task Master holds a task back for its `dependencies`, not for its subtasks",
    )
