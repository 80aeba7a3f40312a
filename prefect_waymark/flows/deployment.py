"""A Prefect deployment of ``run_plan`` for one plan file: what ``waymark deploy`` and ``waymark
serve`` create (and ``deployments/daily_plan.py`` shows in Python).

The flow is loaded by **module path** (entrypoint ``prefect_waymark.flows.run_plan.run_plan``):
``run_plan`` lives in a package with relative imports, so the file-path entrypoint Prefect would
write (``prefect_waymark/flows/run_plan.py:run_plan``) deploys and then crashes every run. One run
at a time (``concurrency_limit: 1``); a run triggered while another is running waits its turn
(collision strategy ``ENQUEUE``), so each run starts from where the one before it stopped and
``max_steps`` is a budget per run that runs never share.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..plan.spec import PlanSpec
from ..run.prefect_ui import run_tags

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

__all__ = ["DeploySchedule", "build_deployment", "ENTRYPOINT"]

#: The entrypoint every waymark deployment uses.
ENTRYPOINT = "prefect_waymark.flows.run_plan.run_plan"


@dataclass(frozen=True)
class DeploySchedule:
    """One of ``cron``, ``rrule``, ``interval`` (seconds), or none; ``timezone`` for cron/rrule."""

    cron: str | None = None
    rrule: str | None = None
    interval: float | None = None
    timezone: str | None = None

    def schedules(self) -> list[Any]:
        from prefect.schedules import Cron, Interval, RRule

        if self.cron:
            return [Cron(self.cron, timezone=self.timezone)]
        if self.rrule:
            return [RRule(self.rrule, timezone=self.timezone)]
        if self.interval:
            return [Interval(self.interval, timezone=self.timezone)]
        return []

    def describe(self) -> str:
        tz = f" ({self.timezone})" if self.timezone else ""
        if self.cron:
            return f"cron {self.cron!r}{tz}"
        if self.rrule:
            return f"rrule {self.rrule!r}{tz}"
        if self.interval:
            return f"every {self.interval:g} s"
        return "no schedule (trigger runs by hand)"


def build_deployment(
    plan: PlanSpec,
    plan_path: Path,
    *,
    schedule: DeploySchedule,
    name: str | None = None,
    workdir: Path | None = None,
    max_steps: int | None = None,
    ledger_url: str | None = None,
    result_storage: str | None = None,
) -> RunnerDeployment:
    """The deployment of ``run_plan`` for ``plan`` (read from ``plan_path``, absolute)."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.types.entrypoint import EntrypointType

    from .run_plan import run_plan

    parameters: dict[str, Any] = {"plan": str(plan_path.resolve())}
    if workdir is not None:
        parameters["workdir"] = str(workdir.resolve())
    if max_steps is not None:
        parameters["max_steps"] = max_steps
    if ledger_url is not None:
        parameters["ledger_url"] = ledger_url
    if result_storage is not None:
        parameters["result_storage"] = result_storage
    budget = f"up to {max_steps} steps per run" if max_steps else "every remaining step"
    deployment = run_plan.to_deployment(
        name=name or plan.plan_id,
        schedules=schedule.schedules(),
        parameters=parameters,
        concurrency_limit=ConcurrencyLimitConfig(
            limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
        ),
        entrypoint_type=EntrypointType.MODULE_PATH,
        tags=run_tags(plan.plan_id),
        description=f"Advance plan {plan.plan_id!r} ({plan.title or plan_path.name}): {budget}, "
        "continuing where the last run stopped.",
    )
    assert not inspect.isawaitable(deployment)  # called outside an event loop: synchronous
    return deployment
