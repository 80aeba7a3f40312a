"""``waymark restore``: a ledger rebuilt from an audit export.

Every line is read and checked first (:func:`read_export`: the header's ``schema_version``, each
line's type and fields within the ledger's column sizes and within the limits the plan file and
the check-ins hold them to — step ids in the id pattern, an ``output_tail``, reasons and evidence
no longer than a run or a check-in keeps (docs: reference / limits) —, the order — header, events
in rising ``seq``, receipts —, the header's counts and kinds; empty lines only at the end): a bad
line is an :class:`~prefect_waymark.errors.ExportFileError` naming its line and field, and
nothing is written. Then :meth:`~prefect_waymark.ledger.plan_archive.PlanArchive.restore_plan`
writes the events, receipts and projection in one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ExportFileError
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.receipts import ReceiptRecord, default_action_key
from .records import SCHEMA_VERSION, EventLine, HeaderLine, ReceiptLine, data_problem

__all__ = ["ExportContents", "read_export"]

_MAX_PROBLEMS = 10
_ORDER = "expected the header, then the events in seq order, then the receipts"


@dataclass
class ExportContents:
    """A checked export: its header, its events (in ``seq`` order) and its receipt rows."""

    header: HeaderLine
    events: list[ProgressEvent] = field(default_factory=list)
    receipts: list[ReceiptRecord] = field(default_factory=list)


def _where(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(line)"
    return f"{loc}: {err['msg']}"


def _header(path: Path, text: str | None) -> HeaderLine:
    if text is None:
        raise ExportFileError(f"{path}: empty file: not an audit export (`waymark export`)")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ExportFileError(f"{path}:1: not a JSON object ({exc})") from None
    if not isinstance(doc, dict) or doc.get("type") != "header":
        raise ExportFileError(
            f'{path}:1: type: expected the header line ({{"type": "header", ...}}): '
            "not an audit export (`waymark export`)"
        )
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ExportFileError(
            f"{path}:1: schema_version: {version!r}; this prefect-waymark reads schema version "
            f"{SCHEMA_VERSION}"
        )
    try:
        return HeaderLine.model_validate(doc)
    except ValidationError as exc:
        raise ExportFileError(f"{path}:1: {_where(exc)}") from None


def read_export(path: Path) -> ExportContents:
    """Read and check every line of the export at ``path``; raise :class:`ExportFileError`
    listing the problems (at most 10, each ``FILE:LINE: field: what was expected``)."""
    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise ExportFileError(f"{path}: cannot read it: {exc.strerror}") from None
    problems: list[str] = []
    with fh:
        try:
            contents = ExportContents(_header(path, next(fh, None)))
            reading = _Reading()
            blank: int | None = None  # the first of the empty lines just read
            for lineno, text in enumerate(fh, start=2):
                if not text.strip():
                    blank = blank or lineno
                    continue
                if blank is not None:  # empty lines are fine at the end only
                    problems.append(f"{path}:{blank}: an empty line inside the export; {_ORDER}")
                    blank = None
                why = _line(contents, text, reading)
                if why is not None:
                    problems.append(f"{path}:{lineno}: {why}")
                if len(problems) >= _MAX_PROBLEMS:
                    break
        except UnicodeDecodeError as exc:
            raise ExportFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not problems:
        problems = _counts(path, contents)
    if problems:
        head = f"{path}: not a valid audit export ({len(problems)} problem(s)); nothing written"
        raise ExportFileError("\n  - ".join([head, *problems]))
    return contents


@dataclass
class _Reading:
    """Where the reading of the lines after the header stands."""

    last_seq: int = 0
    receipts_began: bool = False
    keys: set[str] = field(default_factory=set)
    #: Plan ids this plan's history was renamed from (``plan_renamed`` events' ``from_plan``):
    #: their keys (``old/step/action``) are this plan's receipts.
    former_ids: set[str] = field(default_factory=set)


def _line(contents: ExportContents, text: str, reading: _Reading) -> str | None:
    """Add one line to ``contents``; return what is wrong with it, if anything."""
    try:
        doc: Any = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not a JSON object ({exc})"
    if not isinstance(doc, dict):
        return "expected a JSON object"
    kind = doc.get("type")
    if kind in ("event", "marker"):
        return _event_line(contents, doc, reading)
    if kind == "receipt":
        return _receipt_line(contents, doc, reading)
    if kind == "header":
        return f"type: a second header line; {_ORDER}"
    return f"type: {kind!r}; expected 'event', 'marker' or 'receipt'"


def _event_line(contents: ExportContents, doc: dict[str, Any], reading: _Reading) -> str | None:
    try:
        line = EventLine.model_validate(doc)
    except ValidationError as exc:
        return _where(exc)
    if reading.receipts_began:
        return f"type: {line.type!r} after a receipt line; {_ORDER}"
    if line.seq <= reading.last_seq:
        return f"seq: {line.seq} after {reading.last_seq}: expected the events in rising seq order"
    if (line.type == "marker") != (line.kind == EventKind.marker_written):
        return (
            f"type: {line.type!r} with kind {line.kind.value!r}: a marker line is "
            "exactly a marker_written event"
        )
    if (why := data_problem(line.kind, line.data)) is not None:
        return why
    reading.last_seq = line.seq
    event = line.to_event(contents.header.plan_id)
    if event.kind == EventKind.plan_renamed and isinstance(event.data.get("from_plan"), str):
        reading.former_ids.add(event.data["from_plan"])
    contents.events.append(event)
    return None


def _receipt_line(contents: ExportContents, doc: dict[str, Any], reading: _Reading) -> str | None:
    try:
        rec = ReceiptLine.model_validate(doc)
    except ValidationError as exc:
        return _where(exc)
    reading.receipts_began = True
    if rec.key in reading.keys:
        return f"key: {rec.key!r} twice: a receipt row per idempotency key"
    reading.keys.add(rec.key)
    if (other := _other_plans_key(rec, contents.header.plan_id, reading)) is not None:
        return (
            f"key: {rec.key!r} is the key of plan {other!r} (its step {rec.step_id!r}), not "
            f"of plan {contents.header.plan_id!r}: a restore never plants a receipt that "
            "would hold another plan's action"
        )
    contents.receipts.append(rec.to_record(contents.header.plan_id))
    return None


def _other_plans_key(rec: ReceiptLine, plan_id: str, reading: _Reading) -> str | None:
    """The other plan whose default key (``plan/step/action``) ``rec`` carries, if any. A key a
    step chose itself is the plan's own choice; the default shape names its plan."""
    owner = rec.key.split("/", 1)[0]
    if owner == plan_id or owner in reading.former_ids:
        return None
    return owner if rec.key == default_action_key(owner, rec.step_id, rec.action) else None


def _counts(path: Path, contents: ExportContents) -> list[str]:
    """The header's counts and kinds against the lines read (a cut-off file is refused)."""
    c = contents.header.counts
    found = {
        "events": len(contents.events),
        "markers": sum(1 for e in contents.events if e.kind == EventKind.marker_written),
        "receipts": len(contents.receipts),
    }
    wanted = {"events": c.events, "markers": c.markers, "receipts": c.receipts}
    problems = [
        f"{path}:1: counts.{name}: the header says {wanted[name]}, the file has {n} "
        "(cut off, or lines added)"
        for name, n in found.items()
        if n != wanted[name]
    ]
    kinds: dict[str, int] = {}
    for ev in contents.events:
        kinds[EventKind(ev.kind).value] = kinds.get(EventKind(ev.kind).value, 0) + 1
    said = {k: n for k, n in contents.header.kinds.items() if n}
    for name in sorted(said.keys() | kinds.keys()):
        if said.get(name, 0) != kinds.get(name, 0):
            problems.append(
                f"{path}:1: kinds.{name}: the header says {said.get(name, 0)}, the file has "
                f"{kinds.get(name, 0)} {name} event(s)"
            )
            break
    last = contents.events[-1].seq if contents.events else 0
    if not problems and last != contents.header.last_seq:
        problems.append(
            f"{path}:1: last_seq: the header says {contents.header.last_seq}, the last event "
            f"line has seq {last}"
        )
    return problems
