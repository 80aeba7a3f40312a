"""The step hashes a ``run_started`` records: in full only when the plan changed.

A run records each step's definition hash (what the plan was when it ran: ~75 bytes a step,
~0.8 MB for a 10,000-step plan). A plan that advances a few steps a day runs the same plan most
days; recording every hash again each run made the ledger, and every read of a plan's
``run_started`` events, grow by that much per run. So a run records ``step_hashes`` when its plan's
hash differs from the plan's last run's (its first run, the first run after an edit), and
otherwise ``step_hashes_run``: the run whose ``run_started`` holds the very same hashes (the plan
hash is a digest of them, :meth:`~prefect_waymark.plan.spec.PlanSpec.plan_hash`).
:func:`run_step_hashes` reads either back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import LedgerReader
from .events import EventKind

__all__ = ["run_step_hashes", "run_hash_fields"]


def run_hash_fields(
    ledger: LedgerReader,
    plan_id: str,
    plan_hash: str,
    step_hashes: Callable[[], Mapping[str, str]],
) -> dict[str, Any]:
    """The ``run_started`` fields that record the plan's hashes: ``plan_hash``, and
    ``step_hashes_run`` (the run that holds them) when the plan's last run ran a plan of the same
    hash, else ``step_hashes`` in full."""
    last = ledger.last_event(plan_id, [EventKind.run_started])
    if last is not None and last.data.get("plan_hash") == plan_hash:
        holder = last.data.get("step_hashes_run")
        if isinstance(holder, str) and holder:
            return {"plan_hash": plan_hash, "step_hashes_run": holder}
        if isinstance(last.data.get("step_hashes"), dict) and last.run_id:
            return {"plan_hash": plan_hash, "step_hashes_run": last.run_id}
    return {"plan_hash": plan_hash, "step_hashes": dict(step_hashes())}


def run_step_hashes(ledger: LedgerReader, plan_id: str, run_id: str) -> dict[str, str] | None:
    """The step hashes of run ``run_id`` of the plan (following ``step_hashes_run``); None if the
    ledger holds no run_started of that run, or none with its hashes."""
    by_run = {
        e.run_id: e.data for e in ledger.events(plan_id, kinds=[EventKind.run_started]) if e.run_id
    }
    seen: set[str] = set()
    while run_id in by_run and run_id not in seen:
        seen.add(run_id)
        data = by_run[run_id]
        hashes = data.get("step_hashes")
        if isinstance(hashes, dict):
            return {str(k): str(v) for k, v in hashes.items()}
        holder = data.get("step_hashes_run")
        if not isinstance(holder, str):
            return None
        run_id = holder
    return None
