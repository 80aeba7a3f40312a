"""Advance a multi-week plan a little every working day with a Prefect deployment.

Each scheduled run of ``run_plan`` continues where the last one stopped and executes at most
``--max-steps`` steps (the run ends "stopped" and the next day's run continues). The deployment
allows one run at a time (concurrency limit 1, collision strategy ``ENQUEUE``, as
``waymark deploy`` sets it: a run triggered while one is running waits its turn); the ledger
would refuse a second runner's steps on the same branch anyway.

    python deployments/daily_plan.py examples/research_report/plan.yaml \
        --cron "0 9 * * 1-5" --max-steps 2

serves the deployment from this process (Ctrl-C stops it). Trigger a run at once with
``prefect deployment run 'waymark-run-plan/<plan-id>'``; watch it in the Prefect UI.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import serve
from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.deployments.runner import EntrypointType, RunnerDeployment

from prefect_waymark import load_plan
from prefect_waymark.flows import run_plan
from prefect_waymark.run.prefect_ui import run_tags


def build_deployment(
    plan_path: Path, *, cron: str | None = "0 9 * * 1-5", max_steps: int | None = 2
) -> RunnerDeployment:
    """A deployment of ``run_plan`` for one plan file, named after the plan id."""
    plan = load_plan(plan_path)  # bad plans fail here, before anything is scheduled
    return run_plan.to_deployment(
        name=plan.plan_id,
        cron=cron,
        parameters={"plan": str(plan_path.resolve()), "max_steps": max_steps},
        # One run at a time; a run triggered meanwhile waits (ENQUEUE), as `waymark deploy`.
        concurrency_limit=ConcurrencyLimitConfig(
            limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
        ),
        # Load the flow by module path: run_plan lives in a package (relative imports).
        entrypoint_type=EntrypointType.MODULE_PATH,
        # Its runs carry these tags and name themselves `<plan id> · <time> · <executor>`.
        tags=run_tags(plan.plan_id),
        description=f"Advance plan {plan.plan_id!r} ({plan.title}) by up to {max_steps} steps.",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path)
    parser.add_argument("--cron", default="0 9 * * 1-5", help="schedule ('' for none)")
    parser.add_argument("--max-steps", type=int, default=2)
    args = parser.parse_args()
    serve(build_deployment(args.plan, cron=args.cron or None, max_steps=args.max_steps))


if __name__ == "__main__":
    main()
