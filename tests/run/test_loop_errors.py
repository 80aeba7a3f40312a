"""When the scheduler itself stops on an error, the steps it had running are released at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect_waymark.guards.base import GuardBase
from tests._support.helpers import write_plan
from tests._support.inprocess import run_inprocess
from tests._support.resume_helpers import ledger_events, runs_of, sqlite_url


class _FailsAfter(GuardBase):
    """A guard whose after_step raises: an unexpected error inside the run's loop."""

    def __init__(self, step_id: str) -> None:
        self.step_id = step_id

    def after_step(self, ctx: Any, step: Any, value: Any) -> None:
        if step.id == self.step_id:
            raise RuntimeError(f"guard broke after {step.id}")


def test_an_error_in_the_loop_releases_the_running_steps(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect import flow
    from prefect.logging import get_run_logger

    from prefect_waymark.flows.plan_loop import PlanLoop
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.plan.loader import load_plan
    from prefect_waymark.results.storage import ResultAccess, default_result_storage
    from prefect_waymark.run.runtime import StepRuntime

    plan_path = write_plan(
        tmp_path,
        {
            "plan_id": "loop-error",
            "steps": [
                {"id": "a", "run": "echo x >> a.count"},
                {
                    "id": "b",
                    "branch": "other",
                    "run": "echo x >> b.count; "
                    "for i in $(seq 1 600); do test -f go && break; sleep 0.05; done",
                },
            ],
        },
    )
    spec = load_plan(plan_path)
    url = sqlite_url(tmp_path)

    @flow(name="waymark-test-loop-error")
    def broken_run() -> str:
        ledger = open_ledger(url)
        storage = default_result_storage(tmp_path)
        runtime = StepRuntime(spec, tmp_path, ledger, "broken-run")
        loop = PlanLoop(
            runtime, storage, ResultAccess(storage), get_run_logger(), guards=[_FailsAfter("a")]
        )
        try:
            loop.run()
        except RuntimeError as exc:
            return str(exc)
        finally:
            (tmp_path / "go").touch()  # b's body ends; the flow waits for its thread
            ledger.close()
        return "no error"

    assert broken_run() == "guard broke after a"
    interrupted = ledger_events(url, "loop-error", "step_interrupted")
    assert [e.step_id for e in interrupted] == ["b"]
    assert "RuntimeError: guard broke after a" in interrupted[0].data["reason"]
    from prefect_waymark.ledger import SqlLedger

    with SqlLedger(url) as led:
        assert led.holds("loop-error") == []  # branch other is free, though this pid lives on

    summary = run_inprocess(plan_path)  # same process: no wait for a lease to run out
    assert summary.result == "completed"
    assert summary.skipped_count == 1
    assert summary.cached_steps == ["b"]  # b's task had finished: its result is reused
    assert runs_of(tmp_path / "b.count") == 1
