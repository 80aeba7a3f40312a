"""Every kind of ledger event, and the groups of kinds readers ask for: standard library only, so
that a command that only reads (``waymark status --json``) names kinds without pydantic.

``EventKind`` is a ``str`` enum, so a kind compares equal to its stored name
(``EventKind.step_started == "step_started"``) and is written to the ledger as that name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from ..models import ValueEnum

__all__ = [
    "ACTION_EVENT_KINDS",
    "REF_EVENT_KINDS",
    "RELEASE_EVENT_KINDS",
    "STEP_EVENT_KINDS",
    "EventKind",
    "EventLike",
]


class EventKind(ValueEnum):
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
    # A step id changed in the plan file: its history moved to the new id (plan/edits.py).
    step_renamed = "step_renamed"
    # A completed step whose inputs changed after it completed: an upstream step's rerun, its
    # output edited and accepted, or its result replaced (the status stays completed).
    step_stale = "step_stale"
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
    # The plan file differs from the last one the ledger saw: its steps, and what changed.
    plan_seen = "plan_seen"
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
        EventKind.step_renamed,
        EventKind.step_stale,
    }
    | ACTION_EVENT_KINDS
)

#: Kinds that end a step's in_progress and so release its branch's slot.
RELEASE_EVENT_KINDS = frozenset(
    {EventKind.step_completed, EventKind.step_failed, EventKind.step_interrupted}
)

#: Kinds that record what the plan re-read and accepted.
REF_EVENT_KINDS = (EventKind.reanchor, EventKind.accepted_versions)


class EventLike(Protocol):
    """What the status readers read of an event (a :class:`~.events.ProgressEvent`)."""

    @property
    def seq(self) -> int | None: ...
    @property
    def kind(self) -> EventKind: ...
    @property
    def at(self) -> datetime: ...
    @property
    def data(self) -> dict[str, Any]: ...
