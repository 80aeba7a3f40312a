"""The SQL ledger: SQLite (WAL, the embedded default) or PostgreSQL through psycopg 3.

A SQLite ledger file runs on the standard library's ``sqlite3`` (``ledger/dbapi_conn.py``, the
statements of ``ledger/statements.py``): a run, a check-in or a read imports no SQLAlchemy.
PostgreSQL, a SQLite URL with query options and ``lean=False`` go through SQLAlchemy's engine.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import BranchBusyError, LedgerError, LedgerNotFound
from .base import Ledger, event_kind, this_host
from .dbapi_conn import LeanSqlite, set_ledger_pragmas
from .events import RELEASE_EVENT_KINDS, STEP_EVENT_KINDS, EventKind, ProgressEvent
from .migrations import migrate, new_ledger_meta
from .plain_rows import new_state_fields
from .plan_archive import PlanArchive
from .plan_close import GUARDED_KINDS, PlanCloses, refuse_if_stopped
from .plan_rename import PlanRenames
from .receipts import SqlReceipts
from .row_cache import RowCache
from .schema import (
    LEDGER_ID_KEY,
    META,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    STEPS,
    check_schema_version,
    event_from_row,
    event_values,
    kind_names,
)
from .sql_reads import SqlReads
from .sqlite_ddl import create_missing_tables, existing_tables
from .sqlite_reader import sqlite_path
from .statements import (
    CLAIM_META,
    CLAIM_STEP,
    HOLDER,
    INSERT_EVENT,
    META_VALUE,
    META_VALUE_LOCKED,
    RELEASE_HOLD,
    RENEW,
    STEP_STATE,
    TAKE_HOLD,
    UPDATE_STEP,
    table,
)
from .step_state import StepState, apply_event, check_status_transition, folded_json, row_fields
from .urls import check_ledger_url

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = ["SqlLedger"]


def _sqlite_engine(url: str) -> Engine:
    from sqlalchemy import create_engine, event

    engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        set_ledger_pragmas(dbapi_conn)  # the sqlite3 path's settings: we issue BEGIN ourselves

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Take the write lock up front: concurrent writers queue instead of failing mid-way.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class SqlLedger(SqlReads, SqlReceipts, PlanRenames, PlanCloses, PlanArchive, Ledger):
    """A :class:`Ledger` on any SQLAlchemy URL; tested on SQLite and PostgreSQL."""

    def __init__(self, url: str, *, create: bool = True, lean: bool = True) -> None:
        """``lean`` (a SQLite file): everything goes through one ``sqlite3`` connection
        (``ledger/dbapi_conn.py``) instead of SQLAlchemy — the same statements, ~3x the append
        rate, no SQLAlchemy import; ``lean=False`` keeps SQLAlchemy's path (the conformance
        suite runs both)."""
        self.url = check_ledger_url(url)  # a malformed or in-memory URL: LedgerUrlError
        self._lean: LeanSqlite | None = None
        self._sa_engine: Engine | None = None
        self._sqlite = url.split(":", 1)[0].split("+", 1)[0].lower() == "sqlite"
        if self._sqlite:
            path = sqlite_path(url) if lean else None
            self._check_sqlite_file(path or self._sa_database(), create)
            if path is not None:
                self._lean = LeanSqlite(path)
        try:
            if self._lean is not None:
                self._prepare_lean(create)
            else:
                self._prepare(create)
        except sqlite3.DatabaseError as exc:  # "file is not a database", a locked file, …
            self.close()
            raise LedgerError(f"cannot open the ledger {self._safe_url()}: {exc}") from exc
        except Exception as exc:
            self.close()
            if self._lean is None:
                from sqlalchemy.exc import DatabaseError

                if isinstance(exc, DatabaseError):  # not only OperationalError
                    orig = exc.orig
                    raise LedgerError(f"cannot open the ledger {self._safe_url()}: {orig}") from exc
            raise

    @property
    def _engine(self) -> Engine:
        """SQLAlchemy's engine (PostgreSQL, ``lean=False``), made on first use."""
        if self._sa_engine is None:
            if self._sqlite:
                self._sa_engine = _sqlite_engine(self.url)
            else:
                from sqlalchemy import create_engine
                from sqlalchemy.exc import SQLAlchemyError

                try:
                    self._sa_engine = create_engine(self.url, pool_pre_ping=True)
                except (SQLAlchemyError, ImportError) as exc:
                    raise LedgerError(f"cannot open the ledger {self._safe_url()}: {exc}") from exc
        return self._sa_engine

    def _sa_database(self) -> Path | None:
        from sqlalchemy.engine import make_url

        db = make_url(self.url).database or ""
        return Path(db) if db and db != ":memory:" else None

    @staticmethod
    def _check_sqlite_file(path: Path | None, create: bool) -> None:
        if path is None:
            return
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"cannot create the ledger folder {path.parent}: {exc}") from exc
            if path.parent.exists() and not os.access(path.parent, os.W_OK):
                raise LedgerError(f"cannot write the ledger at {path}: folder not writable")
        elif not path.exists():
            raise LedgerNotFound(f"no ledger at {path}")

    def _safe_url(self) -> str:
        if self._lean is not None:
            return self.url  # a file URL: no password to hide
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)

    def _prepare_lean(self, create: bool) -> None:
        """:meth:`_prepare` on the ``sqlite3`` connection: the tables from their DDL text."""
        assert self._lean is not None
        # Only an opener that may create (a run) takes the write lock and migrates.
        with self._lean.begin() if create else self._lean.read() as conn:
            if create:
                create_missing_tables(conn.raw)
            elif META.name not in existing_tables(conn.raw):
                raise LedgerNotFound(f"no ledger tables in {self._safe_url()}")
            self._prepare_rows(cast("Connection", conn), create)

    def _prepare(self, create: bool) -> None:
        from sqlalchemy import inspect

        from ._tables import metadata

        if create:
            metadata.create_all(self._engine)
        elif not inspect(self._engine).has_table(META.name):
            raise LedgerNotFound(f"no ledger tables in {self._safe_url()}")
        with self._engine.begin() as conn:
            # Only an opener that may create (a run) locks the version row and migrates: one
            # that reads or records a decision works with the schema as it is (schema 2 only
            # added meta rows), so a read-only role or a standby can still read the ledger.
            self._prepare_rows(conn, create)

    def _prepare_rows(self, conn: Connection, create: bool) -> None:
        """The schema version (written for a new ledger, migrated for an old one when
        ``create``) and the ledger's identity."""
        found = self._version(conn, lock=create)
        if found is None:
            if not create:
                raise LedgerNotFound(f"no ledger in {self._safe_url()} (no schema version)")
            for key, value in new_ledger_meta().items():  # a concurrent creator may be first
                conn.execute(CLAIM_META, {"key": key, "value": value})
            found = self._version(conn, lock=True)
            assert found is not None
        check_schema_version(found, self._safe_url())
        if found < SCHEMA_VERSION and create:
            migrate(conn, found, self._safe_url())  # LedgerError: rolled back, unchanged
        row = conn.execute(META_VALUE, {"p_key": LEDGER_ID_KEY}).first()
        self.ledger_id = str(row.value) if row is not None else None

    @staticmethod
    def _version(conn: Connection, *, lock: bool) -> int | None:
        """The stored schema version; with ``lock``, its row locked until the transaction ends
        (PostgreSQL; SQLite holds the write lock already): concurrent migrations queue here."""
        q = META_VALUE_LOCKED if lock else META_VALUE
        row = conn.execute(q, {"p_key": SCHEMA_VERSION_KEY}).first()
        return None if row is None else int(row.value)

    @contextmanager
    def _write(self, *, durable: bool = False) -> Iterator[Connection]:
        """One write transaction; ``durable``: on disk when it returns (SQLite commits it with
        ``synchronous=FULL``, PostgreSQL with ``synchronous_commit = on``: intents, receipts)."""
        if self._lean is None:
            with self._sa_write(durable=durable) as conn:
                yield conn
            return
        try:
            with self._lean.begin(durable=durable) as lean:
                yield cast("Connection", lean)  # answers like SQLAlchemy's connection
        except sqlite3.IntegrityError:
            raise  # a constraint said no: the statement's own error, as on SQLAlchemy's path
        except sqlite3.DatabaseError as exc:  # locked, read-only, not a database, …
            raise LedgerError(f"cannot write the ledger {self._safe_url()}: {exc}") from exc

    # -- writes --------------------------------------------------------------------------
    def append(self, event: ProgressEvent, *, lease_seconds: float = 60.0) -> ProgressEvent:
        if type(event.kind) is not EventKind:  # built without validation (model_construct)
            event = event.model_copy(update={"kind": event_kind(event.kind)})
        if self._lean is not None:
            try:
                with self._lean.begin(rows=True) as lean:
                    # The same statements on a DBAPI connection that answers like SQLAlchemy's.
                    return self._append(cast("Connection", lean), event, lease_seconds)
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot write the ledger {self._safe_url()}: {exc}") from exc
        with self._sa_write() as conn:
            return self._append(conn, event, lease_seconds)

    def _append(self, conn: Connection, ev: ProgressEvent, lease_seconds: float) -> ProgressEvent:
        # An append's own transaction on the lean path: what earlier appends wrote (row_cache).
        rows: RowCache | None = getattr(conn, "rows", None)
        fields: dict[str, Any] | None = None
        new_row = False
        key = {"p_plan": ev.plan_id, "p_step": ev.step_id}
        if ev.kind in STEP_EVENT_KINDS:
            if ev.step_id is None:
                raise LedgerError(f"a {ev.kind} event needs a step_id")
            if ev.kind == EventKind.step_started:
                self._take_hold(conn, ev, lease_seconds)
            fields = rows.take(ev.plan_id, ev.step_id) if rows is not None else None
            if fields is None:
                fields, new_row = self._step_fields(conn, ev, key, rows is not None)
            status = fields["status"] if fields is not None else None
            check_status_transition(status, ev)
            if ev.kind in RELEASE_EVENT_KINDS or (
                ev.kind in (EventKind.step_needs_review, EventKind.step_blocked)
                and status == "in_progress"
            ):
                self._release_hold(conn, ev, fields["branch"] if fields is not None else None)
        if ev.kind in GUARDED_KINDS and not (rows is not None and rows.is_open(ev.plan_id)):
            # Last, after the hold, the step row and (for an intent) the receipt row: on
            # PostgreSQL a rename's or a close's table locks have ordered us after it by now.
            refuse_if_stopped(conn, ev.plan_id, ev.kind)
            if rows is not None and ev.kind != EventKind.plan_closed:
                rows.saw_open(ev.plan_id)
        values = event_values(ev)
        seq = conn.execute(INSERT_EVENT, values).scalar_one()
        stored = ev.model_copy(update={"seq": seq})
        if ev.kind in STEP_EVENT_KINDS:  # folded from the event as stored: what a rebuild gives
            assert ev.step_id is not None
            if fields is None:
                fields = new_state_fields(ev.step_id)
            state = folded_json(fields, ev, values["at"], values["data"])
            row = {"last_seq": seq, "state": state}
            new = {"plan_id": ev.plan_id, "step_id": ev.step_id, **row} if new_row else None
            if new is None or conn.execute(CLAIM_STEP, new).rowcount != 1:
                conn.execute(UPDATE_STEP, {**key, **row})
            if rows is not None:
                rows.keep(ev.plan_id, ev.step_id, fields, values["data"])
        return stored

    @staticmethod
    def _step_fields(
        conn: Connection, ev: ProgressEvent, key: dict[str, Any], locked: bool
    ) -> tuple[dict[str, Any] | None, bool]:
        """The step's fields as its projection row holds them (``None``: no row or an empty
        one), and whether the row is to be inserted. ``locked``: this transaction holds the
        database's write lock (SQLite), so a new step's row is inserted with its state at the
        end; else an empty placeholder row is inserted now, to be locked (what PostgreSQL
        needs; every path but a SQLite append's own transaction does so)."""
        row = conn.execute(STEP_STATE, key).first()
        if row is None and locked:
            return None, True
        if row is None:
            # A step's first event inserts an empty projection row first, so that SELECT
            # ... FOR UPDATE has a row to lock: a concurrent first event for the same step
            # then waits instead of failing on the primary key (PostgreSQL).
            placeholder = {"plan_id": ev.plan_id, "step_id": ev.step_id, "last_seq": 0}
            claimed = conn.execute(CLAIM_STEP, {**placeholder, "state": ""}).rowcount == 1
            # Our own placeholder (locked by this transaction until it ends) is empty; only
            # when a concurrent first event inserted it first is there a state to re-read.
            row = None if claimed else conn.execute(STEP_STATE, key).first()
        return row_fields(row.state if row else None, ev.step_id or ""), False

    def _take_hold(self, conn: Connection, ev: ProgressEvent, lease_seconds: float) -> None:
        branch = ev.branch or "main"
        values = {
            "plan_id": ev.plan_id,
            "branch": branch,
            "step_id": ev.step_id,
            "run_id": ev.run_id or "",
            "host": str(ev.data.get("host") or this_host()),
            "pid": int(ev.data.get("pid") or os.getpid()),
            "since": ev.at.isoformat(),
            "lease_until": time.time() + lease_seconds,
        }
        # ON CONFLICT DO NOTHING: the (plan_id, branch) primary key still decides who holds the
        # slot; a loser gets no row back instead of an error that would abort a PostgreSQL
        # transaction. Another SQL back-end: the primary key raises inside a savepoint.
        if conn.dialect.name == "sqlite" or TAKE_HOLD.sa(conn.dialect.name) is not None:
            taken = conn.execute(TAKE_HOLD, values).first() is not None
        else:
            from sqlalchemy import insert
            from sqlalchemy.exc import IntegrityError

            try:
                with conn.begin_nested():
                    conn.execute(insert(table("waymark_holds")), values)
                taken = True
            except IntegrityError:
                taken = False
        if not taken:
            holder = conn.execute(HOLDER, {"p_plan": ev.plan_id, "p_branch": branch}).first()
            raise BranchBusyError(
                ev.plan_id,
                branch,
                holder.step_id if holder else "?",
                holder.run_id if holder else "?",
            )

    def _release_hold(self, conn: Connection, ev: ProgressEvent, state_branch: str | None) -> None:
        branch = ev.branch or state_branch or "main"
        owner = ev.data.get("dead_run") if ev.kind == EventKind.step_interrupted else ev.run_id
        deleted = conn.execute(
            RELEASE_HOLD,
            {"p_plan": ev.plan_id, "p_branch": branch, "p_step": ev.step_id, "p_run": owner or ""},
        ).rowcount
        if deleted != 1:
            raise LedgerError(
                f"step {ev.step_id!r} of plan {ev.plan_id!r}: branch {branch!r} is not held by run "
                f"{owner}; another run took it over (its lease ran out?)"
            )

    def renew(self, run_id: str, lease_seconds: float) -> int:
        with self._write() as conn:
            params = {"p_run": run_id, "lease_until": time.time() + lease_seconds}
            return int(conn.execute(RENEW, params).rowcount)

    @staticmethod
    def _fold(events: list[ProgressEvent]) -> tuple[dict[str, StepState], dict[str, int]]:
        states: dict[str, StepState] = {}
        last: dict[str, int] = {}
        for ev in events:
            assert ev.step_id is not None and ev.seq is not None
            states[ev.step_id] = apply_event(states.get(ev.step_id), ev)
            last[ev.step_id] = ev.seq
        return states, last

    def rebuild(self, plan_id: str, *, write: bool = False) -> dict[str, StepState]:
        if not write:
            return self._fold(self.events(plan_id, kinds=STEP_EVENT_KINDS))[0]
        from sqlalchemy import delete, select

        from ._tables import insert_step_states

        ev, steps = table("waymark_events"), table("waymark_steps")
        # Read and rewrite in one transaction that keeps appends out meanwhile (SQLite: the
        # BEGIN IMMEDIATE write lock; PostgreSQL: a lock on the projection table).
        with self._write() as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"LOCK TABLE {STEPS.name} IN SHARE ROW EXCLUSIVE MODE")
            q = select(ev).where(
                ev.c.plan_id == plan_id, ev.c.kind.in_(kind_names(STEP_EVENT_KINDS))
            )
            states, last = self._fold(
                [event_from_row(r) for r in conn.execute(q.order_by(ev.c.seq))]
            )
            conn.execute(delete(steps).where(steps.c.plan_id == plan_id))
            insert_step_states(conn, plan_id, states, last)
        return states

    def close(self) -> None:
        if self._lean is not None:
            self._lean.close()
        if self._sa_engine is not None:
            self._sa_engine.dispose()
