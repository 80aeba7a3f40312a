"""Resume success rate: the resumed runs that went on without re-executing a completed step or
repeating an action, over all resumed runs.

Every ``run_started`` after the plan's first is a resumed run. It fails when it starts a step
(``step_started`` with its run id) that was completed when it started — unless a
``step_rerun_requested`` for that step came in between — or when it applies or claims an action
whose key was already applied (``action_applied`` / ``action_intent`` for that key). None when
no run was resumed. A run that started no step and claimed no action re-executed nothing: the
metrics read only the ``run_started`` of the runs that did something, and count the others
(:func:`~.compute.metric_events`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from .base import Metric, MetricInput, capped, ratio

__all__ = ["ResumeSuccess"]


@dataclass
class _Resumed:
    run_id: str
    seq: int
    completed: frozenset[str]  # the steps completed when it started
    redone: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)


class ResumeSuccess(Metric):
    name = "resume_success_rate"
    kinds = frozenset(
        {
            EventKind.run_started,
            EventKind.step_started,
            EventKind.step_completed,
            EventKind.step_skipped,
            EventKind.step_rerun_requested,
            EventKind.action_intent,
            EventKind.action_applied,
        }
    )

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self.runs = 0
        self.resumed: list[_Resumed] = []
        self._by_run: dict[str, _Resumed | None] = {}
        self._completed: set[str] = set()
        self._rerun: dict[str, int] = {}  # step -> seq of its last re-run request
        self._applied: set[str] = set()

    def feed(self, ev: ProgressEvent) -> None:
        kind, step, seq = ev.kind, str(ev.step_id), ev.seq or 0
        if kind == EventKind.run_started:
            self.runs += 1
            check = None
            if self.runs > 1:
                check = _Resumed(str(ev.run_id), seq, frozenset(self._completed))
                self.resumed.append(check)
            self._by_run[str(ev.run_id)] = check
            return
        run = self._by_run.get(str(ev.run_id))
        if kind == EventKind.step_started:
            if run is not None and step in run.completed and self._rerun.get(step, -1) < run.seq:
                run.redone.append(step)
        elif kind in (EventKind.step_completed, EventKind.step_skipped):
            self._completed.add(step)
        elif kind == EventKind.step_rerun_requested:
            self._completed.discard(step)
            self._rerun[step] = seq
        else:
            key = str(ev.data.get("key"))
            if key in self._applied and run is not None:
                run.repeated.append(key)
            if kind == EventKind.action_applied:
                self._applied.add(key)

    def result(self) -> dict[str, Any]:
        failed = [r for r in self.resumed if r.redone or r.repeated]
        # Fed only the runs that did something (and the first)? The others resumed and
        # re-executed nothing: they count, as successes.
        runs = self.runs if self.given.runs is None else self.given.runs
        resumed = max(runs - 1, 0)
        ok = resumed - len(failed)
        detail = [
            {"run_id": r.run_id, "re_executed": r.redone[:10], "repeated_actions": r.repeated[:10]}
            for r in failed
        ]
        return {
            "value": ratio(ok, resumed),
            "runs": runs,
            "resumed": resumed,
            "succeeded": ok,
            "failed": len(failed),
            **capped(detail),
        }
