"""Storage tables of the ledger as SQLModel tables. Private: not imported by the package
``__init__`` so these tables never land in a user's ``SQLModel.metadata``.

Names and column order come from :mod:`.schema`, the one definition the stdlib reader uses too;
loading this module checks that every table here has exactly the columns it lists there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Column, Index, MetaData, Text, event, insert
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from .schema import EVENTS, HOLDS, META, RECEIPTS, STEPS, TableDef
from .sqlite_ddl import TRIGGERS
from .step_state import StepState

# A metadata of our own keeps the tables out of the user's SQLModel.metadata.
metadata = MetaData()


class _Base(SQLModel):
    metadata = metadata


class MetaRow(_Base, table=True):
    __tablename__ = META.name

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(max_length=256)


class EventRow(_Base, table=True):
    """One append-only progress event. Never updated, never deleted."""

    __tablename__ = EVENTS.name
    __table_args__ = (
        Index("ix_waymark_events_plan_seq", "plan_id", "seq"),
        Index("ix_waymark_events_plan_step_seq", "plan_id", "step_id", "seq"),
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
    """Projection of the events: the active view of one step. Rebuildable from events."""

    __tablename__ = STEPS.name

    plan_id: str = Field(primary_key=True, max_length=200)
    step_id: str = Field(primary_key=True, max_length=200)
    last_seq: int
    state: str = Field(sa_column=Column(Text, nullable=False))


class HoldRow(_Base, table=True):
    """The single in_progress slot of a (plan, branch). The primary key is the guarantee."""

    __tablename__ = HOLDS.name

    plan_id: str = Field(primary_key=True, max_length=200)
    branch: str = Field(primary_key=True, max_length=200)
    step_id: str = Field(max_length=200)
    run_id: str = Field(max_length=64)
    host: str = Field(max_length=255)
    pid: int
    since: str = Field(max_length=40)
    lease_until: float


class ReceiptRow(_Base, table=True):
    """Receipts of irreversible actions; the unique key is what makes an action happen once."""

    __tablename__ = RECEIPTS.name

    key: str = Field(primary_key=True, max_length=400)
    plan_id: str = Field(max_length=200)
    step_id: str = Field(max_length=200)
    action: str = Field(max_length=200)
    state: str = Field(max_length=16)  # intent | applied
    run_id: str = Field(max_length=64)
    data: str = Field(sa_column=Column(Text, nullable=False))


def _check(row: type[_Base], table: TableDef) -> None:
    columns = tuple(row.__table__.columns.keys())  # type: ignore[attr-defined]
    if (row.__tablename__, columns) != (table.name, table.columns):
        raise RuntimeError(f"{row.__name__} does not match the schema of {table.name}: {columns}")


for _row, _table in (
    (MetaRow, META),
    (EventRow, EVENTS),
    (StepRow, STEPS),
    (HoldRow, HOLDS),
    (ReceiptRow, RECEIPTS),
):
    _check(_row, _table)


@event.listens_for(EventRow.__table__, "after_create")  # type: ignore[attr-defined]
def _append_only_triggers(_table: Any, connection: Connection, **_kw: Any) -> None:
    """The events table's append-only triggers, created with it (``sqlite_ddl.TRIGGERS``)."""
    for statement in TRIGGERS.get(connection.dialect.name, []):
        connection.exec_driver_sql(statement)


def insert_step_states(
    conn: Connection, plan_id: str, states: Mapping[str, StepState], last: Mapping[str, int]
) -> int:
    """Write folded step states as the plan's projection rows (after a rebuild, a rename or a
    restore); return how many."""
    table = StepRow.__table__  # type: ignore[attr-defined]
    rows = [
        {
            "plan_id": plan_id,
            "step_id": step_id,
            "last_seq": last[step_id],
            "state": st.model_dump_json(),
        }
        for step_id, st in states.items()
    ]
    if rows:  # one statement for all (the sqlite3 path compiles a statement once per call)
        conn.execute(insert(table), rows)
    return len(rows)
