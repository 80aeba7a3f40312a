"""A tick in a worker process re-anchors with what the scheduler accepted since: a state ref
the run itself wrote (accepted by the scheduler when the writing step completed) is no conflict
for the next step that reads it — as on the thread path. No Prefect needed: the remote runtime
and the scheduler's guard are driven directly against one SQLite ledger."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from prefect_waymark.guards.base import GuardContext
from prefect_waymark.guards.reanchor import ReanchorGuard
from prefect_waymark.ledger import open_ledger
from prefect_waymark.ledger.events import EventKind
from prefect_waymark.plan.loader import load_plan
from prefect_waymark.runners.remote import RemoteRuntime
from tests._support.helpers import write_plan


def test_a_worker_tick_sees_the_refs_the_scheduler_accepted(tmp_path: Path) -> None:
    (tmp_path / "terms.md").write_text("v0\n")
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "tk",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                {"id": "s1", "run": "true", "writes": ["terms"]},
                {"id": "s2", "run": "true", "depends_on": ["s1"], "reads": ["terms"]},
            ],
        },
    )
    spec = load_plan(plan)
    url, run = f"sqlite:///{tmp_path / 'ledger.db'}", "run-1"
    with open_ledger(url) as led:
        sched = ReanchorGuard(spec, led, tmp_path, run)
        ctx = GuardContext(plan=spec, ledger=led, workdir=tmp_path, run_id=run)
        assert sched.on_run_start(ctx) == []

        def record(kind: EventKind, sid: str, **data: object) -> None:
            led.record("tk", kind, step_id=sid, branch="main", run_id=run,
                       def_hash=spec.step_hashes()[sid], result_key=f"k-{sid}", **data)  # fmt: skip

        def worker() -> RemoteRuntime:
            return RemoteRuntime(
                spec, tmp_path, url, run, executor=None, forbidden=[], lease_seconds=60
            )

        record(EventKind.step_started, "s1", lease_seconds=60, host=socket.gethostname(),
               pid=os.getpid())  # fmt: skip
        worker().tick(spec.step("s1"), 1)  # the worker builds its guard now
        (tmp_path / "terms.md").write_text("v1 written by s1\n")
        record(EventKind.step_completed, "s1", cached=False, outputs={})
        sched.after_step(ctx, spec.step("s1"), None)  # the scheduler accepts s1's write
        record(EventKind.step_started, "s2", lease_seconds=60, host=socket.gethostname(),
               pid=os.getpid())  # fmt: skip
        worker().tick(spec.step("s2"), 1)  # no NeedsReview: the accepted write is seen
        assert sched.on_tick(ctx, spec.step("s2"), 1) is None  # the thread path agrees
        assert led.step_states("tk")["s2"].status == "in_progress"
