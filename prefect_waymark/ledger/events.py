"""The ledger's one event vocabulary: every kind of event a writer may append.

``EventKind`` is a ``str`` enum, so a kind compares equal to its stored name
(``EventKind.step_started == "step_started"``) and is written to the ledger as that name.
Writers and readers name kinds only through this enum; no bare kind strings elsewhere.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..models import _ValueEnum, utcnow
from .event_payloads import (
    AcceptedVersionsData,
    ActionIntentData,
    ActionSettledData,
    DriftData,
    ImportedData,
    MarkerWrittenData,
    PlanAbortedData,
    PlanAbortLiftedData,
    PlanClosedData,
    PlanRenamedData,
    ReanchorData,
    ReviewAnnouncedData,
    ReviewResumedData,
    ReviewWaitingData,
    RunFinishedData,
    RunStartedData,
    StepAttemptFailedData,
    StepBlockedData,
    StepCompletedData,
    StepDecisionData,
    StepFailedData,
    StepInterruptedData,
    StepSkippedData,
    StepStartedData,
    StepStoppedData,
    StepWaitingData,
)

__all__ = [
    "ACTION_EVENT_KINDS",
    "EVENT_PAYLOADS",
    "RELEASE_EVENT_KINDS",
    "REF_EVENT_KINDS",
    "STEP_EVENT_KINDS",
    "AcceptedVersionsData",
    "ActionIntentData",
    "ActionSettledData",
    "DriftData",
    "EventKind",
    "MarkerWrittenData",
    "PlanAbortLiftedData",
    "PlanAbortedData",
    "PlanClosedData",
    "PlanRenamedData",
    "ProgressEvent",
    "ReanchorData",
    "ReviewAnnouncedData",
    "ReviewWaitingData",
    "RunFinishedData",
    "RunStartedData",
    "StepAttemptFailedData",
    "StepCompletedData",
    "StepDecisionData",
    "StepFailedData",
    "StepInterruptedData",
    "StepSkippedData",
    "StepStartedData",
    "StepStoppedData",
]


class EventKind(_ValueEnum):
    """Every kind of ledger event, grouped by what it is about."""

    # A run's boundary.
    run_started = "run_started"
    run_finished = "run_finished"
    marker_written = "marker_written"
    # A step's progress (each changes the step's projected status).
    step_started = "step_started"
    step_attempt_failed = "step_attempt_failed"
    step_completed = "step_completed"
    step_failed = "step_failed"
    step_interrupted = "step_interrupted"
    step_needs_review = "step_needs_review"
    step_rerun_requested = "step_rerun_requested"
    step_review_accepted = "step_review_accepted"
    step_refused = "step_refused"
    step_skipped = "step_skipped"  # `waymark skip`: left out on purpose, with a reason
    # Agent and manual steps (checked in from outside the flow: prefect_waymark/agents).
    step_blocked = "step_blocked"
    step_waiting = "step_waiting"
    # Irreversible actions: the intent before the effect, then its receipt.
    action_intent = "action_intent"
    action_applied = "action_applied"
    action_not_applied = "action_not_applied"
    # Re-anchoring: what was re-read, and which versions the plan accepted.
    reanchor = "reanchor"
    accepted_versions = "accepted_versions"
    drift = "drift"
    # Reviews and aborts.
    review_waiting = "review_waiting"
    review_resumed = "review_resumed"
    review_announced = "review_announced"
    plan_aborted = "plan_aborted"
    plan_abort_lifted = "plan_abort_lifted"
    # A plan id changed: its history and receipts were carried over (`waymark rename-plan`).
    plan_renamed = "plan_renamed"
    # The plan was closed and archived (`waymark close`); runs refuse it from then on.
    plan_closed = "plan_closed"
    # A plan was imported from another tracker's file (`waymark import`), once per source.
    imported = "imported"


#: Kinds that act on a step's irreversible action (any step status).
ACTION_EVENT_KINDS = frozenset(
    {EventKind.action_intent, EventKind.action_applied, EventKind.action_not_applied}
)

#: Kinds folded into a step's projection (:mod:`prefect_waymark.ledger.step_state`).
STEP_EVENT_KINDS = frozenset(
    {
        EventKind.step_started,
        EventKind.step_attempt_failed,
        EventKind.step_completed,
        EventKind.step_failed,
        EventKind.step_interrupted,
        EventKind.step_needs_review,
        EventKind.step_rerun_requested,
        EventKind.step_review_accepted,
        EventKind.step_refused,
        EventKind.step_blocked,
        EventKind.step_skipped,
    }
    | ACTION_EVENT_KINDS
)

#: Kinds that end a step's in_progress and so release its branch's slot.
RELEASE_EVENT_KINDS = frozenset(
    {EventKind.step_completed, EventKind.step_failed, EventKind.step_interrupted}
)

#: Kinds that record what the plan re-read and accepted.
REF_EVENT_KINDS = (EventKind.reanchor, EventKind.accepted_versions)


class ProgressEvent(BaseModel):
    """One append-only ledger event: a kind, where it belongs, and its ``data`` payload.

    ``data`` holds the fields of the kind's payload (:data:`EVENT_PAYLOADS`).
    """

    seq: int | None = None
    plan_id: str
    kind: EventKind
    step_id: str | None = None
    branch: str | None = None
    run_id: str | None = None
    at: datetime = Field(default_factory=utcnow)
    data: dict[str, Any] = Field(default_factory=dict)


#: The payload type of each kind: the keys its ``data`` may hold.
EVENT_PAYLOADS: dict[EventKind, type] = {
    EventKind.run_started: RunStartedData,
    EventKind.run_finished: RunFinishedData,
    EventKind.marker_written: MarkerWrittenData,
    EventKind.step_started: StepStartedData,
    EventKind.step_attempt_failed: StepAttemptFailedData,
    EventKind.step_completed: StepCompletedData,
    EventKind.step_failed: StepFailedData,
    EventKind.step_interrupted: StepInterruptedData,
    EventKind.step_needs_review: StepStoppedData,
    EventKind.step_rerun_requested: StepDecisionData,
    EventKind.step_review_accepted: StepDecisionData,
    EventKind.step_refused: StepStoppedData,
    EventKind.step_skipped: StepSkippedData,
    EventKind.step_blocked: StepBlockedData,
    EventKind.step_waiting: StepWaitingData,
    EventKind.action_intent: ActionIntentData,
    EventKind.action_applied: ActionSettledData,
    EventKind.action_not_applied: ActionSettledData,
    EventKind.reanchor: ReanchorData,
    EventKind.accepted_versions: AcceptedVersionsData,
    EventKind.drift: DriftData,
    EventKind.review_waiting: ReviewWaitingData,
    EventKind.review_resumed: ReviewResumedData,
    EventKind.review_announced: ReviewAnnouncedData,
    EventKind.plan_aborted: PlanAbortedData,
    EventKind.plan_abort_lifted: PlanAbortLiftedData,
    EventKind.plan_renamed: PlanRenamedData,
    EventKind.plan_closed: PlanClosedData,
    EventKind.imported: ImportedData,
}
