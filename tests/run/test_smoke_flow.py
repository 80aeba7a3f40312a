"""A first end-to-end run: a real Prefect flow run against the session's server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan


@pytest.mark.floor
def test_run_fail_and_resume_in_process(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import PlanRunFailed, run_plan

    plan = write_plan(
        tmp_path,
        {
            "plan_id": "smoke",
            "steps": [
                {"id": "a", "run": "echo a >> a.count; echo hello"},
                {"id": "b", "depends_on": ["a"], "run": "test -f go || exit 3"},
                {"id": "c", "depends_on": ["b"], "run": "echo c >> c.count"},
            ],
        },
    )
    state = run_plan(plan=str(plan), return_state=True)
    assert state.is_failed()
    err = state.result(raise_on_failure=False)
    assert isinstance(err, PlanRunFailed)
    assert err.summary.failed_steps == ["b"]
    (tmp_path / "go").write_text("")
    summary = run_plan(plan=str(plan))
    assert summary["result"] == "completed"
    assert summary["skipped_count"] == 1
    assert summary["executed_steps"] == ["b", "c"]
    assert (tmp_path / "a.count").read_text() == "a\n"
    proc = run_cli("status", str(plan), "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"complete": true' in proc.stdout
