"""The step hashes a ``run_started`` records: in full only when the plan changed.

A run records each step's definition hash (what the plan was when it ran: ~75 bytes a step,
~0.8 MB for a 10,000-step plan). A plan that advances a few steps a day runs the same plan most
days; recording every hash again each run made the ledger, and every read of a plan's
``run_started`` events, grow by that much per run. So a run records ``step_hashes`` when its plan's
hash differs from the plan's last run's (its first run; the first after an edit, after ``waymark
rename-plan``, after an upgrade that hashes steps differently, or after a run of another version
of the plan on the same ledger), and otherwise ``step_hashes_run``: the run whose
``run_started`` holds the very same hashes (the plan hash is a digest of them,
:meth:`~prefect_waymark.plan.spec.PlanSpec.plan_hash`).
:func:`run_step_hashes` reads either back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import LedgerReader
from .events import EventKind
from .light_events import light_events

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
    """The step hashes of run ``run_id`` of the plan, following ``step_hashes_run`` to a run of
    the same plan hash (the chain is read without the hashes, then the holder's own event);
    None if the ledger holds no run_started of that run, or no run of that plan hash with its
    hashes (a name that leads elsewhere: only a foreign writer makes one)."""
    started = light_events(ledger, plan_id, [EventKind.run_started])
    by_run = {e.run_id: e for e in started if e.run_id}
    event = by_run.get(run_id)
    if event is None:
        return None
    plan_hash, seen = event.data.get("plan_hash"), {run_id}
    while isinstance(holder := event.data.get("step_hashes_run"), str):
        event = by_run.get(holder)
        if event is None or holder in seen or event.data.get("plan_hash") != plan_hash:
            return None
        seen.add(holder)
    # The holder's own data, read in full: it and the runs after it (light ones, mostly).
    after = (event.seq or 1) - 1
    for full in ledger.events(plan_id, after_seq=after, kinds=[EventKind.run_started]):
        if full.seq == event.seq:
            hashes = full.data.get("step_hashes")
            return {str(k): str(v) for k, v in hashes.items()} if isinstance(hashes, dict) else None
    return None
