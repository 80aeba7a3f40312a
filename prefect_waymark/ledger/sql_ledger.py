"""The SQL ledger: SQLite (WAL, the embedded default) or PostgreSQL through psycopg 3."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from sqlalchemy import bindparam, delete, event, func, insert, inspect, select, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError, SQLAlchemyError

from ..errors import BranchBusyError, LedgerError, LedgerNotFound
from ._tables import EventRow, HoldRow, MetaRow, StepRow, insert_step_states, metadata
from .base import Hold, Ledger, event_kind, this_host
from .dbapi_conn import LeanSqlite
from .events import RELEASE_EVENT_KINDS, STEP_EVENT_KINDS, EventKind, ProgressEvent
from .migrations import migrate, new_ledger_meta
from .plan_archive import PlanArchive
from .plan_close import GUARDED_KINDS, PlanCloses, refuse_if_stopped
from .plan_rename import PlanRenames
from .receipts import SqlReceipts
from .schema import (
    EVENTS,
    LEDGER_ID_KEY,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    STEPS,
    check_schema_version,
    event_from_row,
    event_values,
    kind_names,
    states_by_step,
)
from .step_state import StepState, apply_event, check_status_transition, folded_json, row_fields
from .upserts import insert_ignoring_conflict
from .urls import check_ledger_url

__all__ = ["SqlLedger"]

_ev = EventRow.__table__  # type: ignore[attr-defined]
_steps = StepRow.__table__  # type: ignore[attr-defined]
_holds = HoldRow.__table__  # type: ignore[attr-defined]
_meta = MetaRow.__table__  # type: ignore[attr-defined]

# Events are append-only in the database too: triggers refuse UPDATE, DELETE (and TRUNCATE),
# created together with the events table.
_E = EVENTS.name
_APPEND_ONLY = f"{_E} is append-only: events are never updated or deleted"
_TRIGGERS = {
    "sqlite": [
        f"CREATE TRIGGER {_E}_no_update BEFORE UPDATE ON {_E} "
        f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
        f"CREATE TRIGGER {_E}_no_delete BEFORE DELETE ON {_E} "
        f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
    ],
    "postgresql": [
        f"CREATE OR REPLACE FUNCTION {_E}_append_only() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '{_APPEND_ONLY}'; END $$",
        f"CREATE TRIGGER {_E}_no_change BEFORE UPDATE OR DELETE ON {_E} "
        f"FOR EACH ROW EXECUTE FUNCTION {_E}_append_only()",
        f"CREATE TRIGGER {_E}_no_truncate BEFORE TRUNCATE ON {_E} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {_E}_append_only()",
    ],
}


@event.listens_for(_ev, "after_create")
def _append_only_triggers(_table: Any, connection: Connection, **_kw: Any) -> None:
    for statement in _TRIGGERS.get(connection.dialect.name, []):
        connection.exec_driver_sql(statement)


# The append path's statements, built once: SQLAlchemy then reuses their compiled form, which
# more than doubles the append rate over building each statement per event.
_INSERT_EVENT = insert(_ev).returning(_ev.c.seq)
_STEP_STATE = (
    select(_steps.c.state)
    .where(_steps.c.plan_id == bindparam("p_plan"), _steps.c.step_id == bindparam("p_step"))
    .with_for_update()
)
_INSERT_STEP = insert(_steps)


# A step's first event inserts an empty projection row first, so that SELECT ... FOR UPDATE has a
# row to lock: a concurrent first event for the same step then waits instead of failing on the
# primary key (PostgreSQL) — the loser re-reads the winner's state and is checked against it.
def _claim_step(dialect: str) -> Any:
    return insert_ignoring_conflict(dialect, _steps)


_UPDATE_STEP = (
    update(_steps)
    .where(_steps.c.plan_id == bindparam("p_plan"), _steps.c.step_id == bindparam("p_step"))
    .values(last_seq=bindparam("last_seq"), state=bindparam("state"))
)


# ON CONFLICT DO NOTHING: the (plan_id, branch) primary key still decides who holds the slot;
# a loser gets no row back instead of an error that would abort a PostgreSQL transaction.
def _take_hold_stmt(dialect: str) -> Any:
    return insert_ignoring_conflict(dialect, _holds, _holds.c.branch)


_HOLDER = select(_holds.c.step_id, _holds.c.run_id).where(
    _holds.c.plan_id == bindparam("p_plan"), _holds.c.branch == bindparam("p_branch")
)
_RELEASE_HOLD = delete(_holds).where(
    _holds.c.plan_id == bindparam("p_plan"),
    _holds.c.branch == bindparam("p_branch"),
    _holds.c.step_id == bindparam("p_step"),
    _holds.c.run_id == bindparam("p_run"),
)


def _sqlite_engine(url: str) -> Engine:
    from sqlalchemy import create_engine

    engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=60000")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Take the write lock up front: concurrent writers queue instead of failing mid-way.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class SqlLedger(SqlReceipts, PlanRenames, PlanCloses, PlanArchive, Ledger):
    """A :class:`Ledger` on any SQLAlchemy URL; tested on SQLite and PostgreSQL."""

    def __init__(self, url: str, *, create: bool = True, lean: bool = True) -> None:
        """``lean`` (SQLite): appends go through one DBAPI connection (``ledger/dbapi_conn.py``)
        instead of SQLAlchemy's execution layer — the same statements, ~3x the append rate;
        ``lean=False`` keeps SQLAlchemy's path (the conformance suite runs both)."""
        self.url = check_ledger_url(url)  # a malformed or in-memory URL: LedgerUrlError
        self._lean: LeanSqlite | None = None
        parsed = make_url(url)
        self._sqlite = parsed.get_backend_name() == "sqlite"
        if self._sqlite:
            db = parsed.database or ""
            if db and db != ":memory:":
                path = Path(db)
                if create:
                    try:
                        path.parent.mkdir(parents=True, exist_ok=True)
                    except OSError as exc:
                        raise LedgerError(
                            f"cannot create the ledger folder {path.parent}: {exc}"
                        ) from exc
                    if path.parent.exists() and not os.access(path.parent, os.W_OK):
                        raise LedgerError(f"cannot write the ledger at {path}: folder not writable")
                elif not path.exists():
                    raise LedgerNotFound(f"no ledger at {path}")
            self._engine = _sqlite_engine(url)
            self._lean = LeanSqlite(self._engine) if lean else None
        else:
            from sqlalchemy import create_engine

            try:
                self._engine = create_engine(url, pool_pre_ping=True)
            except (SQLAlchemyError, ImportError) as exc:
                raise LedgerError(f"cannot open the ledger {self._safe_url()}: {exc}") from exc
        try:
            self._prepare(create)
        except DatabaseError as exc:  # also "file is not a database", not only OperationalError
            raise LedgerError(f"cannot open the ledger {self._safe_url()}: {exc.orig}") from exc

    def _safe_url(self) -> str:
        return make_url(self.url).render_as_string(hide_password=True)

    def _prepare(self, create: bool) -> None:
        if create:
            metadata.create_all(self._engine)
        elif not inspect(self._engine).has_table(_meta.name):
            raise LedgerNotFound(f"no ledger tables in {self._safe_url()}")
        with self._engine.begin() as conn:
            # Only an opener that may create (a run) locks the version row and migrates: one
            # that reads or records a decision works with the schema as it is (schema 2 only
            # added meta rows), so a read-only role or a standby can still read the ledger.
            found = self._version(conn, lock=create)
            if found is None:
                if not create:
                    raise LedgerNotFound(f"no ledger in {self._safe_url()} (no schema version)")
                claim = insert_ignoring_conflict(conn.dialect.name, _meta)
                for key, value in new_ledger_meta().items():
                    if claim is not None:  # a concurrent creator may have written it first
                        conn.execute(claim, {"key": key, "value": value})
                    else:
                        conn.execute(insert(_meta).values(key=key, value=value))
                found = self._version(conn, lock=True)
                assert found is not None
            check_schema_version(found, self._safe_url())
            if found < SCHEMA_VERSION and create:
                migrate(conn, found, self._safe_url())  # LedgerError: rolled back, unchanged
            row = conn.execute(select(_meta.c.value).where(_meta.c.key == LEDGER_ID_KEY)).first()
            self.ledger_id = str(row.value) if row is not None else None

    @staticmethod
    def _version(conn: Connection, *, lock: bool) -> int | None:
        """The stored schema version; with ``lock``, its row locked until the transaction ends
        (PostgreSQL; SQLite holds the write lock already): concurrent migrations queue here."""
        q = select(_meta.c.value).where(_meta.c.key == SCHEMA_VERSION_KEY)
        if lock and conn.dialect.name == "postgresql":
            q = q.with_for_update()
        row = conn.execute(q).first()
        return None if row is None else int(row.value)

    # -- writes --------------------------------------------------------------------------
    def append(self, event: ProgressEvent, *, lease_seconds: float = 60.0) -> ProgressEvent:
        kind = event_kind(event.kind)
        if kind is not event.kind:  # built without validation (model_construct)
            event = event.model_copy(update={"kind": kind})
        if self._lean is not None:
            try:
                with self._lean.begin() as lean:
                    # The same statements on a DBAPI connection that answers like SQLAlchemy's.
                    return self._append(cast("Connection", lean), event, lease_seconds)
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot write the ledger {self._safe_url()}: {exc}") from exc
        try:
            with self._engine.begin() as conn:
                return self._append(conn, event, lease_seconds)
        except OperationalError as exc:
            raise LedgerError(f"cannot write the ledger {self._safe_url()}: {exc.orig}") from exc

    def _append(self, conn: Connection, ev: ProgressEvent, lease_seconds: float) -> ProgressEvent:
        fields: dict[str, Any] | None = None
        key = {"p_plan": ev.plan_id, "p_step": ev.step_id}
        if ev.kind in STEP_EVENT_KINDS:
            if ev.step_id is None:
                raise LedgerError(f"a {ev.kind} event needs a step_id")
            if ev.kind == EventKind.step_started:
                self._take_hold(conn, ev, lease_seconds)
            row = conn.execute(_STEP_STATE, key).first()
            if row is None:
                claim = _claim_step(conn.dialect.name)
                claim = _INSERT_STEP if claim is None else claim
                placeholder = {"plan_id": ev.plan_id, "step_id": ev.step_id, "last_seq": 0}
                claimed = conn.execute(claim, {**placeholder, "state": ""}).rowcount == 1
                # Our own placeholder (locked by this transaction until it ends) is empty; only
                # when a concurrent first event inserted it first is there a state to re-read.
                row = None if claimed else conn.execute(_STEP_STATE, key).first()
            fields = row_fields(row.state if row else None, ev.step_id)  # plain: no model
            status = fields["status"] if fields is not None else None
            check_status_transition(status, ev)
            if ev.kind in RELEASE_EVENT_KINDS or (
                ev.kind in (EventKind.step_needs_review, EventKind.step_blocked)
                and status == "in_progress"
            ):
                self._release_hold(conn, ev, fields["branch"] if fields is not None else None)
        if ev.kind in GUARDED_KINDS:  # renamed away, or closed: one indexed lookup
            # Last, after the hold, the step row and (for an intent) the receipt row: on
            # PostgreSQL a rename's or a close's table locks have ordered us after it by now.
            refuse_if_stopped(conn, ev.plan_id, ev.kind)
        values = event_values(ev)
        seq = conn.execute(_INSERT_EVENT, values).scalar_one()
        stored = ev.model_copy(update={"seq": seq})
        if ev.kind in STEP_EVENT_KINDS:  # folded from the event as stored: what a rebuild gives
            state = folded_json(fields, ev, values["at"], values["data"])
            conn.execute(_UPDATE_STEP, {**key, "last_seq": seq, "state": state})
        return stored

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
        stmt = _take_hold_stmt(conn.dialect.name)
        if stmt is not None:
            taken = conn.execute(stmt, values).first() is not None
        else:  # another SQL back-end: let the primary key raise
            try:
                with conn.begin_nested():
                    conn.execute(insert(_holds), values)
                taken = True
            except IntegrityError:
                taken = False
        if not taken:
            holder = conn.execute(_HOLDER, {"p_plan": ev.plan_id, "p_branch": branch}).first()
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
            _RELEASE_HOLD,
            {"p_plan": ev.plan_id, "p_branch": branch, "p_step": ev.step_id, "p_run": owner or ""},
        ).rowcount
        if deleted != 1:
            raise LedgerError(
                f"step {ev.step_id!r} of plan {ev.plan_id!r}: branch {branch!r} is not held by run "
                f"{owner}; another run took it over (its lease ran out?)"
            )

    def renew(self, run_id: str, lease_seconds: float) -> int:
        with self._engine.begin() as conn:
            return int(
                conn.execute(
                    update(_holds)
                    .where(_holds.c.run_id == run_id)
                    .values(lease_until=time.time() + lease_seconds)
                ).rowcount
            )

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
        # Read and rewrite in one transaction that keeps appends out meanwhile (SQLite: the
        # BEGIN IMMEDIATE write lock; PostgreSQL: a lock on the projection table).
        with self._engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"LOCK TABLE {STEPS.name} IN SHARE ROW EXCLUSIVE MODE")
            q = select(_ev).where(
                _ev.c.plan_id == plan_id, _ev.c.kind.in_(kind_names(STEP_EVENT_KINDS))
            )
            states, last = self._fold(
                [event_from_row(r) for r in conn.execute(q.order_by(_ev.c.seq))]
            )
            conn.execute(delete(_steps).where(_steps.c.plan_id == plan_id))
            insert_step_states(conn, plan_id, states, last)
        return states

    # -- reads ---------------------------------------------------------------------------
    def events(
        self, plan_id: str, *, after_seq: int = 0, kinds: Iterable[EventKind | str] | None = None
    ) -> list[ProgressEvent]:
        q = select(_ev).where(_ev.c.plan_id == plan_id, _ev.c.seq > after_seq)
        if kinds is not None:
            q = q.where(_ev.c.kind.in_(kind_names(kinds)))
        with self._engine.connect() as conn:
            return [event_from_row(r) for r in conn.execute(q.order_by(_ev.c.seq))]

    def last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> ProgressEvent | None:
        q = (
            select(_ev)
            .where(_ev.c.plan_id == plan_id, _ev.c.kind.in_(kind_names(kinds)))
            .order_by(_ev.c.seq.desc())
            .limit(1)
        )
        with self._engine.connect() as conn:
            row = conn.execute(q).first()
        return event_from_row(row) if row is not None else None

    def count_events(self, plan_id: str) -> int:
        with self._engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).select_from(_ev).where(_ev.c.plan_id == plan_id)
                ).scalar_one()
            )

    def step_states(self, plan_id: str) -> dict[str, StepState]:
        with self._engine.connect() as conn:
            rows = conn.execute(select(_steps.c.state).where(_steps.c.plan_id == plan_id))
            return states_by_step(r.state for r in rows)

    def holds(self, plan_id: str) -> list[Hold]:
        with self._engine.connect() as conn:
            rows = conn.execute(select(_holds).where(_holds.c.plan_id == plan_id)).all()
        return [Hold(*r) for r in rows]  # HOLDS's columns are Hold's fields, in order

    def close(self) -> None:
        if self._lean is not None:
            self._lean.close()
        self._engine.dispose()
