"""``waymark import``: a plan from another tracker's file, with the progress it records.

Formats: Task Master's ``tasks.json`` (:mod:`.taskmaster`), a beads ``issues.jsonl``
(:mod:`.beads`) and Markdown checklists (:mod:`.markdown`). Each is read into a
:class:`~.source.SourceDoc`; :mod:`.plan_build` makes the plan document the same way for all
of them, :mod:`.plan_file` writes it, and :mod:`.progress` records the done steps and the
``imported`` event in the ledger.

:func:`prepare_import` does everything that writes nothing: read, build, validate, render.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..plan.loader import validate_plan_data
from ..plan.spec import PlanSpec
from .beads import read_beads
from .markdown import read_markdown
from .plan_build import BuiltPlan, build_plan_data
from .plan_file import imported_sha, is_written, plan_text, write_plan_file
from .progress import (
    Recorded,
    busy_holds,
    earlier_import,
    foreign_events,
    import_run_id,
    imported_definitions,
    record_import,
)
from .source import SourceDoc, first_problem, read_source_text, valid_id
from .taskmaster import read_taskmaster

__all__ = [
    "FORMATS",
    "KINDS",
    "PreparedImport",
    "Recorded",
    "busy_holds",
    "earlier_import",
    "first_problem",
    "foreign_events",
    "import_run_id",
    "imported_definitions",
    "imported_sha",
    "is_written",
    "prepare_import",
    "record_import",
    "valid_id",
    "write_plan_file",
]

FORMATS = ("taskmaster", "beads", "markdown")
"""The source formats ``--from`` takes."""
KINDS = ("agent", "manual")
"""Who does an imported step (``--kind``)."""

DEFAULT_PLAN_ID = "imported-plan"


@dataclass
class PreparedImport:
    """An import read, built and validated, not written yet."""

    source: Path
    format: str
    sha256: str
    doc: SourceDoc
    built: BuiltPlan
    spec: PlanSpec
    text: str  # the plan file's contents

    @property
    def warnings(self) -> list[str]:
        return self.built.warnings

    @property
    def changes(self) -> list[str]:
        """What the import changed to read the source as a plan: the report's list, and the
        plan file's comments."""
        return self.built.changes


def _read(fmt: str, source: Path, file: str, text: str, tag: str | None) -> SourceDoc:
    if fmt == "taskmaster":
        return read_taskmaster(source, file, text, tag=tag)
    if fmt == "beads":
        return read_beads(source, file, text)
    if fmt == "markdown":
        return read_markdown(source, file, text)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def prepare_import(
    source: Path,
    fmt: str,
    *,
    out: Path,
    tag: str | None = None,
    plan_id: str | None = None,
    kind: str = "agent",
) -> PreparedImport:
    """Read ``source`` (format ``fmt``), build its plan for the file ``out`` and validate it.

    Raises :class:`~prefect_waymark.errors.PlanError` naming the source's file and field for
    input that cannot be imported; writes nothing."""
    raw, text = read_source_text(source, str(source))
    sha = hashlib.sha256(raw).hexdigest()
    doc = _read(fmt, source, str(source), text, tag)
    built = build_plan_data(doc, plan_id=plan_id or doc.plan_id_hint or DEFAULT_PLAN_ID, kind=kind)
    spec = validate_plan_data(built.data, source=str(out), base_dir=out.resolve().parent)
    rendered = plan_text(
        built.data,
        fmt=fmt,
        source=source,
        out=out,
        sha256=sha,
        detail=doc.detail,
        changes=built.changes,
    )
    return PreparedImport(source, fmt, sha, doc, built, spec, rendered)
