"""The forbidden list the hook enforces for a plan file's inline contract: the contract as the
plan last accepted it, until a review accepts an edit.

Editing ``plan.yaml`` changes the contract the hook reads at once; ``waymark next`` (and a run)
stop such an edit for review when it has no version bump (``edited without a version bump``),
an older version, another goal, or a status other than ``accepted``
(:func:`~prefect_waymark.guards.conflicts.compare_contract`). Until a review accepts it, the
hook enforces the accepted contract's entries *and* the edited file's: an entry dropped without
a bump still holds, an entry added holds at once. An edit ``next`` would accept by itself (a
higher version, still ``accepted``) is followed as it is.

The ledger is read only when the contract differs from the last one this session found
accepted (:attr:`~.counter.HookSession.accepted_contract`): an unchanged plan file costs one
hash per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import LedgerNotFound

if TYPE_CHECKING:
    from .loaded import LoadedPlan

__all__ = ["Enforced", "enforced_forbidden"]


@dataclass(frozen=True)
class Enforced:
    """The forbidden list to check, and what the session may remember."""

    forbidden: list[str]
    #: The contract's hash when it may be followed as it is (remembered: no ledger read next
    #: time); None while an edit waits for review.
    followed: str | None
    #: The contract label for a deny's reason while an edit waits for review, else None.
    label: str | None = None
    #: One line for stderr while an edit waits for review, else None.
    notice: str | None = None


def enforced_forbidden(
    plan: LoadedPlan, ledger_url: str | None, remembered: str | None
) -> Enforced:
    """The list to enforce for the plan file's inline contract (read now): from its
    :class:`~.loaded.PlanFacts` while the session remembers its hash, else against the ledger
    (the contract itself, and the ledger's readers, loaded only then)."""
    current = list(plan.facts.forbidden)
    digest = plan.facts.contract_hash
    if remembered == digest or ledger_url is None:
        return Enforced(current, digest if ledger_url is not None else None)
    from ..guards.conflicts import accepted_forbidden, current_contract, load_accepted
    from ..ledger import open_reader

    contract = plan.contract()
    try:
        with open_reader(ledger_url) as r:
            accepted = load_accepted(r, plan.plan_id).contract
    except LedgerNotFound:  # nothing accepted yet: the plan file's contract is the contract
        return Enforced(current, digest)
    except Exception:  # noqa: BLE001 - an unreadable ledger: this call checks the file's list
        return Enforced(current, None)
    conflicts = current_contract(contract, accepted)
    if not conflicts or accepted is None:
        return Enforced(current, digest if not conflicts else None)
    kept = accepted_forbidden(accepted)
    what = conflicts[0].message
    if kept is None:
        return Enforced(
            current, None, notice=f"{what}; the ledger kept no forbidden list of the accepted "
            f"v{accepted['version']} (recorded before 0.2): the plan file's list is checked",
        )  # fmt: skip
    both = list(dict.fromkeys([*kept, *current]))
    label = (
        f"{accepted['goal_id']} v{accepted['version']} as accepted; the plan file's "
        f"v{contract.version} waits for review"
    )
    notice = (
        f"{what}: the forbidden list of the accepted v{accepted['version']} is enforced with "
        "the file's until a review accepts the change (`waymark next` stops for it)"
    )
    return Enforced(both, None, label, notice)
