"""``waymark deploy``: a work-pool deployment of a plan that a real process worker runs.
Real ``waymark`` and ``prefect worker`` processes against the session's Prefect server;
each run continues where the last stopped."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prefect_waymark.cli import app
from prefect_waymark.flows.deployment import ENTRYPOINT
from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.resume_helpers import runs_of, start_logged

PREFECT = str(Path(sys.executable).parent / "prefect")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cron", "0 9 * * *", "--interval", "60"], "exclude each other"),
        (["--cron", "not a cron"], "schedule:"),
        (["--cron", "0 9 * * *", "--timezone", "Mars/Olympus"], "not an IANA time zone"),
        (["--timezone", "Europe/Berlin"], "--timezone goes with --cron or --rrule"),
        (["--interval", "0"], "--interval"),
        (["--max-steps", "0"], "--max-steps"),
        (["--review-wait", "0"], "--review-wait: expected seconds from 1"),
        (["--ledger", "postgresql+psycopg://ann:hunter2@db/plans"], "password"),
        (["--ledger", "sqlite://"], "in-memory"),
    ],
)
def test_bad_deploy_options_are_refused_before_prefect(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    plan = write_plan(tmp_path, counting_chain("dep-bad", ["a"]))
    # In process (typer's CliRunner): a refusal before Prefect needs no subprocess.
    result = CliRunner().invoke(
        app,
        ["deploy", str(plan), "--pool", "nowhere", *args],
        env={"PREFECT_API_URL": "http://127.0.0.1:9/api"},  # never reached
    )
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert "hunter2" not in result.output


def _deployment(name: str) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def read() -> Any:
        async with get_client() as client:
            return await client.read_deployment_by_name(f"waymark-run-plan/{name}")

    return run_coro_as_sync(read())


def _trigger_and_work(deployment_id: Any, pool: str, log: Path) -> Any:
    """Create a flow run of the deployment, let a real worker run it once; the run's state."""
    from prefect.client.orchestration import get_client
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def trigger() -> Any:
        async with get_client() as client:
            return await client.create_flow_run_from_deployment(deployment_id)

    run = run_coro_as_sync(trigger())
    with log.open("ab") as out:
        worker = subprocess.run(
            [PREFECT, "worker", "start", "--pool", pool, "--run-once", "--limit", "1"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
            timeout=300,
        )
    assert worker.returncode == 0, log.read_text()[-3000:]

    async def state() -> Any:
        async with get_client() as client:
            for _ in range(120):
                fr = await client.read_flow_run(run.id)
                if fr.state is not None and fr.state.is_final():
                    return fr
                time.sleep(1)
            return fr

    return run_coro_as_sync(state())


@pytest.mark.floor
def test_a_deployed_plan_advances_on_a_real_worker(prefect_server: str, tmp_path: Path) -> None:
    plan_id = f"dep-{uuid.uuid4().hex[:6]}"
    pool = f"pool-{uuid.uuid4().hex[:6]}"
    plan = write_plan(tmp_path, counting_chain(plan_id, ["collect", "publish"]))
    proc = run_cli(
        "deploy",
        str(plan),
        "--pool",
        pool,
        "--cron",
        "0 9 * * 1-5",
        "--timezone",
        "Europe/Berlin",
        "--max-steps",
        "1",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"created work pool {pool!r}" in proc.stdout
    assert f"prefect worker start --pool {pool}" in proc.stdout

    dep = _deployment(plan_id)
    assert dep.entrypoint == ENTRYPOINT == "prefect_waymark.flows.run_plan.run_plan"
    assert dep.work_pool_name == pool
    assert dep.parameters == {"plan": str(plan.resolve()), "max_steps": 1}
    assert {"waymark", f"plan:{plan_id}"} <= set(dep.tags)
    assert dep.global_concurrency_limit is not None and dep.global_concurrency_limit.limit == 1
    assert dep.concurrency_options is not None
    assert dep.concurrency_options.collision_strategy == "ENQUEUE"
    (sched,) = dep.schedules
    assert sched.schedule.cron == "0 9 * * 1-5" and sched.schedule.timezone == "Europe/Berlin"

    # Deploying again updates the one deployment (no second one, the pool is not re-created).
    again = run_cli("deploy", str(plan), "--pool", pool, "--max-steps", "1", "--interval", "3600")
    assert again.returncode == 0 and "created work pool" not in again.stdout
    updated = _deployment(plan_id)
    assert updated.id == dep.id and len(updated.schedules) == 1
    assert updated.schedules[0].schedule.interval.total_seconds() == 3600

    log = tmp_path / "worker.log"
    first = _trigger_and_work(dep.id, pool, log)
    assert first.state.name == "Stopped", (first.state, log.read_text()[-3000:])
    assert [runs_of(tmp_path / f"{s}.count") for s in ("collect", "publish")] == [1, 0]
    # The deployment page says where the plan stands and where the next run starts.
    described = _deployment(plan_id).description
    assert described.startswith(f"Advance plan {plan_id!r}"), described
    assert "Where it stands: stopped after 1 step · 1/2 done · next: publish" in described
    second = _trigger_and_work(dep.id, pool, log)
    assert second.state.name == "Completed", (second.state, log.read_text()[-3000:])
    assert [runs_of(tmp_path / f"{s}.count") for s in ("collect", "publish")] == [1, 1]
    described = _deployment(plan_id).description
    assert described.count("Where it stands:") == 1 and "2/2 done" in described, described
    history = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert [h["executed_steps"] for h in history] == [["collect"], ["publish"]]
    assert {h["flow_run_id"] for h in history} == {str(first.id), str(second.id)}
    # The executor names the worker and the flow run, not root@host.
    for entry, run in zip(history, (first, second), strict=True):
        worker, _, name = entry["executor"].partition("/")
        assert worker.startswith("ProcessWorker") and name == run.name, entry["executor"]
    # The plan and the date first: the UI cuts the worker's long name, not the date.
    assert re.fullmatch(rf"{plan_id} · [-\d]+ [:\d]+ · ProcessWorker .+", first.name), first.name

    # The plan is complete: its run paused the schedule (no more no-op runs) and said how to
    # schedule it again; the command it names works.
    (sched,) = _deployment(plan_id).schedules
    assert sched.active is False
    text = log.read_text()
    assert f"plan {plan_id} is complete: paused 1 schedule(s)" in text, text[-3000:]
    hint = re.search(
        r"to schedule it again: (prefect deployment schedule resume '[^']+' \S+)", text
    )
    assert hint is not None, text[-3000:]
    resumed = subprocess.run(
        [PREFECT, *shlex.split(hint.group(1))[1:]], capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _deployment(plan_id).schedules[0].active is True


def test_waymark_serve_serves_the_deployment_until_stopped(
    prefect_server: str, tmp_path: Path
) -> None:
    import signal

    plan_id = f"srv-{uuid.uuid4().hex[:6]}"
    plan = write_plan(tmp_path, counting_chain(plan_id, ["a"]))
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "waymark"),
                "serve",
                str(plan),
                "--interval",
                "3600",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        found = None
        for _ in range(90):
            try:
                found = _deployment(plan_id)
                break
            except Exception:  # noqa: BLE001 - not there yet
                time.sleep(1)
        assert found is not None, log.read_text()[-2000:]
        assert found.parameters == {"plan": str(plan.resolve())}
        assert found.schedules[0].schedule.interval.total_seconds() == 3600
        assert proc.poll() is None  # still serving
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(60)
    assert "serving waymark-run-plan/" in log.read_text()


def test_a_results_block_that_does_not_exist_is_refused(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, counting_chain(f"dep-res-{uuid.uuid4().hex[:6]}", ["a"]))
    proc = run_cli("deploy", str(plan), "--pool", "p", "--results", "local-file-system/nope-x1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--results local-file-system/nope-x1" in proc.stderr
    assert "nothing was deployed" in proc.stderr and "Traceback" not in proc.stderr


def _final_run(flow_run_id: str, worker: subprocess.Popen[bytes], log: Path) -> Any:
    """The flow run once it is in a final state (the worker still running)."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + 300
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            assert worker.poll() is None, f"the worker exited:\n{log.read_text()[-3000:]}"
            run = client.read_flow_run(uuid.UUID(flow_run_id))
            if run.state is not None and run.state.is_final():
                return run
            time.sleep(1)
    raise AssertionError(f"run {flow_run_id} not final: {run.state}\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_the_printed_worker_commands_work_as_printed(prefect_server: str, tmp_path: Path) -> None:
    """``waymark deploy``'s worker and run commands, run verbatim in a shell that has no
    ``PREFECT_API_URL`` — a user's shell on the machine whose local server waymark started: it
    is found through ``$PREFECT_HOME/waymark-server.json``, which the session's server wrote as
    ``waymark run`` writes it (tests/conftest.py: ``ensure_local_server``). Both printed worker
    commands take a run of the deployment to its end; each worker is stopped as a person stops
    one (SIGINT, then SIGTERM)."""
    from tests._support.team_server import stop_group

    home = Path(os.environ["PREFECT_HOME"])
    recorded = json.loads((home / "waymark-server.json").read_text())
    assert recorded["api_url"] == prefect_server  # what a shell without PREFECT_API_URL finds
    shell = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    shell["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    shell["PREFECT_WORKER_QUERY_SECONDS"] = "2"  # a test's patience, not part of the command

    plan_id = f"wrk-{uuid.uuid4().hex[:6]}"
    pool = f"pool-{uuid.uuid4().hex[:6]}"
    plan = write_plan(tmp_path, counting_chain(plan_id, ["collect", "publish"]))
    deployed = subprocess.run(
        [str(Path(sys.executable).parent / "waymark"), "deploy", str(plan), "--pool", pool]
        + ["--max-steps", "1"],
        env=shell,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = deployed.stdout + deployed.stderr
    assert deployed.returncode == 0, out
    assert "temporary server" not in out and f"on local Prefect server {prefect_server}" in out
    worker_line = re.search(r"^    (waymark worker .+)$", deployed.stdout, re.M)
    explicit = re.search(
        r"^  or, while this server runs: (PREFECT_API_URL=.+)$", deployed.stdout, re.M
    )
    run_now = re.search(r"^  run it now: (.+)$", deployed.stdout, re.M)
    assert worker_line and explicit and run_now, deployed.stdout
    assert worker_line.group(1) == f"waymark worker --pool {pool}"
    assert explicit.group(1) == (
        f"PREFECT_API_URL={prefect_server} prefect worker start --pool {pool}"
    )

    outcomes = []
    for i, line in enumerate((worker_line.group(1), explicit.group(1))):
        log = tmp_path / f"worker-{i}.log"
        worker = start_logged(["bash", "-c", line], cwd=tmp_path, log=log, env=shell)
        try:
            trigger = subprocess.run(
                ["bash", "-c", run_now.group(1)],
                env=shell,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert trigger.returncode == 0, trigger.stdout + trigger.stderr
            found = re.search(r"UUID: ([0-9a-f-]{36})", trigger.stdout)
            assert found is not None, trigger.stdout
            run = _final_run(found.group(1), worker, log)
        finally:
            stop_group(worker, grace=20)  # SIGINT, then SIGTERM (DESIGN: workers)
        text = log.read_text(errors="replace")
        outcomes.append((run.state.type.value, run.state.name))
        assert "Engine execution exited" not in text and "Traceback" not in text, text[-3000:]
        assert re.fullmatch(rf"{plan_id} · [-\d]+ [:\d]+ · ProcessWorker .+", run.name), run.name
    assert outcomes == [("CANCELLED", "Stopped"), ("COMPLETED", "Completed")], outcomes
    assert "waymark: starting a worker on pool" in (tmp_path / "worker-0.log").read_text()
    assert [runs_of(tmp_path / f"{s}.count") for s in ("collect", "publish")] == [1, 1]
