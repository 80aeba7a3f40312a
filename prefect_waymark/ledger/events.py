"""The ledger's one event vocabulary: every kind of event a writer may append.

``EventKind`` is a ``str`` enum, so a kind compares equal to its stored name
(``EventKind.step_started == "step_started"``) and is written to the ledger as that name.
Writers and readers name kinds only through this enum; no bare kind strings elsewhere.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from pydantic import BaseModel, Field

from ..models import _ValueEnum, utcnow

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
# A class's own keys are those every writer in the package always puts in; a ``total=False``
# subclass adds the ones some writers leave out. Readers still take fields with ``.get``: a ledger
# written by an older version may lack one.


class _RunStartedRequired(TypedDict):
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


class RunStartedData(_RunStartedRequired, total=False):
    """A deployment's run also records its deployment, and with ``max_steps`` its schedule
    slot's start and the steps runs of the deployment started in that slot before it
    (:mod:`prefect_waymark.run.slot_budget`)."""

    deployment_id: str
    slot_start: str
    slot_used: int


class RunFinishedData(TypedDict):
    """A run's summary (:class:`~prefect_waymark.run.summary.RunSummary`)."""

    plan_id: str
    run_id: str
    flow_run_id: str | None
    executor: str
    workdir: str
    started_at: str
    finished_at: str
    result: str
    started_from: str | None
    executed_steps: list[str]
    cached_steps: list[str]
    skipped_steps: list[str]
    failed_steps: list[str]
    interrupted_steps: list[str]
    needs_review: list[dict[str, Any]]
    next_start: str | None
    next_start_reason: str


class MarkerWrittenData(TypedDict):
    """A run's execution marker (:func:`~prefect_waymark.markers.build_marker`)."""

    plan_id: str
    run_id: str
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
    ledger_id: str | None  # schema 2 on: the identity of the ledger that holds the run
    ledger: str  # that ledger's URL, its password masked


class StepStartedData(TypedDict):
    def_hash: str
    result_key: str
    host: str
    pid: int


class StepAttemptFailedData(TypedDict):
    attempt: int
    error: str
    output_tail: str | None
    will_retry: bool


class _StepCompleted(TypedDict):
    def_hash: str
    result_key: str
    cached: bool
    output_tail: str | None
    outputs: dict[str, str]


class StepCompletedData(_StepCompleted, total=False):
    attempts: int  # read by the projection; the runner leaves it out
    # A step checked in from outside the flow (`waymark done`): who did it, and the evidence
    # given per acceptance item (id -> text); `imported`: completed by `waymark import`.
    executor: str
    evidence: dict[str, str]
    workdir: str
    imported: bool


class StepBlockedData(TypedDict, total=False):
    """``waymark block``: the step cannot go on — behind another step (``on``) or for a
    ``reason``; who said so."""

    on: str
    reason: str
    by: str


class StepWaitingData(TypedDict):
    """A flow run reached an agent or manual step: it waits for its executor's check-in."""

    step_kind: str
    owner: str | None


class _StepFailed(TypedDict):
    error: str
    output_tail: str | None


class StepFailedData(_StepFailed, total=False):
    attempts: int  # read by the projection; the runner leaves it out


class StepInterruptedData(TypedDict):
    dead_run: str
    reason: str


class _Reason(TypedDict):
    reason: str


class StepStoppedData(_Reason):
    """``step_needs_review`` and ``step_refused``: why, and what was found."""

    details: dict[str, Any]


class _Decision(_Reason):
    by: str


class StepDecisionData(_Decision, total=False):
    """``step_rerun_requested`` and ``step_review_accepted``: a person's (or a review's) word."""

    review_reason: str | None
    from_review: bool
    def_hash: str
    resume_status: str
    outputs: dict[str, str]


class _ActionRef(TypedDict):
    key: str
    action: str


class _ActionClaim(_ActionRef):
    claims: int


class ActionIntentData(_ActionClaim, total=False):
    by: str
    host: str
    pid: int


class ActionSettledData(_ActionRef, total=False):
    """``action_applied`` and ``action_not_applied``: the receipt's summary."""

    outcome: str
    external_id: str
    response_hash: str
    at: str
    by: str
    source: str
    note: str


class _Reanchor(TypedDict):
    point: str
    refs: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]


class ReanchorData(_Reanchor, total=False):
    contract: dict[str, Any] | None
    forbidden: list[str]


class _Accepted(_Reason):
    refs: dict[str, str]


class AcceptedVersionsData(_Accepted, total=False):
    by: str
    contract: dict[str, Any]


class DriftData(TypedDict):
    drift: str
    action: str
    rule: str
    goal_id: str
    contract_version: int


class _ReviewWaitingRequired(TypedDict):
    flow_run_id: str
    timeout_seconds: float


class ReviewWaitingData(_ReviewWaitingRequired, total=False):
    """A run waits for an answer in the Prefect UI: paused (its process waits), or — a
    deployment's run — ``suspended`` (its process ended; ``pause_key`` is the form's key)."""

    suspended: bool
    pause_key: str
    #: ``checkin``: suspended until agent or manual ``steps`` are checked in (no form).
    waits: str
    steps: list[str]


class _ReviewResumedRequired(TypedDict):
    flow_run_id: str
    pause_key: str
    decision: str
    applied: bool


class ReviewResumedData(_ReviewResumedRequired, total=False):
    """A suspended flow run's resumed execution took up its stop: the answer it found
    (``decision`` empty: none), and whether it applied it (not when answered meanwhile); or
    (``error``) the run could not suspend at all, and this closes its ``review_waiting``."""

    error: str


class ReviewAnnouncedData(TypedDict):
    """The needs-review event went out for these stops: step -> seq of its needs_review event."""

    stops: dict[str, int]


class PlanAbortedData(_Reason):
    by: str
    reviewing: list[str]


class PlanAbortLiftedData(TypedDict):
    by: str


class PlanRenamedData(TypedDict, total=False):
    """On the new id: ``from_plan`` (its history, copied before this event); on the old id:
    ``to_plan`` (no run continues under the old id)."""

    from_plan: str
    to_plan: str
    by: str
    events: int
    receipts: int


class ImportedData(TypedDict):
    """``waymark import``: the source file (its format, path and sha256) and the steps it
    recorded as done (each completed by the import, in this order)."""

    source_format: str
    source_path: str
    source_sha256: str
    completed: list[str]


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
    EventKind.imported: ImportedData,
}
