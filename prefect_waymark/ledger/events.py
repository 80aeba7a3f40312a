"""The ledger's one event vocabulary: every kind of event a writer may append.

``EventKind`` is a ``str`` enum, so a kind compares equal to its stored name
(``EventKind.step_started == "step_started"``) and is written to the ledger as that name.
Writers and readers name kinds only through this enum; no bare kind strings elsewhere.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Required, TypedDict

from pydantic import BaseModel, Field

from ..models import utcnow

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
    "ProgressEvent",
    "ReanchorData",
    "ReviewWaitingData",
    "RunFinishedData",
    "RunStartedData",
    "StepAttemptFailedData",
    "StepCompletedData",
    "StepDecisionData",
    "StepFailedData",
    "StepInterruptedData",
    "StepStartedData",
    "StepStoppedData",
]


class EventKind(str, Enum):
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
    plan_aborted = "plan_aborted"
    plan_abort_lifted = "plan_abort_lifted"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return self.value.__format__(spec)


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


# -- payloads: the ``data`` fields each kind's writers put in -----------------------------------
# total=False: readers take every field with ``.get`` (an older ledger may lack one);
# ``Required`` marks what every writer in the package always writes.


class RunStartedData(TypedDict, total=False):
    flow_run_id: str | None
    executor: str
    workdir: str
    host: str
    pid: int
    plan_hash: str
    step_hashes: dict[str, str]
    started_from: str | None
    max_steps: int | None
    until: str | None


class RunFinishedData(TypedDict, total=False):
    """A run's summary (:class:`~prefect_waymark.run.summary.RunSummary`)."""

    plan_id: str
    run_id: str
    flow_run_id: str | None
    executor: str
    workdir: str
    started_at: str
    finished_at: str
    result: Required[str]
    started_from: str | None
    executed_steps: list[str]
    cached_steps: list[str]
    skipped_steps: list[str]
    failed_steps: list[str]
    interrupted_steps: list[str]
    needs_review: list[dict[str, Any]]
    next_start: str | None
    next_start_reason: str


class MarkerWrittenData(TypedDict, total=False):
    """A run's execution marker (:func:`~prefect_waymark.markers.build_marker`)."""

    plan_id: Required[str]
    run_id: Required[str]
    executed_at: str
    started_at: str
    executor: str
    workdir: str
    flow_run_id: str | None
    started_from: str | None
    executed_steps: list[str]
    skipped_steps: list[str]
    failed_steps: list[str]
    outputs: list[dict[str, str]]
    receipts: list[dict[str, Any]]
    state_refs: list[dict[str, Any]]
    contract: dict[str, Any] | None
    result: str
    next_start: dict[str, Any]
    marker_file: str | None


class StepStartedData(TypedDict, total=False):
    def_hash: str
    result_key: str
    host: str
    pid: int


class StepAttemptFailedData(TypedDict, total=False):
    attempt: int
    error: str
    output_tail: str | None
    will_retry: bool


class StepCompletedData(TypedDict, total=False):
    def_hash: str
    result_key: str
    cached: bool
    attempts: int
    output_tail: str | None
    outputs: dict[str, str]


class StepFailedData(TypedDict, total=False):
    error: str
    attempts: int
    output_tail: str | None


class StepInterruptedData(TypedDict, total=False):
    dead_run: Required[str]
    reason: str


class StepStoppedData(TypedDict, total=False):
    """``step_needs_review`` and ``step_refused``: why, and what was found."""

    reason: Required[str]
    details: dict[str, Any]


class StepDecisionData(TypedDict, total=False):
    """``step_rerun_requested`` and ``step_review_accepted``: a person's (or a review's) word."""

    by: str
    reason: str
    review_reason: str | None
    from_review: bool
    def_hash: str
    resume_status: str
    outputs: dict[str, str]


class ActionIntentData(TypedDict, total=False):
    key: Required[str]
    action: Required[str]
    claims: int
    by: str
    host: str
    pid: int


class ActionSettledData(TypedDict, total=False):
    """``action_applied`` and ``action_not_applied``: the receipt's summary."""

    key: Required[str]
    action: Required[str]
    outcome: str
    external_id: str
    response_hash: str
    at: str
    by: str
    source: str
    note: str


class ReanchorData(TypedDict, total=False):
    point: str
    contract: dict[str, Any] | None
    refs: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    forbidden: list[str]


class AcceptedVersionsData(TypedDict, total=False):
    refs: Required[dict[str, str]]
    reason: str
    by: str
    contract: dict[str, Any]


class DriftData(TypedDict, total=False):
    drift: Required[str]
    action: str
    rule: str
    goal_id: str
    contract_version: int


class ReviewWaitingData(TypedDict, total=False):
    flow_run_id: str
    timeout_seconds: float


class PlanAbortedData(TypedDict, total=False):
    by: str
    reason: str
    reviewing: list[str]


class PlanAbortLiftedData(TypedDict, total=False):
    by: str


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
    EventKind.action_intent: ActionIntentData,
    EventKind.action_applied: ActionSettledData,
    EventKind.action_not_applied: ActionSettledData,
    EventKind.reanchor: ReanchorData,
    EventKind.accepted_versions: AcceptedVersionsData,
    EventKind.drift: DriftData,
    EventKind.review_waiting: ReviewWaitingData,
    EventKind.plan_aborted: PlanAbortedData,
    EventKind.plan_abort_lifted: PlanAbortLiftedData,
}
