"""Reviews: the one gate that acts on every stop, a person's decisions, receipts and the UI form."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import _lazy_exports

if TYPE_CHECKING:
    from .decisions import Decision, abort_event, apply_decision
    from .gate import GateOutcome, ReviewGate
    from .receipts import record_receipt
    from .signal import NEEDS_REVIEW_EVENT, ReviewInput

__all__ = [
    "NEEDS_REVIEW_EVENT",
    "Decision",
    "GateOutcome",
    "ReviewGate",
    "ReviewInput",
    "abort_event",
    "apply_decision",
    "record_receipt",
]

_WHERE = {
    "Decision": ".decisions",
    "apply_decision": ".decisions",
    "abort_event": ".decisions",
    "GateOutcome": ".gate",
    "ReviewGate": ".gate",
    "record_receipt": ".receipts",
    "NEEDS_REVIEW_EVENT": ".signal",
    "ReviewInput": ".signal",
}


__getattr__ = _lazy_exports(__name__, _WHERE)
