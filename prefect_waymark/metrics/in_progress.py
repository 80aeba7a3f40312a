"""Single-in_progress compliance: the moments when more than one step of a branch was
in_progress. Must be 0; it is computed from the events' intervals, so a violation would show.

A step is in_progress from its ``step_started`` until a release (``step_completed``,
``step_failed``, ``step_interrupted``) or a later ``step_needs_review``, ``step_refused`` or
``step_blocked`` of that step. Each start of a step while another step of its branch is in
progress is one violation.
"""

from __future__ import annotations

from typing import Any

from ..ledger.events import RELEASE_EVENT_KINDS, EventKind, ProgressEvent
from .base import Metric, MetricInput, capped

__all__ = ["SingleInProgress"]

_ENDS = RELEASE_EVENT_KINDS | {
    EventKind.step_needs_review,
    EventKind.step_refused,
    EventKind.step_blocked,
}


class SingleInProgress(Metric):
    name = "single_in_progress_compliance"
    kinds = frozenset({EventKind.step_started} | _ENDS)

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self._branch = {s.id: s.branch for s in given.spec.steps}
        self._open: dict[str, dict[str, str | None]] = {}  # branch -> {step: run}
        self._where: dict[str, str] = {}  # an open step -> its branch
        self.intervals = 0
        self.violations: list[dict[str, Any]] = []

    def feed(self, ev: ProgressEvent) -> None:
        step = str(ev.step_id)
        if ev.kind == EventKind.step_started:
            branch = ev.branch or self._branch.get(step) or "main"
            held = self._open.setdefault(branch, {})
            others = sorted(s for s in held if s != step)
            if others:
                self.violations.append(
                    {
                        "branch": branch,
                        "started": step,
                        "run_id": ev.run_id,
                        "while_in_progress": others,
                        "at": ev.at.isoformat(),
                        "seq": ev.seq,
                    }
                )
            held[step] = ev.run_id
            self._where[step] = branch
            self.intervals += 1
            return
        branch_of = self._where.pop(step, None)
        if branch_of is not None:
            self._open[branch_of].pop(step, None)

    def result(self) -> dict[str, Any]:
        return {
            "value": len(self.violations),
            "violations": len(self.violations),
            "intervals": self.intervals,
            "branches": len(self._open),
            "open_now": sum(len(v) for v in self._open.values()),
            **capped(self.violations),
        }
