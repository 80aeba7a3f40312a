"""Duplicate side effects: actions executed more than once for one idempotency key. Must be 0;
it is computed from the receipts and the intents, so a violation would show.

A key counts once when any of these says it ran twice:

- its ``action_applied`` events: more than one;
- its intents: an ``action_intent`` after the key was applied, or a second intent while the
  first was still open (no ``action_not_applied`` released it) — two claims, two executions;
- its rows in ``waymark_receipts``: more than one, or a row whose ``claims`` exceed its
  releases (``action_not_applied`` events) by more than one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..ledger.events import EventKind, ProgressEvent
from .base import Metric, MetricInput, capped

__all__ = ["DuplicateSideEffects"]


class DuplicateSideEffects(Metric):
    name = "duplicate_side_effects"
    kinds = frozenset(
        {EventKind.action_intent, EventKind.action_applied, EventKind.action_not_applied}
    )

    def __init__(self, given: MetricInput) -> None:
        super().__init__(given)
        self._state: dict[str, str] = {}  # key -> intent | applied | released
        self._applied: Counter[str] = Counter()
        self._released: Counter[str] = Counter()
        self.reexecuted: dict[str, str] = {}  # key -> why

    def feed(self, ev: ProgressEvent) -> None:
        key = str(ev.data.get("key"))
        before = self._state.get(key)
        if ev.kind == EventKind.action_intent:
            if before == "applied":
                self.reexecuted.setdefault(key, "claimed again after it was applied")
            elif before == "intent":
                self.reexecuted.setdefault(key, "claimed twice without a release")
            self._state[key] = "intent"
        elif ev.kind == EventKind.action_applied:
            self._applied[key] += 1
            self._state[key] = "applied"
        else:
            self._released[key] += 1
            self._state[key] = "released"

    def result(self) -> dict[str, Any]:
        why: dict[str, list[str]] = {}
        for key, n in self._applied.items():
            if n > 1:
                why.setdefault(key, []).append(f"{n} action_applied events")
        for key, text in self.reexecuted.items():
            why.setdefault(key, []).append(text)
        rows = self.given.receipts
        row_dups = claim_dups = 0
        if rows is not None:
            per_key = Counter(r.key for r in rows)
            for key, n in per_key.items():
                if n > 1:
                    row_dups += 1
                    why.setdefault(key, []).append(f"{n} receipt rows")
            for r in rows:
                if r.claims > self._released[r.key] + 1:
                    claim_dups += 1
                    why.setdefault(r.key, []).append(
                        f"claimed {r.claims} times, released {self._released[r.key]}"
                    )
        return {
            "value": len(why),
            "keys": len(set(self._state) | {r.key for r in rows or []}),
            "repeated_applied_events": sum(1 for n in self._applied.values() if n > 1),
            "intents_reexecuted": len(self.reexecuted),
            "receipt_rows_duplicated": row_dups if rows is not None else None,
            "receipt_claims_exceeded": claim_dups if rows is not None else None,
            **capped({"key": k, "why": w} for k, w in sorted(why.items())),
        }
