"""Typed writers of the event kinds that more than one place records: each checks its kind's
payload (:mod:`.event_payloads`) against the keys and types it declares, so the writers of one
kind cannot drift apart. A kind recorded in one place only is recorded there with
:meth:`~.base.Ledger.record`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .event_kinds import EventKind
from .event_payloads import ReviewWaitingData

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .base import Ledger
    from .event_payloads import (
        AcceptedVersionsData,
        DriftData,
        ReanchorData,
        ReviewResumedData,
        StepCompletedData,
        StepDecisionData,
        StepFailedData,
        StepInterruptedData,
        StepStartedData,
    )
    from .events import ProgressEvent

__all__ = [
    "record_accepted_versions",
    "record_decision",
    "record_drift",
    "record_reanchor",
    "record_review_resumed",
    "record_review_waiting",
    "record_step_completed",
    "record_step_failed",
    "record_step_interrupted",
    "record_step_started",
]


def record_step_started(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str,
    branch: str,
    run_id: str,
    lease_seconds: float,
    **data: Unpack[StepStartedData],
) -> ProgressEvent:
    """A run, a check-in or an import claims ``step_id``: it holds ``branch`` for
    ``lease_seconds`` (:class:`~prefect_waymark.errors.BranchBusyError` if another run does)."""
    return ledger.record(
        plan_id,
        EventKind.step_started,
        step_id=step_id,
        branch=branch,
        run_id=run_id,
        lease_seconds=lease_seconds,
        **data,
    )


def record_step_completed(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str,
    branch: str,
    run_id: str,
    **data: Unpack[StepCompletedData],
) -> ProgressEvent:
    """``step_id`` completed: in a run, checked in (``waymark done``), or imported."""
    return ledger.record(
        plan_id, EventKind.step_completed, step_id=step_id, branch=branch, run_id=run_id, **data
    )


def record_step_failed(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str,
    branch: str,
    run_id: str,
    **data: Unpack[StepFailedData],
) -> ProgressEvent:
    """``step_id`` failed: in a run, or checked in as failed."""
    return ledger.record(
        plan_id, EventKind.step_failed, step_id=step_id, branch=branch, run_id=run_id, **data
    )


def record_step_interrupted(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str,
    branch: str,
    run_id: str,
    **data: Unpack[StepInterruptedData],
) -> ProgressEvent:
    """``step_id``, in progress by ``dead_run``, is interrupted: that run stopped (or its lease
    ran out); its branch is free."""
    return ledger.record(
        plan_id, EventKind.step_interrupted, step_id=step_id, branch=branch, run_id=run_id, **data
    )


def record_decision(
    ledger: Ledger,
    plan_id: str,
    kind: Literal[EventKind.step_review_accepted, EventKind.step_rerun_requested],
    *,
    step_id: str,
    branch: str,
    run_id: str | None = None,
    **data: Unpack[StepDecisionData],
) -> ProgressEvent:
    """A person's (or a review's) word on ``step_id``: accepted as it is, or to run again."""
    return ledger.record(plan_id, kind, step_id=step_id, branch=branch, run_id=run_id, **data)


def record_drift(
    ledger: Ledger, plan_id: str, *, step_id: str, run_id: str, **data: Unpack[DriftData]
) -> ProgressEvent:
    """``step_id`` would take a forbidden action: what the plan drifted to, and the rule."""
    return ledger.record(plan_id, EventKind.drift, step_id=step_id, run_id=run_id, **data)


def record_reanchor(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str | None,
    run_id: str,
    **data: Unpack[ReanchorData],
) -> ProgressEvent:
    """The state refs (and the contract) read at a re-anchor point, and the conflicts found."""
    return ledger.record(plan_id, EventKind.reanchor, step_id=step_id, run_id=run_id, **data)


def record_accepted_versions(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str | None,
    run_id: str | None,
    **data: Unpack[AcceptedVersionsData],
) -> ProgressEvent:
    """The state refs' versions (and the contract) accepted from now on: read first, written by
    a step, or accepted by a person."""
    return ledger.record(
        plan_id, EventKind.accepted_versions, step_id=step_id, run_id=run_id, **data
    )


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


def record_review_resumed(
    ledger: Ledger,
    plan_id: str,
    *,
    step_id: str | None = None,
    run_id: str,
    **data: Unpack[ReviewResumedData],
) -> ProgressEvent:
    """A suspended flow run's resumed execution took up its stop (or the run could not suspend:
    ``error``), which closes its ``review_waiting``."""
    return ledger.record(plan_id, EventKind.review_resumed, step_id=step_id, run_id=run_id, **data)
