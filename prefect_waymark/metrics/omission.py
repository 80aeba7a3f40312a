"""Plan omission rate: the steps never executed nor explicitly skipped, over all steps.

A step is executed once the ledger has a ``step_started`` or ``step_completed`` for it (a
check-in, an import or a recovered result completes a step too), skipped once it has a
``step_skipped`` (``waymark skip PLAN STEP --reason``). Measured "at close" once the plan has a
``plan_closed`` event, "so far" before.
"""

from __future__ import annotations

from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from .base import Metric, MetricInput, capped, ratio

__all__ = ["PlanOmission"]


class PlanOmission(Metric):
    name = "plan_omission_rate"
    kinds = frozenset(
        {
            EventKind.step_started,
            EventKind.step_completed,
            EventKind.step_skipped,
            EventKind.plan_closed,
        }
    )

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self.executed: set[str] = set()
        self.skipped: set[str] = set()
        self.closed = False

    def feed(self, ev: ProgressEvent) -> None:
        if ev.kind == EventKind.plan_closed:
            self.closed = True
        elif ev.kind == EventKind.step_skipped:
            self.skipped.add(str(ev.step_id))
        else:
            self.executed.add(str(ev.step_id))

    def result(self) -> dict[str, Any]:
        ids = [s.id for s in self.given.spec.steps]
        executed = [s for s in ids if s in self.executed]
        skipped = [s for s in ids if s in self.skipped and s not in self.executed]
        omitted = [s for s in ids if s not in self.executed and s not in self.skipped]
        return {
            "value": ratio(len(omitted), len(ids)),
            "steps": len(ids),
            "executed": len(executed),
            "skipped": len(skipped),
            "omitted": len(omitted),
            "closed": self.closed,
            **capped(omitted),
        }
