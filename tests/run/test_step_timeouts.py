"""A step's timeout ends everything its command started, not only the shell."""

from __future__ import annotations

import time
from pathlib import Path

from tests._support.helpers import write_plan
from tests._support.inprocess import flow_outcome
from tests._support.resume_helpers import alive


def test_timeout_kills_the_commands_process_group(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "timeouts",
            "steps": [
                {
                    "id": "slow",
                    # A child that would write late.txt long after the step timed out.
                    "run": "(sleep 3; echo late > late.txt) & echo $! > child.pid; "
                    "echo started; wait",
                    "timeout_seconds": 1,
                }
            ],
        },
    )
    ended, summary = flow_outcome(plan)
    assert ended == "Failed" and summary.failed_steps == ["slow"]
    child = int((tmp_path / "child.pid").read_text())
    assert not alive(child), "the command's child survived the step's timeout"
    time.sleep(3.5)
    assert not (tmp_path / "late.txt").exists()

    from prefect_waymark.ledger import default_ledger_url, open_ledger

    with open_ledger(default_ledger_url(tmp_path)) as led:
        st = led.step_states("timeouts")["slow"]
    assert st.status == "failed"
    assert "timed out after 1.0s" in (st.error or "")
    assert "started" in (st.output_tail or "")
