"""Schedules of a ``waymark deploy`` deployment on the session's Prefect server, no worker: an
``--rrule`` schedule under the ``--name`` given, and a deployment's run that finds the plan
aborted pausing the schedule. The run is the deployment's real flow run,
executed the way a process worker's child does it (``python -m prefect.engine`` with the flow
run's id), without the worker around it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.resume_helpers import runs_of

RRULE = "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=7;BYMINUTE=30"


def _deployment(name: str) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_deployment_by_name(f"waymark-run-plan/{name}")


def test_deploy_with_an_rrule_and_a_name(prefect_server: str, tmp_path: Path) -> None:
    plan_id = f"rr-{uuid.uuid4().hex[:6]}"
    name = f"weekly-{uuid.uuid4().hex[:6]}"
    plan = write_plan(tmp_path, counting_chain(plan_id, ["a"]))
    proc = run_cli(
        "deploy",
        str(plan),
        "--pool",
        f"pool-{uuid.uuid4().hex[:6]}",
        "--rrule",
        RRULE,
        "--timezone",
        "Asia/Tokyo",
        "--name",
        name,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert name in proc.stdout
    dep = _deployment(name)
    (sched,) = dep.schedules
    assert sched.active is True
    assert RRULE in sched.schedule.rrule and sched.schedule.timezone == "Asia/Tokyo"
    assert f"plan:{plan_id}" in dep.tags and dep.parameters["plan"] == str(plan.resolve())
    # No deployment under the plan id: --name is the deployment's name.
    assert not [d for d in _deployments_tagged(plan_id) if d.name != name]


def _deployments_tagged(plan_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterTags

    with get_client(sync_client=True) as client:
        flt = DeploymentFilter(tags=DeploymentFilterTags(all_=[f"plan:{plan_id}"]))
        return list(client.read_deployments(deployment_filter=flt))


def _run_flow_run_without_worker(deployment_id: Any, log: Path) -> Any:
    """A flow run of the deployment, executed as a process worker's child process would."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(deployment_id)
    env = dict(os.environ, PREFECT__FLOW_RUN_ID=str(run.id))
    with log.open("ab") as out:
        subprocess.run(
            [sys.executable, "-m", "prefect.engine"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=300,
        )
    with get_client(sync_client=True) as client:
        return client.read_flow_run(run.id)


def test_a_deployment_run_of_an_aborted_plan_pauses_the_schedule(
    prefect_server: str, tmp_path: Path
) -> None:
    plan_id = f"ab-{uuid.uuid4().hex[:6]}"
    plan = write_plan(tmp_path, counting_chain(plan_id, ["collect", "publish"]))
    pool = f"pool-{uuid.uuid4().hex[:6]}"
    proc = run_cli("deploy", str(plan), "--pool", pool, "--interval", "3600")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert run_cli("run", str(plan), "--max-steps", "1").returncode == 3
    aborted = run_cli("review", str(plan), "--abort", "--reason", "budget cut")
    assert aborted.returncode == 0, aborted.stdout + aborted.stderr
    dep = _deployment(plan_id)
    assert [s.active for s in dep.schedules] == [True]

    log = tmp_path / "engine.log"
    run = _run_flow_run_without_worker(dep.id, log)
    text = log.read_text()
    assert run.state is not None and run.state.is_final(), (run.state, text[-3000:])
    assert [runs_of(tmp_path / f"{s}.count") for s in ("collect", "publish")] == [1, 0]
    assert [s.active for s in _deployment(plan_id).schedules] == [False], text[-3000:]
    assert f"plan {plan_id} is aborted: paused 1 schedule(s)" in text, text[-3000:]
    assert "prefect deployment schedule resume" in text
