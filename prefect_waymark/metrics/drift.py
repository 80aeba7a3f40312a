"""Goal drift events: refusals of a forbidden action, steps linked neither to the contract nor
to a milestone, and contract changes in mid-plan.

- A forbidden-action refusal is a ``drift`` event with ``drift: forbidden_action`` (the review
  gate writes one with each such ``step_refused``; a check-in with the step already in progress
  writes it with its stop for review); a ``step_refused`` whose details say
  ``forbidden_action`` without that event (an older ledger) counts too.
- A step without ``serves`` and without ``milestone`` is unlinked (from the plan file).
- A contract change is an ``accepted_versions`` event whose contract (goal, version, hash)
  differs from the one accepted before it; the first acceptance is no change.
"""

from __future__ import annotations

from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from .base import Metric, MetricInput, capped

__all__ = ["GoalDrift"]

FORBIDDEN = "forbidden_action"


class GoalDrift(Metric):
    name = "goal_drift_events"
    kinds = frozenset({EventKind.drift, EventKind.step_refused, EventKind.accepted_versions})

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self.refusals: list[dict[str, Any]] = []
        self._drifted: set[tuple[str | None, str | None]] = set()
        self.changes: list[dict[str, Any]] = []
        self._contract: tuple[Any, Any, Any] | None = None

    def feed(self, ev: ProgressEvent) -> None:
        d = ev.data
        if ev.kind == EventKind.drift:
            if d.get("drift") == FORBIDDEN:
                self._drifted.add((ev.step_id, ev.run_id))
                self._refusal(ev, d.get("action"), d.get("rule"))
        elif ev.kind == EventKind.step_refused:
            details = d.get("details") or {}
            if details.get("drift") == FORBIDDEN and (ev.step_id, ev.run_id) not in self._drifted:
                self._refusal(ev, details.get("action"), details.get("forbidden"))
        elif isinstance(d.get("contract"), dict):
            c = d["contract"]
            seen = (c.get("goal_id"), c.get("version"), c.get("hash"))
            if self._contract is not None and seen != self._contract:
                self.changes.append(
                    {
                        "at": ev.at.isoformat(),
                        "from": f"{self._contract[0]} v{self._contract[1]}",
                        "to": f"{seen[0]} v{seen[1]}",
                        "reason": d.get("reason"),
                    }
                )
            self._contract = seen

    def _refusal(self, ev: ProgressEvent, action: Any, rule: Any) -> None:
        self.refusals.append(
            {"step": ev.step_id, "action": action, "rule": rule, "at": ev.at.isoformat()}
        )

    def result(self) -> dict[str, Any]:
        unlinked = [s.id for s in self.given.spec.steps if not s.serves and not s.milestone]
        detail: list[Any] = [{"forbidden_action": r} for r in self.refusals]
        detail += [{"contract_change": c} for c in self.changes]
        detail += [{"unlinked_step": s} for s in unlinked]
        return {
            "value": len(self.refusals) + len(unlinked) + len(self.changes),
            "forbidden_refusals": len(self.refusals),
            "unlinked_steps": len(unlinked),
            "contract_changes": len(self.changes),
            **capped(detail),
        }
