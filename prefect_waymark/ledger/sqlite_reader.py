"""Read-only access to a SQLite ledger through the standard library's ``sqlite3``.

``waymark status`` needs two reads (the step projection and the last finished run); doing them
without importing SQLAlchemy and SQLModel takes ~0.2 s off its start-up. The table and column
names are those of ``_tables.py``; the conformance tests compare this reader with
:class:`~prefect_waymark.ledger.SqlLedger` on the same file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, unquote

from ..errors import LedgerError
from ..models import ProgressEvent
from .base import check_schema_version
from .step_state import StepState

__all__ = ["SqliteReader", "sqlite_path"]


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
        self.url = url
        # mode=rw: open the existing file only (sqlite3 would otherwise create an empty one).
        # Not mode=ro: a read-only connection cannot remove the WAL files it had to create.
        uri = f"file:{quote(str(path))}?mode=rw"
        try:
            self._conn = sqlite3.connect(uri, uri=True, timeout=60)
        except sqlite3.Error as exc:
            raise LedgerError(f"no ledger at {path}: {exc}") from exc
        try:
            row = self._conn.execute(
                "SELECT value FROM waymark_meta WHERE key = 'schema_version'"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if "no such table" in str(exc):
                raise LedgerError(f"no ledger tables in {url}") from exc
            raise LedgerError(f"cannot read the ledger {path}: {exc}") from exc
        if row is not None:
            try:
                check_schema_version(int(row[0]), url)
            except Exception:
                self._conn.close()
                raise

    def step_states(self, plan_id: str) -> dict[str, StepState]:
        rows = self._conn.execute(
            "SELECT state FROM waymark_steps WHERE plan_id = ?", (plan_id,)
        ).fetchall()
        states = [StepState.model_validate_json(r[0]) for r in rows]
        return {s.step_id: s for s in states}

    def last_event(self, plan_id: str, kinds: Iterable[str]) -> ProgressEvent | None:
        wanted = list(kinds)
        if not wanted:
            return None
        marks = ", ".join("?" for _ in wanted)
        row = self._conn.execute(
            "SELECT seq, plan_id, step_id, branch, kind, run_id, at, data FROM waymark_events "
            f"WHERE plan_id = ? AND kind IN ({marks}) ORDER BY seq DESC LIMIT 1",
            (plan_id, *wanted),
        ).fetchone()
        if row is None:
            return None
        seq, pid, step_id, branch, kind, run_id, at, data = row
        return ProgressEvent(
            seq=seq,
            plan_id=pid,
            step_id=step_id,
            branch=branch,
            kind=kind,
            run_id=run_id,
            at=datetime.fromisoformat(at),
            data=json.loads(data),
        )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqliteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
