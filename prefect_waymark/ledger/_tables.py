"""The ledger's storage schema, defined once: its SQLModel tables, and every statement the ledger
runs, built from them (SQLAlchemy Core, one form for SQLite and PostgreSQL).

Private: not imported by the package ``__init__`` so these tables never land in a user's
``SQLModel.metadata``, and a command that opens no ledger imports no SQLAlchemy. The statements
are built when this module loads (a ledger is being opened); SQLAlchemy caches each one's
compiled form per dialect. Only ``INSERT ... ON CONFLICT DO NOTHING`` differs by dialect
(:func:`insert_ignoring_conflict`, built the first time a dialect asks for it: importing
``sqlalchemy.dialects.postgresql`` loads the psycopg driver module, which SQLite never needs).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import import_module
from typing import Any

from sqlalchemy import (
    Column,
    Index,
    MetaData,
    Table,
    Text,
    bindparam,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateIndex
from sqlmodel import Field, SQLModel

from .step_state import StepState

__all__ = [
    "EVENTS",
    "HOLDS",
    "META",
    "RECEIPTS",
    "STEPS",
    "READ_INDEXES",
    "TRIGGERS",
    "add_read_indexes",
    "insert_ignoring",
    "insert_ignoring_conflict",
    "insert_step_states",
    "metadata",
]

# A metadata of our own keeps the tables out of the user's SQLModel.metadata.
metadata = MetaData()


class _Base(SQLModel):
    metadata = metadata


class MetaRow(_Base, table=True):
    """The ledger's own facts: its schema version, identity, migrations; a plan's ``renamed:``
    and ``closed:`` rows."""

    __tablename__ = "waymark_meta"

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(max_length=256)


class EventRow(_Base, table=True):
    """One append-only progress event. Never updated, never deleted. ``data`` is the kind's
    payload as JSON."""

    __tablename__ = "waymark_events"
    __table_args__ = (
        Index("ix_waymark_events_plan_seq", "plan_id", "seq"),
        Index("ix_waymark_events_plan_step_seq", "plan_id", "step_id", "seq"),
        # The newest event of a kind, and one run's events, read without the plan's others
        # (a look-up of a kind a plan rarely has, a run's own events): a ledger created
        # before them gets them when it is opened for a run (:data:`READ_INDEXES`).
        Index("ix_waymark_events_plan_kind_seq", "plan_id", "kind", "seq"),
        Index("ix_waymark_events_plan_run_seq", "plan_id", "run_id", "seq"),
    )

    seq: int | None = Field(default=None, primary_key=True)
    plan_id: str = Field(max_length=200)
    step_id: str | None = Field(default=None, max_length=200)
    branch: str | None = Field(default=None, max_length=200)
    kind: str = Field(max_length=64)
    run_id: str | None = Field(default=None, max_length=64)
    at: str = Field(max_length=40)
    data: str = Field(sa_column=Column(Text, nullable=False))


class StepRow(_Base, table=True):
    """Projection of the events: the active view of one step (``state``: a
    :class:`StepState` as JSON). Rebuildable from events."""

    __tablename__ = "waymark_steps"

    plan_id: str = Field(primary_key=True, max_length=200)
    step_id: str = Field(primary_key=True, max_length=200)
    last_seq: int
    state: str = Field(sa_column=Column(Text, nullable=False))


class HoldRow(_Base, table=True):
    """The single in_progress slot of a (plan, branch). The primary key is the guarantee.
    Columns in the order of :class:`~.base.Hold`'s fields."""

    __tablename__ = "waymark_holds"

    plan_id: str = Field(primary_key=True, max_length=200)
    branch: str = Field(primary_key=True, max_length=200)
    step_id: str = Field(max_length=200)
    run_id: str = Field(max_length=64)
    host: str = Field(max_length=255)
    pid: int
    since: str = Field(max_length=40)
    lease_until: float


class ReceiptRow(_Base, table=True):
    """Receipts of irreversible actions; the unique key is what makes an action happen once.
    The rest of a record is ``data`` (JSON)."""

    __tablename__ = "waymark_receipts"

    key: str = Field(primary_key=True, max_length=400)
    plan_id: str = Field(max_length=200)
    step_id: str = Field(max_length=200)
    action: str = Field(max_length=200)
    state: str = Field(max_length=16)  # intent | applied | not_applied
    run_id: str = Field(max_length=64)
    data: str = Field(sa_column=Column(Text, nullable=False))


META: Table = MetaRow.__table__  # type: ignore[attr-defined]
EVENTS: Table = EventRow.__table__  # type: ignore[attr-defined]
STEPS: Table = StepRow.__table__  # type: ignore[attr-defined]
HOLDS: Table = HoldRow.__table__  # type: ignore[attr-defined]
RECEIPTS: Table = ReceiptRow.__table__  # type: ignore[attr-defined]

#: The events table's indexes added after schema 2 was released, by name: no schema version
#: (nothing a reader needs to know), created if missing when a ledger is opened for a run
#: (:func:`add_read_indexes`).
READ_INDEXES: dict[str, Index] = {
    ix.name: ix
    for ix in EVENTS.indexes
    if ix.name in ("ix_waymark_events_plan_kind_seq", "ix_waymark_events_plan_run_seq")
}

_E = EVENTS.name
_APPEND_ONLY = f"{_E} is append-only: events are never updated or deleted"
#: Events are append-only in the database too: triggers refuse UPDATE, DELETE (and TRUNCATE),
#: created together with the events table.
TRIGGERS = {
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


@event.listens_for(EVENTS, "after_create")
def _append_only_triggers(_table: Any, connection: Connection, **_kw: Any) -> None:
    """The events table's append-only triggers, created with it."""
    for statement in TRIGGERS.get(connection.dialect.name, []):
        connection.exec_driver_sql(statement)


_DIALECTS = {"sqlite": "sqlalchemy.dialects.sqlite", "postgresql": "sqlalchemy.dialects.postgresql"}


@cache
def insert_ignoring_conflict(
    dialect: str, table: Table, returning: Column[Any] | None = None
) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING`` into ``table`` for ``dialect`` (a connection's
    ``dialect.name``), or ``None`` for another back-end (the caller then lets the primary key
    raise inside a savepoint)."""
    module = _DIALECTS.get(dialect)
    if module is None:
        return None
    stmt = import_module(module).insert(table).on_conflict_do_nothing()
    return stmt if returning is None else stmt.returning(returning)


def insert_ignoring(conn: Connection, table: Table) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING`` into ``table`` on this connection's back-end (on
    another one: a plain INSERT)."""
    stmt = insert_ignoring_conflict(conn.dialect.name, table)
    return insert(table) if stmt is None else stmt


def add_read_indexes(conn: Connection) -> list[str]:
    """``CREATE INDEX IF NOT EXISTS`` each of :data:`READ_INDEXES` the events table lacks (a
    ledger created before they were added); return the names created. Looked up first, so
    an opener of a ledger that has them (every one after the first) takes no table lock."""
    have = {ix["name"] for ix in inspect(conn).get_indexes(EVENTS.name)}
    missing = [ix for name, ix in READ_INDEXES.items() if name not in have]
    for ix in missing:
        conn.execute(CreateIndex(ix, if_not_exists=True))
    return [str(ix.name) for ix in missing]


def _where(table: Table, **params: str) -> list[Any]:
    """``table.<column> = :<param>`` for each ``column=param``."""
    return [table.c[c] == bindparam(p) for c, p in params.items()]


# -- an append ----------------------------------------------------------------------------
INSERT_EVENT = insert(EVENTS).returning(EVENTS.c.seq)
_STEP = _where(STEPS, plan_id="p_plan", step_id="p_step")
#: The step's projection row, locked (PostgreSQL ``FOR UPDATE``; SQLite holds the write lock).
STEP_STATE = select(STEPS.c.state).where(*_STEP).with_for_update()
UPDATE_STEP = (
    update(STEPS).where(*_STEP).values(last_seq=bindparam("last_seq"), state=bindparam("state"))
)
HOLDER = select(HOLDS.c.step_id, HOLDS.c.run_id).where(
    *_where(HOLDS, plan_id="p_plan", branch="p_branch")
)
RELEASE_HOLD = delete(HOLDS).where(
    *_where(HOLDS, plan_id="p_plan", branch="p_branch", step_id="p_step", run_id="p_run")
)
RENEW = (
    update(HOLDS).where(*_where(HOLDS, run_id="p_run")).values(lease_until=bindparam("lease_until"))
)
#: A plan's ``renamed:`` and ``closed:`` meta rows (plan_close.refuse_if_stopped).
STOP_ROWS = select(META.c.key, META.c.value).where(
    META.c.key.in_([bindparam("p_renamed"), bindparam("p_closed")])
)

# -- reads ------------------------------------------------------------------------------
STEP_STATES = select(STEPS.c.state).where(*_where(STEPS, plan_id="p_plan"))
PLAN_HOLDS = select(HOLDS).where(*_where(HOLDS, plan_id="p_plan"))
#: A plan's events (``kind IN``, ``run_id IN`` added by the reader), counted in the database.
COUNT_EVENTS = select(func.count()).select_from(EVENTS).where(*_where(EVENTS, plan_id="p_plan"))

# -- meta rows --------------------------------------------------------------------------
META_VALUE = select(META.c.value).where(*_where(META, key="p_key"))
META_VALUE_LOCKED = META_VALUE.with_for_update()
INSERT_META = insert(META)
UPDATE_META = update(META).where(*_where(META, key="p_key")).values(value=bindparam("value"))

# -- receipts ---------------------------------------------------------------------------
RECEIPT = select(RECEIPTS).where(*_where(RECEIPTS, key="p_key"))
RECEIPT_LOCKED = RECEIPT.with_for_update()
RECEIPTS_OF_PLAN = select(RECEIPTS).where(*_where(RECEIPTS, plan_id="p_plan"))
RECEIPTS_OF_STEP = select(RECEIPTS).where(*_where(RECEIPTS, plan_id="p_plan", step_id="p_step"))
UPDATE_RECEIPT = (
    update(RECEIPTS)
    .where(*_where(RECEIPTS, key="p_key"))
    .values({c.name: bindparam(c.name) for c in RECEIPTS.columns if c.name != "key"})
)


def insert_step_states(
    conn: Connection, plan_id: str, states: Mapping[str, StepState], last: Mapping[str, int]
) -> int:
    """Write folded step states as the plan's projection rows (after a rebuild, a rename or a
    restore); return how many."""
    rows = [
        {
            "plan_id": plan_id,
            "step_id": step_id,
            "last_seq": last[step_id],
            "state": st.model_dump_json(),
        }
        for step_id, st in states.items()
    ]
    if rows:  # one statement for all
        conn.execute(insert(STEPS), rows)
    return len(rows)
