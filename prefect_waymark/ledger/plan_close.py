"""Closing a plan is final in the ledger: ``plan_closed`` and a ``closed:<plan>`` meta row are
written in one transaction, which re-checks the plan's steps first; after it no new work is
recorded for the plan.

Like a rename (:mod:`.plan_rename`), the close takes the write lock (SQLite) or locks the holds,
receipts and steps tables (PostgreSQL), so a step start, an action claim or a second close
either commits before it (and the close's checks see it) or waits and then sees the meta row.
:func:`refuse_if_stopped` is the one indexed lookup :meth:`SqlLedger._append` makes for the
kinds that begin work (``step_started``, ``step_skipped``, ``step_rerun_requested``,
``action_intent``) and for ``plan_closed``: a renamed plan id refuses them all, a closed plan
refuses them with :class:`~prefect_waymark.errors.PlanClosedError`. Releases (a running step's
``step_completed``, ``step_failed``, …, an action's receipt) are still recorded, so work that
was under way when the plan closed ends on record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timezone
from typing import TYPE_CHECKING, Any

import prefect_waymark.ledger.sql as sql

from ..errors import LedgerError, PlanClosedError
from .event_kinds import EventLike
from .events import EventKind, ProgressEvent
from .step_state import StepState, states_by_step

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from .base import LedgerReader
    from .connection import DbConnection as Connection

__all__ = [
    "GUARDED_KINDS",
    "PlanCloses",
    "closed_key",
    "closed_meta",
    "closed_record",
    "read_closed",
    "refuse_if_stopped",
]

#: The kinds that begin new work: refused for a closed (or renamed) plan.
NEW_WORK = frozenset(
    {
        EventKind.step_started,
        EventKind.step_skipped,
        EventKind.step_rerun_requested,
        EventKind.action_intent,
    }
)
#: The kinds :meth:`SqlLedger._append` checks the meta rows for.
GUARDED_KINDS = NEW_WORK | {EventKind.plan_closed, EventKind.step_renamed, EventKind.plan_seen}


def closed_key(plan_id: str) -> str:
    """The ``waymark_meta`` row that says a plan was closed."""
    return f"closed:{plan_id}"[:64]


def _renamed_key(plan_id: str) -> str:
    return f"renamed:{plan_id}"[:64]  # as plan_rename._renamed_key


def _closed_message(plan_id: str, record: dict[str, Any], kind: EventKind) -> str:
    when = str(record.get("at") or "")[:16].replace("T", " ")
    who = f"{when} UTC by {record.get('by') or '?'}" if when else f"by {record.get('by') or '?'}"
    if kind == EventKind.plan_closed:
        return f"plan {plan_id!r} was closed on {who}: already closed; nothing recorded"
    return (
        f"plan {plan_id!r} was closed on {who} (`waymark close`); it takes no new work "
        f"({kind.value} refused): nothing was recorded"
    )


def refuse_if_stopped(conn: Connection, plan_id: str, kind: EventKind) -> None:
    """Inside a write transaction, for a :data:`GUARDED_KINDS` event: one lookup of the plan's
    ``renamed:`` and ``closed:`` meta rows. Raise :class:`LedgerError` if the id was renamed
    away, :class:`PlanClosedError` if the plan was closed."""
    keys = {_renamed_key(plan_id): "renamed", closed_key(plan_id): "closed"}
    rows = conn.execute(
        sql.STOP_ROWS, {"p_renamed": _renamed_key(plan_id), "p_closed": closed_key(plan_id)}
    )
    found = {keys[r.key]: str(r.value) for r in rows}
    if "renamed" in found:
        to = found["renamed"]
        raise LedgerError(
            f"plan {plan_id!r} was renamed to {to!r} while this run went on; it stops here: "
            f"run the plan file with `plan_id: {to}`"
        )
    if "closed" in found:
        try:
            record = json.loads(found["closed"])
        except ValueError:
            record = {}
        record = record if isinstance(record, dict) else {}
        raise PlanClosedError(_closed_message(plan_id, record, kind), record)


def closed_meta(ev: ProgressEvent) -> dict[str, str]:
    """The ``waymark_meta`` row (``key``, ``value``) a stored ``plan_closed`` event goes with
    (also for a restore that writes a closed plan's history in: its guard comes back too)."""
    by = str(ev.data.get("by") or "?")[:120]
    value = json.dumps({"at": ev.at.isoformat(), "by": by, "seq": ev.seq})
    return {"key": closed_key(ev.plan_id), "value": value[:256]}


#: ``decide(states)``: the close's ``plan_closed`` data for these step states, or ``None`` to
#: record nothing (something is unmet and the close is not forced).
Decide = Callable[[dict[str, StepState]], "dict[str, Any] | None"]


class PlanCloses:
    """``close_plan`` of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it)."""

    if TYPE_CHECKING:  # provided by SqlLedger

        def _write(self, *, durable: bool = False) -> AbstractContextManager[Connection]: ...

        def _append(
            self, conn: Connection, ev: ProgressEvent, lease_seconds: float
        ) -> ProgressEvent: ...

    def close_plan(self, plan_id: str, decide: Decide) -> ProgressEvent | None:
        """In one transaction: refuse a closed or renamed plan, read its step states, ask
        ``decide`` for the close's data and record ``plan_closed`` with the ``closed:`` meta
        row; return the event, or ``None`` when ``decide`` recorded nothing."""
        with self._write() as conn:
            # PostgreSQL: step starts (they take a hold first), action claims (they write
            # receipts) and step events wait until the close commits, then see it.
            for statement in sql.lock_tables(conn.backend, sql.HOLDS, sql.RECEIPTS, sql.STEPS):
                conn.execute_raw(statement)
            refuse_if_stopped(conn, plan_id, EventKind.plan_closed)
            rows = conn.execute(sql.STEP_STATES, {"p_plan": plan_id}).scalars()
            data = decide(states_by_step(rows))
            if data is None:
                return None
            ev = ProgressEvent(plan_id=plan_id, kind=EventKind.plan_closed, data=data)
            stored = self._append(conn, ev, 60.0)
            conn.execute(sql.INSERT_META, closed_meta(stored))
            return stored


def closed_record(event: EventLike) -> dict[str, Any]:
    """What a ``plan_closed`` event says, as status, the views and the refusals show it."""
    d = event.data
    return {
        "at": event.at.astimezone(timezone.utc).isoformat(),
        "seq": event.seq,
        "by": d.get("by") or "?",
        "reason": d.get("reason") or "",
        "forced": bool(d.get("forced")),
        "evidence": dict(d.get("evidence") or {}),
        "acceptance": dict(d.get("acceptance") or {}),
        "unmet": list(d.get("unmet") or []),
    }


def read_closed(ledger: LedgerReader | None, plan_id: str) -> dict[str, Any] | None:
    """The plan's close record, or ``None`` while it is open (or has no ledger yet)."""
    if ledger is None:
        return None
    event = ledger.last_event(plan_id, [EventKind.plan_closed])
    return closed_record(event) if event is not None else None
