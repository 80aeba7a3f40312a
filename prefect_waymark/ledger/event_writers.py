"""Typed writers of the event kinds that more than one place records: each builds its kind's
payload (:mod:`.event_payloads`) in one place, so its writers cannot drift apart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .event_kinds import EventKind
from .event_payloads import ReviewWaitingData

if TYPE_CHECKING:
    from .base import Ledger
    from .events import ProgressEvent

__all__ = ["record_review_waiting"]


def record_review_waiting(
    ledger: Ledger,
    plan_id: str,
    step_id: str,
    run_id: str,
    flow_run_id: str,
    timeout_seconds: float,
    *,
    pause_key: str | None = None,
    checkin_steps: list[str] | None = None,
) -> ProgressEvent:
    """Record that a flow run waits at ``step_id``, up to ``timeout_seconds``: paused for an
    answer (its process waits), or with a ``pause_key`` suspended (its process ends) — for an
    answer, or with ``checkin_steps`` until those agent or manual steps are checked in."""
    data: ReviewWaitingData = {"flow_run_id": flow_run_id, "timeout_seconds": timeout_seconds}
    if pause_key is not None:
        data["suspended"] = True
        data["pause_key"] = pause_key
    if checkin_steps is not None:
        data["waits"] = "checkin"
        data["steps"] = checkin_steps
    return ledger.record(plan_id, EventKind.review_waiting, step_id=step_id, run_id=run_id, **data)
