"""The ledger's lean path on SQLite: its statements straight through the standard library.

Through SQLAlchemy's ``Connection`` each statement of an append costs ~0.1 ms of
execution-context and transaction handling around ~0.02 ms of SQLite work, and importing
SQLAlchemy and SQLModel costs a ``waymark run`` or a check-in ~0.2 s of CPU. So a SQLite ledger
keeps one ``sqlite3`` connection (:class:`LeanSqlite`) and runs on it the SQLite text of the
ledger's statements (:mod:`.statements`, each checked against its SQLAlchemy form), and the
conformance suite (``tests/ledger/test_dbapi_conformance.py``) proves that both paths write the
same rows and refuse the same events. A rare command's SQLAlchemy statement (a rename, a close,
an archive, a migration) is compiled for SQLite where it runs, which imports SQLAlchemy then.

:class:`DbapiConnection` is the small part of SQLAlchemy's ``Connection`` the ledger uses:
``execute(statement, params)`` → a result with ``first()``, ``one()``, ``all()``,
``scalar_one()``, ``rowcount``, iteration, and ``dialect.name``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import LedgerError
from .row_cache import RowCache
from .statements import Stmt

__all__ = [
    "CHECKPOINT_BYTES",
    "PAGE_SIZE",
    "DbapiConnection",
    "DbapiResult",
    "LeanSqlite",
    "connect_sqlite",
    "set_ledger_pragmas",
]


#: The page size of a ledger file created from this version. Each append commits ~7 pages to
#: the WAL (the event and its two indexes, the step's row and its key, the hold and its key):
#: 2 KiB pages write half the bytes of SQLite's default 4 KiB, +13-28% step events a second
#: here (``bench/bench_ledger.py``), for ~+2 ms reading 10,000 step rows. A step's row is ~0.5
#: KiB of JSON (more with outputs, receipts, an error's output tail): one over ~2 KB goes on
#: overflow pages, as one over ~4 KB did. Set before the file's first write; an existing file
#: keeps the page size it was created with (SQLite ignores the PRAGMA then).
PAGE_SIZE = 2048
#: A connection checkpoints the WAL once it holds this many bytes (SQLite's default is 1000
#: pages: ~4 MB of 4 KiB pages). Counted in pages, the default would checkpoint (an fsync of
#: the file) twice as often on 2 KiB pages: inside the first run of a 10,000-step plan, whose
#: ``run_started`` holds the plan (~0.8 MB), +0.08-0.1 s measured (``bench/scale_run.py``).
CHECKPOINT_BYTES = 4096 * 1000


def set_ledger_pragmas(raw: sqlite3.Connection) -> None:
    """The ledger's settings on a new SQLite connection, on either path: the page size of a
    new file (:data:`PAGE_SIZE`), autocommit mode (the ledger issues ``BEGIN IMMEDIATE``
    itself: writers queue for the lock), a 60 s busy timeout, WAL, ``synchronous=NORMAL``
    (intents and receipts commit with ``FULL``: :mod:`.receipts`), a checkpoint every
    :data:`CHECKPOINT_BYTES` of WAL."""
    raw.isolation_level = None
    raw.execute("PRAGMA busy_timeout=60000")
    raw.execute(f"PRAGMA page_size={PAGE_SIZE}")  # before WAL: it writes a new file's header
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=NORMAL")
    page_size = raw.execute("PRAGMA page_size").fetchone()[0]  # an older file's: 4 KiB
    raw.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BYTES // page_size}")


def connect_sqlite(path: Path | str) -> sqlite3.Connection:
    """A connection to the ledger file with the ledger's settings (:func:`set_ledger_pragmas`),
    usable from any thread (:class:`LeanSqlite` serialises its use)."""
    raw = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
    try:
        set_ledger_pragmas(raw)
    except BaseException:
        raw.close()
        raise
    return raw


class _Dialect:
    name = "sqlite"


_ROW_TYPES: dict[tuple[str, ...], type] = {}


def _row_type(names: tuple[str, ...]) -> type:
    """A row class per column list, made once (``namedtuple`` builds a class: ~80 µs)."""
    found = _ROW_TYPES.get(names)
    if found is None:
        found = _ROW_TYPES[names] = namedtuple("Row", names, rename=True)
    return found


def _only(rows: Sequence[Any]) -> Any:
    """The one row of ``rows``; a ``DatabaseError`` if there are none or several."""
    if len(rows) != 1:
        raise sqlite3.DatabaseError(f"expected one row, got {len(rows)}")
    return rows[0]


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

    def all(self) -> list[Any]:
        return list(self)

    def one(self) -> Any:
        return _only(self.all())

    def scalar_one(self) -> Any:
        """The one row's first value (an event's ``seq`` on every append: no row object)."""
        rows = self._cur.fetchall()
        self._cur.close()
        return _only(rows)[0]

    def __iter__(self) -> Iterator[Any]:
        for raw in self._cur.fetchall():
            yield self._make(raw)
        self._cur.close()


def _compile(stmt: Any, keys: Sequence[str]) -> Any:
    """A rare command's SQLAlchemy statement compiled for SQLite (an ``IN`` list rendered as
    one parameter per value); imports SQLAlchemy."""
    from sqlalchemy.dialects import sqlite

    return stmt.compile(
        dialect=sqlite.dialect(paramstyle="named"),
        column_keys=list(keys),
        compile_kwargs={"render_postcompile": True},
    )


def _params(done: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of one execution: the statement's own values and ``given``, converted
    as SQLAlchemy would (a float column's ``to_float``)."""
    return _converted(done.construct_params(dict(given)), _processors(done))


def _processors(done: Any) -> Mapping[str, Any]:
    """The compiled statement's value converters, by parameter (none for most)."""
    return getattr(done, "_bind_processors", None) or {}


def _converted(row: Mapping[str, Any], procs: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` as a new dict, each value with a converter converted (``None`` stays)."""
    return {k: procs[k](v) if k in procs and v is not None else v for k, v in row.items()}


class DbapiConnection:
    """A ``sqlite3`` connection inside one transaction (or one read), answering like
    SQLAlchemy's."""

    dialect = _Dialect()

    def __init__(self, raw: sqlite3.Connection, rows: RowCache | None = None) -> None:
        self.raw = raw
        #: In an append's transaction: what this connection's appends wrote last (row_cache).
        self.rows = rows

    def execute(
        self, stmt: Any, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
    ) -> DbapiResult:
        if isinstance(stmt, Stmt):
            return DbapiResult(self.raw.execute(stmt.sqlite, params or {}))
        if isinstance(params, Sequence):  # many rows (an INSERT of each: executemany)
            if not params:
                raise ValueError("no rows to execute the statement with")
            done = _compile(stmt, list(params[0]))
            if set(done.construct_params(dict(params[0]))) == set(params[0]):
                # The rows' keys are the statement's parameters (an INSERT of columns): the
                # rows as they are, a converted column's values converted.
                procs = _processors(done)
                rows = [_converted(p, procs) for p in params]
            else:
                rows = [_params(done, p) for p in params]
            return DbapiResult(self.raw.executemany(done.string, rows))
        done = _compile(stmt, list(params or {}))
        return DbapiResult(self.raw.execute(done.string, _params(done, params or {})))

    def exec_driver_sql(self, sql: str) -> DbapiResult:
        return DbapiResult(self.raw.execute(sql))


# A forked child's copies of its parent's connection wrappers: kept referenced, never used or
# closed in the child (closing one would roll back the parent's handle from the wrong process).
_INHERITED: list[Any] = []


class LeanSqlite:
    """The one ``sqlite3`` connection of a SQLite ledger (thread-safe: one transaction or read
    at a time; a forked child opens its own instead of sharing its parent's)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._raw: sqlite3.Connection | None = None
        self._owner: int | None = None  # the thread inside a transaction or read now
        self._rows = RowCache()  # what the appends wrote last: see begin(rows=True)

    @contextmanager
    def _held(self) -> Iterator[None]:
        """The connection is this thread's alone until the block ends. A read or transaction
        begun inside another on the same thread would wait for itself forever (or roll the
        outer one back): refused instead."""
        if self._pid != os.getpid():
            self._after_fork()
        if self._owner == threading.get_ident():
            raise LedgerError(
                f"the ledger {self.path} was used again from inside one of its own transactions "
                "(a nested read or write on the same thread): not supported"
            )
        with self._lock:
            self._owner = threading.get_ident()
            try:
                yield
            finally:
                self._owner = None

    def _after_fork(self) -> None:
        """In a forked child: leave the parent's connection alone, start afresh — with a new
        lock too, in case another thread of the parent held it at the fork."""
        if self._raw is not None:
            _INHERITED.append(self._raw)
        self._raw = None
        self._lock = threading.Lock()
        self._owner = None
        self._pid = os.getpid()

    def _connection(self) -> sqlite3.Connection:
        if self._raw is None:
            # data_version counts per connection: what an earlier one kept (before a close, a
            # failure, a fork) is not checkable.
            self._rows.clear()
            self._raw = connect_sqlite(self.path)
        return self._raw

    def _drop(self) -> None:
        """Give up the connection after a failure that may have left it mid-transaction (a
        failed COMMIT, an interrupt) or at ``synchronous=FULL``: closed, so its lock goes; the
        next use opens another."""
        raw, self._raw = self._raw, None
        if raw is not None:
            try:
                raw.close()
            except Exception:  # noqa: BLE001 - already broken: nothing more to release
                pass

    @contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[DbapiConnection]:
        """The connection for reads: each statement sees the last commit, or with
        ``snapshot`` all of them the same state (one deferred transaction: writers go on)."""
        with self._held():
            raw = self._connection()
            if raw.in_transaction:  # never expected: a leftover is rolled back, not read in
                raw.rollback()
            if not snapshot:
                yield DbapiConnection(raw)
                return
            raw.execute("BEGIN")
            try:
                yield DbapiConnection(raw)
            finally:
                if raw.in_transaction:
                    raw.rollback()

    @contextmanager
    def begin(self, *, durable: bool = False, rows: bool = False) -> Iterator[DbapiConnection]:
        """One write transaction: ``BEGIN IMMEDIATE`` (writers queue for the lock, as on the
        SQLAlchemy path), committed when the block ends, rolled back if anything raises —
        a COMMIT that fails too: the write lock is never left held. ``durable``: committed
        with ``synchronous=FULL`` (on disk when it returns), then back to ``NORMAL``; a
        connection that cannot be put back is dropped, never kept at ``FULL``. ``rows``: an
        append's transaction, which may use and keep what earlier appends wrote
        (:mod:`.row_cache`); any other transaction first forgets it."""
        with self._held():
            raw = self._connection()
            cache = self._rows
            try:
                if raw.in_transaction:  # never expected: a leftover is rolled back, not joined
                    raw.rollback()
                if durable:
                    raw.execute("PRAGMA synchronous=FULL")
                raw.execute("BEGIN IMMEDIATE")
                if rows:
                    cache.enter(raw)
                else:
                    cache.clear()
                yield DbapiConnection(raw, cache if rows else None)
                raw.commit()
                if rows:
                    cache.committed()
            except BaseException:
                cache.clear()
                try:
                    if raw.in_transaction:
                        raw.rollback()
                except BaseException:
                    self._drop()
                    raise
                if raw.in_transaction:
                    self._drop()
                raise
            finally:
                if durable and self._raw is raw:
                    try:
                        raw.execute("PRAGMA synchronous=NORMAL")
                    except Exception:  # noqa: BLE001 - the transaction's own error counts
                        self._drop()

    def close(self) -> None:
        if self._pid != os.getpid():
            self._after_fork()
            return
        with self._held():
            if self._raw is not None:
                self._raw.close()
            self._raw = None
