"""A two-branch plan on Prefect's ProcessPoolTaskRunner and on a local Dask cluster: branches
overlap in time, one in_progress per branch, every body once, a ``call:`` and an ``action:``
step across the process boundary."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests._support.action_plans import branch_overlaps
from tests._support.inprocess import run_inprocess
from tests._support.resume_helpers import ledger_events, runs_of, step_states
from tests.runners._plans import STEPS, intervals, overlapping, two_branch_plan

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def _check_run(folder: Path, url: str, plan_id: str, summary: Any) -> None:
    assert summary.result == "completed", summary
    assert sorted(summary.executed_steps) == STEPS
    assert {s: runs_of(folder / f"{s}.count") for s in STEPS} == dict.fromkeys(STEPS, 1)
    # a2 ran in another process; a3 got a2's value (read back from the result storage).
    a2_pid = (folder / "a2.count").read_text().split()[0]
    assert a2_pid != str(os.getpid())
    assert (folder / "a3.count").read_text().split() == [a2_pid]
    events = ledger_events(url, plan_id)
    assert branch_overlaps(events) == []  # never two in_progress in one branch
    spans = intervals(events)
    assert overlapping(spans, "a1", "b1"), spans  # the branches ran at the same time
    # the action's intent and receipt were written in the worker, with the command's id.
    receipts = step_states(url, plan_id)["b2"].receipts
    assert [r.get("external_id") for r in receipts] == ["mail-1"], receipts
    kinds = [e.kind for e in events if e.step_id == "b2"]
    assert kinds.count("step_started") == 1 and kinds.count("step_completed") == 1


def test_two_branches_on_a_process_pool(
    prefect_server: str, tmp_path: Path, ledger_url: str
) -> None:
    # The flow's own runner (with_options); each worker process reopens the ledger by URL.
    from prefect.task_runners import ProcessPoolTaskRunner

    from prefect_waymark.flows import run_plan

    plan = two_branch_plan(tmp_path, "procs")
    url = ledger_url
    flow = run_plan.with_options(task_runner=ProcessPoolTaskRunner(max_workers=2))
    from prefect_waymark.run.summary import summary_from_state

    state = flow(plan=str(plan), ledger_url=url, return_state=True)
    summary = summary_from_state(state)
    _check_run(tmp_path, url, "procs", summary)


def test_two_branches_on_dask(prefect_server: str, tmp_path: Path, dask_address: str) -> None:
    plan = two_branch_plan(tmp_path, "dasked")
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    summary = run_inprocess(plan, ledger_url=url, task_runner="dask", dask_address=dask_address)
    _check_run(tmp_path, url, "dasked", summary)
