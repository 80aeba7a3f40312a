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
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from ..errors import LedgerError
from ..models import ActionReceipt, ProgressEvent, utcnow
from . import _tables as t

__all__ = [
    "ACTION_EVENT_KINDS",
    "ActionClaim",
    "ReceiptConflictError",
    "ReceiptRecord",
    "SqlReceipts",
    "default_action_key",
]

ACTION_EVENT_KINDS = frozenset({"action_intent", "action_applied", "action_not_applied"})
ReceiptState = Literal["intent", "applied", "not_applied"]
ClaimStatus = Literal["claimed", "applied", "open"]

_rc = t.ReceiptRow.__table__  # type: ignore[attr-defined]
# ON CONFLICT DO NOTHING: a loser gets no row back (an error would abort a PostgreSQL transaction).
_INSERT_IGNORING_CONFLICT = {
    "sqlite": sqlite.insert(_rc).on_conflict_do_nothing().returning(_rc.c.key),
    "postgresql": postgresql.insert(_rc).on_conflict_do_nothing().returning(_rc.c.key),
}
# Results larger than this are not kept in the receipt (their hash still is).
MAX_RESULT_CHARS = 16_000


def default_action_key(plan_id: str, step_id: str, action: str) -> str:
    """The idempotency key an action gets unless its step gives one: ``plan/step/action``."""
    return f"{plan_id}/{step_id}/{action}"


class ReceiptConflictError(LedgerError):
    """The key's row is not in the state the caller holds (another run settled or took it)."""


class ReceiptRecord(BaseModel):
    """One row of ``waymark_receipts``: the intent and, once settled, the receipt."""

    key: str
    plan_id: str
    step_id: str
    action: str
    state: ReceiptState
    run_id: str
    token: str
    claims: int = 1
    intent_at: str
    intent_by: str | None = None
    host: str | None = None
    pid: int | None = None
    outcome: str | None = None
    external_id: str | None = None
    response_hash: str | None = None
    result: Any = None
    settled_at: str | None = None
    settled_by: str | None = None
    source: str | None = None
    note: str | None = None

    def to_receipt(self) -> ActionReceipt:
        """The receipt as a domain record (only meaningful once settled)."""
        return ActionReceipt(
            key=self.key,
            action=self.action,
            step_id=self.step_id,
            outcome=self.outcome or self.state,
            external_id=self.external_id,
            response_hash=self.response_hash,
            at=datetime.fromisoformat(self.settled_at or self.intent_at),
            by=self.settled_by or self.intent_by,
        )

    def summary(self) -> dict[str, Any]:
        """What the step's projection, ``waymark status`` and the run's marker show."""
        return {
            "key": self.key,
            "action": self.action,
            "outcome": self.outcome or self.state,
            "external_id": self.external_id,
            "response_hash": self.response_hash,
            "at": self.settled_at or self.intent_at,
            "by": self.settled_by or self.intent_by,
            "run_id": self.run_id,
            "source": self.source,
        }


class ActionClaim(BaseModel):
    """The answer to a claim: ``claimed`` (run the effect now), ``applied`` (a receipt exists:
    skip it) or ``open`` (someone's intent has no receipt: outcome unknown)."""

    status: ClaimStatus
    record: ReceiptRecord


_COLUMNS = ("key", "plan_id", "step_id", "action", "state", "run_id")


def _from_row(row: Any) -> ReceiptRecord:
    data = json.loads(row.data)
    return ReceiptRecord(**{c: getattr(row, c) for c in _COLUMNS}, **data)


def _values(rec: ReceiptRecord) -> dict[str, Any]:
    data = rec.model_dump(exclude=set(_COLUMNS))
    return {
        **{c: getattr(rec, c) for c in _COLUMNS},
        "data": json.dumps(data, default=str, sort_keys=True),
    }


def _keep_result(result: Any) -> Any:
    try:
        text = json.dumps(result, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return result if len(text) <= MAX_RESULT_CHARS else None


class SqlReceipts:
    """The receipt methods of :class:`~prefect_waymark.ledger.SqlLedger` (mixed into it).

    Each method is one transaction: the row change plus its ``action_*`` event and the step's
    projection. On SQLite every write transaction starts with ``BEGIN IMMEDIATE``; on PostgreSQL
    the key's row is locked ``FOR UPDATE`` and a racing insert of the same key waits for the
    first one to commit, then does nothing.
    """

    _engine: Engine

    if TYPE_CHECKING:  # provided by SqlLedger

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
        rec = ReceiptRecord(
            key=key,
            plan_id=plan_id,
            step_id=step_id,
            action=action,
            state="intent",
            run_id=run_id,
            token=uuid.uuid4().hex,
            intent_at=utcnow().isoformat(),
            intent_by=by,
            host=_host(),
            pid=os.getpid(),
        )
        with self._write() as conn:
            if self._insert_new(conn, rec):
                self._event(conn, rec, "action_intent", branch, run_id, claims=1)
                return ActionClaim(status="claimed", record=rec)
            row = conn.execute(select(_rc).where(_rc.c.key == key).with_for_update()).one()
            old = _from_row(row)
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
                    "action_not_applied",
                    branch,
                    run_id,
                    source="probe",
                    by=by,
                    note="a probe found the action not applied; claiming it again",
                )
            new = rec.model_copy(update={"claims": old.claims + 1})
            conn.execute(update(_rc).where(_rc.c.key == key).values(**_values(new)))
            self._event(conn, new, "action_intent", branch, run_id, claims=new.claims)
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
        with self._write() as conn:
            row = conn.execute(select(_rc).where(_rc.c.key == key).with_for_update()).first()
            if row is None:
                if token is not None or step is None:
                    raise ReceiptConflictError(f"no intent recorded for idempotency key {key!r}")
                plan_id, step_id, action = step
                old = ReceiptRecord(
                    key=key,
                    plan_id=plan_id,
                    step_id=step_id,
                    action=action,
                    state="intent",
                    run_id=run_id or "",
                    token="",
                    claims=0,
                    intent_at=now,
                    intent_by=by,
                )
                self._insert_new(conn, old)
            else:
                old = _from_row(row)
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
            conn.execute(update(_rc).where(_rc.c.key == key).values(**_values(new)))
            kind = "action_applied" if outcome == "applied" else "action_not_applied"
            by_run = run_id if run_id is not None or token is None else old.run_id
            info = new.summary()
            info.pop("run_id")
            self._event(conn, new, kind, branch, by_run, **info, note=note)
            return new

    # -- reads ---------------------------------------------------------------------------
    def receipt(self, key: str) -> ReceiptRecord | None:
        """The row of ``key`` (intent or settled), if any."""
        with self._engine.connect() as conn:
            row = conn.execute(select(_rc).where(_rc.c.key == key)).first()
        return _from_row(row) if row is not None else None

    def receipts(self, plan_id: str, step_id: str | None = None) -> list[ReceiptRecord]:
        """Every receipt row of a plan (or of one step), oldest intent first."""
        q = select(_rc).where(_rc.c.plan_id == plan_id)
        if step_id is not None:
            q = q.where(_rc.c.step_id == step_id)
        with self._engine.connect() as conn:
            rows = [_from_row(r) for r in conn.execute(q)]
        return sorted(rows, key=lambda r: (r.intent_at, r.key))

    # -- helpers -------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[Connection]:
        try:
            with self._engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            raise LedgerError(f"cannot write the ledger {self._safe_url()}: {exc.orig}") from exc

    def _insert_new(self, conn: Connection, rec: ReceiptRecord) -> bool:
        stmt = _INSERT_IGNORING_CONFLICT.get(conn.dialect.name)
        if stmt is not None:
            return conn.execute(stmt, _values(rec)).first() is not None
        try:  # another SQL back-end: let the primary key raise
            with conn.begin_nested():
                conn.execute(_rc.insert(), _values(rec))
            return True
        except IntegrityError:
            return False

    def _event(
        self,
        conn: Connection,
        rec: ReceiptRecord,
        kind: str,
        branch: str | None,
        run_id: str | None,
        **data: Any,
    ) -> None:
        data = {"key": rec.key, "action": rec.action, **data}
        if kind == "action_intent":
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


def _host() -> str:
    from .base import this_host

    return this_host()
