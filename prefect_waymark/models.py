"""Domain records, with the names of the progress-tracking pattern (see DESIGN.md)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from enum import Enum
from fnmatch import fnmatchcase
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FORBIDDEN_PREFIX",
    "ActionReceipt",
    "ContractStatus",
    "GoalContract",
    "StepStatus",
    "contract_hash",
    "forbidden_rule",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class _ValueEnum(str, Enum):
    """A str enum that shows its bare value (``completed``), never ``StepStatus.completed``, in
    texts, markers and JSON (like Python 3.11's ``StrEnum``; this package supports 3.10)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return str(self.value).__format__(spec)


class StepStatus(_ValueEnum):
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
    version: int = Field(
        default=1,
        ge=1,
        le=1_000_000,
        strict=True,
        description="Explicit version; bump it on every edit.",
    )
    status: ContractStatus = Field(
        default="accepted", description="accepted, superseded or revoked."
    )
    objective: str = Field(description="What the plan must achieve.")
    acceptance: list[str] = Field(default_factory=list, description="Acceptance criteria.")
    forbidden: list[str] = Field(default_factory=list, description="Forbidden actions.")
    exit_conditions: list[str] = Field(default_factory=list, description="When to stop.")


def contract_hash(contract: GoalContract) -> str:
    """The contract's fingerprint: sha256 of its content, ``version`` and ``status`` left out.

    The one fingerprint of a goal contract: the ledger records it (``accepted_versions``,
    ``reanchor``) and a re-read compares against it, so editing the content without bumping the
    version is seen. Its value must never change, or every recorded plan would stop at review.
    """
    body: dict[str, Any] = contract.model_dump(exclude={"version", "status"})
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


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


#: A goal contract's ``forbidden`` entry ``action:<glob>`` forbids the actions it matches.
FORBIDDEN_PREFIX = "action:"


def forbidden_rule(action: str, forbidden: list[str]) -> str | None:
    """The goal contract's ``action:<glob>`` entry that forbids ``action``, if any."""
    for rule in forbidden:
        if rule.startswith(FORBIDDEN_PREFIX):
            if fnmatchcase(action, rule[len(FORBIDDEN_PREFIX) :].strip()):
                return rule
    return None
