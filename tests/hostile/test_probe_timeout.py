"""Nothing waits for ever: a ``probe:`` that hangs is killed at ``$WAYMARK_PROBE_TIMEOUT_SECONDS``
(default 120), its answer counts as unknown and the step stops for review; a log line says the
probe is running, and with what limit. Real ``waymark run`` processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan

PLAN = {
    "plan_id": "hang",
    "steps": [
        {
            "id": "pay",
            "run": "echo charged >> charges.txt",
            "action": "pay",
            "probe": "sleep 600",
        }
    ],
}


def _open_intent(ledger: Path) -> None:
    """An intent without a receipt, claimed by a process that has ended (as after a kill -9)."""
    code = (
        "from prefect_waymark.ledger import open_ledger\n"
        f"with open_ledger('sqlite:///{ledger}') as led:\n"
        "    led.claim_action(plan_id='hang', step_id='pay', action='pay', key='hang/pay/pay',"
        " run_id='gone')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.prefect
def test_a_hanging_probe_is_cut_at_its_limit_and_the_step_stops_for_review(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path / "proj", PLAN)
    _open_intent(plan.parent / ".waymark" / "ledger.db")
    proc = run_cli("run", str(plan), env={"WAYMARK_PROBE_TIMEOUT_SECONDS": "3"}, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out  # stopped for review: the outcome is unknown
    assert "asking its probe (at most 3 s)" in out
    assert "probe timed out after 3 s" in out
    assert not (plan.parent / "charges.txt").exists()  # the action was not done again


def test_a_probe_limit_that_is_not_a_number_above_0_is_bad_input(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "proj", PLAN)
    for bad in ("0", "soon", "-5"):
        proc = run_cli(
            "run",
            str(plan),
            env={"WAYMARK_PROBE_TIMEOUT_SECONDS": bad, "PREFECT_API_URL": "http://127.0.0.1:9/api"},
            timeout=120,
        )
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "$WAYMARK_PROBE_TIMEOUT_SECONDS" in proc.stderr and "Traceback" not in proc.stderr
        assert not (plan.parent / ".waymark").exists()  # nothing recorded
