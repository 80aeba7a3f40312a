"""Receipts of irreversible actions, on the ``waymark_receipts`` table (one row per key).

The idempotency key is the table's primary key; that is what makes an action happen at most once,
on SQLite and on PostgreSQL alike. A row's life::

    claim   -> "intent"       committed BEFORE the side effect: this run owns the key now
    settle  -> "applied"      the receipt: outcome, external id, response hash, when, by whom
            -> "not_applied"  the effect did not happen; the key may be claimed again

A row left at ``intent`` means the outcome is unknown (the runner died, or the body raised during
the effect). It is never claimed again blindly: a probe that asks the business system settles it
(or hands the key over with :meth:`SqlReceipts.claim_action` ``replace_token=``), otherwise a
person does (``waymark receipt``). Every change also appends an ``action_*`` event in the same
transaction, so each step's projection lists its receipts and its open intents.
"""

from __future__ import annotations

import json
import os
import uuid
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from ..errors import ReceiptConflictError
from ..models import utcnow
from ._tables import (
    RECEIPT,
    RECEIPT_LOCKED,
    RECEIPTS,
    RECEIPTS_OF_PLAN,
    RECEIPTS_OF_STEP,
    UPDATE_RECEIPT,
    insert_ignoring_conflict,
)
from .base import this_host
from .events import EventKind, ProgressEvent
from .plan_rename import refuse_if_renamed
from .receipt_records import (
    MAX_RESULT_CHARS,
    ActionClaim,
    ReceiptRecord,
    ReceiptStore,
    default_action_key,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = [
    "ActionClaim",
    "ReceiptConflictError",
    "ReceiptRecord",
    "SqlReceipts",
    "default_action_key",
]


def _intent(
    key: str, step: tuple[str, str, str], run_id: str, by: str | None, **fields: Any
) -> ReceiptRecord:
    """A new ``intent`` record of the action ``step`` = (plan_id, step_id, action)."""
    plan_id, step_id, action = step
    return ReceiptRecord(
        key=key,
        plan_id=plan_id,
        step_id=step_id,
        action=action,
        state="intent",
        run_id=run_id,
        intent_by=by,
        **fields,
    )


def _update_values(rec: ReceiptRecord) -> dict[str, Any]:
    """The parameters of ``UPDATE_RECEIPT`` for ``rec``'s row (its key is the row's)."""
    values = rec.row_values()
    values["p_key"] = values.pop("key")
    return values


def _keep_result(result: Any) -> Any:
    try:
        text = json.dumps(result, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return result if len(text) <= MAX_RESULT_CHARS else None


class SqlReceipts(ReceiptStore):
    """The receipt methods of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it).

    Each method is one transaction: the row change plus its ``action_*`` event and the step's
    projection. On SQLite every write transaction starts with ``BEGIN IMMEDIATE``; on PostgreSQL
    the key's row is locked ``FOR UPDATE`` and a racing insert of the same key waits for the
    first one to commit, then does nothing.
    """

    if TYPE_CHECKING:  # provided by SqlLedger

        def _write(self, *, durable: bool = False) -> AbstractContextManager[Connection]: ...

        def _read(self, *, snapshot: bool = False) -> AbstractContextManager[Connection]: ...

        def _append(
            self, conn: Connection, ev: ProgressEvent, lease_seconds: float
        ) -> ProgressEvent: ...

        def _safe_url(self) -> str: ...

    # -- writes --------------------------------------------------------------------------
    def claim_action(
        self,
        *,
        plan_id: str,
        step_id: str,
        action: str,
        key: str,
        run_id: str,
        by: str | None = None,
        branch: str | None = None,
        replace_token: str | None = None,
    ) -> ActionClaim:
        """Write the intent for ``key`` before the effect, unless the key is taken.

        ``replace_token``: take over an open intent with this token (a probe said the action
        was not applied). A ``not_applied`` row is claimed again like a new key.
        """
        rec = _intent(
            key,
            (plan_id, step_id, action),
            run_id,
            by,
            token=uuid.uuid4().hex,
            intent_at=utcnow().isoformat(),
            host=this_host(),
            pid=os.getpid(),
        )
        with self._write(durable=True) as conn:
            refuse_if_renamed(conn, plan_id)  # never claim under an id renamed meanwhile
            if self._insert_new(conn, rec):
                self._event(conn, rec, EventKind.action_intent, branch, run_id, claims=1)
                return ActionClaim(status="claimed", record=rec)
            row = conn.execute(RECEIPT_LOCKED, {"p_key": key}).one()
            old = ReceiptRecord.from_row(row)
            if (old.plan_id, old.step_id, old.action) != (plan_id, step_id, action):
                raise ReceiptConflictError(
                    f"idempotency key {key!r} already belongs to action {old.action!r} of step "
                    f"{old.step_id!r} in plan {old.plan_id!r}; give each action its own key"
                )
            if old.state == "applied":
                return ActionClaim(status="applied", record=old)
            takeover = old.state == "intent" and replace_token is not None
            if old.state == "intent" and not takeover:
                return ActionClaim(status="open", record=old)
            if takeover and old.token != replace_token:
                return ActionClaim(status="open", record=old)
            if takeover:
                self._event(
                    conn,
                    old,
                    EventKind.action_not_applied,
                    branch,
                    run_id,
                    source="probe",
                    by=by,
                    note="a probe found the action not applied; claiming it again",
                )
            new = rec.model_copy(update={"claims": old.claims + 1})
            conn.execute(UPDATE_RECEIPT, _update_values(new))
            self._event(conn, new, EventKind.action_intent, branch, run_id, claims=new.claims)
            return ActionClaim(status="claimed", record=new)

    def settle_action(
        self,
        key: str,
        *,
        outcome: Literal["applied", "not_applied"],
        token: str | None,
        by: str | None = None,
        external_id: str | None = None,
        response_hash: str | None = None,
        result: Any = None,
        source: str = "run",
        note: str | None = None,
        branch: str | None = None,
        step: tuple[str, str, str] | None = None,
        run_id: str | None = None,
    ) -> ReceiptRecord:
        """Settle the intent ``token`` holds: commit the receipt, or record it was not applied.

        ``token=None`` is a person's record (``waymark receipt``): it settles whatever intent is
        open, and with ``step=(plan_id, step_id, action)`` may also record a receipt for a key
        that has no row yet. An already applied key is never changed.
        """
        now = utcnow().isoformat()
        with self._write(durable=True) as conn:
            row = conn.execute(RECEIPT_LOCKED, {"p_key": key}).first()
            if row is None:
                if token is not None or step is None:
                    raise ReceiptConflictError(f"no intent recorded for idempotency key {key!r}")
                old = _intent(key, step, run_id or "", by, token="", claims=0, intent_at=now)
                if not self._insert_new(conn, old):
                    # A run claimed the key between the read above and this insert (PostgreSQL
                    # at READ COMMITTED; SQLite's BEGIN IMMEDIATE excludes it). Its fresh intent
                    # is never overwritten by a record made without seeing it: settled
                    # not_applied, the run would act, fail to settle, and a later run would
                    # claim the key again.
                    raise ReceiptConflictError(
                        f"action {step[2]!r} (key {key!r}) was claimed by a run while this "
                        f"receipt was being recorded; nothing was recorded: list the step's "
                        f"receipts (`waymark receipt PLAN {step[1]}`) and record again"
                    )
            else:
                old = ReceiptRecord.from_row(row)
            if old.state == "applied":
                raise ReceiptConflictError(
                    f"action {old.action!r} (key {key!r}) already has a receipt: applied at "
                    f"{old.settled_at} by {old.settled_by}; a receipt is never changed"
                )
            if token is not None and (old.state != "intent" or old.token != token):
                raise ReceiptConflictError(
                    f"action {old.action!r} (key {key!r}) is no longer claimed by this attempt "
                    f"(now {old.state} by run {old.run_id}); its outcome must be reviewed"
                )
            new = old.model_copy(
                update={
                    "state": outcome,
                    "outcome": outcome,
                    "external_id": external_id,
                    "response_hash": response_hash,
                    "result": _keep_result(result),
                    "settled_at": now,
                    "settled_by": by,
                    "source": source,
                    "note": note,
                }
            )
            conn.execute(UPDATE_RECEIPT, _update_values(new))
            applied = outcome == "applied"
            kind = EventKind.action_applied if applied else EventKind.action_not_applied
            by_run = run_id if run_id is not None or token is None else old.run_id
            info = new.summary()
            info.pop("run_id")
            self._event(conn, new, kind, branch, by_run, **info, note=note)
            return new

    # -- reads ---------------------------------------------------------------------------
    def receipt(self, key: str) -> ReceiptRecord | None:
        """The row of ``key`` (intent or settled), if any."""
        with self._read() as conn:
            row = conn.execute(RECEIPT, {"p_key": key}).first()
        return ReceiptRecord.from_row(row) if row is not None else None

    def receipts(self, plan_id: str, step_id: str | None = None) -> list[ReceiptRecord]:
        """Every receipt row of a plan (or of one step), oldest intent first."""
        q, params = RECEIPTS_OF_PLAN, {"p_plan": plan_id}
        if step_id is not None:
            q, params = RECEIPTS_OF_STEP, {**params, "p_step": step_id}
        with self._read() as conn:
            rows = [ReceiptRecord.from_row(r) for r in conn.execute(q, params)]
        return sorted(rows, key=lambda r: (r.intent_at, r.key))

    # -- helpers -------------------------------------------------------------------------
    def _insert_new(self, conn: Connection, rec: ReceiptRecord) -> bool:
        # ON CONFLICT DO NOTHING: a loser gets no row back (an error would abort a PostgreSQL
        # transaction).
        claim = insert_ignoring_conflict(conn.dialect.name, RECEIPTS, RECEIPTS.c.key)
        if claim is not None:
            return conn.execute(claim, rec.row_values()).first() is not None
        try:  # another SQL back-end: let the primary key raise
            with conn.begin_nested():
                conn.execute(insert(RECEIPTS), rec.row_values())
            return True
        except IntegrityError:
            return False

    def _event(
        self,
        conn: Connection,
        rec: ReceiptRecord,
        kind: EventKind,
        branch: str | None,
        run_id: str | None,
        **data: Any,
    ) -> None:
        data = {"key": rec.key, "action": rec.action, **data}
        if kind == EventKind.action_intent:
            data.update(by=rec.intent_by, host=rec.host, pid=rec.pid)
        ev = ProgressEvent(
            plan_id=rec.plan_id,
            kind=kind,
            step_id=rec.step_id,
            branch=branch,
            run_id=run_id or None,
            data={k: v for k, v in data.items() if v is not None},
        )
        self._append(conn, ev, 60.0)
