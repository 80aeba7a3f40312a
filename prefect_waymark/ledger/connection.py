"""The ledger's connection layer: the database driver itself (the standard library's ``sqlite3``,
psycopg 3 for PostgreSQL), a small pool, one transaction at a time per connection.

No SQL toolkit sits between the ledger and its driver: a command that opens a ledger imports
``sqlite3`` (or psycopg) and this module, nothing else (issue 36: SQLAlchemy's import alone
was ~0.25 s of every command, its per-statement work most of an append's). The statements are
written once in :mod:`.sql`; :meth:`DbConnection.execute` hands them to the driver with their
``:name`` parameters as the driver wants them.

On SQLite each new connection gets the pragmas of :func:`set_ledger_pragmas` (WAL, a busy
timeout, the page size of a new file, …) and stays in autocommit mode, so that the ledger's
own BEGIN is the one SQLite sees: ``BEGIN IMMEDIATE`` for a write transaction (concurrent
writers queue for the lock instead of failing mid-way), a deferred ``BEGIN`` for a read (one
snapshot, writers go on). A forked child gets a pool of its own; its parent's connections are
kept referenced and never used or closed in the child.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from .lock_wait import lock_wait_seconds, watched

if TYPE_CHECKING:
    from .urls import LedgerTarget

__all__ = [
    "CHECKPOINT_BYTES",
    "PAGE_SIZE",
    "Database",
    "DbConnection",
    "DriverErrors",
    "Result",
    "set_ledger_pragmas",
]

#: The page size of a ledger file created from this version. Each append commits a few pages
#: to the WAL (the event and its indexes, the step's row and its key, the hold and its key):
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

#: Connections kept idle for reuse (more may be open at once: a thread never waits for one).
_POOL_SIZE = 5
#: A forked child's copies of its parent's connections: kept referenced, never used or closed
#: in the child (closing one would roll back the parent's handle from the wrong process).
_INHERITED: list[Any] = []
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def set_ledger_pragmas(raw: sqlite3.Connection) -> None:
    """The ledger's settings on a new SQLite connection: the page size of a new file
    (:data:`PAGE_SIZE`), autocommit mode (the ledger issues ``BEGIN IMMEDIATE`` itself: writers
    queue for the lock), a busy timeout of ``$WAYMARK_LEDGER_LOCK_SECONDS`` (default 60), WAL,
    ``synchronous=NORMAL`` (intents and receipts commit with ``FULL``:
    :meth:`Database.transaction`), a checkpoint every :data:`CHECKPOINT_BYTES` of WAL."""
    raw.isolation_level = None
    raw.execute(f"PRAGMA busy_timeout={round(lock_wait_seconds() * 1000)}")
    raw.execute(f"PRAGMA page_size={PAGE_SIZE}")  # before WAL: it writes a new file's header
    _wal(raw)
    raw.execute("PRAGMA synchronous=NORMAL")
    page_size = raw.execute("PRAGMA page_size").fetchone()[0]  # an older file's: 4 KiB
    raw.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BYTES // page_size}")


def _wal(raw: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, waiting for the lock it needs. A new file's first openers
    race to convert it, and SQLite answers the losers "database is locked" at once, without its
    busy timeout (the upgrade of a shared lock would deadlock): tried again until the ledger's
    lock wait (``$WAYMARK_LEDGER_LOCK_SECONDS``) is spent. An existing WAL file answers at once."""
    deadline = time.monotonic() + lock_wait_seconds()
    pause = 0.005
    while True:
        try:
            raw.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


@cache
def _pg_sql(sql: str) -> str:
    """``sql`` with its ``:name`` parameters as psycopg's ``%(name)s``."""
    return _PARAM.sub(r"%(\1)s", sql)


@cache
def _row_class(names: tuple[str, ...]) -> Any:
    """A row type with these columns, read by name (``row.state``) or position."""
    return namedtuple("Row", names, rename=True)  # noqa: PYI024


class DriverErrors(NamedTuple):
    """The driver's exception classes a ledger tells apart."""

    database: type[Exception]  # any error the database reported
    operational: type[Exception]  # locked, read-only, a full disk, a lost server, …
    integrity: type[Exception]  # a key taken


class Result:
    """The rows a statement returned (read at once) and how many rows it changed."""

    __slots__ = ("_names", "_rows", "rowcount")

    def __init__(self, cursor: Any) -> None:
        description = cursor.description
        if description is None:
            self._names: tuple[str, ...] = ()
            self._rows: list[Any] = []
        else:
            self._names = tuple(d[0] for d in description)
            self._rows = cursor.fetchall()
        # After the rows: sqlite3 counts a RETURNING statement's rows once it has run to its end.
        self.rowcount: int = cursor.rowcount

    def _typed(self, row: Any) -> Any:
        return _row_class(self._names)._make(row)

    def all(self) -> list[Any]:
        make = _row_class(self._names)._make
        return [make(r) for r in self._rows]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.all())

    def first(self) -> Any:
        return self._typed(self._rows[0]) if self._rows else None

    def one(self) -> Any:
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, got {len(self._rows)}")
        return self._typed(self._rows[0])

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalars(self) -> list[Any]:
        """The first column of every row."""
        return [r[0] for r in self._rows]


class DbConnection:
    """One driver connection, used by one thread at a time (taken from :class:`Database`'s
    pool for a transaction)."""

    __slots__ = ("backend", "raw")

    def __init__(self, raw: Any, backend: str) -> None:
        self.raw = raw
        self.backend = backend  # "sqlite" or "postgresql"

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> Result:
        """Run one statement of :mod:`.sql` (``:name`` parameters) with ``params``."""
        if self.backend == "sqlite":
            return Result(self.raw.execute(sql, params or {}))
        cur = self.raw.cursor()
        cur.execute(_pg_sql(sql), params or None)
        return Result(cur)

    def executemany(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run one statement once for each of ``rows``."""
        if not rows:
            return
        if self.backend == "sqlite":
            self.raw.executemany(sql, rows)
        else:
            self.raw.cursor().executemany(_pg_sql(sql), rows)

    def execute_raw(self, sql: str) -> Result:
        """A statement without parameters, as written (``LOCK TABLE``, ``SET LOCAL``, DDL)."""
        if self.backend == "sqlite":
            return Result(self.raw.execute(sql))
        cur = self.raw.cursor()
        cur.execute(sql)
        return Result(cur)


class Database:
    """A ledger database: its driver's connections, pooled, and transactions on them."""

    def __init__(self, target: LedgerTarget) -> None:
        self.target = target
        self.backend = target.backend
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._open: list[Any] = []  # every connection of this process still open
        self._pid = os.getpid()
        if self.backend == "sqlite":
            self.errors = DriverErrors(
                sqlite3.DatabaseError, sqlite3.OperationalError, sqlite3.IntegrityError
            )
        else:
            import psycopg

            self.errors = DriverErrors(
                psycopg.DatabaseError, psycopg.OperationalError, psycopg.IntegrityError
            )

    # -- connections -------------------------------------------------------------------
    def _new(self) -> Any:
        raw: Any
        if self.backend == "sqlite":
            raw = sqlite3.connect(
                self.target.database,
                uri=self.target.uri,
                check_same_thread=False,
                isolation_level=None,
            )
            try:
                set_ledger_pragmas(raw)
            except BaseException:
                raw.close()
                raise
        else:
            import psycopg

            raw = psycopg.connect(self.target.conninfo, autocommit=False)
        with self._lock:
            self._open.append(raw)
        return raw

    def _alive(self, raw: Any) -> bool:
        """A pooled PostgreSQL connection still answers (the server may have restarted)."""
        if self.backend == "sqlite":
            return True
        if raw.closed or raw.broken:
            return False
        try:
            raw.execute("SELECT 1")
            raw.rollback()
        except Exception:  # noqa: BLE001 - a dead connection: dropped, a new one opened
            return False
        except BaseException:
            self._discard(raw)
            raise
        return True

    def _forked(self) -> None:
        """In a forked child: the parent's connections stay referenced, never used here. The
        parent's lock is not taken (a thread of the parent may have held it at the fork)."""
        _INHERITED.extend(self._open)
        self._idle, self._open = [], []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _take(self) -> Any:
        if self._pid != os.getpid():
            self._forked()
        while True:
            with self._lock:
                raw = self._idle.pop() if self._idle else None
            if raw is None:
                return self._new()
            if self._alive(raw):
                return raw
            self._discard(raw)

    def _give_back(self, raw: Any) -> None:
        if self._pid != os.getpid():
            return  # opened before a fork: the parent's
        with self._lock:
            if len(self._idle) < _POOL_SIZE:
                self._idle.append(raw)
                return
        self._discard(raw)

    def _discard(self, raw: Any) -> None:
        with self._lock:
            if raw in self._open:
                self._open.remove(raw)
        try:
            raw.close()
        except Exception:  # noqa: BLE001, S110 - already broken: nothing left to close
            pass

    @contextmanager
    def connection(self) -> Iterator[DbConnection]:
        """A connection of the pool, outside any transaction (for settings, DDL checks)."""
        raw = self._take()
        try:
            yield DbConnection(raw, self.backend)
        except BaseException:
            self._discard(raw)
            raise
        self._give_back(raw)

    # -- transactions ------------------------------------------------------------------
    @contextmanager
    def transaction(self, *, write: bool, durable: bool = False) -> Iterator[DbConnection]:
        """One transaction, committed when the block ends, rolled back if anything raises.

        ``write``: on SQLite ``BEGIN IMMEDIATE`` (the write lock up front: concurrent writers
        queue instead of failing mid-way); a read begins deferred. ``durable``: the commit is on
        disk when it returns: SQLite commits with ``synchronous=FULL`` (the ledger's own
        ``NORMAL`` survives a killed process but not a power loss or an OS crash, which could
        take an intent back after its effect happened and let the next run do the effect
        again), PostgreSQL with ``synchronous_commit = on`` whatever the server, role or
        database sets."""
        raw = self._take()
        conn = DbConnection(raw, self.backend)
        sqlite = self.backend == "sqlite"
        full = durable and sqlite
        try:
            if full:
                raw.execute("PRAGMA synchronous=FULL")
            if sqlite and write:
                with watched(str(self.target.database)):  # another process's write lock
                    raw.execute("BEGIN IMMEDIATE")
            elif sqlite:
                raw.execute("BEGIN")
            elif durable:
                raw.execute("SET LOCAL synchronous_commit = on")
            yield conn
            if sqlite:
                raw.execute("COMMIT")
            else:
                raw.commit()
        except BaseException:
            self._end_failed(raw, full)
            raise
        if full and not self._restored(raw):
            return
        self._give_back(raw)

    def _end_failed(self, raw: Any, full: bool) -> None:
        """After an error inside a transaction: rolled back, then the connection pooled again
        (at ``synchronous=NORMAL``) or, if it cannot be, dropped."""
        try:
            if self.backend == "sqlite":
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
            else:
                raw.rollback()
        except Exception:  # noqa: BLE001 - broken: dropped, never pooled
            self._discard(raw)
            return
        except BaseException:  # a second Ctrl-C during the rollback: closed (its locks freed)
            self._discard(raw)
            raise
        if full and not self._restored(raw):
            return
        self._give_back(raw)

    def _restored(self, raw: Any) -> bool:
        """Back to the ledger's ``synchronous=NORMAL``; a connection that cannot be restored is
        dropped, never pooled at ``FULL``."""
        try:
            if raw.in_transaction:  # a COMMIT that failed may have left it open
                raw.execute("ROLLBACK")
            raw.execute("PRAGMA synchronous=NORMAL")
        except Exception:  # noqa: BLE001 - the pool opens a fresh connection instead
            self._discard(raw)
            return False
        return True

    # -- the end -----------------------------------------------------------------------
    def close(self) -> None:
        """Close every connection of this process (those in use end when their block ends)."""
        if self._pid != os.getpid():
            self._forked()  # the parent's connections are the parent's to close
            return
        with self._lock:
            idle, self._idle = self._idle, []
        for raw in idle:
            self._discard(raw)

    def never_close(self) -> None:
        """Leave this process's connections open until it ends, and never close them: closing
        the last SQLite connection checkpoints the WAL into the ledger's file, and when that
        file was made read-only (``chattr +i``) under SQLite's shared memory, the write into the
        mapped memory ends the process with SIGBUS — at once, or at the interpreter's exit when
        the objects are freed. One reference more than anything holds keeps each one alive (the
        run that found its ledger gone ends now; what it leaves open is the kernel's)."""
        import ctypes

        with self._lock:
            kept, self._idle, self._open = list(self._open), [], []
        for raw in kept:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(raw))
        _INHERITED.extend(kept)
