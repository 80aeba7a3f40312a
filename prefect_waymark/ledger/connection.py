"""The ledger's connection layer: SQLAlchemy's engine for SQLite and PostgreSQL alike, with
SQLite's settings kept through the engine's events.

On SQLite each new connection gets the pragmas of :func:`set_ledger_pragmas` (WAL, a busy
timeout, the page size of a new file, …) and is left in autocommit mode, so that the ledger's
own BEGIN is the one SQLite sees: ``BEGIN IMMEDIATE`` for a write transaction (concurrent
writers queue for the lock instead of failing mid-way), a deferred ``BEGIN`` for a connection
marked as reading (:data:`BEGIN_OPTION`). A forked child gets a pool of its own
(:meth:`.SqlLedger._engine`).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event

from .lock_wait import lock_wait_seconds, watched

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = [
    "BEGIN_OPTION",
    "CHECKPOINT_BYTES",
    "PAGE_SIZE",
    "make_engine",
    "restore_synchronous",
    "set_ledger_pragmas",
    "set_synchronous",
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

#: The execution option that names a SQLite connection's BEGIN (the engine's ``begin`` event).
BEGIN_OPTION = "waymark_begin"


def set_ledger_pragmas(raw: sqlite3.Connection) -> None:
    """The ledger's settings on a new SQLite connection: the page size of a new file
    (:data:`PAGE_SIZE`), autocommit mode (the ledger issues ``BEGIN IMMEDIATE`` itself: writers
    queue for the lock), a busy timeout of ``$WAYMARK_LEDGER_LOCK_SECONDS`` (default 60), WAL,
    ``synchronous=NORMAL`` (intents and receipts commit with ``FULL``:
    :meth:`.SqlLedger._write`), a checkpoint every :data:`CHECKPOINT_BYTES` of WAL."""
    raw.isolation_level = None
    raw.execute(f"PRAGMA busy_timeout={round(lock_wait_seconds() * 1000)}")
    raw.execute(f"PRAGMA page_size={PAGE_SIZE}")  # before WAL: it writes a new file's header
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=NORMAL")
    page_size = raw.execute("PRAGMA page_size").fetchone()[0]  # an older file's: 4 KiB
    raw.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BYTES // page_size}")


def make_engine(url: str, sqlite: bool) -> Engine:
    """The ledger's engine: on SQLite with the ledger's pragmas and its own BEGIN."""
    if not sqlite:
        return create_engine(url, pool_pre_ping=True)
    # No cap on connections beyond the pool's five: a thread waits for SQLite's write lock
    # (the busy timeout), never for a pool connection (a pool timeout of its own).
    engine = create_engine(url, max_overflow=-1)
    where = engine.url.database or url

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        set_ledger_pragmas(dbapi_conn)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A write takes the lock up front: concurrent writers queue instead of failing mid-way.
        # A read (execution option BEGIN_OPTION) begins a deferred transaction. Straight on the
        # driver's connection: a statement of the connection's own, with no result to read.
        begin = conn.get_execution_options().get(BEGIN_OPTION, "BEGIN IMMEDIATE")
        if begin == "BEGIN":
            conn.connection.driver_connection.execute(begin)  # type: ignore[union-attr]
            return
        with watched(where):  # another process's write lock: the wait is announced
            conn.connection.driver_connection.execute(begin)  # type: ignore[union-attr]

    return engine


def set_synchronous(conn: Connection, level: str) -> None:
    """``PRAGMA synchronous`` on a SQLite connection outside any transaction (its DBAPI
    connection is in autocommit mode: the ledger issues BEGIN itself)."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    raw.execute(f"PRAGMA synchronous={level}")


def restore_synchronous(conn: Connection) -> None:
    """Back to the ledger's ``NORMAL`` before the connection returns to the pool. A COMMIT that
    failed may have left the transaction open (SQLite refuses the pragma inside one): rolled
    back first; a connection that cannot be restored is dropped, never pooled at FULL. Never
    raises: the transaction's own error, if any, is the one that counts."""
    try:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        if raw.in_transaction:
            raw.rollback()
        raw.execute("PRAGMA synchronous=NORMAL")
    except Exception:  # noqa: BLE001 - broken: the pool opens a fresh connection instead
        conn.invalidate()
