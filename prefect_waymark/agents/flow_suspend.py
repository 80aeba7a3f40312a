"""A deployment's run that waits for check-ins suspends instead of holding its worker.

With ``agent_wait_seconds`` a run outside a deployment polls the ledger for the check-in; a
deployment's run instead records ``review_waiting`` with ``waits: checkin``, the ``steps`` it
waits for and a fresh pause key, and suspends without a form (:mod:`..review.suspend`).
``waymark done`` of one of those steps resumes it (:func:`resume_waiting_runs`); any worker picks
it up and it goes on from the ledger.
"""

from __future__ import annotations

import uuid

from ..ledger import Ledger
from ..ledger.event_writers import record_review_waiting
from ..review.suspend import SUSPENSION_EVENT_KINDS, open_suspensions, resume_suspended

__all__ = ["record_checkin_suspension", "resume_waiting_runs"]


def record_checkin_suspension(
    ledger: Ledger,
    plan_id: str,
    run_id: str,
    flow_run_id: str,
    waiting: dict[str, str],
    timeout_seconds: float,
) -> str:
    """Record that this flow run suspends until ``waiting``'s steps are checked in; return the
    pause key."""
    key = f"waymark-checkin-{uuid.uuid4().hex[:12]}"
    record_review_waiting(
        ledger, plan_id, next(iter(waiting)), run_id, flow_run_id, timeout_seconds,
        pause_key=key, checkin_steps=list(waiting),
    )  # fmt: skip
    return key


def resume_waiting_runs(ledger: Ledger, plan_id: str, step_id: str) -> list[str]:
    """Resume the flow runs suspended for ``step_id``'s check-in; one line per run."""
    from ..models import utcnow

    events = ledger.events(plan_id, kinds=list(SUSPENSION_EVENT_KINDS))
    waiting = [
        s
        for s in open_suspensions(events, now=utcnow())
        if s.waits_for_checkin and step_id in (s.event.data.get("steps") or [])
    ]
    return resume_suspended(waiting, None) if waiting else []
