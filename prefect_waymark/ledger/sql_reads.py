"""The reads of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it)."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from sqlalchemy import select

from ._tables import COUNT_EVENTS, EVENTS, PLAN_HOLDS, STEP_STATES
from .base import Hold
from .events import EventKind, ProgressEvent
from .schema import event_from_row, kind_names
from .step_state import StepState, states_by_step

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = ["SqlReads"]


class SqlReads:
    """Events, step states and holds of a plan."""

    if TYPE_CHECKING:  # provided by SqlLedger

        def _read(self, *, snapshot: bool = False) -> AbstractContextManager[Connection]: ...

    def events(
        self, plan_id: str, *, after_seq: int = 0, kinds: Iterable[EventKind | str] | None = None
    ) -> list[ProgressEvent]:
        q = select(EVENTS).where(EVENTS.c.plan_id == plan_id, EVENTS.c.seq > after_seq)
        if kinds is not None:
            q = q.where(EVENTS.c.kind.in_(kind_names(kinds)))
        with self._read() as conn:
            return [event_from_row(r) for r in conn.execute(q.order_by(EVENTS.c.seq))]

    def last_event(self, plan_id: str, kinds: Iterable[EventKind | str]) -> ProgressEvent | None:
        q = (
            select(EVENTS)
            .where(EVENTS.c.plan_id == plan_id, EVENTS.c.kind.in_(kind_names(kinds)))
            .order_by(EVENTS.c.seq.desc())
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
            rows = conn.execute(STEP_STATES, {"p_plan": plan_id})
            return states_by_step(r.state for r in rows)

    def holds(self, plan_id: str) -> list[Hold]:
        with self._read() as conn:
            rows = conn.execute(PLAN_HOLDS, {"p_plan": plan_id}).all()
        return [Hold(**r._mapping) for r in rows]
