"""A Prefect deployment of ``run_plan`` for one plan file: what ``waymark deploy`` and ``waymark
serve`` create (and ``deployments/daily_plan.py`` shows in Python).

The flow is loaded by **module path** (entrypoint ``prefect_waymark.flows.run_plan.run_plan``):
``run_plan`` lives in a package with relative imports, so the file-path entrypoint Prefect would
write (``prefect_waymark/flows/run_plan.py:run_plan``) deploys and then crashes every run. One run
at a time (``concurrency_limit: 1``); a run triggered while another is running waits its turn
(collision strategy ``ENQUEUE``), so each run starts from where the one before it stopped, and
``max_steps`` is a budget per schedule slot that runs triggered together share
(:mod:`prefect_waymark.run.slot_budget`).

A deployment **from a git source** (``waymark deploy --source URL``) instead clones the repository
for each flow run (Prefect's ``git_clone`` pull step) and loads the flow from the file
``waymark_flow.py`` at the repository's root, which ``waymark init`` writes: Prefect's
``from_source`` takes only a file path inside the source, and the package's own file would crash
on its relative imports, so that small file imports ``run_plan`` absolutely. The ``plan``
parameter is then the plan file's path relative to the repository root (a run starts in its clone).
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

__all__ = [
    "DeploySchedule",
    "ENTRYPOINT",
    "ENTRY_FILE",
    "ENTRY_FILE_TEXT",
    "GitSource",
    "SOURCE_ENTRYPOINT",
    "build_deployment",
]

#: The entrypoint of a deployment that runs the installed package.
ENTRYPOINT = "prefect_waymark.flows.run_plan.run_plan"
#: The file ``waymark init`` writes at a repository's root, and the entrypoint in it.
ENTRY_FILE = "waymark_flow.py"
SOURCE_ENTRYPOINT = f"{ENTRY_FILE}:run_plan"
ENTRY_FILE_TEXT = '''"""Prefect entrypoint for waymark deployments that run from a git clone.

Written by `waymark init`; commit it at the repository's root. `waymark deploy PLAN --pool POOL
--source GIT_URL` deploys `waymark_flow.py:run_plan`: each flow run clones the repository and
loads the flow from this file. It only imports waymark's `run_plan` with an absolute import,
because Prefect loads a git source's flow by file path and waymark's own module would fail on its
relative imports. Do not edit it (`waymark init` recognises this exact text).
"""

from prefect_waymark.flows.run_plan import run_plan

__all__ = ["run_plan"]
'''


@dataclass(frozen=True)
class GitSource:
    """Each run clones ``url`` (``branch``, else the remote's default branch) and runs the plan
    file at ``plan`` (a path relative to the repository root)."""

    url: str
    plan: str
    branch: str | None = None

    def storage(self) -> Any:
        """Prefect's ``GitRepository`` for the source (raises ``ValueError`` on a bad branch)."""
        from prefect.runner.storage import GitRepository

        return GitRepository(url=self.url, branch=self.branch)

    def describe(self) -> str:
        return f"{self.url}" + (f" (branch {self.branch})" if self.branch else "")


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
    source: GitSource | None = None,
    review_wait_seconds: float | None = None,
    agent_wait_seconds: float | None = None,
) -> RunnerDeployment:
    """The deployment of ``run_plan`` for ``plan`` (read from ``plan_path``, absolute); with
    ``source``, a deployment whose runs clone that repository (cloned once here, to load the
    flow from its ``waymark_flow.py``: raises if it cannot be)."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.types.entrypoint import EntrypointType

    from .run_plan import run_plan

    parameters: dict[str, Any] = {
        "plan": source.plan if source is not None else str(plan_path.resolve())
    }
    if workdir is not None:
        parameters["workdir"] = str(workdir.resolve())
    if max_steps is not None:
        parameters["max_steps"] = max_steps
    if ledger_url is not None:
        parameters["ledger_url"] = ledger_url
    if result_storage is not None:
        parameters["result_storage"] = result_storage
    if review_wait_seconds is not None:
        parameters["review_wait_seconds"] = review_wait_seconds
    if agent_wait_seconds is not None:
        parameters["agent_wait_seconds"] = agent_wait_seconds
    steps = "step" if max_steps == 1 else "steps"
    budget = f"up to {max_steps} {steps} per run" if max_steps else "every remaining step"
    options: dict[str, Any] = {
        "name": name or plan.plan_id,
        "schedules": schedule.schedules(),
        "parameters": parameters,
        "concurrency_limit": ConcurrencyLimitConfig(
            limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
        ),
        "tags": run_tags(plan.plan_id),
        "description": f"Advance plan {plan.plan_id!r} ({plan.title or plan_path.name}): "
        f"{budget}, continuing where the last run stopped."
        + (f" Each run clones {source.describe()}." if source is not None else ""),
    }
    if source is None:
        deployment = run_plan.to_deployment(**options, entrypoint_type=EntrypointType.MODULE_PATH)
    else:
        flow = run_plan.from_source(source.storage(), entrypoint=SOURCE_ENTRYPOINT)
        assert not inspect.isawaitable(flow)  # called outside an event loop: synchronous
        deployment = flow.to_deployment(**options)
    assert not inspect.isawaitable(deployment)  # called outside an event loop: synchronous
    return deployment
