"""What a plan last accepted, and how a fresh read conflicts with it.

The ledger never stores authoritative state, only the versions the plan accepted
(``accepted_versions`` events, folded here). A re-read that differs is a :class:`Conflict`; the
newer-looking value is never taken silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, Field

from ..ledger import Ledger, LedgerReader
from ..ledger.events import EventKind
from ..models import GoalContract, contract_hash
from .base import Verdict

__all__ = [
    "AcceptedState",
    "Conflict",
    "accepted_forbidden",
    "compare_contract",
    "contract_record",
    "current_contract",
    "load_accepted",
    "verdict_for",
]


class AcceptedState(BaseModel):
    """The versions a plan accepted: each ref's version and the goal contract's identity."""

    refs: dict[str, str] = Field(default_factory=dict)
    contract: dict[str, Any] | None = None


def load_accepted(ledger: Ledger | LedgerReader, plan_id: str) -> AcceptedState:
    """Fold every ``accepted_versions`` event of the plan, oldest first."""
    state = AcceptedState()
    for event in ledger.events(plan_id, kinds=[EventKind.accepted_versions]):
        state.refs.update({str(k): str(v) for k, v in (event.data.get("refs") or {}).items()})
        if event.data.get("contract"):
            state.contract = dict(event.data["contract"])
    return state


def contract_record(contract: GoalContract, source: str) -> dict[str, Any]:
    """What the ledger keeps of a contract: identity, version, status and content hash, its
    items by id (so the metrics and the history know a contract block's items) and its
    forbidden list (so the hooks keep enforcing the accepted list while an edit waits for
    review, and while the plan file is invalid: :func:`accepted_forbidden`)."""
    return {
        "goal_id": contract.goal_id,
        "version": contract.version,
        "status": contract.status,
        "hash": contract_hash(contract),
        "source": source,
        "items": {
            "acceptance": contract.acceptance_items(),
            "exit_conditions": contract.exit_items(),
        },
        "forbidden": list(contract.forbidden),
    }


def accepted_forbidden(accepted: dict[str, Any] | None) -> list[str] | None:
    """The forbidden list of an accepted contract's record; None if the record has none (the
    ledger predates it: records before 0.2 keep no list)."""
    if not accepted or not isinstance(accepted.get("forbidden"), list):
        return None
    return [str(f) for f in accepted["forbidden"]]


def current_contract(contract: GoalContract, accepted: dict[str, Any] | None) -> list[Conflict]:
    """The conflicts of ``contract`` as read now with the ``accepted`` record (none: it may
    be followed) — :func:`compare_contract` without recording anything, for the hooks."""
    rec = {
        "goal_id": contract.goal_id,
        "version": contract.version,
        "status": contract.status,
        "hash": contract_hash(contract),
    }
    return compare_contract(rec, accepted, "")[0]


def _label(rec: dict[str, Any] | None) -> str | None:
    if not rec:
        return None
    return f"v{rec['version']} {rec['status']} {rec['hash']}"


@dataclass(frozen=True)
class Conflict:
    """One disagreement between what the plan accepted and what is current."""

    ref: str
    kind: str
    problem: str
    message: str
    at: str
    accepted: str | None = None
    current: str | None = None
    error: str | None = None
    on_error: str = "review"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def fails(self) -> bool:
        """An unreadable ref whose ``on_error`` is ``fail``: the step fails instead of review."""
        return self.problem == "unreadable" and self.on_error == "fail"


def compare_contract(
    current: dict[str, Any], accepted: dict[str, Any] | None, at: str
) -> tuple[list[Conflict], bool]:
    """Conflicts of a freshly read contract, and whether to accept it now.

    Accepted without review: the first read of an ``accepted`` contract, and a higher version
    still marked ``accepted`` (its author bumped it). Conflicts: a superseded or revoked
    contract, another goal, an older version, or a content change without a version bump.
    """
    goal = current["goal_id"]
    cur, acc = _label(current), _label(accepted)

    def conflict(problem: str, message: str) -> Conflict:
        return Conflict("contract", "contract", problem, message, at, acc, cur)

    found: list[Conflict] = []
    if current["status"] != "accepted":
        found.append(
            conflict(
                current["status"],
                f"goal contract {goal!r} v{current['version']} is {current['status']}",
            )
        )
    if accepted is None:
        return found, not found
    if accepted["goal_id"] != goal:
        found.append(
            conflict(
                "other_goal",
                f"the goal contract is now {goal!r}; the plan accepted {accepted['goal_id']!r}",
            )
        )
    elif current["version"] < accepted["version"]:
        found.append(
            conflict(
                "older_version",
                f"goal contract {goal!r} is at v{current['version']}, older than the accepted "
                f"v{accepted['version']}",
            )
        )
    elif current["version"] == accepted["version"] and current["hash"] != accepted["hash"]:
        found.append(
            conflict(
                "edited_without_version_bump",
                f"goal contract {goal!r} v{current['version']} was edited without a version "
                f"bump (accepted {accepted['hash'][:19]}…, now {current['hash'][:19]}…)",
            )
        )
    changed = current["version"] != accepted["version"] or current["hash"] != accepted["hash"]
    return found, not found and changed


def verdict_for(
    conflicts: list[Conflict], point: str, contract: dict[str, Any] | None = None
) -> Verdict:
    """One verdict for a decision's conflicts: review, or refuse if all are ``on_error: fail``."""
    review = [c for c in conflicts if not c.fails]
    main = review[0] if review else conflicts[0]
    if len(conflicts) == 1:
        reason = main.message
    else:
        reason = f"{len(conflicts)} conflicts: " + "; ".join(c.message for c in conflicts)
    details: dict[str, Any] = {
        "ref": main.ref,
        "accepted": main.accepted,
        "current": main.current,
        "at": main.at,
        "point": point,
        "conflicts": [c.as_dict() for c in conflicts],
    }
    if contract is not None:
        details["contract"] = contract
    return Verdict("review" if review else "refuse", reason, details)
