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

__all__ = ["after_deployment_run", "pause_finished_schedules"]

#: Where the deployment's description says where the plan stands (kept below the deploy text).
STANDS = "\n\nWhere it stands: "


def _finished(result: str, ledger: Ledger, plan_id: str) -> str | None:
    """``complete``, ``aborted`` or ``closed`` (``waymark close``) when the plan has nothing
    left to schedule; else ``None``."""
    from .decisions import abort_event

    if result == "closed":
        return "closed"
    if result == "completed":
        return "complete"
    if result in ("needs_review", "stopped") and abort_event(ledger, plan_id) is not None:
        return "aborted"
    return None


def after_deployment_run(
    result: str,
    line: str | None,
    ledger: Ledger,
    plan_id: str,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> None:
    """At the end of a deployment's run: its description says where the plan stands and where
    the next run starts (the deployment page shows it), and a finished plan's schedules are
    paused. Outside a deployment's run: nothing."""
    deployment_id = own_deployment_id()
    if deployment_id is None:
        return
    if line:
        try:
            _describe(deployment_id, line)
        except Exception as exc:  # noqa: BLE001 - a description is never worth failing the run
            logger.warning("could not update the deployment's description: %s", exc)
    pause_finished_schedules(result, ledger, plan_id, logger)


def own_deployment_id() -> str | None:
    """The deployment whose run *this* flow run is — not one inherited by a subflow: a
    ``run_plan`` called inside a user's own deployed flow must not touch that deployment."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    fr = ctx.flow_run if ctx is not None else None
    if fr is None or fr.deployment_id is None or fr.parent_task_run_id is not None:
        return None
    return str(fr.deployment_id)


def _describe(deployment_id: str, line: str) -> None:
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentUpdate
    from prefect.runtime import flow_run

    from ..models import utcnow

    with get_client(sync_client=True) as client:
        dep: Any = client.read_deployment(UUID(deployment_id))
        base = (dep.description or "").split(STANDS, 1)[0]
        when = utcnow().astimezone().strftime("%Y-%m-%d %H:%M")
        text = f"{base}{STANDS}{line} (after run {flow_run.get_name() or '?'}, {when})"
        client.update_deployment(dep.id, DeploymentUpdate(description=text))


def pause_finished_schedules(
    result: str,
    ledger: Ledger,
    plan_id: str,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> str | None:
    """In a deployment's run of a plan now complete or aborted: pause the deployment's active
    schedules; return the line that says so (``None`` when there was nothing to pause)."""
    deployment_id = own_deployment_id()
    if deployment_id is None:
        return None
    try:
        why = _finished(result, ledger, plan_id)
        if why is None:
            return None
        return _pause(deployment_id, plan_id, why, logger)
    except Exception as exc:  # noqa: BLE001 - Prefect away: the plan's outcome stands
        logger.warning(
            "plan %s: its deployment's schedules could not be paused: %s: %s",
            plan_id,
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
