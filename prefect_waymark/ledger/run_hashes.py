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

Ledgers written before this hold the hashes in every run: :func:`light_events` reads events
without them, for the readers that never look at them (the plan page, the metrics, a run's
marker and its run id read ``run_started`` events at every run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .base import LedgerReader
from .events import EventKind, ProgressEvent

__all__ = ["HEAVY_KEYS", "light_events", "run_hash_fields", "run_step_hashes"]

#: What :func:`light_events` leaves out of the events' data.
HEAVY_KEYS = ("step_hashes",)


def light_events(
    ledger: LedgerReader,
    plan_id: str,
    kinds: Iterable[EventKind | str],
    *,
    run_id: str | None = None,
    run_ids: Iterable[str] | None = None,
    after_seq: int = 0,
    first: int | None = None,
    last: int | None = None,
) -> list[ProgressEvent]:
    """``ledger.events(plan_id, after_seq=..., kinds=..., first=..., last=..., run_ids=...)``
    (``run_id``: ``run_ids=[run_id]``, filtered in the database), each without
    :data:`HEAVY_KEYS` in its data."""
    if run_id is not None:
        run_ids = [run_id, *(run_ids or ())]
    found = ledger.events(
        plan_id, after_seq=after_seq, kinds=list(kinds), first=first, last=last, run_ids=run_ids
    )
    return [_without_heavy(e) for e in found]


def _without_heavy(ev: ProgressEvent) -> ProgressEvent:
    if not any(k in ev.data for k in HEAVY_KEYS):
        return ev
    data = {k: v for k, v in ev.data.items() if k not in HEAVY_KEYS}
    return ev.model_copy(update={"data": data})


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
    the same plan hash (each link one run's ``run_started``, read by its run id: the plan's
    other runs are never read); None if the ledger holds no run_started of that run, or no run
    of that plan hash with its hashes (a name that leads elsewhere: only a foreign writer makes
    one)."""
    event = _run_started(ledger, plan_id, run_id)
    if event is None:
        return None
    plan_hash, seen = event.data.get("plan_hash"), {run_id}
    while isinstance(holder := event.data.get("step_hashes_run"), str):
        event = _run_started(ledger, plan_id, holder)
        if event is None or holder in seen or event.data.get("plan_hash") != plan_hash:
            return None
        seen.add(holder)
    hashes = event.data.get("step_hashes")
    return {str(k): str(v) for k, v in hashes.items()} if isinstance(hashes, dict) else None


def _run_started(ledger: LedgerReader, plan_id: str, run_id: str) -> ProgressEvent | None:
    """The (newest) ``run_started`` of ``run_id``, in full."""
    found = ledger.events(plan_id, kinds=[EventKind.run_started], run_ids=[run_id], last=1)
    return found[0] if found else None
