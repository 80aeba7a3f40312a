"""The Prefect server dies mid-run: the steps go on (the ledger holds the plan, not Prefect), the
time spent retrying the dead API is bounded, and `waymark run` exits with the plan's own code,
saying in one line what could not be reported. A real server of its own, killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests._support.helpers import WAYMARK, write_plan
from tests._support.resume_helpers import runs_of


@pytest.mark.prefect  # waymark run starts a Prefect server of its own (no fixture)
def test_a_dead_prefect_server_does_not_decide_the_outcome(tmp_path: Path) -> None:
    home = tmp_path / "prefect-home"  # this test's own server: waymark starts it, we kill it
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "outage",
            "steps": [
                {"id": "a", "run": "echo a >> a.count"},
                {
                    "id": "b",
                    "depends_on": ["a"],
                    "run": "touch inside; for i in $(seq 1 1200); do test -f go && break; "
                    "sleep 0.1; done; echo b >> b.count",
                },
                {"id": "c", "depends_on": ["b"], "run": "echo c >> c.count"},
            ],
        },
    )
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    log = tmp_path / "runner.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [WAYMARK, "run", str(plan)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server_pid = None
    try:
        deadline = time.monotonic() + 240
        while not (tmp_path / "inside").exists():
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        server_pid = json.loads((home / "waymark-server.json").read_text())["pid"]
        os.kill(server_pid, signal.SIGKILL)
        killed_at = time.monotonic()
        (tmp_path / "go").touch()
        code = proc.wait(timeout=600)
        waited = time.monotonic() - killed_at
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if server_pid is not None:
            try:
                os.kill(server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]  # the plan completed: its own exit code
    assert [runs_of(tmp_path / f"{s}.count") for s in "abc"] == [1, 1, 1]
    assert "could not be reported to Prefect" in text and "result completed" in text
    assert waited < 180, f"{waited:.0f} s spent on a dead Prefect API"  # was ~6.5 minutes
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    assert marker["execution_history"][-1]["result"] == "completed"
