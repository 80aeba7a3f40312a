"""A served Prefect deployment advances a plan by its step budget on every run (real server,
real `serve` process, real deployment runs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests._support.helpers import run_cli, write_plan

ROOT = Path(__file__).resolve().parents[2]


def _wait_for_deployment(name: str, proc: subprocess.Popen[bytes]) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    deadline = time.monotonic() + 180
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the serve process exited"
            try:
                return client.read_deployment_by_name(name)
            except ObjectNotFound:
                time.sleep(0.5)
    raise AssertionError(f"deployment {name} never appeared")


def test_served_deployment_advances_the_plan_each_run(prefect_server: str, tmp_path: Path) -> None:
    from prefect.deployments import run_deployment

    plan = write_plan(
        tmp_path,
        {
            "plan_id": "daily-plan",
            "steps": [
                {"id": f"s{i}", "depends_on": [f"s{i - 1}"] if i else [], "run": f"echo {i} >> ran"}
                for i in range(3)
            ],
        },
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "deployments" / "daily_plan.py"),
            str(plan),
            "--cron",
            "",
            "--max-steps",
            "2",
        ],
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        dep = _wait_for_deployment("waymark-run-plan/daily-plan", proc)
        # One run at a time, a run triggered meanwhile waits its turn (as `waymark deploy`).
        assert dep.global_concurrency_limit is not None
        assert dep.global_concurrency_limit.limit == 1
        assert dep.concurrency_options is not None
        assert dep.concurrency_options.collision_strategy == "ENQUEUE"
        runs = []
        for _ in range(2):
            fr = run_deployment("waymark-run-plan/daily-plan", timeout=180, poll_interval=1)
            runs.append(fr)
        # The first run stopped at its budget (neither failed nor done: Cancelled), the second
        # completed the plan; both are named and tagged for the plan (the deployment's tags,
        # the flow's run name).
        states = [(r.state.type.value, r.state.name) for r in runs]
        assert states == [("CANCELLED", "Stopped"), ("COMPLETED", "Completed")], states
        assert all(r.name.startswith("daily-plan · ") for r in runs), [r.name for r in runs]
        assert all({"waymark", "plan:daily-plan"} <= set(r.tags) for r in runs)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert (tmp_path / "ran").read_text().split() == ["0", "1", "2"]
    status = run_cli("status", str(plan), "--json")
    assert status.returncode == 0
    doc = json.loads(status.stdout)
    assert doc["complete"] is True
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    results = [m["result"] for m in marker["execution_history"]]
    assert results == ["stopped", "completed"]
    assert [m["flow_run_id"] for m in marker["execution_history"]] == [str(r.id) for r in runs]
