"""A plan's whole history read out of a ledger (``waymark export``) and written into another one
(``waymark restore``), the writing in one transaction.

Reading: :meth:`PlanArchive.archive_snapshot` takes, in one read, the plan's last ``seq``, its
event counts and its receipt rows; :meth:`PlanArchive.event_page` then reads the events up to that
``seq`` page by page (events are append-only, so the pages are that snapshot's events, whatever
is appended meanwhile).

Writing: :meth:`PlanArchive.restore_plan` inserts the events with their ``seq`` (shifted by one
offset, in order, when the ledger already uses those numbers), times, runs and data, the receipt
rows with their keys, folds the projection from the inserted events (:func:`.apply_event`, as
:meth:`~.SqlLedger.rebuild` does) with the holds of the steps left in progress, moves the seq
references inside event data by the same offset (:mod:`.restored_refs` says which) and, for a
plan that was renamed away, the rename's meta row.
Refused (nothing written) when the ledger already has an event or a receipt of the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import prefect_waymark.ledger.sql as sql

from ..errors import LedgerError
from .events import STEP_EVENT_KINDS, EventKind, ProgressEvent
from .plan_close import closed_meta
from .plan_rename import renamed_to
from .receipts import ReceiptRecord
from .restored_refs import SEQ_MAX, restored_holds, shift_refs
from .schema import LEDGER_ID_KEY, event_from_row, event_values
from .step_state import StepState, apply_event

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from .connection import DbConnection as Connection

__all__ = ["ArchiveSnapshot", "PlanArchive"]


@dataclass(frozen=True)
class ArchiveSnapshot:
    """What an export starts from: the plan's last ``seq``, its events by kind, its receipts."""

    last_seq: int
    first_seq: int
    kinds: dict[str, int]
    receipts: list[ReceiptRecord]

    @property
    def event_count(self) -> int:
        return sum(self.kinds.values())


class PlanArchive:
    """Export and restore of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it)."""

    ledger_id: str | None

    if TYPE_CHECKING:  # provided by SqlLedger

        def _write(self, *, durable: bool = False) -> AbstractContextManager[Connection]: ...

        def _read(self, *, snapshot: bool = False) -> AbstractContextManager[Connection]: ...

    # -- reading -------------------------------------------------------------------------
    def archive_snapshot(self, plan_id: str) -> ArchiveSnapshot:
        """The plan's last and first ``seq``, event count per kind and receipt rows, in one
        read transaction."""
        params = {"p_plan": plan_id}
        with self._read(snapshot=True) as conn:
            rows = conn.execute(
                f"SELECT kind, count(*), min(seq), max(seq) FROM {sql.EVENTS} "
                "WHERE plan_id = :p_plan GROUP BY kind",
                params,
            ).all()
            receipts = [
                ReceiptRecord.from_row(r) for r in conn.execute(sql.RECEIPTS_OF_PLAN, params)
            ]
        return ArchiveSnapshot(
            last_seq=max((int(r[3]) for r in rows), default=0),
            first_seq=min((int(r[2]) for r in rows), default=0),
            kinds={str(r[0]): int(r[1]) for r in sorted(rows, key=lambda r: str(r[0]))},
            receipts=sorted(receipts, key=lambda r: (r.intent_at, r.key)),
        )

    def event_page(
        self, plan_id: str, *, after_seq: int, upto_seq: int, limit: int = 2000
    ) -> list[ProgressEvent]:
        """At most ``limit`` events of the plan with ``after_seq < seq <= upto_seq``, in order."""
        q = (
            f"{sql.PLAN_EVENTS} AND seq > :p_after AND seq <= :p_upto "
            f"ORDER BY seq LIMIT {int(limit)}"
        )
        params = {"p_plan": plan_id, "p_after": after_seq, "p_upto": upto_seq}
        with self._read() as conn:
            return [event_from_row(r) for r in conn.execute(q, params)]

    # -- writing -------------------------------------------------------------------------
    def restore_plan(
        self,
        plan_id: str,
        events: Sequence[ProgressEvent],
        receipts: Sequence[ReceiptRecord],
        *,
        ledger_id: str | None = None,
    ) -> dict[str, int]:
        """Write a plan's exported history into this ledger, in one transaction; return the
        counts (``events``, ``steps``, ``receipts``) and ``seq_offset`` (what was added to each
        ``seq``: 0 unless the ledger already used those numbers).

        ``ledger_id``: take that identity (the exported ledger's), allowed only into a ledger
        that has no event and no receipt at all. Raises :class:`LedgerError` with the reason
        when refused; then nothing was written.
        """
        if not events:
            raise LedgerError(f"the export of plan {plan_id!r} has no event: nothing to restore")
        with self._write() as conn:
            # PostgreSQL: appends wait, the seq numbers stay ours
            for statement in sql.lock_tables(conn.backend, sql.EVENTS, sql.RECEIPTS, sql.STEPS):
                conn.execute_raw(statement)
            self._check_restore(conn, plan_id, receipts, adopt=ledger_id is not None)
            top = int(conn.execute(f"SELECT coalesce(max(seq), 0) FROM {sql.EVENTS}").scalar_one())
            first = min(e.seq or 0 for e in events)
            offset = top - first + 1 if first <= top else 0
            highest = max(e.seq or 0 for e in events) + offset
            if highest > SEQ_MAX:
                raise LedgerError(
                    f"the restored events would reach seq {highest} (moved up by {offset} after "
                    f"this ledger's seq {top}), beyond the largest a ledger holds ({SEQ_MAX}): "
                    "restore into a new ledger (--ledger URL)"
                )
            events = [shift_refs(e, offset) for e in events]
            rows = [{"seq": (e.seq or 0) + offset, **event_values(e)} for e in events]
            conn.executemany(sql.INSERT_EVENT_WITH_SEQ, rows)
            if conn.backend == "postgresql":  # the next append continues after ours
                conn.execute_raw(
                    f"SELECT setval(pg_get_serial_sequence('{sql.EVENTS}', 'seq'), "
                    f"(SELECT max(seq) FROM {sql.EVENTS}))"
                )
            steps = self._fold_restored(conn, events, offset)
            conn.executemany(sql.INSERT_RECEIPT, [rec.row_values() for rec in receipts])
            renamed = [e for e in events if e.kind == EventKind.plan_renamed]
            to = renamed_to(renamed[-1] if renamed else None)
            if to is not None:  # a run under the old id is refused, as in the source ledger
                key = f"renamed:{plan_id}"[:64]
                conn.execute(sql.INSERT_META, {"key": key, "value": to[:256]})
            closed = [e for e in events if e.kind == EventKind.plan_closed]
            if closed:  # the ledger's guard of a closed plan comes back with its history
                last = closed[-1]
                moved = last.model_copy(update={"seq": (last.seq or 0) + offset})
                conn.execute(sql.INSERT_META, closed_meta(moved))
            if ledger_id is not None:
                conn.execute(sql.UPDATE_META, {"p_key": LEDGER_ID_KEY, "value": ledger_id})
        if ledger_id is not None:
            self.ledger_id = ledger_id
        return {
            "events": len(rows),
            "steps": steps,
            "receipts": len(receipts),
            "seq_offset": offset,
        }

    @staticmethod
    def _check_restore(
        conn: Connection, plan_id: str, receipts: Sequence[ReceiptRecord], *, adopt: bool
    ) -> None:
        n = int(conn.execute(sql.COUNT_EVENTS, {"p_plan": plan_id}).scalar_one())
        if n:
            raise LedgerError(
                f"plan {plan_id!r} already has {n} event(s) in this ledger: a restore never "
                "merges two histories; restore into a new ledger (--ledger URL)"
            )
        params: dict[str, Any] = {"p_plan": plan_id}
        keys = sql.in_list('"key"', "key", [r.key for r in receipts], params)
        taken = conn.execute(
            f'SELECT "key" FROM {sql.RECEIPTS} WHERE plan_id = :p_plan OR {keys} LIMIT 1', params
        ).first()
        if taken is not None:
            raise LedgerError(
                f"this ledger already has a receipt row with key {taken.key!r} (or of plan "
                f"{plan_id!r}): restore into a new ledger (--ledger URL)"
            )
        if adopt:
            others = conn.execute(f"SELECT count(*) FROM {sql.EVENTS}").scalar_one()
            held = conn.execute(f"SELECT count(*) FROM {sql.RECEIPTS}").scalar_one()
            if others or held:
                raise LedgerError(
                    "--keep-identity takes the exported ledger's identity, which only a ledger "
                    f"with no history can do; this one has {others} event(s) and {held} "
                    "receipt row(s) of other plans: restore without --keep-identity"
                )

    @staticmethod
    def _fold_restored(conn: Connection, events: Sequence[ProgressEvent], offset: int) -> int:
        """The projection (and the holds of the steps in progress) from the restored events."""
        states: dict[str, StepState] = {}
        last: dict[str, int] = {}
        started: dict[str, ProgressEvent] = {}
        for ev in events:
            if ev.kind not in STEP_EVENT_KINDS or ev.step_id is None:
                continue
            seq = (ev.seq or 0) + offset
            moved = ev.model_copy(update={"seq": seq})
            states[ev.step_id] = apply_event(states.get(ev.step_id), moved)
            last[ev.step_id] = seq
            if ev.kind == EventKind.step_started:
                started[ev.step_id] = moved
        plan_id = events[0].plan_id
        conn.executemany(sql.INSERT_HOLD, list(restored_holds(plan_id, states, started)))
        return sql.insert_step_states(conn, plan_id, states, last)
