"""What a run does first: take over steps left in_progress by dead runs (their branches are
freed, the steps run again) and mark those runs' Prefect flow runs Crashed."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import LedgerError
from ..ledger import Hold, Ledger
from ..ledger.event_writers import record_step_interrupted
from ..ledger.identity import flow_run_of
from ..plan.spec import PlanSpec

__all__ = ["ResumeReport", "crash_dead_flow_runs", "prepare_resume", "take_over_dead"]


@dataclass
class ResumeReport:
    interrupted: list[str] = field(default_factory=list)
    busy: dict[str, Hold] = field(default_factory=dict)


def take_over_dead(
    ledger: Ledger, plan: PlanSpec, run_id: str, busy: dict[str, Hold] | None = None
) -> list[str]:
    """Record every step whose holder is gone (lease ran out, or its local process is dead) as
    interrupted, which frees its branch; return those steps. Live holders go into ``busy``.

    The dead runs' Prefect flow runs, left Running by the crash, are marked Crashed.
    """
    taken: list[str] = []
    dead_runs: set[str] = set()
    for hold in ledger.holds(plan.plan_id):
        if hold.run_id == run_id:
            continue
        if not hold.is_stale():
            if busy is not None:
                busy[hold.branch] = hold
            continue
        try:
            record_step_interrupted(
                ledger,
                plan.plan_id,
                step_id=hold.step_id,
                branch=hold.branch,
                run_id=run_id,
                dead_run=hold.run_id,
                reason=(
                    f"interrupted: run {hold.run_id} on {hold.host} (pid {hold.pid}) stopped "
                    f"while the step was in_progress"
                ),
            )
            taken.append(hold.step_id)
            dead_runs.add(hold.run_id)
        except LedgerError:
            continue  # another runner took it over first
    if dead_runs:
        crash_dead_flow_runs(dead_runs, f"waymark run {run_id} found this run dead")
    return taken


def crash_dead_flow_runs(run_ids: Iterable[str], reason: str) -> list[str]:
    """Set the Prefect flow runs of dead waymark runs Crashed, unless already final.

    A runner killed with SIGKILL never reports its end; its flow run would show Running for
    ever in the UI. One API call per dead run, only when one is found. Returns the flow run
    ids changed; errors are logged, never raised (the ledger is the record, the UI a view).
    """
    ids: list[uuid.UUID] = []
    for rid in sorted(set(run_ids)):
        try:
            ids.append(uuid.UUID(flow_run_of(rid)))
        except ValueError:
            continue  # not a flow run id (a run outside Prefect)
    changed: list[str] = []
    if not ids:
        return changed
    try:
        from prefect.client.orchestration import get_client
        from prefect.states import Crashed

        with get_client(sync_client=True) as client:
            for fid in ids:
                found = client.read_flow_run(fid)
                if found.state is not None and found.state.is_final():
                    continue
                client.set_flow_run_state(fid, Crashed(message=reason), force=True)
                changed.append(str(fid))
    except Exception as exc:  # noqa: BLE001 - the UI's view must not stop a resume
        logging.getLogger("prefect_waymark").warning(
            "could not mark dead flow runs Crashed: %s", exc
        )
    return changed


def prepare_resume(ledger: Ledger, plan: PlanSpec, run_id: str) -> ResumeReport:
    """Recover dead runs' steps: each is recorded interrupted and runs again. (Completed steps
    are checked by the guards: :class:`~prefect_waymark.guards.completed.CompletedStepsGuard`.)"""
    report = ResumeReport()
    report.interrupted = take_over_dead(ledger, plan, run_id, report.busy)
    return report
