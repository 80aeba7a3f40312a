"""A budget per schedule slot, not per run: ``max_steps`` of a deployment's run counts the steps
that runs of the same deployment started since this run's scheduled time.

Two runs triggered at once (or a late run that catches up with the ones before it) share one
slot: the deployment's concurrency limit of 1 runs them one after the other, and each later run
takes only what the earlier ones left of the budget, so together they start at most
``max_steps`` steps. A run's slot begins at its ``expected_start_time`` (Prefect's scheduled
time: the schedule's slot, or the moment a run was triggered by hand); the ledger's run_started
events say which runs belong to the deployment (``deployment_id``) and its step_started events
count what they started. Outside a deployment's run, the budget is the run's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..ledger import Ledger
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.run_hashes import light_events

__all__ = ["SlotBudget", "slot_budget"]


@dataclass(frozen=True)
class SlotBudget:
    """What this run may still start, and why."""

    deployment_id: str
    slot_start: datetime
    max_steps: int
    used: int  # steps runs of this deployment started in this slot before this run
    by_runs: tuple[str, ...]  # the runs that started them

    @property
    def left(self) -> int:
        return max(0, self.max_steps - self.used)


def slot_budget(ledger: Ledger, plan_id: str, max_steps: int | None) -> SlotBudget | None:
    """The budget of this deployment's run in its schedule slot; ``None`` outside a deployment's
    run (or without ``max_steps``: nothing to share)."""
    from prefect.context import FlowRunContext

    from ..review.schedules import own_deployment_id

    if max_steps is None:
        return None
    deployment_id = own_deployment_id()
    ctx = FlowRunContext.get()
    if deployment_id is None or ctx is None or ctx.flow_run is None:
        return None
    since = ctx.flow_run.expected_start_time
    if since is None:
        return None
    first_seq: int | None = None
    runs: set[str] = set()
    for ev in _runs_since(ledger, plan_id, since):
        if ev.data.get("deployment_id") == deployment_id and ev.at >= since and ev.run_id:
            runs.add(ev.run_id)
            if first_seq is None and ev.seq is not None:
                first_seq = ev.seq
    used: list[str] = []
    if first_seq is not None:
        used = [
            str(ev.run_id)
            for ev in ledger.events(
                plan_id, after_seq=first_seq, kinds=[EventKind.step_started], run_ids=runs
            )
        ]
    return SlotBudget(deployment_id, since, max_steps, len(used), tuple(dict.fromkeys(used)))


#: The newest runs read first; twice as many each time the slot began before all of them.
_RUNS_READ = 16


def _runs_since(ledger: Ledger, plan_id: str, since: datetime) -> list[ProgressEvent]:
    """The plan's ``run_started`` events from the newest back to the last one that started
    before ``since`` (the runs appended before it started before the slot too), oldest first,
    without their step hashes: a plan's runs before this slot are not read."""
    last = _RUNS_READ
    while True:
        found = light_events(ledger, plan_id, [EventKind.run_started], last=last)
        if len(found) < last or found[0].at < since:
            return found
        last *= 2
