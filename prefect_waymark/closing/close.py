"""``waymark close``: check the plan, record ``plan_closed``, archive the active view.

Archiving: the event closes the plan for good — runs, resumes, skips and check-ins refuse it
(:mod:`.closed`) — and the view files (TASKS.md, STATE.md, IMPLEMENTATION_LOG.md,
EXECUTION_MARKER.json) are rewritten to say it is closed and that nothing is next. The history
stays as it was: every event, receipt and marker remains in the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CloseError, LedgerError, PlanClosedError
from ..ledger import Ledger
from ..ledger.plan_close import read_closed
from ..ledger.step_state import StepState
from ..models import GoalContract
from ..plan.spec import PlanSpec
from .checks import CloseCheck, Unmet, check_close, duplicate_item_ids
from .closed import closed_line

__all__ = ["CloseOutcome", "close_plan", "load_close_contract"]


@dataclass
class CloseOutcome:
    """What ``close_plan`` did: ``closed`` (the record) or not, and the checks it made."""

    check: CloseCheck
    closed: dict[str, Any] | None = None


def load_close_contract(plan: PlanSpec) -> tuple[GoalContract | None, str | None, str | None]:
    """The plan's goal contract as it is now (inline, or its Prefect block: the caller has
    pointed Prefect at a server), its source, and — if a block cannot be read — why."""
    from ..guards.sources import load_contract

    try:
        loaded = load_contract(plan)
    except Exception as exc:  # noqa: BLE001 - an unreadable block: the caller decides
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return None, None, f"{type(exc).__name__}: {first}"
    if loaded is None:
        return None, None, None
    return loaded[0], loaded[1], None


def close_plan(
    plan: PlanSpec,
    ledger: Ledger | None,
    folder: Path,
    *,
    contract: GoalContract | None,
    contract_source: str | None,
    given: Mapping[str, str],
    by: str,
    reason: str,
    force: bool,
    unreadable: str | None = None,
) -> CloseOutcome:
    """Close ``plan`` if nothing stands in the way (or ``force``); else record nothing.
    Without a ledger (nothing ran yet) only the checks are made.

    The ledger re-reads the step states and re-checks them in the transaction that records
    ``plan_closed`` (:meth:`~prefect_waymark.ledger.Ledger.close_plan`): two closes at once
    record one, and a step started meanwhile is seen. ``forced`` is recorded true only when
    something was unmet.

    Raises :class:`CloseError` if it is closed already or ``force`` comes without a reason;
    :class:`~prefect_waymark.errors.MarkerFileError` if a view file is not waymark's (before
    anything is recorded)."""
    from ..guards.conflicts import contract_record
    from ..markers.generated_files import check_writable
    from ..markers.run_markers import VIEW_FILES, write_views

    if force and not reason.strip():
        raise CloseError("--force needs --reason: say why the plan closes with things unmet")
    before = read_closed(ledger, plan.plan_id)
    if before is not None:
        raise CloseError(f"{closed_line(plan.plan_id, before)}: already closed; nothing recorded")
    problems = _contract_problems(plan, contract, unreadable)
    states = ledger.step_states(plan.plan_id) if ledger is not None else {}
    check = _check(plan, contract, states, given, problems)
    if check.unmet and not force:
        return CloseOutcome(check)
    if ledger is None:  # the caller opens (creates) one to force a close
        raise CloseError(f"plan {plan.plan_id!r} has no ledger: nothing ran, nothing to close")
    check_writable([folder / name for name in VIEW_FILES])
    final: list[CloseCheck] = []

    def decide(now: dict[str, StepState]) -> dict[str, Any] | None:
        """Inside the close's transaction: the ledger part of the checks again, on the step
        states as they are now (a step may have started since the first look)."""
        again = _check(plan, contract, now, given, problems)
        final.append(again)
        if again.unmet and not force:
            return None
        data: dict[str, Any] = {
            "reason": reason.strip(),
            "by": by,
            # forced only when something was unmet: `--force` on a plan that met everything
            # is an ordinary close
            "forced": bool(force and again.unmet),
            "evidence": again.evidence,
            "acceptance": again.acceptance,
        }
        if given:
            data["given"] = dict(given)
        if again.unmet:
            data["unmet"] = [u.line() for u in again.unmet]
        if contract is not None:
            data["contract"] = contract_record(contract, contract_source or "inline")
        return data

    try:
        event = ledger.close_plan(plan.plan_id, decide)
    except PlanClosedError as exc:  # a close that committed since the first look
        raise CloseError(str(exc)) from None
    except LedgerError as exc:  # renamed away meanwhile
        raise CloseError(f"{exc}") from None
    check = final[-1] if final else check
    if event is None:
        return CloseOutcome(check)
    write_views(plan, ledger, folder)
    return CloseOutcome(check, read_closed(ledger, plan.plan_id))


def _contract_problems(
    plan: PlanSpec, contract: GoalContract | None, unreadable: str | None
) -> list[Unmet]:
    """What is wrong with the contract itself: a block that cannot be read, or one whose items
    repeat an id (the plan file's inline contract is checked when it loads)."""
    block = getattr(plan.contract, "block", "?")
    if unreadable is not None:
        return [
            Unmet(
                f"the goal contract (block {block!r}) cannot be read: {unreadable}",
                "check that the server a run uses holds it (`prefect block ls`; "
                "PREFECT_API_URL names the server), then close again",
            )
        ]
    if contract is None:
        return []
    dup = duplicate_item_ids(contract)
    if not dup:
        return []
    return [
        Unmet(
            f"the contract block {block!r} has duplicate item ids: {', '.join(dup)}",
            "fix the block: give every acceptance item and exit condition its own id, then "
            "close again",
        )
    ]


def _check(
    plan: PlanSpec,
    contract: GoalContract | None,
    states: Mapping[str, StepState],
    given: Mapping[str, str],
    problems: list[Unmet],
) -> CloseCheck:
    check = check_close(plan, contract, states, given)
    check.unmet[:0] = problems
    return check
