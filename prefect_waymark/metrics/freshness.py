"""State-ref freshness: the decisions taken with the refs they read re-read within the same run,
over all decisions; and the staleness (seconds since that read) at each.

A decision is a ``step_started`` or an ``action_intent`` of a step that ``reads`` state refs
(``waymark import``'s record of a step done elsewhere is none). It is fresh when every ref the
step reads was re-read — a ``reanchor`` event of the same run id lists it, read without an
error — before the decision. Its staleness is the age of the oldest of those reads at the
decision; for a stale decision, the age of the last read in any run (None if the ref was never
read).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from .base import DETAIL_MAX, Metric, MetricInput, ratio

__all__ = ["RefFreshness"]

#: The ``host`` of the starts ``waymark import`` records: work done elsewhere, no decision.
IMPORTED = "import"


def _worst_first(decision: dict[str, Any]) -> tuple[bool, float]:
    """Stale before fresh; then the oldest read first, a ref never read (no age) before any,
    and a read of this very instant (0.0 s) last."""
    age = decision["staleness_seconds"]
    return decision["fresh"], -(math.inf if age is None else age)


class RefFreshness(Metric):
    name = "ref_freshness"
    kinds = frozenset({EventKind.reanchor, EventKind.step_started, EventKind.action_intent})

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self._reads = {s.id: list(dict.fromkeys(s.reads)) for s in given.spec.steps if s.reads}
        self._in_run: dict[tuple[str | None, str], datetime] = {}  # (run, ref) -> last read
        self._any: dict[str, datetime] = {}
        self.decisions: list[dict[str, Any]] = []

    def feed(self, ev: ProgressEvent) -> None:
        if ev.kind == EventKind.reanchor:
            for ref in ev.data.get("refs") or []:
                if isinstance(ref, dict) and ref.get("name") and not ref.get("error"):
                    name = str(ref["name"])
                    self._in_run[(ev.run_id, name)] = ev.at
                    self._any[name] = ev.at
            return
        names = self._reads.get(str(ev.step_id))
        if not names or ev.data.get("host") == IMPORTED:
            return
        fresh = all((ev.run_id, n) in self._in_run for n in names)
        ages: list[float] = []
        for n in names:
            read = self._in_run.get((ev.run_id, n)) if fresh else self._any.get(n)
            if read is not None:
                ages.append(max(0.0, (ev.at - read).total_seconds()))
        known = len(ages) == len(names)
        self.decisions.append(
            {
                "step": ev.step_id,
                "decision": "start" if ev.kind == EventKind.step_started else "action",
                "run_id": ev.run_id,
                "at": ev.at.isoformat(),
                "fresh": fresh,
                "staleness_seconds": round(max(ages), 3) if known and ages else None,
            }
        )

    def result(self) -> dict[str, Any]:
        fresh = sum(1 for d in self.decisions if d["fresh"])
        ages = [a for d in self.decisions if (a := d["staleness_seconds"]) is not None]
        # The stale decisions first, then the oldest reads: what a reader looks for.
        shown = sorted(self.decisions, key=_worst_first)
        out: dict[str, Any] = {
            "value": ratio(fresh, len(self.decisions)),
            "decisions": len(self.decisions),
            "fresh": fresh,
            "stale": len(self.decisions) - fresh,
            "max_staleness_seconds": max(ages) if ages else None,
            "detail": shown[:DETAIL_MAX],
        }
        if len(shown) > DETAIL_MAX:
            out["detail_total"] = len(shown)
        return out
