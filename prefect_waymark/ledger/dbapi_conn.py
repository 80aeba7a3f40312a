"""The ledger's lean write path on SQLite: the same statements, straight through the DBAPI.

:class:`~prefect_waymark.ledger.SqlLedger` appends an event in one transaction of three to
five statements. Through SQLAlchemy's ``Connection`` each costs ~0.1 ms of execution-context and
transaction handling around ~0.02 ms of SQLite work, so on SQLite the ledger keeps one DBAPI
connection (checked out of its engine's pool: the same connect-time pragmas) and runs the *same*
SQLAlchemy statements on it, compiled once for the SQLite dialect: one statement text, one
schema, and the conformance suite (``tests/ledger/test_dbapi_conformance.py``) proves that both
paths write the same rows and refuse the same events.

:class:`DbapiConnection` is the small part of SQLAlchemy's ``Connection`` that
``SqlLedger._append`` uses: ``execute(statement, params)`` → a result with ``first()``,
``scalar_one()``, ``rowcount``, iteration, and ``dialect.name``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.sql.expression import Executable

__all__ = ["DbapiConnection", "DbapiResult", "LeanSqlite"]

_DIALECT = sqlite.dialect(paramstyle="named")


class _Compiled(NamedTuple):
    sql: str
    processors: dict[str, Callable[[Any], Any]]


# id(statement) -> compiled form: the hot statements are module-level constants, built once.
_CACHE: dict[tuple[int, tuple[str, ...]], tuple[Executable, _Compiled]] = {}


def _compiled(stmt: Executable, keys: tuple[str, ...]) -> _Compiled:
    found = _CACHE.get((id(stmt), keys))
    if found is not None and found[0] is stmt:
        return found[1]
    # ``column_keys``: an INSERT without ``values()`` names exactly the columns given.
    done = stmt.compile(dialect=_DIALECT, column_keys=list(keys))  # type: ignore[attr-defined]
    compiled = _Compiled(done.string, dict(getattr(done, "_bind_processors", {}) or {}))
    _CACHE[(id(stmt), keys)] = (stmt, compiled)  # keeps ``stmt`` alive: its id stays unique
    return compiled


class _Dialect:
    name = "sqlite"


_ROW_TYPES: dict[tuple[str, ...], type] = {}


def _row_type(names: tuple[str, ...]) -> type:
    """A row class per column list, made once (``namedtuple`` builds a class: ~80 µs)."""
    found = _ROW_TYPES.get(names)
    if found is None:
        found = _ROW_TYPES[names] = namedtuple("Row", names, rename=True)
    return found


class DbapiResult:
    """A cursor's rows as SQLAlchemy's ``Result`` gives them: attribute access by column."""

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur
        self.rowcount = cur.rowcount
        self._row: type | None = None  # the row class, made when a row is first read

    def _make(self, raw: tuple[Any, ...] | None) -> Any:
        if raw is None:
            return None
        if self._row is None:
            self._row = _row_type(tuple(d[0] for d in self._cur.description))
        return self._row(*raw)

    def first(self) -> Any:
        row = self._make(self._cur.fetchone())
        self._cur.close()
        return row

    def scalar_one(self) -> Any:
        rows = self._cur.fetchall()
        self._cur.close()
        if len(rows) != 1:
            raise sqlite3.DatabaseError(f"expected one row, got {len(rows)}")
        return rows[0][0]

    def __iter__(self) -> Iterator[Any]:
        for raw in self._cur.fetchall():
            yield self._make(raw)
        self._cur.close()


class DbapiConnection:
    """A DBAPI ``sqlite3`` connection inside one transaction, answering like SQLAlchemy's."""

    dialect = _Dialect()

    def __init__(self, raw: sqlite3.Connection) -> None:
        self._raw = raw

    def execute(self, stmt: Executable, params: Mapping[str, Any] | None = None) -> DbapiResult:
        values = params or {}
        compiled = _compiled(stmt, tuple(values))
        if compiled.processors:  # a copy only where a value is converted (a float column)
            values = dict(values)
            for name, process in compiled.processors.items():
                if name in values:
                    values[name] = process(values[name])
        return DbapiResult(self._raw.execute(compiled.sql, values))


# A forked child's copies of its parent's connection wrappers: kept referenced, never used or
# closed in the child (closing one would roll back the parent's handle from the wrong process).
_INHERITED: list[Any] = []


class LeanSqlite:
    """One DBAPI connection of a SQLite ledger's engine, for its appends (thread-safe: one
    transaction at a time; a forked child opens its own instead of sharing its parent's)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._pooled: Any = None
        self._raw: sqlite3.Connection | None = None

    def _after_fork(self) -> None:
        """In a forked child: leave the parent's connection (and pool) alone, start afresh —
        with a new lock too, in case another thread of the parent held it at the fork."""
        if self._pooled is not None:
            _INHERITED.append(self._pooled)
        self._pooled = self._raw = None
        self._engine.dispose(close=False)  # SQLAlchemy's advice for a forked child's pool
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _connection(self) -> sqlite3.Connection:
        if self._raw is None:
            # From the engine's pool: its connect hook set WAL, busy_timeout and autocommit
            # mode (``isolation_level = None``: we issue BEGIN IMMEDIATE ourselves).
            self._pooled = self._engine.raw_connection()
            self._raw = self._pooled.driver_connection
        assert self._raw is not None
        return self._raw

    def _drop(self) -> None:
        """Give up the connection after a failure that may have left it mid-transaction (a
        failed COMMIT, an interrupt): invalidated, so its lock goes; the next append opens
        another."""
        pooled, self._pooled, self._raw = self._pooled, None, None
        if pooled is not None:
            try:
                pooled.invalidate()
            except Exception:  # noqa: BLE001 - already broken: nothing more to release
                pass

    @contextmanager
    def begin(self) -> Iterator[DbapiConnection]:
        """One write transaction: ``BEGIN IMMEDIATE`` (writers queue for the lock, as on the
        SQLAlchemy path), committed when the block ends, rolled back if anything raises —
        a COMMIT that fails too: the write lock is never left held."""
        if self._pid != os.getpid():
            self._after_fork()
        with self._lock:
            raw = self._connection()
            try:
                if raw.in_transaction:  # never expected: a leftover is rolled back, not joined
                    raw.rollback()
                raw.execute("BEGIN IMMEDIATE")
                yield DbapiConnection(raw)
                raw.commit()
            except BaseException:
                try:
                    if raw.in_transaction:
                        raw.rollback()
                except BaseException:
                    self._drop()
                    raise
                if raw.in_transaction:
                    self._drop()
                raise

    def close(self) -> None:
        if self._pid != os.getpid():
            self._after_fork()
            return
        with self._lock:
            if self._pooled is not None:
                self._pooled.close()  # back to the pool, which the engine then disposes of
            self._pooled = self._raw = None
