"""Choosing a task runner: ``--task-runner`` / the flow's ``task_runner`` parameter; bad values
exit 2 with the choices before anything is recorded; ``dask`` without prefect-dask names the
install line; the CLI imports no Dask at start-up."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prefect_waymark.cli import app
from prefect_waymark.errors import TaskRunnerError
from prefect_waymark.runners import DASK_INSTALL, check_task_runner
from tests._support.helpers import run_cli, write_plan
from tests._support.resume_helpers import ledger_events, runs_of
from tests.runners._plans import STEPS, two_branch_plan


def _plan(folder: Path) -> Path:
    return write_plan(folder, {"plan_id": "choice", "steps": [{"id": "s1", "run": "echo x"}]})


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--task-runner", "fibers"], "expected one of threads, processes, dask"),
        (["--dask-address", "tcp://127.0.0.1:8786"], "--dask-address needs --task-runner dask"),
        (
            ["--task-runner", "processes", "--dask-address", "tcp://127.0.0.1:8786"],
            "--dask-address needs --task-runner dask, not 'processes'",
        ),
    ],
)
def test_bad_task_runner_exits_2_before_anything(
    tmp_path: Path, args: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path)
    monkeypatch.chdir(tmp_path)
    # In process (typer's CliRunner): a refusal before anything needs no subprocess.
    result = CliRunner().invoke(app, ["run", str(plan), *args])
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / ".waymark" / "ledger.db").exists()


def test_dask_without_prefect_dask_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *a: Any, **k: Any) -> Any:
        return None if name == "prefect_dask" else real(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(TaskRunnerError) as err:
        check_task_runner("dask")
    assert DASK_INSTALL in str(err.value)
    assert DASK_INSTALL == "pip install 'prefect-waymark[dask]'"
    check_task_runner("processes")  # the others need nothing more


def test_the_cli_imports_no_dask_at_start_up() -> None:
    code = (
        "import sys, prefect_waymark.cli.commands, prefect_waymark.flows.run_plan; "
        "print(sorted(m for m in sys.modules if 'dask' in m or m == 'distributed'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_checking_the_choice_imports_no_prefect() -> None:
    # `waymark run` checks --task-runner before it points Prefect at a server: Prefect read
    # early would keep its own default (a temporary server) instead of the one chosen.
    code = (
        "import sys; from prefect_waymark.runners import check_task_runner; "
        "check_task_runner('dask'); check_task_runner('processes'); "
        "print('prefect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.prefect
def test_bad_task_runner_parameter_records_nothing(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    plan = _plan(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    state = run_plan(plan=str(plan), ledger_url=url, task_runner="fibers", return_state=True)
    assert state.is_failed()
    assert "expected one of threads, processes, dask" in str(state.message)
    assert not (tmp_path / "ledger.db").exists()


@pytest.mark.prefect
@pytest.mark.slow
def test_waymark_run_on_processes(prefect_server: str, tmp_path: Path) -> None:
    plan = two_branch_plan(tmp_path, "cli-procs")
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = run_cli("run", str(plan), "--ledger", url, "--task-runner", "processes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {s: runs_of(tmp_path / f"{s}.count") for s in STEPS} == dict.fromkeys(STEPS, 1)
    kinds = [e.kind for e in ledger_events(url, "cli-procs")]
    assert kinds.count("step_completed") == len(STEPS)


@pytest.mark.prefect
def test_a_runner_that_cannot_start_releases_the_claimed_steps(
    prefect_server: str, tmp_path: Path
) -> None:
    # Nothing listens on port 9: the Dask runner fails at the first submit, after the loop
    # recorded the steps it claimed. They must not stay in_progress (a live pid's hold).
    plan = two_branch_plan(tmp_path, "no-cluster")
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = run_cli(
        "run", str(plan), "--ledger", url, "--task-runner", "dask",
        "--dask-address", "tcp://127.0.0.1:9", cwd=tmp_path,
        env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    events = ledger_events(url, "no-cluster")
    started = [e.step_id for e in events if e.kind == "step_started"]
    assert started, [e.kind for e in events]  # the failure came after claiming steps
    released = [e.step_id for e in events if e.kind == "step_interrupted"]
    assert sorted(released) == sorted(started)
    assert all(runs_of(tmp_path / f"{s}.count") == 0 for s in STEPS)
