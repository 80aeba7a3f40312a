"""Verification coverage: the milestones, and the plan, that have a verification step
(``verify: true``) which ran after the last change to what it verifies.

The units are each milestone the steps name, plus the plan itself. A verification step of a
milestone verifies the steps it depends on, transitively, within that milestone; one without a
milestone is the plan's and verifies every step it depends on, transitively. A unit is covered
when one of its verification steps has a completion (``step_completed``; a skip verifies nothing)
later in the ledger than the last change — a completion, or an accepted review (an edited output
accepted) — of every step it verifies. A rerun request or a skip of a verification step voids
its earlier completion (it has to complete again to count).
"""

from __future__ import annotations

from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from ..plan.spec import StepSpec
from .base import Metric, MetricInput, capped, ratio

__all__ = ["VerificationCoverage"]

PLAN_UNIT = "(plan)"


class VerificationCoverage(Metric):
    name = "verification_coverage"
    kinds = frozenset(
        {
            EventKind.step_completed,
            EventKind.step_review_accepted,
            EventKind.step_rerun_requested,
            EventKind.step_skipped,
        }
    )

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self.completed: dict[str, int] = {}  # step -> seq of its last completion
        self.changed: dict[str, int] = {}  # step -> seq of its last change

    def feed(self, ev: ProgressEvent) -> None:
        step, seq = str(ev.step_id), ev.seq or 0
        if ev.kind in (EventKind.step_rerun_requested, EventKind.step_skipped):
            self.completed.pop(step, None)  # what it verified before no longer stands
            return
        self.changed[step] = seq
        if ev.kind == EventKind.step_completed:
            self.completed[step] = seq

    def result(self) -> dict[str, Any]:
        steps = self.given.spec.steps
        units: list[str] = list(dict.fromkeys(s.milestone for s in steps if s.milestone))
        units.append(PLAN_UNIT)
        by_id = {s.id: s for s in steps}
        verifiers: dict[str, list[StepSpec]] = {u: [] for u in units}
        for s in steps:
            if s.verify:
                verifiers[s.milestone or PLAN_UNIT].append(s)
        covered: list[str] = []
        detail: list[dict[str, Any]] = []
        for unit in units:
            found = [self._check(v, by_id, unit) for v in verifiers[unit]]
            ok = any(f["covered"] for f in found)
            if ok:
                covered.append(unit)
            why = "no verification step" if not found else None
            detail.append({"unit": unit, "covered": ok, "verify_steps": found, "why": why})
        return {
            "value": ratio(len(covered), len(units)),
            "units": len(units),
            "covered": len(covered),
            "verify_steps": sum(len(v) for v in verifiers.values()),
            **capped(detail),
        }

    def _check(self, v: StepSpec, by_id: dict[str, StepSpec], unit: str) -> dict[str, Any]:
        verified = [
            d for d in _ancestors(v, by_id) if unit == PLAN_UNIT or by_id[d].milestone == unit
        ]
        ran = self.completed.get(v.id)
        later = sorted(d for d in verified if ran is None or self.changed.get(d, -1) > ran)
        if ran is None:
            why = "not run yet"
        elif later:
            why = "changed after it ran: " + ", ".join(later[:10])
        else:
            why = None
        return {"step": v.id, "verifies": len(verified), "covered": why is None, "why": why}


def _ancestors(step: StepSpec, by_id: dict[str, StepSpec]) -> list[str]:
    """Every step ``step`` depends on, transitively."""
    seen: dict[str, None] = {}
    todo = list(step.depends_on)
    while todo:
        sid = todo.pop()
        if sid in seen or sid not in by_id:
            continue
        seen[sid] = None
        todo.extend(by_id[sid].depends_on)
    return list(seen)
