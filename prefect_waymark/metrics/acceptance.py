"""Acceptance coverage: the steps that name the contract item they serve (``serves: [A1]``),
over all steps; and the contract's acceptance items that have evidence.

An item has evidence when a completed (not skipped) step that serves it recorded some, or the
plan's close gave it (:func:`~.evidence.contract_evidence`, with the ``plan_closed`` event's
``acceptance`` and ``evidence`` as what was given). The contract is the one the caller read (a
run's re-read contract block), else the plan file's inline one, else the last one the ledger
accepted (its record keeps the items by id); a record written before the ledger kept items has
only the contract's identity, and then the items count 0.
"""

from __future__ import annotations

from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from ..models import ContractItem, GoalContract
from .base import Metric, MetricInput, capped, ratio
from .evidence import contract_evidence

__all__ = ["AcceptanceCoverage"]


class AcceptanceCoverage(Metric):
    name = "acceptance_coverage"
    kinds = frozenset({EventKind.plan_closed, EventKind.accepted_versions})

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self.given_evidence: dict[str, str] | None = None
        self.recorded: dict[str, Any] | None = None  # the last contract identity on record

    def feed(self, ev: ProgressEvent) -> None:
        if ev.kind == EventKind.plan_closed:
            given = {**(ev.data.get("evidence") or {}), **(ev.data.get("acceptance") or {})}
            self.given_evidence = {str(k): str(v) for k, v in given.items()}
        elif isinstance(ev.data.get("contract"), dict):
            self.recorded = dict(ev.data["contract"])

    def result(self) -> dict[str, Any]:
        g = self.given
        steps = g.spec.steps
        serving = [s.id for s in steps if s.serves]
        unlinked = [s.id for s in steps if not s.serves]
        out: dict[str, Any] = {
            "value": ratio(len(serving), len(steps)),
            "steps": len(steps),
            "steps_serving": len(serving),
            "items": 0,
            "items_with_evidence": 0,
            "items_rate": None,
            "closed": self.given_evidence is not None,
            "contract": None,
        }
        missing: list[str] = []
        contract, source = g.contract, g.contract_source
        if contract is None and self.recorded is not None:
            contract = recorded_contract(self.recorded)
            source = f"ledger ({self.recorded.get('source') or 'as last read'})"
        if contract is not None:
            items = list(contract.acceptance_items())
            found = contract_evidence(g.spec, contract, g.states, self.given_evidence)
            with_evidence = [i for i in items if found.get(i)]
            missing = [i for i in items if not found.get(i)]
            out.update(
                items=len(items),
                items_with_evidence=len(with_evidence),
                items_rate=ratio(len(with_evidence), len(items)),
                contract={
                    "goal_id": contract.goal_id,
                    "version": contract.version,
                    "source": source,
                },
            )
        elif self.recorded is not None:
            out["contract"] = {
                "goal_id": self.recorded.get("goal_id"),
                "version": self.recorded.get("version"),
                "source": "ledger (identity only: recorded before items were kept)",
            }
        detail = [f"item {i}: no evidence" for i in missing]
        detail += [f"step {s}: serves nothing" for s in unlinked]
        out.update(capped(detail))
        return out


def recorded_contract(rec: dict[str, Any]) -> GoalContract | None:
    """The contract the ledger recorded last, rebuilt from its items; None for a record written
    before the ledger kept them (identity and hash only)."""
    items = rec.get("items")
    if not isinstance(items, dict):
        return None
    try:
        return GoalContract(
            goal_id=str(rec.get("goal_id") or "?"),
            objective="",
            acceptance=[
                ContractItem(id=str(k), text=str(v))
                for k, v in (items.get("acceptance") or {}).items()
            ],
            exit_conditions=[
                ContractItem(id=str(k), text=str(v))
                for k, v in (items.get("exit_conditions") or {}).items()
            ],
        )
    except ValueError:  # a damaged record: no items rather than a failed metric
        return None
