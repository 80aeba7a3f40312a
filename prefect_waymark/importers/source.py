"""What every source format is read into before it becomes a plan: its items in source order,
the ids it left out on purpose (and why), and the warnings found while reading it.

The format readers (:mod:`.taskmaster`, :mod:`.beads`, :mod:`.markdown`) only read; the plan is
built from a :class:`SourceDoc` by :mod:`.plan_build`, the same way for every format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import PlanError, PlanProblem
from ..plan.reading import shown
from ..plan.spec import ID_MAX

__all__ = [
    "MAX_SOURCE_BYTES",
    "SourceDep",
    "SourceDoc",
    "SourceItem",
    "first_problem",
    "grouped",
    "load_json",
    "pydantic_problem",
    "project_name",
    "read_source_text",
    "slug",
    "source_error",
    "valid_id",
    "where",
]

MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""The largest source file read (64 MiB): a plan file holds at most 4 MiB anyway."""

_ID = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(slots=True)
class SourceDep:
    """One dependency as the source wrote it: the step id it names, and where it was written."""

    target: str
    loc: str
    line: int | None = None


@dataclass(slots=True)
class SourceItem:
    """One task, issue or checklist item, already named by its step id."""

    step_id: str
    loc: str  # where the source holds it, for messages: ``master.tasks[3]``, ``line 7``
    title: str
    instructions: str
    acceptance: list[str]
    done: bool
    status: str  # the source's own word, for messages
    deps: list[SourceDep] = field(default_factory=list)
    parent: str | None = None  # the step id of its parent task, epic or list item
    owner: str | None = None
    milestone: str | None = None  # an explicit milestone (a Markdown heading)
    priority: int = 0  # lower first where the graph allows (beads' 0-4)
    line: int | None = None  # the source line, when the format has lines


@dataclass
class SourceDoc:
    """A source file read: what a plan is built from."""

    format: str
    file: str  # the path as given, for messages
    items: list[SourceItem]
    skipped: dict[str, str]  # step id -> why it is not in the plan ("cancelled")
    warnings: list[str]
    title: str
    plan_id_hint: str
    detail: str = ""  # e.g. "tag master", shown in the summary
    cycle_hint: str = ""  # the source tool's own way to find or fix a dependency cycle
    # what the import changed to read the file (a repeated id renamed...): the import report
    changes: list[str] = field(default_factory=list)
    # why a parent need not wait for a child, in the tracker's own terms (a cycle's change)
    parent_rule: str = "a parent waits for its children only where that makes no cycle"


def source_error(file: str, path: str, message: str, line: int | None = None) -> PlanError:
    """The error for a source file that cannot be imported: one problem, naming its field."""
    return PlanError([PlanProblem(file, path, message, line)])


def where(file: str, loc: str, line: int | None = None) -> str:
    """Where something is in a source, as problems name it: ``file:line: field.path``."""
    place = file if line is None else f"{file}:{line}"
    return f"{place}: {loc}" if loc else place


def first_problem(exc: PlanError) -> str:
    """One line for a :class:`PlanError`: its first problem, and how many more there are."""
    if not exc.problems:
        return str(exc)
    more = len(exc.problems) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return f"{exc.problems[0]}{tail}"


def read_source_text(path: Path, file: str) -> tuple[bytes, str]:
    """The source's bytes (hashed for the once-rule) and its text (UTF-8, newlines unified)."""
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise source_error(file, "", f"the file is {size:,} bytes; expected at most 64 MiB")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise source_error(file, "", "file not found") from None
    except IsADirectoryError:
        raise source_error(file, "", "is a folder; expected a file") from None
    except OSError as exc:
        raise source_error(file, "", f"cannot read the file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise source_error(file, "", "not UTF-8 text (a binary file?)", line) from None
    return raw, text.replace("\r\n", "\n").replace("\r", "\n")


def load_json(text: str, file: str, expected: str, line: int | None = None, hint: str = "") -> Any:
    """``text`` parsed as JSON, or the one-problem error for JSON this importer cannot read:
    malformed, nested too deeply for Python's parser (``RecursionError``), or holding a number
    longer than Python converts (``ValueError``). ``expected`` (``"expected ..."``) ends the
    message; ``line`` is the source line of ``text`` when it is one line of the file."""
    at: int | None = line
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        why = f"not JSON: {exc.msg} (column {exc.colno}){hint}"
        at = exc.lineno if line is None else line
    except RecursionError:
        why = "lists or objects nested too deeply to read (hundreds of levels inside each other)"
    except ValueError:  # int() refuses a literal over sys.get_int_max_str_digits() digits
        why = "a number with too many digits to read (Python's limit: 4,300 by default)"
    raise source_error(file, "", f"{why}; {expected}", at)


def valid_id(text: str) -> bool:
    """Whether ``text`` is a valid plan id (``ID_PATTERN``, at most ``ID_MAX`` characters)."""
    return bool(_ID.match(text)) and len(text) <= ID_MAX


def slug(text: str, limit: int = 48) -> str:
    """``text`` as an id: lower case, runs of other characters as one '-', at most ``limit``."""
    out = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return out[:limit].rstrip("-._")


def project_name(path: Path) -> str:
    """The project a tracker file belongs to: the folder holding its topmost dot folder
    (``proj/.taskmaster/tasks/tasks.json`` → ``proj``), else the file's own folder."""
    parent = path.resolve().parent
    chain = [parent, *parent.parents]
    dotted = [i for i, p in enumerate(chain) if p.name.startswith(".")]
    return (chain[dotted[-1] + 1] if dotted and dotted[-1] + 1 < len(chain) else parent).name


def grouped(what: str, ids: list[str], tail: str, limit: int = 5) -> str:
    """One warning for many items: ``deferred tasks (2: task-4, task-9): imported as pending``."""
    listed = ", ".join(ids[:limit]) + (f", … ({len(ids) - limit} more)" if len(ids) > limit else "")
    return f"{what} ({len(ids)}: {listed}): {tail}"


def _loc_text(prefix: str, loc: Iterable[int | str], fields: set[str]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in fields:  # union members ('int', 'str') are not fields: left out
            out += f".{part}" if out else part
    return out


def pydantic_problem(
    exc: ValidationError,
    file: str,
    prefix: str,
    expected: Mapping[str, str],
    line: int | None = None,
) -> PlanError:
    """The one-line error for a source record that does not have the expected shape: the first
    problem's field path and what was expected there (``expected`` maps field names, and
    ``name[]`` for a list's members, to words), counting the other fields that are wrong."""
    fields = {k.removesuffix("[]") for k in expected if k}
    seen: dict[str, tuple[str, Any, str]] = {}
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        path = _loc_text(prefix, loc, fields)
        if path in seen:  # a union's members each report the same field
            continue
        key = ""
        for part in loc:
            if isinstance(part, str) and part in fields:
                key = part
            elif isinstance(part, int) and key and not key.endswith("[]"):
                key += "[]"
        what = expected.get(key) or expected.get(key.removesuffix("[]")) or expected[""]
        seen[path] = (what, err.get("input"), err["type"])
    problems = [
        PlanProblem(
            file,
            path,
            f"required field is missing; expected {what}"
            if kind == "missing"
            else f"expected {what}, got {shown(got)}",
            line,
        )
        for path, (what, got, kind) in seen.items()
    ]
    return PlanError(problems)
