"""What a plan must have before ``waymark close`` closes it, and the evidence it closes with.

Every step is completed or skipped (``waymark skip``); no step waits for review; no action has an
intent without a receipt; every acceptance item (``A1``…) and exit condition (``E1``…) of the goal
contract has evidence — given with ``--evidence "ID: text"`` or recorded by a completed step that
``serves`` it (:func:`~prefect_waymark.metrics.evidence.contract_evidence`). Each unmet thing is
listed with the command that resolves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import CloseError
from ..ledger.progress_view import build_view
from ..ledger.step_state import StepState
from ..metrics.evidence import contract_evidence
from ..models import GoalContract
from ..plan.spec import PlanSpec
from ..text.commands import review_command, waymark_command

__all__ = ["CloseCheck", "Unmet", "check_close", "duplicate_item_ids", "parse_evidence"]


@dataclass(frozen=True)
class Unmet:
    """One thing that stands in the way of closing, and the command that resolves it."""

    what: str
    fix: str

    def line(self) -> str:
        return f"{self.what} — {self.fix}"


@dataclass
class CloseCheck:
    """The outcome of the checks: what is unmet, and each contract item's evidence by id."""

    unmet: list[Unmet] = field(default_factory=list)
    #: exit conditions (E1…) with evidence: id -> the evidence, joined with "; "
    evidence: dict[str, str] = field(default_factory=dict)
    #: acceptance items (A1…) with evidence
    acceptance: dict[str, str] = field(default_factory=dict)


def duplicate_item_ids(contract: GoalContract) -> list[str]:
    """The ids more than one contract item has (a block's contract is not checked on load)."""
    from ..plan.step_checks import repeated_item_ids

    return sorted({item_id for _f, _j, item_id, _first in repeated_item_ids(contract)})


def _ids_text(contract: GoalContract) -> str:
    items = {**contract.acceptance_items(), **contract.exit_items()}
    return ", ".join(f"{i} ({text[:40]})" for i, text in items.items()) or "none"


def parse_evidence(
    raw: list[str], contract: GoalContract | None, *, unreadable: bool = False
) -> dict[str, str]:
    """``--evidence "ID: text"`` values by contract item id (a repeated id's texts joined).

    The id is matched exactly (case-sensitive) against the contract's acceptance ids and exit
    condition ids; an item's text is not accepted in its place (texts may hold colons). With
    ``unreadable`` (a contract block that cannot be read now) only the syntax is checked."""
    if raw and contract is None and not unreadable:
        raise CloseError("--evidence: the plan has no goal contract, so there is nothing to give "
                         "evidence for")  # fmt: skip
    given: dict[str, str] = {}
    if contract is None and not unreadable:
        return given
    known = {**contract.acceptance_items(), **contract.exit_items()} if contract else None
    ids = f"ids: {_ids_text(contract)}" if contract else "e.g. A1 or E1"
    for value in raw:
        item, sep, text = value.partition(":")
        item, text = item.strip(), text.strip()
        if not sep or not item or any(c.isspace() for c in item):
            raise CloseError(
                f'--evidence {value[:80]!r}: expected "ID: text" with a contract item id ({ids})'
            )
        if known is not None and contract is not None and item not in known:
            raise CloseError(
                f"--evidence {item[:40]!r}: the goal contract has no item with that id "
                f"(ids: {_ids_text(contract)})"
            )
        if not text:
            raise CloseError(f'--evidence "{item}: ": say what shows it is met')
        given[item] = f"{given[item]}; {text}" if item in given else text
    return given


def _step_problems(plan: PlanSpec, states: Mapping[str, StepState]) -> list[Unmet]:
    src = plan.source
    view = build_view(plan, dict(states))
    out: list[Unmet] = []
    for v in view.steps:
        st = states.get(v.id)
        skip = "`" + waymark_command("skip", src, v.id, '--reason "..."') + "`"
        if v.status == "needs_review":
            out.append(
                Unmet(
                    f"step {v.id} needs review ({v.review_reason})",
                    f"answer it: `{review_command(src, v.id)}`",
                )
            )
        elif v.status == "in_progress":
            status = waymark_command("status", src)
            out.append(Unmet(f"step {v.id} is in progress", f"let it end: `{status}`"))
        elif v.status in ("pending", "failed", "blocked"):
            step = plan.step(v.id)
            how = f"`{waymark_command('next' if step.checked_in else 'run', src)}`"
            state, fix = str(v.status), f"do it ({how}) or leave it out: {skip}"
            if v.status == "failed" and v.error:
                state += f": {v.error[:120]}"
            elif v.blocked_by:
                behind = ", ".join(v.blocked_by)
                state += f" behind {behind}"
                fix = f"it can run once {behind} is done or skipped; or leave it out: {skip}"
            out.append(Unmet(f"step {v.id} is {state}", fix))
        for key, act in st.open_actions.items() if st is not None else ():
            out.append(
                Unmet(
                    f"step {v.id}: action {act.get('action')!r} has an intent without a receipt "
                    f"(key {key})",
                    f"record what happened: `waymark receipt {src} {v.id} --applied|--not-applied`",
                )
            )
    return out


def check_close(
    plan: PlanSpec,
    contract: GoalContract | None,
    states: Mapping[str, StepState],
    given: Mapping[str, str],
) -> CloseCheck:
    """Everything that stands in the way of closing ``plan``, and the contract's evidence."""
    check = CloseCheck(unmet=_step_problems(plan, states))
    if contract is None:
        return check
    found = contract_evidence(plan, contract, states, given)
    items = [
        ("acceptance item", contract.acceptance_items(), check.acceptance),
        ("exit condition", contract.exit_items(), check.evidence),
    ]
    for label, ids, into in items:
        for item, text in ids.items():
            if found.get(item):
                into[item] = "; ".join(found[item])
                continue
            serving = [
                f"{s.id} ({states[s.id].status if s.id in states else 'pending'}"
                + (", skipped" if s.id in states and states[s.id].skipped else "")
                + ")"
                for s in plan.steps
                if item in s.serves
            ]
            by_steps = f"; steps that serve it: {', '.join(serving)}" if serving else ""
            out = f"{label} {item} ({text[:80]}) has no evidence{by_steps}"
            fix = f'give it: `waymark close {plan.source} --evidence "{item}: ..."`'
            check.unmet.append(Unmet(out, fix))
    return check
