"""Receipts of irreversible actions: the records, and the receipts API every ledger has.

The ``waymark_receipts`` table holds one row per idempotency key; the key is the table's primary
key, and that is what makes an action happen at most once, on SQLite and on PostgreSQL alike.
A row's life::

    claim   -> "intent"       committed BEFORE the side effect: this run owns the key now
    settle  -> "applied"      the receipt: outcome, external id, response hash, when, by whom
            -> "not_applied"  the effect did not happen; the key may be claimed again

A row left at ``intent`` means the outcome is unknown (the runner died, or the body raised during
the effect). It is never claimed again blindly: a probe that asks the business system settles it
(or hands the key over with :meth:`ReceiptStore.claim_action` ``replace_token=``), otherwise a
person does (``waymark receipt``). Every change also appends an ``action_*`` event in the same
transaction, so each step's projection lists its receipts and its open intents.

This module holds no storage: :mod:`.base` (the :class:`~prefect_waymark.ledger.Ledger`
interface) takes :class:`ReceiptStore` from here, and :class:`~.sql_ledger.SqlLedger` writes and
reads the rows.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from ..models import ActionReceipt

__all__ = [
    "MAX_RESULT_CHARS",
    "ActionClaim",
    "ClaimStatus",
    "ReceiptRecord",
    "ReceiptState",
    "ReceiptStore",
    "default_action_key",
]

ReceiptState = Literal["intent", "applied", "not_applied"]
ClaimStatus = Literal["claimed", "applied", "open"]
# Results larger than this are not kept in the receipt (their hash still is).
MAX_RESULT_CHARS = 16_000


def default_action_key(plan_id: str, step_id: str, action: str) -> str:
    """The idempotency key an action gets unless its step gives one: ``plan/step/action``."""
    return f"{plan_id}/{step_id}/{action}"


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

    @classmethod
    def from_row(cls, row: Any) -> ReceiptRecord:
        """The record from its row (a row of every column of ``waymark_receipts``)."""
        values = row._asdict()
        data = json.loads(values.pop("data"))
        return cls(**values, **data)

    def row_values(self) -> dict[str, Any]:
        """The record as a row of ``waymark_receipts``: the fields that are columns of their
        own, the rest as ``data`` (JSON)."""
        from .sql import RECEIPT_COLUMNS

        columns = [c for c in RECEIPT_COLUMNS if c != "data"]
        data = self.model_dump(exclude=set(columns))
        return {
            **{c: getattr(self, c) for c in columns},
            "data": json.dumps(data, default=str, sort_keys=True),
        }

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

    def applied_words(self) -> str:
        """ "applied at T by a, external id inv1": a committed receipt in words."""
        ext = f", external id {self.external_id}" if self.external_id else ""
        return f"applied at {self.settled_at} by {self.settled_by or self.intent_by}{ext}"

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


class ReceiptStore(ABC):
    """Receipts of irreversible actions: one record per idempotency key (part of every ledger)."""

    @abstractmethod
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
        """Write the intent for ``key`` before the side effect, unless the key is taken."""

    @abstractmethod
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
        """Commit the receipt of the intent ``token`` holds, or record it was not applied."""

    @abstractmethod
    def receipt(self, key: str) -> ReceiptRecord | None:
        """The intent or receipt recorded for ``key``."""

    @abstractmethod
    def receipts(self, plan_id: str, step_id: str | None = None) -> list[ReceiptRecord]:
        """The plan's intents and receipts (for markers, status and review)."""
