"""Review stops free the worker: on a team's server (its own ``prefect server
start`` on PostgreSQL, a process pool, ONE worker with ``--limit 1``) a deployment made with
``waymark deploy --review-wait`` suspends its flow run when a step stops for review: the process
ends, and the one worker runs the next scheduled run meanwhile (which exits at once at the same
stop and does not suspend again). Answering resumes the suspended run, the worker picks it up,
the answer is applied first and the run goes on; completed steps are never run again.

Both ways to answer are checked: ``waymark review --accept`` (which resumes the run with its
answer) and the Prefect UI's form (``resume_flow_run(id, run_input=...)``: the call the UI's
**Resume** button makes with the form's fields).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import write_plan
from tests._support.plans import counting_chain
from tests._support.postgres import PgServer
from tests._support.team_server import TeamServer, team_server

pytestmark = [pytest.mark.slow, pytest.mark.prefect]

WAYMARK = str(Path(sys.executable).parent / "waymark")
PLAN_ID = "suspend-plan"
DEPLOYMENT = f"waymark-run-plan/{PLAN_ID}"
POOL = "review-pool"
RUN_TIMEOUT = 180.0


def _waymark(srv: TeamServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WAYMARK, *args], env=srv.env(), capture_output=True, text=True, timeout=300
    )


def _trigger(srv: TeamServer, deployment_id: UUID) -> UUID:
    with srv.client() as client:
        run_id: UUID = client.create_flow_run_from_deployment(deployment_id).id
    return run_id


def _wait(srv: TeamServer, run_id: UUID, done: Any, what: str) -> Any:
    """Poll the flow run until ``done(run)``; fail with its state after RUN_TIMEOUT."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while True:
        with srv.client() as client:
            run = client.read_flow_run(run_id)
        if run.state is not None and done(run):
            return run
        if time.monotonic() > deadline:
            state = (run.state.type.value, run.state.name) if run.state else None
            raise AssertionError(f"flow run {run_id} not {what} after {RUN_TIMEOUT:.0f} s: {state}")
        time.sleep(1)


def _final(srv: TeamServer, run_id: UUID) -> Any:
    return _wait(srv, run_id, lambda r: r.state.is_final(), "final")


def _suspended(srv: TeamServer, run_id: UUID) -> Any:
    run = _wait(srv, run_id, lambda r: r.state.is_paused() or r.state.is_final(), "suspended")
    assert (run.state.type.value, run.state.name) == ("PAUSED", "Suspended"), run.state
    return run


def _counts(work: Path) -> dict[str, list[str]]:
    """Step -> the run ids that ran it (each line of ``<step>.count`` is ``$WAYMARK_RUN_ID``)."""
    return {
        s: (work / f"{s}.count").read_text().split() if (work / f"{s}.count").exists() else []
        for s in "abc"
    }


def _events(url: str, *kinds: str) -> list[Any]:
    with open_ledger(url) as led:
        return list(led.events(PLAN_ID, kinds=list(kinds)))


def _page(srv: TeamServer) -> str:
    """The latest plan page's Markdown (artifact ``waymark-<plan>-<copy>-plan-page``)."""
    import re

    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with srv.client() as client:
        found = client.read_latest_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_=f"waymark-{PLAN_ID}-"))
        )
    key = f"waymark-{PLAN_ID}-[0-9a-f]{{8}}-plan-page"
    (page,) = [a for a in found if re.fullmatch(key, a.key or "")]
    return str(page.data)


@pytest.mark.floor
def test_a_review_stop_suspends_the_run_and_an_answer_resumes_it(
    pg_server: PgServer, tmp_path: Path
) -> None:
    work = tmp_path / "plan"
    work.mkdir()
    (work / "terms.md").write_text("v1")
    terms = [{"name": "terms", "kind": "file", "path": "terms.md"}]
    chain = counting_chain(
        PLAN_ID, "abc", echo='"$WAYMARK_RUN_ID"', reads=["terms"], state_refs=terms
    )
    plan = write_plan(work, chain)
    url = f"sqlite:///{work / '.waymark' / 'ledger.db'}"
    with team_server(pg_server, tmp_path / "prefect") as srv:
        try:
            _the_suspend_flow(srv, plan, work, url)
        except BaseException:
            print(srv.worker_logs()[-20000:])
            print("===== server\n" + srv.tail(chars=5000))
            raise


def _the_suspend_flow(srv: TeamServer, plan: Path, work: Path, url: str) -> None:
    proc = _waymark(
        srv, "deploy", str(plan), "--pool", POOL, "--max-steps", "1", "--review-wait", "900"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a stop for review suspends the run up to 900 s" in proc.stdout, proc.stdout
    with srv.client() as client:
        dep = client.read_deployment_by_name(DEPLOYMENT)
    assert dep.parameters["review_wait_seconds"] == 900
    srv.start_worker(POOL, "only-worker", limit=1)
    assert srv.wait_for_workers(POOL) == ["only-worker"]

    # 1. Step a runs (--max-steps 1) and records the version of terms.md it read.
    r1 = _final(srv, _trigger(srv, dep.id))
    assert (r1.state.type.value, r1.state.name) == ("CANCELLED", "Stopped"), r1.state
    assert _counts(work) == {"a": [str(r1.id)], "b": [], "c": []}

    # 2. terms.md changes: the next run stops b for review and suspends; its process ends.
    (work / "terms.md").write_text("v2")
    r2_id = _trigger(srv, dep.id)
    _suspended(srv, r2_id)
    (waiting,) = _events(url, "review_waiting")
    assert waiting.step_id == "b" and waiting.data["suspended"] is True
    assert waiting.data["flow_run_id"] == str(r2_id)
    (stop,) = _events(url, "step_needs_review")
    assert waiting.data["pause_key"] == f"waymark-review-{stop.seq}"
    assert "is suspended for this answer" in _page(srv)

    # The one worker (limit 1) and the deployment's one slot are free: the next run is taken
    # at once, exits at the same stop, and neither suspends nor announces it again.
    r3 = _final(srv, _trigger(srv, dep.id))
    assert (r3.state.type.value, r3.state.name) == ("FAILED", "NeedsReview"), r3.state
    assert len(_events(url, "review_waiting")) == 1
    assert len(_events(url, "review_announced")) == 1
    with srv.client() as client:
        assert client.read_flow_run(r2_id).state.is_paused()
    assert _counts(work)["b"] == []

    # 3. `waymark review --accept` records the answer and resumes the suspended run with it;
    # the worker picks it up, the run starts from the top: a is not run again, b runs.
    proc = _waymark(srv, "review", str(plan), "--step", "b", "--accept", "--by", "cli-person")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"resumed the suspended flow run {r2_id}" in proc.stdout, proc.stdout
    r2 = _final(srv, r2_id)
    assert (r2.state.type.value, r2.state.name) == ("CANCELLED", "Stopped"), r2.state
    counts = _counts(work)
    assert counts["a"] == [str(r1.id)]
    (b_run,) = counts["b"]
    assert b_run.startswith(f"{r2_id}-r"), b_run  # the same flow run, its second execution
    (resumed,) = _events(url, "review_resumed")
    assert resumed.data["applied"] is False  # answered by the CLI before the run took it up
    assert [e.data["by"] for e in _events(url, "step_review_accepted")] == ["cli-person"]

    # 4. terms.md changes again: the run suspends at c; the UI's form answers it this time.
    (work / "terms.md").write_text("v3")
    r4_id = _trigger(srv, dep.id)
    _suspended(srv, r4_id)
    from prefect.flow_runs import resume_flow_run

    with srv.client():  # the form's fields, as the UI's Resume sends them
        resume_flow_run(r4_id, run_input={"decision": "accept", "by": "ui-person", "reason": "ok"})
    r4 = _final(srv, r4_id)
    assert (r4.state.type.value, r4.state.name) == ("COMPLETED", "Completed"), r4.state
    accepted = _events(url, "step_review_accepted")
    assert [(e.step_id, e.data["by"]) for e in accepted] == [
        ("b", "cli-person"),
        ("c", "ui-person"),
    ]
    assert [e.data["applied"] for e in _events(url, "review_resumed")] == [False, True]

    # Every step ran exactly once; c in r4's second execution.
    counts = _counts(work)
    assert {s: len(ids) for s, ids in counts.items()} == {"a": 1, "b": 1, "c": 1}
    assert counts["c"][0].startswith(f"{r4_id}-r"), counts
    completed = _events(url, "step_completed")
    assert sorted(e.step_id for e in completed) == ["a", "b", "c"]


def test_a_run_waiting_for_an_agent_suspends_and_done_resumes_it(
    pg_server: PgServer, tmp_path: Path
) -> None:
    """A deployment's run that reaches an agent step suspends (`--agent-wait`), the one
    worker takes the next run meanwhile (it suspends too), and the agent's `waymark done`
    resumes both: one runs the code step after the agent's, the other finds the plan done."""
    work = tmp_path / "plan"
    doc = {
        "plan_id": "agent-suspend",
        "steps": [
            {"id": "a", "run": 'echo "$WAYMARK_RUN_ID" >> a.count'},
            {"id": "b", "kind": "agent", "owner": "agent-x", "depends_on": ["a"],
             "instructions": "Write b.txt.", "outputs": ["b.txt"]},
            {"id": "c", "run": 'echo "$WAYMARK_RUN_ID" >> c.count', "depends_on": ["b"]},
        ],
    }  # fmt: skip
    plan = write_plan(work, doc)
    with team_server(pg_server, tmp_path / "prefect") as srv:
        try:
            proc = _waymark(srv, "deploy", str(plan), "--pool", POOL, "--agent-wait", "900")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert "suspends up to 900 s for their check-in" in proc.stdout
            with srv.client() as client:
                dep = client.read_deployment_by_name("waymark-run-plan/agent-suspend")
            srv.start_worker(POOL, "only-worker", limit=1)
            assert srv.wait_for_workers(POOL) == ["only-worker"]
            r1 = _trigger(srv, dep.id)
            _suspended(srv, r1)
            r2 = _trigger(srv, dep.id)  # the worker is free: it takes this one too
            _suspended(srv, r2)
            with srv.client() as client:  # both stay suspended while the agent works
                assert all(client.read_flow_run(r).state.is_paused() for r in (r1, r2))
            assert (work / "a.count").read_text().split() == [str(r1)]
            url = f"sqlite:///{work / '.waymark' / 'ledger.db'}"
            with open_ledger(url) as led:
                waits = led.events("agent-suspend", kinds=["review_waiting"])
            assert [(w.data["waits"], w.data["steps"]) for w in waits] == [("checkin", ["b"])] * 2

            proc = _waymark(srv, "start", str(plan), "b", "--executor", "agent-x")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            (work / "b.txt").write_text("b")
            proc = _waymark(srv, "done", str(plan), "b", "--executor", "agent-x")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert proc.stdout.count("resumed the suspended flow run") == 2, proc.stdout
            f1, f2 = _final(srv, r1), _final(srv, r2)
            assert {f1.state.name, f2.state.name} == {"Completed"}, (f1.state, f2.state)
            (c_run,) = (work / "c.count").read_text().split()
            assert c_run.split("-r")[0] in {str(r1), str(r2)} and "-r" in c_run
            assert (work / "a.count").read_text().split() == [str(r1)]  # not redone
        except BaseException:
            print(srv.worker_logs()[-20000:])
            raise
