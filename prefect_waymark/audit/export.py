"""``waymark export``: a plan's events, markers and receipts as JSON lines (:mod:`.records`),
streamed page by page; to a file through a temporary file renamed into place."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from .._files.atomic import atomic_file
from ..ledger.plan_archive import PlanArchive
from ..ledger.urls import shown_url
from .records import event_line, header_line, receipt_line

__all__ = ["encode_line", "export_lines", "write_export", "write_export_file"]

_PAGE = 2000


def export_lines(
    ledger: PlanArchive,
    plan_id: str,
    *,
    ledger_id: str | None,
    url: str,
    now: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """The export's lines, header first; events are read ``_PAGE`` at a time up to the plan's
    last ``seq`` when the export started (receipts are read at that moment too)."""
    snap = ledger.archive_snapshot(plan_id)
    yield header_line(
        plan_id,
        ledger_id=ledger_id,
        ledger=shown_url(url),
        exported_at=now or datetime.now(timezone.utc),
        last_seq=snap.last_seq,
        kinds=snap.kinds,
        receipts=len(snap.receipts),
    )
    after = 0
    while after < snap.last_seq:
        page = ledger.event_page(plan_id, after_seq=after, upto_seq=snap.last_seq, limit=_PAGE)
        if not page:
            break
        for ev in page:
            yield event_line(ev)
        after = page[-1].seq or snap.last_seq
    for rec in snap.receipts:
        yield receipt_line(rec)


def encode_line(line: dict[str, Any]) -> bytes:
    """One line as UTF-8 JSON and its newline. A string no UTF-8 can hold (a lone surrogate, as
    Python reads a file name that is not UTF-8) is written as its JSON escape (``\\udcff``):
    the export is UTF-8 whatever the ledger holds, and reads back to the same string."""
    text = json.dumps(line, ensure_ascii=False, default=str)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(line, ensure_ascii=True, default=str).encode("ascii") + b"\n"


def write_export(lines: Iterator[dict[str, Any]], out: BinaryIO) -> int:
    """Write each line as one JSON object (UTF-8); return how many lines were written."""
    n = 0
    for line in lines:
        out.write(encode_line(line))
        n += 1
    return n


def write_export_file(lines: Iterator[dict[str, Any]], path: Path) -> int:
    """Write to a temporary file beside ``path``, fsync it, rename it to ``path``: a reader
    never sees half an export, and a failure leaves no file behind."""
    with atomic_file(path, fsync=True) as out:  # the owner's only (0600), as it always was
        return write_export(lines, out)
