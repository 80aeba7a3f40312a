"""``waymark restore``: a ledger rebuilt from an audit export.

Every line is read and checked first (:func:`read_export`: the header's ``schema_version``, each
line's type and fields, ``seq`` rising, the header's counts): a bad line is an
:class:`~prefect_waymark.errors.ExportFileError` naming its line and field, and nothing is
written. Then :meth:`~prefect_waymark.ledger.plan_archive.PlanArchive.restore_plan` writes the
events, receipts and projection in one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ExportFileError
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.receipt_records import ReceiptRecord
from .records import SCHEMA_VERSION, EventLine, HeaderLine

__all__ = ["ExportContents", "read_export"]

_MAX_PROBLEMS = 10
_RECEIPT_FIELDS = set(ReceiptRecord.model_fields) - {"plan_id"}


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
            last_seq = 0
            keys: set[str] = set()
            for lineno, text in enumerate(fh, start=2):
                why = _line(contents, text, last_seq, keys)
                if why is not None:
                    problems.append(f"{path}:{lineno}: {why}")
                    if len(problems) >= _MAX_PROBLEMS:
                        break
                elif contents.events:
                    last_seq = contents.events[-1].seq or last_seq
        except UnicodeDecodeError as exc:
            raise ExportFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not problems:
        problems = _counts(path, contents)
    if problems:
        head = f"{path}: not a valid audit export ({len(problems)} problem(s)); nothing written"
        raise ExportFileError("\n  - ".join([head, *problems]))
    return contents


def _line(contents: ExportContents, text: str, last_seq: int, keys: set[str]) -> str | None:
    """Add one line to ``contents``; return what is wrong with it, if anything."""
    try:
        doc: Any = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not a JSON object ({exc})"
    if not isinstance(doc, dict):
        return "expected a JSON object"
    kind = doc.get("type")
    if kind in ("event", "marker"):
        try:
            line = EventLine.model_validate(doc)
        except ValidationError as exc:
            return _where(exc)
        if line.seq <= last_seq:
            return f"seq: {line.seq} after {last_seq}: expected the events in rising seq order"
        if (line.type == "marker") != (line.kind == EventKind.marker_written):
            return (
                f"type: {line.type!r} with kind {line.kind.value!r}: a marker line is "
                "exactly a marker_written event"
            )
        contents.events.append(line.to_event(contents.header.plan_id))
        return None
    if kind == "receipt":
        unknown = sorted(set(doc) - _RECEIPT_FIELDS - {"type"})
        if unknown:
            expected = ", ".join(sorted(_RECEIPT_FIELDS))
            return f"{unknown[0]}: unknown field (expected one of: type, {expected})"
        values = {k: v for k, v in doc.items() if k != "type"}
        try:
            rec = ReceiptRecord.model_validate({**values, "plan_id": contents.header.plan_id})
        except ValidationError as exc:
            return _where(exc)
        if rec.key in keys:
            return f"key: {rec.key!r} twice: a receipt row per idempotency key"
        keys.add(rec.key)
        contents.receipts.append(rec)
        return None
    if kind == "header":
        return "type: a second header line; expected one header, then events and receipts"
    return f"type: {kind!r}; expected 'event', 'marker' or 'receipt'"


def _counts(path: Path, contents: ExportContents) -> list[str]:
    """The header's counts against the lines read (a cut-off file is refused)."""
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
    last = contents.events[-1].seq if contents.events else 0
    if not problems and last != contents.header.last_seq:
        problems.append(
            f"{path}:1: last_seq: the header says {contents.header.last_seq}, the last event "
            f"line has seq {last}"
        )
    return problems
