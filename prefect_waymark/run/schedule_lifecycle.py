"""Schedules follow the plan: a deployment's run that finds the plan complete or aborted pauses
the deployment's schedules, so a finished plan does not go on making no-op runs every day.

Only runs of a deployment do this (``waymark run`` and a plain ``run_plan(...)`` call have no
schedule). The log line and the run's summary say what was paused and the command that resumes
it; a failure to pause is logged, never raised: the plan's outcome is the ledger's, not Prefect's.
"""

from __future__ import annotations

import logging
from typing import Any

from ..ledger import Ledger

__all__ = ["pause_finished_schedules"]


def _finished(result: str, ledger: Ledger, plan_id: str) -> str | None:
    """``complete`` or ``aborted`` when the plan has nothing left to schedule; else ``None``."""
    from ..review.decisions import abort_event

    if result == "completed":
        return "complete"
    if result in ("needs_review", "stopped") and abort_event(ledger, plan_id) is not None:
        return "aborted"
    return None


def pause_finished_schedules(
    result: str,
    ledger: Ledger,
    plan_id: str,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> str | None:
    """In a deployment's run of a plan now complete or aborted: pause the deployment's active
    schedules; return the line that says so (``None`` when there was nothing to pause)."""
    from prefect.runtime import deployment

    deployment_id = deployment.get_id()
    why = _finished(result, ledger, plan_id) if deployment_id else None
    if deployment_id is None or why is None:
        return None
    try:
        return _pause(str(deployment_id), plan_id, why, logger)
    except Exception as exc:  # noqa: BLE001 - Prefect away: the plan's outcome stands
        logger.warning(
            "plan %s is %s, but its deployment's schedules could not be paused: %s: %s",
            plan_id,
            why,
            type(exc).__name__,
            exc,
        )
        return None


def _pause(
    deployment_id: str,
    plan_id: str,
    why: str,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> str | None:
    from uuid import UUID

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        dep: Any = client.read_deployment(UUID(deployment_id))
        active = [s for s in dep.schedules if s.active]
        for sched in active:
            client.update_deployment_schedule(dep.id, sched.id, active=False)
        flow = client.read_flow(dep.flow_id)
    if not active:
        return None
    full = f"{flow.name}/{dep.name}"
    resume = " ; ".join(f"prefect deployment schedule resume '{full}' {s.id}" for s in active)
    line = (
        f"plan {plan_id} is {why}: paused {len(active)} schedule(s) of deployment {full!r}, "
        f"so it makes no more runs; to schedule it again: {resume}"
    )
    logger.info("%s", line)
    return line
