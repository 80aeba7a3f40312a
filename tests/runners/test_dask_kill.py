"""SIGKILL of ``waymark run --task-runner dask`` while a step runs on the cluster, then a
resume: every completed step's body ran once; the interrupted one ran again (its orphaned
body in the Dask worker stopped at its next tick, once the resume took the step over)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests._support.action_plans import branch_overlaps
from tests._support.inprocess import run_inprocess
from tests._support.resume_helpers import (
    kill_group,
    ledger_events,
    runs_of,
    start_cli,
    step_states,
    wait_for_file,
)
from tests.runners._plans import STEPS, two_branch_plan

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def _wait_completed(url: str, plan_id: str, step: str, proc: object, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st = step_states(url, plan_id).get(step)
        if st is not None and st.status == "completed":
            return
        time.sleep(0.1)
    raise AssertionError(f"{step} did not complete:\n" + log.read_text()[-4000:])


def test_sigkill_during_a_dask_run_resumes_with_every_step_once(
    prefect_server: str, tmp_path: Path, dask_address: str
) -> None:
    plan = two_branch_plan(tmp_path, "dask-killed", hold="b1")
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    log = tmp_path / "runner.log"
    proc = start_cli(
        "run", str(plan), "--ledger", url, "--task-runner", "dask", "--dask-address",
        dask_address, cwd=tmp_path, log=log,
    )  # fmt: skip
    wait_for_file(tmp_path / "inside.b1", proc, log)
    _wait_completed(url, "dask-killed", "a3", proc, log)  # branch a done: only b1 runs
    kill_group(proc)  # the scheduler; b1's body goes on in the Dask worker

    assert step_states(url, "dask-killed")["b1"].status == "in_progress"
    summary = run_inprocess(plan, ledger_url=url, task_runner="dask", dask_address=dask_address)
    assert summary.result == "completed", summary
    assert summary.interrupted_steps == ["b1"]
    assert summary.skipped_count == 3
    assert summary.executed_steps == ["b1", "b2"]
    counts = {s: runs_of(tmp_path / f"{s}.count") for s in STEPS}
    assert counts == {"a1": 1, "a2": 1, "a3": 1, "b1": 2, "b2": 1}
    events = ledger_events(url, "dask-killed")
    assert branch_overlaps(events) == []
    # The orphaned body in the Dask worker stopped at its next tick, recording nothing.
    lost = tmp_path / "lost.b1"
    deadline = time.monotonic() + 30
    while not lost.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "no longer holds it" in lost.read_text()
    assert [e.kind for e in events if e.kind == "step_attempt_failed"] == []
    assert [r.get("external_id") for r in step_states(url, "dask-killed")["b2"].receipts] == [
        "mail-1"
    ]
