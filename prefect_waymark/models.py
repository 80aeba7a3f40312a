"""Domain records, with the names of the progress-tracking pattern (see DESIGN.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ActionReceipt",
    "ContractStatus",
    "GoalContract",
    "PlanStep",
    "ProgressEvent",
    "ProgressState",
    "StateRef",
    "StepStatus",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class StepStatus(str, Enum):
    """Progress of one step. ``blocked`` is derived: a pending step behind a failed one."""

    pending = "pending"
    in_progress = "in_progress"
    blocked = "blocked"
    needs_review = "needs_review"
    completed = "completed"
    failed = "failed"


ContractStatus = Literal["accepted", "superseded", "revoked"]


class GoalContract(BaseModel):
    """What the plan is for; summaries may shorten it but never drop acceptance or forbidden."""

    model_config = ConfigDict(extra="forbid")

    goal_id: str = Field(description="Stable identifier of the goal.")
    version: int = Field(default=1, ge=1, description="Explicit version; bump it on every edit.")
    status: ContractStatus = Field(
        default="accepted", description="accepted, superseded or revoked."
    )
    objective: str = Field(description="What the plan must achieve.")
    acceptance: list[str] = Field(default_factory=list, description="Acceptance criteria.")
    forbidden: list[str] = Field(default_factory=list, description="Forbidden actions.")
    exit_conditions: list[str] = Field(default_factory=list, description="When to stop.")


class StateRef(BaseModel):
    """A pointer at authoritative business state; re-read on resume, never stored as truth."""

    model_config = ConfigDict(extra="allow")

    name: str
    kind: str
    version: str | None = Field(default=None, description="Version last accepted, if any.")


class ActionReceipt(BaseModel):
    """Proof that an irreversible action happened (idempotency key plus business receipt)."""

    key: str
    action: str
    step_id: str
    outcome: str = "applied"
    external_id: str | None = None
    response_hash: str | None = None
    at: datetime = Field(default_factory=utcnow)
    by: str | None = None


class PlanStep(BaseModel):
    """A step of the plan together with its progress."""

    step_id: str
    title: str = ""
    owner_id: str | None = None
    branch: str = "main"
    milestone: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    acceptance: list[str] = Field(default_factory=list)
    status: StepStatus = StepStatus.pending
    artifact_refs: list[str] = Field(default_factory=list)
    action_receipts: list[ActionReceipt] = Field(default_factory=list)


class ProgressState(BaseModel):
    """The active view of a plan, derived from its events."""

    plan_id: str
    active_milestone: str | None = None
    current_step: dict[str, str] = Field(
        default_factory=dict, description="The in_progress step of each branch."
    )
    blocked_by: dict[str, list[str]] = Field(default_factory=dict)
    next_step: str | None = None
    state_refs: list[StateRef] = Field(default_factory=list)
    decision_refs: list[str] = Field(default_factory=list)
    checkpoint_ref: str | None = None
    resume_cursor: str | None = None


class ProgressEvent(BaseModel):
    """One append-only ledger event."""

    seq: int | None = None
    plan_id: str
    kind: str
    step_id: str | None = None
    branch: str | None = None
    run_id: str | None = None
    at: datetime = Field(default_factory=utcnow)
    data: dict[str, Any] = Field(default_factory=dict)
