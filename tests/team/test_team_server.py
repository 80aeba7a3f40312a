"""A team's Prefect end to end: a ``prefect server start`` of the test's own on
a PostgreSQL database the test creates, a process work pool, two long-lived workers, the example
plan (examples/research_report) deployed with ``waymark deploy`` on an hourly schedule, its
ledger on PostgreSQL too; runs triggered through the API, one alone and then two at once, three
times.

Checked through the API (and the files the steps write): each run resumes where the last stopped,
every step ran once (check-figures twice: it fails once on purpose), the publish action ran once,
``--max-steps 2`` held for each pair of runs triggered together (one schedule slot's budget),
task runs are named after the steps, the plan's artifacts exist, two runs triggered at once never
overlapped (the deployment's concurrency limit 1), the final state names, and once the plan is
complete the schedule is paused and its hourly runs are gone.

The hourly schedule is real (the server's scheduler creates its runs) and deterministic: its
first run is an hour away, so every run of the test is one the test triggered.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import yaml

from tests._support.postgres import PgServer
from tests._support.resume_helpers import ledger_events, runs_of
from tests._support.team_server import TeamServer, team_server

pytestmark = [pytest.mark.slow, pytest.mark.prefect]

ROOT = Path(__file__).resolve().parents[2]
WAYMARK = str(Path(sys.executable).parent / "waymark")
PLAN_ID = "research-report"
DEPLOYMENT = f"waymark-run-plan/{PLAN_ID}"
POOL = "team-pool"
STEPS = ["collect-sources", "collect-market", "analyse", "check-figures", "draft", "publish"]
RUN_TIMEOUT = 240.0


def _copy_example(folder: Path) -> Path:
    """The example plan in ``folder``, each step counting its runs: it appends its flow run's id
    to ``counts/<step>.count`` (a ``run:`` step's command first echoes it; a ``call:`` step's
    function first writes it)."""
    src = ROOT / "examples" / "research_report"
    shutil.copytree(src, folder, ignore=shutil.ignore_patterns("run_demo.py", "__pycache__"))
    (folder / "counts").mkdir()
    plan_file = folder / "plan.yaml"
    doc = yaml.safe_load(plan_file.read_text())
    assert [s["id"] for s in doc["steps"]] == STEPS
    for step in doc["steps"]:
        if "run" in step:
            step["run"] = f'echo "$WAYMARK_RUN_ID" >> counts/{step["id"]}.count; {step["run"]}'
    plan_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    module = folder / "report_steps.py"
    text = module.read_text()
    for head in (
        "def analyse(ctx: StepContext) -> dict[str, Any]:\n",
        "def draft(ctx: StepContext) -> str:\n",
    ):
        assert text.count(head) == 1, head
        text = text.replace(head, head + "    _count(ctx)\n")
    text += (
        "\n\ndef _count(ctx: StepContext) -> None:\n"
        '    with ctx.path(f"counts/{ctx.step_id}.count").open("a") as fh:\n'
        '        fh.write(ctx.run_id + "\\n")\n'
    )
    module.write_text(text)
    return plan_file


def _counts(workdir: Path) -> dict[str, list[str]]:
    """Step -> the flow run ids that ran it, in order."""
    return {
        s: (workdir / "counts" / f"{s}.count").read_text().split()
        if (workdir / "counts" / f"{s}.count").exists()
        else []
        for s in STEPS
    }


def _waymark(srv: TeamServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WAYMARK, *args], env=srv.env(), capture_output=True, text=True, timeout=300
    )


def _trigger(srv: TeamServer, deployment_id: UUID, count: int = 1) -> list[UUID]:
    """Create ``count`` flow runs of the deployment back to back (one client, no pause)."""
    with srv.client() as client:
        return [client.create_flow_run_from_deployment(deployment_id).id for _ in range(count)]


def _wait_final(srv: TeamServer, ids: list[UUID], timeout: float = RUN_TIMEOUT) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        with srv.client() as client:
            runs = [client.read_flow_run(i) for i in ids]
        if all(r.state is not None and r.state.is_final() for r in runs):
            return runs
        if time.monotonic() > deadline:
            states = [(str(r.id), r.state.type.value, r.state.name) for r in runs if r.state]
            raise AssertionError(f"runs not final after {timeout:.0f} s: {states}\n")
        time.sleep(1)


def _scheduled_runs(srv: TeamServer, deployment_id: UUID) -> list[Any]:
    """The deployment's runs still waiting in a Scheduled state."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    with srv.client() as client:
        found: list[Any] = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]),
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
            )
        )
    return found


def _task_runs(srv: TeamServer, flow_run_id: UUID) -> dict[str, str]:
    """A flow run's task runs: name -> state type (a repeated name would collapse: counted)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with srv.client() as client:
        found = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
    named = {t.name: t.state.type.value if t.state else "?" for t in found}
    assert len(named) == len(found), [t.name for t in found]
    return named


def _artifacts(srv: TeamServer) -> list[Any]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with srv.client() as client:
        found: list[Any] = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_="waymark-"))
        )
    return found


def _ran_by(srv: TeamServer) -> dict[str, list[str]]:
    """Flow run id -> the workers that started a process for it, from the workers' logs: a
    "submitting flow run '<id>'" line followed by "submitted to infrastructure" (not by
    "Aborted submission": the run was taken, or its deployment's one slot was)."""
    ran: dict[str, list[str]] = {}
    for name in srv.workers:
        lines = srv.worker_log(name).read_text(errors="replace").splitlines()
        ours = [ln for ln in lines if "prefect.flow_runs.worker" in ln]
        for here, after in zip(ours, ours[1:], strict=False):
            found = re.search(r"submitting flow run '([0-9a-f-]{36})'", here)
            if found and "submitted to infrastructure" in after:
                ran.setdefault(found.group(1), []).append(name)
    return ran


def _server_rows(srv: TeamServer, query: str) -> set[str]:
    """The first column of ``query`` on the server's own PostgreSQL database."""
    import psycopg

    with psycopg.connect(srv.pg.libpq_url(srv.database)) as conn:
        return {str(row[0]) for row in conn.execute(query)}


def _never_overlapped(runs: list[Any]) -> None:
    first, second = sorted(runs, key=lambda r: r.start_time)
    assert first.end_time is not None and second.start_time is not None
    assert first.end_time <= second.start_time, (
        f"runs overlapped: {first.start_time}..{first.end_time} and "
        f"{second.start_time}..{second.end_time}"
    )


def test_a_team_server_on_postgres_runs_the_plan_with_two_workers(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    plan = _copy_example(tmp_path / "report")
    work = plan.parent
    with team_server(pg_server, tmp_path / "prefect") as srv:
        try:
            _the_team_flow(srv, plan, work, pg_url)
        except BaseException:
            print(srv.worker_logs()[-20000:])
            print("===== server\n" + srv.tail(chars=5000))
            raise


def _the_team_flow(srv: TeamServer, plan: Path, work: Path, ledger: str) -> None:
    deployed_at = datetime.now(timezone.utc)
    proc = _waymark(
        srv, "deploy", str(plan), "--pool", POOL, "--interval", "3600", "--max-steps", "2",
        "--ledger", ledger,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"created work pool {POOL!r} (type process)" in proc.stdout
    assert f"to work pool {POOL!r} on Prefect server {srv.api_url}" in proc.stdout, proc.stdout

    with srv.client() as client:
        dep = client.read_deployment_by_name(DEPLOYMENT)
        pool = client.read_work_pool(POOL)
    assert pool.type == "process" and dep.work_pool_name == POOL
    assert dep.parameters == {"plan": str(plan.resolve()), "max_steps": 2, "ledger_url": ledger}
    (sched,) = dep.schedules
    assert sched.active and sched.schedule.interval.total_seconds() == 3600

    srv.start_worker(POOL, "worker-a")
    srv.start_worker(POOL, "worker-b")
    assert srv.wait_for_workers(POOL) == ["worker-a", "worker-b"]

    # 1. One run alone: the two collect steps (--max-steps 2), then "Stopped".
    (r1,) = _wait_final(srv, _trigger(srv, dep.id))
    assert (r1.state.type.value, r1.state.name) == ("CANCELLED", "Stopped"), r1.state
    assert _counts(work) == {
        "collect-sources": [str(r1.id)],
        "collect-market": [str(r1.id)],
        **{s: [] for s in STEPS[2:]},
    }
    # Its task runs are named after the steps; the later runs have none for completed steps.
    assert _task_runs(srv, r1.id) == {"collect-sources": "COMPLETED", "collect-market": "COMPLETED"}

    # The scheduler made the hourly runs: the first is an hour away (none runs in this test).
    deadline = time.monotonic() + 90
    while not (upcoming := _scheduled_runs(srv, dep.id)) and time.monotonic() < deadline:
        time.sleep(2)
    assert upcoming, "the scheduler made no run of the hourly schedule"
    assert all(r.auto_scheduled for r in upcoming)
    soonest = min(r.expected_start_time for r in upcoming)
    assert soonest >= deployed_at + timedelta(seconds=3500), soonest
    # `waymark status` shows the deployment, its schedule and that next run.
    proc = _waymark(srv, "status", str(plan), "--ledger", ledger, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = json.loads(proc.stdout)["deployment"]
    assert shown["id"] == str(dep.id) and shown["name"] == DEPLOYMENT, shown
    assert shown["schedules"] == [{"schedule": "every 3600 s", "active": True}], shown
    assert datetime.fromisoformat(shown["next_run"]) == soonest, (shown, soonest)

    # 2. Two runs at once: one after the other (concurrency limit 1), and one budget between them
    # (their schedule slot's): the first runs analyse, then check-figures fails once on purpose;
    # the second finds the slot's two steps used and starts none.
    r2, r3 = _wait_final(srv, _trigger(srv, dep.id, 2))
    _never_overlapped([r2, r3])
    w2a, w2b = sorted([r2, r3], key=lambda r: r.start_time)
    assert (w2a.state.type.value, w2a.state.name) == ("FAILED", "Failed"), w2a.state
    assert (w2b.state.type.value, w2b.state.name) == ("CANCELLED", "Stopped"), w2b.state
    assert _task_runs(srv, w2a.id) == {"analyse": "COMPLETED", "check-figures": "FAILED"}
    assert _task_runs(srv, w2b.id) == {}
    counts = _counts(work)
    assert counts["analyse"] == [str(w2a.id)] and counts["check-figures"] == [str(w2a.id)]

    # 3. Two at once again: the first retries check-figures and drafts, the second starts none.
    r4, r5 = _wait_final(srv, _trigger(srv, dep.id, 2))
    _never_overlapped([r4, r5])
    w3a, w3b = sorted([r4, r5], key=lambda r: r.start_time)
    assert (w3a.state.type.value, w3a.state.name) == ("CANCELLED", "Stopped"), w3a.state
    assert (w3b.state.type.value, w3b.state.name) == ("CANCELLED", "Stopped"), w3b.state
    assert _task_runs(srv, w3a.id) == {"check-figures": "COMPLETED", "draft": "COMPLETED"}
    assert _task_runs(srv, w3b.id) == {}
    counts = _counts(work)
    assert counts["check-figures"] == [str(w2a.id), str(w3a.id)]
    assert counts["draft"] == [str(w3a.id)] and counts["publish"] == []

    # 4. And once more: the first publishes and completes the plan (one step of the slot's two),
    # the second finds nothing left to do; neither publishes twice.
    r6, r7 = _wait_final(srv, _trigger(srv, dep.id, 2))
    _never_overlapped([r6, r7])
    last, noop = sorted([r6, r7], key=lambda r: r.start_time)
    assert (last.state.type.value, last.state.name) == ("COMPLETED", "Completed"), last.state
    assert (noop.state.type.value, noop.state.name) == ("COMPLETED", "Completed"), noop.state
    assert _task_runs(srv, last.id) == {"publish": "COMPLETED"}
    assert _task_runs(srv, noop.id) == {}

    # Every step ran once (check-figures: once failed, once passed); publish acted once.
    counts = _counts(work)
    assert {s: len(ids) for s, ids in counts.items()} == {
        **dict.fromkeys(STEPS, 1),
        "check-figures": 2,
    }
    assert counts["publish"] == [str(last.id)]
    assert runs_of(work / "published" / "publish-log.txt") == 1
    assert len(ledger_events(ledger, PLAN_ID, "action_applied")) == 1
    completed = ledger_events(ledger, PLAN_ID, "step_completed")
    assert sorted(e.step_id for e in completed) == sorted(STEPS)

    # --max-steps 2 held per schedule slot: runs triggered together started at most 2 steps in
    # all, and each later run of a slot recorded what the earlier ones had used.
    order = [r1, w2a, w2b, w3a, w3b, last, noop]
    started = ledger_events(ledger, PLAN_ID, "run_started")
    assert [e.data["flow_run_id"] for e in started] == [str(r.id) for r in order]
    steps_of = {
        str(r.id): sum(
            1 for e in ledger_events(ledger, PLAN_ID, "step_started") if e.run_id == str(r.id)
        )
        for r in order
    }
    assert [steps_of[str(r.id)] for r in order] == [2, 2, 0, 2, 0, 1, 0]
    assert all(e.data["deployment_id"] == str(dep.id) for e in started)
    assert [e.data["slot_used"] for e in started] == [0, 0, 2, 0, 2, 0, 1]

    # Each run's marker: what it executed and where the next one starts; each run started where
    # the one before it stopped, all five on the one PostgreSQL ledger.
    history = json.loads((work / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert [h["flow_run_id"] for h in history] == [str(r.id) for r in order]
    assert [sorted(h["executed_steps"]) for h in history] == [
        ["collect-market", "collect-sources"],
        ["analyse"],  # check-figures failed: not among the executed steps
        [],
        ["check-figures", "draft"],
        [],
        ["publish"],
        [],
    ]
    starts = [h["next_start"]["step"] for h in history]
    assert starts == ["analyse", "check-figures", "check-figures", "publish", "publish", None, None]
    assert "budget of this schedule slot reached" in history[2]["next_start"]["why"]
    assert [e.data["started_from"] for e in started[1:]] == starts[:-1]

    # The plan's artifacts: one plan page (waymark-<plan>-<copy>-plan-page) and the run artifacts
    # (waymark-<plan>-<copy>-marker, steps, progress, metrics), the marker made by every run.
    artifacts = _artifacts(srv)
    keys = {a.key for a in artifacts}
    pages = {k for k in keys if re.fullmatch(f"waymark-{PLAN_ID}-[0-9a-f]{{8}}-plan-page", k)}
    assert len(pages) == 1, keys
    (page,) = pages
    copy = page.removesuffix("-plan-page")
    run_keys = {f"{copy}-{kind}" for kind in ("marker", "steps", "progress", "metrics")}
    assert keys == {page, *run_keys}, keys
    marker_runs = {a.flow_run_id for a in artifacts if a.key == f"{copy}-marker"}
    assert marker_runs == {r.id for r in order}

    # The server keeps its records in its PostgreSQL database (not in a SQLite file).
    assert _server_rows(srv, "SELECT id FROM flow_run WHERE state_type <> 'SCHEDULED'") == {
        str(r.id) for r in order
    }
    assert not list((srv.folder / "server-home").rglob("*.db"))

    # Both workers took part, and every run was started on exactly one of them.
    ran = _ran_by(srv)
    assert set(ran) == {str(r.id) for r in order}, ran
    assert all(len(workers) == 1 for workers in ran.values()), ran
    # ... and the marker names that worker as the run's executor (<worker>/<flow run name>).
    for h in history:
        (worker,) = ran[h["flow_run_id"]]
        assert h["executor"].startswith(f"{worker}/{PLAN_ID} · "), (h["executor"], worker)
    for name in ("worker-a", "worker-b"):
        assert f"Worker {name!r} submitting flow run" in srv.tail(srv.worker_log(name), 10**7)

    # The plan is complete: its run paused the schedule, and the hourly runs are gone.
    assert f"plan {PLAN_ID} is complete: paused 1 schedule(s)" in srv.worker_logs()
    with srv.client() as client:
        (sched,) = client.read_deployment(dep.id).schedules
    assert sched.active is False
    assert _scheduled_runs(srv, dep.id) == []
    proc = _waymark(srv, "status", str(plan), "--ledger", ledger)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"deployment: {DEPLOYMENT} · every 3600 s (paused) · no run scheduled" in proc.stdout, (
        proc.stdout
    )
