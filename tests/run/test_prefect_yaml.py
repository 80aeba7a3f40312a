"""``deployments/prefect.yaml``: the ``prefect deploy --all`` way deploys run_plan by module path
and a real process worker runs it. The copy under test gets a deployment and
a pool name of its own (the session's server is shared); everything else is the file as shipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from tests.run.test_waymark_deploy import _deployment, _trigger_and_work

ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).parent / "prefect")


def test_prefect_deploy_all_with_the_shipped_prefect_yaml(
    prefect_server: str, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "research_report", repo / "examples" / "research_report")
    doc = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    name, pool = f"yaml-{uuid.uuid4().hex[:6]}", f"pool-{uuid.uuid4().hex[:6]}"
    (entry,) = doc["deployments"]
    assert entry["entrypoint"] == "prefect_waymark.flows.run_plan:run_plan"
    entry["name"], entry["work_pool"]["name"] = name, pool
    (repo / "deployments").mkdir()
    (repo / "deployments" / "prefect.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {**os.environ, "PWD": str(repo)}
    made = subprocess.run(
        [PREFECT, "work-pool", "create", pool, "--type", "process"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    deployed = subprocess.run(
        [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    dep = _deployment(name)
    assert dep.pull_steps == [
        {"prefect.deployments.steps.set_working_directory": {"directory": str(repo)}}
    ]
    assert dep.parameters == {"plan": "examples/research_report/plan.yaml", "max_steps": 2}
    assert dep.global_concurrency_limit is not None and dep.global_concurrency_limit.limit == 1
    assert dep.schedules[0].schedule.cron == "0 9 * * 1-5"

    run = _trigger_and_work(dep.id, pool, tmp_path / "worker.log")
    assert run.state.name == "Stopped", (run.state, (tmp_path / "worker.log").read_text()[-3000:])
    assert "2/6 done" in (run.state.message or "")
    assert (repo / "examples" / "research_report" / "EXECUTION_MARKER.json").exists()
