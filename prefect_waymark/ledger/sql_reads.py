"""The reads of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it): on the ledger's
``sqlite3`` connection for a SQLite file, through SQLAlchemy otherwise."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from .base import Hold
from .events import EventKind, ProgressEvent
from .schema import event_from_row, kind_names
from .sqlite_reader import read_events, read_last_event
from .statements import COUNT_EVENTS, HOLDS, STEP_STATES, table
from .step_state import StepState, states_by_step

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from .dbapi_conn import LeanSqlite

__all__ = ["SqlReads"]


class SqlReads:
    """Events, step states and holds of a plan."""

    if TYPE_CHECKING:  # provided by SqlLedger
        _lean: LeanSqlite | None

        @property
        def _engine(self) -> Engine: ...

    @contextmanager
    def _read(self, *, snapshot: bool = False) -> Iterator[Connection]:
        """A connection for reads: the ``sqlite3`` one (answering like SQLAlchemy's), or one
        of the engine's. ``snapshot``: its reads in one transaction (on SQLite one state; on
        PostgreSQL's default READ COMMITTED each read sees what was committed before it)."""
        if self._lean is not None:
            with self._lean.read(snapshot=snapshot) as lean:
                yield cast("Connection", lean)
        else:
            with self._engine.connect() as conn:
                yield conn

    def events(
        self, plan_id: str, *, after_seq: int = 0, kinds: Iterable[EventKind | str] | None = None
    ) -> list[ProgressEvent]:
        if self._lean is not None:
            with self._lean.read() as lean:
                return read_events(lean.raw, plan_id, after_seq, kinds)
        from sqlalchemy import select

        ev = table("waymark_events")
        q = select(ev).where(ev.c.plan_id == plan_id, ev.c.seq > after_seq)
        if kinds is not None:
            q = q.where(ev.c.kind.in_(kind_names(kinds)))
        with self._read() as conn:
            return [event_from_row(r) for r in conn.execute(q.order_by(ev.c.seq))]

    def last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> ProgressEvent | None:
        if self._lean is not None:
            with self._lean.read() as lean:
                return read_last_event(lean.raw, plan_id, kinds)
        from sqlalchemy import select

        ev = table("waymark_events")
        q = (
            select(ev)
            .where(ev.c.plan_id == plan_id, ev.c.kind.in_(kind_names(kinds)))
            .order_by(ev.c.seq.desc())
            .limit(1)
        )
        with self._read() as conn:
            row = conn.execute(q).first()
        return event_from_row(row) if row is not None else None

    def count_events(self, plan_id: str) -> int:
        with self._read() as conn:
            return int(conn.execute(COUNT_EVENTS, {"p_plan": plan_id}).scalar_one())

    def step_states(self, plan_id: str) -> dict[str, StepState]:
        with self._read() as conn:
            rows: Any = conn.execute(STEP_STATES, {"p_plan": plan_id})
            return states_by_step(r.state for r in rows)

    def holds(self, plan_id: str) -> list[Hold]:
        with self._read() as conn:
            rows = conn.execute(HOLDS, {"p_plan": plan_id}).all()
        return [Hold(*r) for r in rows]  # HOLDS's columns are Hold's fields, in order
