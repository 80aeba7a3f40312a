"""What ``waymark status`` shows beyond the plan view, from the plan's last events of a few
kinds, and its exit code: shared by ``status`` (the ledger's newest events) and ``waymark replay``
(the newest events up to a point), so both print the same document for the same history.

The deployment line is not here: it is read live from the Prefect server (status adds it;
replay leaves it out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..ledger.event_kinds import EventKind, EventLike
from ..ledger.progress_view import PlanView
from ..run import exit_codes

if TYPE_CHECKING:
    from ..ledger.events import ProgressEvent

__all__ = ["LastEvent", "last_event_in", "ledger_extras", "status_exit_code"]

#: The newest event of one of the given kinds (``LedgerReader.last_event`` of one plan).
LastEvent = Callable[[Sequence[EventKind]], EventLike | None]


def last_event_in(events: Sequence[ProgressEvent]) -> LastEvent:
    """:data:`LastEvent` over a plan's events (in ``seq`` order) held in memory."""

    def last(kinds: Sequence[EventKind]) -> ProgressEvent | None:
        wanted = set(kinds)
        return next((ev for ev in reversed(events) if ev.kind in wanted), None)

    return last


def ledger_extras(last_event: LastEvent) -> tuple[dict[str, Any], str | None]:
    """The status document's keys from the plan's events (``last_run``, ``aborted``,
    ``closed``) and the id of the deployment that runs the plan (from its last
    ``run_started``), if any."""
    extra: dict[str, Any] = {}
    last = last_event([EventKind.run_finished])
    if last is not None:
        extra["last_run"] = {"at": last.at.isoformat(), **last.data}
    started = last_event([EventKind.run_started])
    deployment_id = started.data.get("deployment_id") if started is not None else None
    abort = last_event([EventKind.plan_aborted, EventKind.plan_abort_lifted])
    if abort is not None and abort.kind == EventKind.plan_aborted:
        extra["aborted"] = {
            "at": abort.at.isoformat(),
            "by": abort.data.get("by"),
            "reason": abort.data.get("reason") or "",
        }
    closed = last_event([EventKind.plan_closed])  # `waymark close` (closing/closed.py)
    if closed is not None:
        from ..ledger.plan_close import closed_record

        extra["closed"] = closed_record(closed)
    return extra, str(deployment_id) if deployment_id else None


def status_exit_code(view: PlanView, extra: dict[str, Any]) -> int:
    """0 complete, closed or going on, 4 needs review or aborted, 1 a step failed."""
    if view.complete or "closed" in extra:
        return exit_codes.OK
    if view.needs_review or "aborted" in extra:
        return exit_codes.NEEDS_REVIEW
    if any(s.status == "failed" for s in view.steps):
        return exit_codes.STEP_FAILED
    return exit_codes.OK
