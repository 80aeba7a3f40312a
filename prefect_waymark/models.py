"""Domain records, named as in the progress-tracking pattern (docs: concepts)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from fnmatch import fnmatchcase
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

__all__ = [
    "EVIDENCE",
    "FORBIDDEN_PREFIX",
    "OBJECTIVE",
    "OUTPUT_TAIL",
    "REASON",
    "TEXT_LIMITS",
    "TITLE",
    "ActionReceipt",
    "ContractItem",
    "ContractStatus",
    "GoalContract",
    "StepStatus",
    "TextLimit",
    "contract_hash",
    "contract_items",
    "forbidden_rule",
    "utcnow",
]


class ValueEnum(str, Enum):
    """A str enum that shows its bare value (``completed``), never ``StepStatus.completed``, in
    texts, markers and JSON (like Python 3.11's ``StrEnum``; this package supports 3.10)."""

    # ``_value_`` (a plain attribute), not ``value`` (a descriptor): the views of a 10,000-step
    # plan format a status ~20,000 times a run.
    def __str__(self) -> str:
        return str(self._value_)

    def __format__(self, spec: str) -> str:
        return str(self._value_).__format__(spec)


class StepStatus(ValueEnum):
    """Progress of one step. ``blocked`` is derived: a pending step behind a failed one."""

    pending = "pending"
    in_progress = "in_progress"
    blocked = "blocked"
    needs_review = "needs_review"
    completed = "completed"
    failed = "failed"


@dataclass(frozen=True)
class TextLimit:
    """A bound on a free text a plan file, a check-in or a restore records (docs: reference /
    limits). Each limit is defined once, below, and checked by :meth:`problem` everywhere: the
    plan loader (through the pydantic types :data:`Title`, :data:`Objective`), the check-in
    options of the ``waymark`` commands and ``waymark restore``."""

    what: str  # "a title"
    chars: int
    #: A kept tail: the ``…`` that starts one that was cut is not counted.
    tail: bool = False

    def problem(self, value: str) -> str | None:
        """What is wrong with ``value`` (too long), or None."""
        if len(value) <= self.chars or (self.tail and len(value.removeprefix("…")) <= self.chars):
            return None
        return (
            f"expected {self.what} of at most {self.chars:,} characters, got "
            f"{len(value):,} characters"
        )

    def check(self, value: str) -> str:
        """``value`` if within the limit; else a pydantic error of type ``text_too_long``."""
        why = self.problem(value)
        if why is not None:
            raise PydanticCustomError("text_too_long", why)
        return value


#: A plan's or a step's title: one line in views, lists and ``waymark status``.
TITLE = TextLimit("a title", 200)
#: A goal contract's objective: shown in views, logged at each re-anchoring.
OBJECTIVE = TextLimit("an objective", 10_000)
#: Why: a failure, a block, a review answer, a skip, a close, a receipt's note.
REASON = TextLimit("a reason", 2_000)
#: The evidence given for one acceptance item or exit condition (``--evidence``).
EVIDENCE = TextLimit("evidence", 65_536)
#: The end of a step's output kept in the ledger (the runner keeps this much).
OUTPUT_TAIL = TextLimit("an output tail", 2_000, tail=True)

#: Every text limit, by the field it bounds (docs: reference / limits).
TEXT_LIMITS = {
    "title": TITLE,
    "objective": OBJECTIVE,
    "reason": REASON,
    "evidence": EVIDENCE,
    "output_tail": OUTPUT_TAIL,
}

Title = Annotated[str, AfterValidator(TITLE.check)]
Objective = Annotated[str, AfterValidator(OBJECTIVE.check)]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


ContractStatus = Literal["accepted", "superseded", "revoked"]


class ContractItem(BaseModel):
    """An acceptance item or exit condition written with its own id (``{id: A1, text: ...}``);
    a plain string gets the id of its position (``A1``, ``A2``, … or ``E1``, ``E2``, …)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        pattern=r"^[A-Za-z0-9._-]+$", max_length=100, description="The item's id, e.g. A1."
    )
    text: str = Field(description="What the item asks for.")


def contract_items(entries: Sequence[str | ContractItem], prefix: str) -> dict[str, str]:
    """Items by id: a written id as given, a plain string ``<prefix><position>`` (1-based).

    A repeated id keeps its first text; the plan loader refuses repeated ids."""
    out: dict[str, str] = {}
    for i, entry in enumerate(entries, 1):
        if isinstance(entry, ContractItem):
            item_id, text = entry.id, entry.text
        else:
            item_id, text = f"{prefix}{i}", entry
        out.setdefault(item_id, text)
    return out


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
    objective: Objective = Field(
        description=f"What the plan must achieve (at most {OBJECTIVE.chars:,} characters)."
    )
    acceptance: list[str | ContractItem] = Field(
        default_factory=list,
        description="Acceptance criteria: text (id A1, A2, … by position) or {id, text}.",
    )
    forbidden: list[str] = Field(default_factory=list, description="Forbidden actions.")
    exit_conditions: list[str | ContractItem] = Field(
        default_factory=list,
        description="When to stop: text (id E1, E2, … by position) or {id, text}.",
    )

    def acceptance_items(self) -> dict[str, str]:
        """Acceptance items by id (what a step's ``serves`` names)."""
        return contract_items(self.acceptance, "A")

    def exit_items(self) -> dict[str, str]:
        """Exit conditions by id (what ``waymark close --evidence`` names)."""
        return contract_items(self.exit_conditions, "E")


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
