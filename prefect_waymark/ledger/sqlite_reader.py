"""Read-only access to a SQLite ledger through the standard library's ``sqlite3``.

``waymark status`` needs two reads (the step projection and the last finished run); doing them
without importing SQLAlchemy and SQLModel takes ~0.3 s off its start-up. Its SQL is built from
:mod:`.schema`, the definition the SQLModel tables use too, and rows become records through the
same functions as in :class:`~prefect_waymark.ledger.SqlLedger`; the conformance suite runs its
read tests on both.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ..errors import LedgerError, LedgerNotFound
from .event_kinds import EventKind
from .plain_rows import PlainEvent, PlainState, plain_event, plain_states
from .schema import (
    EVENTS,
    HOLDS,
    LEDGER_ID_KEY,
    META,
    RECEIPTS,
    SCHEMA_VERSION_KEY,
    STEPS,
    check_schema_version,
    event_from_row,
    kind_names,
)

if TYPE_CHECKING:
    from .base import Hold
    from .events import ProgressEvent
    from .receipt_records import ReceiptRecord
    from .step_state import StepState

__all__ = ["SqliteReader", "read_events", "read_last_event", "sqlite_path"]


def read_events(
    raw: sqlite3.Connection,
    plan_id: str,
    after_seq: int = 0,
    kinds: Iterable[EventKind | str] | None = None,
) -> list[ProgressEvent]:
    """A plan's events after ``after_seq`` (of ``kinds``), in append order."""
    where, params = "plan_id = ? AND seq > ?", [plan_id, after_seq]
    if kinds is not None:
        names = kind_names(kinds)
        where += f" AND kind IN ({', '.join('?' for _ in names)})"
        params += names
    rows = raw.execute(EVENTS.select(where, "ORDER BY seq"), params)
    return [event_from_row(r) for r in rows]


def read_last_event(
    raw: sqlite3.Connection, plan_id: str, kinds: Iterable[EventKind | str]
) -> ProgressEvent | None:
    """The plan's newest event of one of ``kinds``."""
    row = _last_event_row(raw, plan_id, kinds)
    return event_from_row(row) if row is not None else None


def _last_event_row(
    raw: sqlite3.Connection, plan_id: str, kinds: Iterable[EventKind | str]
) -> tuple[object, ...] | None:
    names = kind_names(kinds)
    where = f"plan_id = ? AND kind IN ({', '.join('?' for _ in names)})"
    row: tuple[object, ...] | None = raw.execute(
        EVENTS.select(where, "ORDER BY seq DESC LIMIT 1"), (plan_id, *names)
    ).fetchone()
    return row


def sqlite_path(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL (unquoted, as SQLAlchemy reads it); ``None``
    for anything else, including URLs with query options."""
    if not url.startswith("sqlite:///") or "?" in url:
        return None
    path = unquote(url.removeprefix("sqlite:///"))
    return Path(path) if path and path != ":memory:" else None


class SqliteReader:
    """Reads a SQLite ledger; never creates, migrates or writes it."""

    def __init__(self, url: str) -> None:
        path = sqlite_path(url)
        if path is None:
            raise LedgerError(f"not a SQLite ledger file URL: {url}")
        if not path.exists():
            raise LedgerNotFound(f"no ledger at {path}")
        self.url = url
        # mode=rw: open the existing file only (sqlite3 would otherwise create an empty one).
        # Not mode=ro: a read-only connection cannot remove the WAL files it had to create.
        uri = f"file:{quote(str(path))}?mode=rw"
        try:
            self._conn = sqlite3.connect(uri, uri=True, timeout=60)
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {path}: {exc}") from exc
        try:
            row = self._conn.execute(
                f"SELECT value FROM {META.name} WHERE key = ?", (SCHEMA_VERSION_KEY,)
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if "no such table" in str(exc):
                raise LedgerNotFound(f"no ledger tables in {url}") from exc
            raise LedgerError(f"cannot read the ledger {path}: {exc}") from exc
        if row is not None:
            try:
                check_schema_version(int(row[0]), url)
            except Exception:
                self._conn.close()
                raise
        found = self._conn.execute(
            f"SELECT value FROM {META.name} WHERE key = ?", (LEDGER_ID_KEY,)
        ).fetchone()
        self.ledger_id: str | None = str(found[0]) if found is not None else None

    def step_states(self, plan_id: str) -> dict[str, StepState]:
        from .step_state import states_by_step

        return states_by_step(self._state_texts(plan_id))

    def plain_step_states(self, plan_id: str) -> dict[str, PlainState]:
        """:meth:`step_states` as plain records, without pydantic."""
        return plain_states(self._state_texts(plan_id))

    def _state_texts(self, plan_id: str) -> list[str]:
        rows = self._conn.execute(f"SELECT state FROM {STEPS.name} WHERE plan_id = ?", (plan_id,))
        return [r[0] for r in rows]

    def events(
        self, plan_id: str, *, after_seq: int = 0, kinds: Iterable[EventKind | str] | None = None
    ) -> list[ProgressEvent]:
        return read_events(self._conn, plan_id, after_seq, kinds)

    def last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> ProgressEvent | None:
        return read_last_event(self._conn, plan_id, kinds)

    def plain_last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> PlainEvent | None:
        """:meth:`last_event` as a plain record, without pydantic."""
        row = _last_event_row(self._conn, plan_id, kinds)
        return plain_event(row) if row is not None else None

    def holds(self, plan_id: str) -> list[Hold]:
        from .base import Hold

        rows = self._conn.execute(HOLDS.select("plan_id = ?"), (plan_id,))
        return [Hold(*r) for r in rows]  # HOLDS's columns are Hold's fields, in order

    def receipts(self, plan_id: str, step_id: str | None = None) -> list[ReceiptRecord]:
        """Every receipt row of a plan (or of one step), oldest intent first: what
        :meth:`~.receipts.SqlReceipts.receipts` returns (``waymark metrics`` counts them)."""
        from .receipt_records import ReceiptRecord

        where, params = "plan_id = ?", [plan_id]
        if step_id is not None:
            where, params = where + " AND step_id = ?", [*params, step_id]
        found = self._conn.execute(RECEIPTS.select(where), params)
        rows = [ReceiptRecord.from_row(r) for r in found]
        return sorted(rows, key=lambda r: (r.intent_at, r.key))

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqliteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
