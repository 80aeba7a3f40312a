"""The payload of each ledger event kind: the keys its ``data`` holds (TypedDicts).

:data:`~.events.EVENT_PAYLOADS` maps each :class:`~.events.EventKind` to its class here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = [
    "AcceptedVersionsData",
    "ActionIntentData",
    "ActionSettledData",
    "DriftData",
    "ImportedData",
    "MarkerWrittenData",
    "PlanAbortLiftedData",
    "PlanAbortedData",
    "PlanClosedData",
    "PlanRenamedData",
    "PlanSeenData",
    "ReanchorData",
    "ReviewAnnouncedData",
    "ReviewResumedData",
    "ReviewWaitingData",
    "RunBoundaryData",
    "RunFinishedData",
    "RunStartedData",
    "StepAttemptFailedData",
    "StepBlockedData",
    "StepCompletedData",
    "StepDecisionData",
    "StepFailedData",
    "StepRenamedData",
    "StepSkippedData",
    "StepStaleData",
    "StepInterruptedData",
    "StepStartedData",
    "StepStoppedData",
    "StepWaitingData",
    "skip_counts",
]


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
    started_from: str | None
    max_steps: int | None
    until: str | None


class RunStartedData(_RunStartedRequired, total=False):
    """A deployment's run also records its deployment, and with ``max_steps`` its schedule
    slot's start and the steps runs of the deployment started in that slot before it
    (:mod:`prefect_waymark.run.slot_budget`). Each run records ``step_hashes`` or names the run
    whose run_started holds the same (``step_hashes_run``; :mod:`..run_hashes`)."""

    step_hashes: dict[str, str]
    step_hashes_run: str

    deployment_id: str
    slot_start: str
    slot_used: int
    parent: dict[str, Any]  # a sub-plan's run: {plan_id, step_id, run_id} of its parent step


class RunBoundaryData(TypedDict, total=False):
    """Where a run started and ended, and what it changed in the workdir beyond its declared
    outputs (:mod:`prefect_waymark.boundary`)."""

    seq_start: int | None  # the plan's last ledger seq before the run's first event
    seq_end: int | None  # the plan's last seq before run_finished (the run's range ends there)
    # {root, before, after, dirty_before, dirty_after}; None: not a repo (or git cannot tell)
    git: dict[str, Any] | None
    created: list[str]
    modified: list[str]
    deleted: list[str]
    temporary: list[str]  # created and deleted within the run
    # {created, modified, deleted} since the last run's end that no run made; None: no manifest
    between_runs: dict[str, list[str]] | None
    previous_run: str | None  # the run whose end manifest between_runs compares with
    counts: dict[str, int]  # each list's full length (the lists keep 1,000 paths)
    manifest_files: int
    truncated: bool
    looks: int  # looks at the workdir after steps (what temporary files are seen by)
    looks_skipped: int  # looks left out to keep them under a tenth of the run's time
    seconds: float  # what taking the boundary cost this run
    errors: list[str]  # boundary problems (never fatal to the run)


class _RunFinishedRequired(TypedDict):
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
    skipped_count: int  # steps passed over as completed before this run (a count, not a list)
    failed_steps: list[str]
    interrupted_steps: list[str]
    needs_review: list[dict[str, Any]]
    next_start: str | None
    next_start_reason: str


class RunFinishedData(_RunFinishedRequired, total=False):
    """A run's summary; with the boundary and the metrics the run ended with, and the plan's
    steps left out with ``waymark skip`` (step -> reason) as it ended."""

    boundary: RunBoundaryData
    metrics: dict[str, Any]
    left_out_count: int  # the plan's steps left out with `waymark skip` as the run ended
    # Ledgers written before counts hold lists (read by :func:`skip_counts`, never written):
    # every step skipped, left-out ones included, and the left-out ones with their reasons.
    skipped_steps: list[str]
    left_out: dict[str, str]


class _MarkerWrittenRequired(TypedDict):
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
    skipped_count: int  # as in run_finished: a count (older markers: ``skipped_steps``)
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


class MarkerWrittenData(_MarkerWrittenRequired, total=False):
    """A run's execution marker; with the value of each metric the run ended with, and the
    run's execution boundary (from its run_finished event)."""

    metrics: dict[str, Any]
    boundary: RunBoundaryData | None
    left_out_count: int  # the plan's steps left out with `waymark skip` as the run ended
    skipped_steps: list[str]  # older markers (read by :func:`skip_counts`, never written)
    left_out: dict[str, str]  # older markers: step -> reason


class StepStartedData(TypedDict):
    def_hash: str
    result_key: str | None  # None: a step checked in from outside the flow, or imported
    host: str
    pid: int


class StepAttemptFailedData(TypedDict):
    attempt: int
    error: str
    output_tail: str | None
    will_retry: bool


class _StepCompleted(TypedDict):
    def_hash: str
    outputs: dict[str, str]


class StepCompletedData(_StepCompleted, total=False):
    # A step a run completed: its result's key, whether Prefect's cache answered, its output.
    result_key: str | None
    cached: bool
    output_tail: str | None
    attempts: int  # read by the projection; the runner leaves it out
    # A step checked in from outside the flow (`waymark done`): who did it, and the evidence
    # given per acceptance item (id -> text); `imported`: completed by `waymark import`.
    executor: str
    evidence: dict[str, str]
    workdir: str  # where the step made its outputs (a check-in's or a flow run's folder)
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
    #: ``waymark rerun --only``: the completed steps after it kept as they are, on purpose
    kept: list[str]
    #: a review's rerun of a step whose action was applied: the action gets a new key
    new_key: bool


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


class _DriftRequired(TypedDict):
    drift: str
    action: str
    rule: str
    goal_id: str
    contract_version: int


class DriftData(_DriftRequired, total=False):
    """A sub-plan's step refused by its parent's forbidden list names that parent step."""

    parent: str


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


class StepSkippedData(_Reason):
    """``waymark skip``: the step is left out on purpose, with a reason; it counts as done for
    the steps after it."""

    by: str


class StepRenamedData(TypedDict, total=False):
    """A step id changed in the plan file (``waymark rename-step``, or a run, ``next`` or a
    check-in that found the rename: :mod:`prefect_waymark.plan.edits`). On the new id:
    ``from_step`` and ``state``, the old id's state as it was (its completion, its receipts and
    open intents: the receipt rows move with it); on the old id: ``to_step`` (its state starts
    afresh: a step of that id added later has no history); on a step whose dependencies were
    renamed: ``dependencies`` (old id to new). ``def_hash``: the step's definition hash under
    the new ids, when nothing else of it changed (its completion stands for the renamed
    definition)."""

    from_step: str
    to_step: str
    state: dict[str, Any]
    dependencies: dict[str, str]
    def_hash: str
    by: str
    source: str


class PlanSeenData(TypedDict, total=False):
    """The plan file a run, ``next`` or a check-in acted on differs from the last one the
    ledger saw (or it is the first): its hash, each step's ``[definition hash, depends_on,
    action]`` (what the next comparison reads), and the changes found (``waymark diff``'s
    lines)."""

    plan_hash: str
    steps: dict[str, list[Any]]
    changes: list[dict[str, Any]]
    by: str
    source: str


class _StepStale(TypedDict):
    because: str  # the upstream step whose change made this step stale
    why: str  # "rerun requested", "output edited and accepted" or "result replaced"
    by: str


class StepStaleData(_StepStale, total=False):
    """A completed step whose inputs changed after it completed: it stays completed, and the
    next run runs it again after ``because`` (or stops it for review: an applied action, an
    agent's or a person's step)."""

    reason: str


class _PlanClosed(_Reason):
    by: str
    forced: bool
    evidence: dict[str, str]
    acceptance: dict[str, str]


class PlanClosedData(_PlanClosed, total=False):
    """``waymark close``: the plan is archived; runs refuse it. ``evidence`` holds each exit
    condition's evidence by id, ``acceptance`` each contract acceptance item's; a forced close
    lists what was ``unmet``; ``contract`` is the contract's identity (goal, version, hash);
    ``given`` is the ``--evidence`` as given, by id (kept also when the block was unreadable)."""

    unmet: list[str]
    contract: dict[str, Any]
    given: dict[str, str]


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


def skip_counts(data: Mapping[str, Any]) -> tuple[int, int]:
    """A ``run_finished`` or ``marker_written`` payload's counts: the steps skipped as done
    before the run, and the steps left out with ``waymark skip``. Payloads written before
    counts hold lists instead (``skipped_steps``, every step passed over, left-out ones
    included; ``left_out``, step -> reason): they read as the same counts."""
    if "skipped_count" in data:
        return int(data["skipped_count"]), int(data.get("left_out_count") or 0)
    left_out = data.get("left_out") or {}
    skipped = [s for s in data.get("skipped_steps") or [] if s not in left_out]
    return len(skipped), len(left_out)
