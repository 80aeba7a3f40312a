"""The next-start line names the step the next run starts with and the real reason: after a
failure, the failed step and its error — not a pending agent step that happens to come first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan

pytestmark = pytest.mark.usefixtures("prefect_server")


def test_after_a_failure_the_next_start_is_the_failed_step(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "nexts",
            "steps": [
                {"id": "write", "kind": "agent", "owner": "writer", "instructions": "write"},
                {"id": "check", "branch": "c", "run": "echo 'figures do not add up' >&2; exit 1"},
            ],
        },
    )
    proc = run_cli("run", str(plan))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("next start:"))
    assert line.strip().startswith("next start: check (step check failed"), line
    assert "figures do not add up" in line and "the next run retries it" in line
    assert "write" not in line and "ShellStepError" not in line
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert marker["execution_history"][-1]["next_start"]["step"] == "check"
    state = (tmp_path / "STATE.md").read_text()
    assert "write" in state  # the views still list the agent's step


def test_a_stop_for_review_names_the_exact_command(tmp_path: Path) -> None:
    """The run summary's next-start line gives the command that answers the stop, with the
    options this run was given (here --workdir), not a bare `waymark review`."""
    work = tmp_path / "work"
    work.mkdir()
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "reviewcmd",
            "steps": [{"id": "fetch", "run": "echo data > data.txt", "outputs": ["data.txt"]}],
        },
    )
    assert run_cli("run", str(plan), "--workdir", str(work)).returncode == 0
    (work / "data.txt").write_text("edited by hand\n")
    proc = run_cli("run", str(plan), "--workdir", str(work))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("next start:"))
    assert f"waymark review {plan} --step fetch --workdir {work}" in line, line
    assert "--accept|--rerun|--abort" in line, line
    accept = ["review", str(plan), "--step", "fetch", "--workdir", str(work), "--accept"]
    assert run_cli(*accept).returncode == 0
