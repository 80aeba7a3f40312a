"""The ledger's one event vocabulary: every kind of event a writer may append.

``EventKind`` is a ``str`` enum, so a kind compares equal to its stored name
(``EventKind.step_started == "step_started"``) and is written to the ledger as that name.
Writers and readers name kinds only through this enum; no bare kind strings elsewhere.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..models import utcnow
from .event_kinds import (
    ACTION_EVENT_KINDS,
    REF_EVENT_KINDS,
    RELEASE_EVENT_KINDS,
    STEP_EVENT_KINDS,
    EventKind,
)
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
    PlanSeenData,
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
    StepRenamedData,
    StepSkippedData,
    StepStaleData,
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
    "PlanSeenData",
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
    "StepRenamedData",
    "StepSkippedData",
    "StepStaleData",
    "StepStartedData",
    "StepStoppedData",
]


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
    EventKind.step_renamed: StepRenamedData,
    EventKind.step_stale: StepStaleData,
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
    EventKind.plan_seen: PlanSeenData,
    EventKind.plan_closed: PlanClosedData,
    EventKind.imported: ImportedData,
}
