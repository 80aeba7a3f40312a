"""Resume across real processes: the ``waymark`` command in a subprocess, killed with SIGKILL.

Each step appends a line to ``<step>.count``; the number of lines is how often its body ran.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess
from tests._support.plans import produce_consume
from tests._support.resume_helpers import (
    kill_group,
    ledger_events,
    runs_of,
    sqlite_url,
    start_cli,
    step_states,
    wait_for_file,
)


def test_sigkill_inside_step_k_resumes_at_k(
    prefect_server: str, tmp_path: Path, ledger_url: str
) -> None:
    # s3 signals that it is inside (inside.s3) and then blocks until the runner is killed;
    # on the next run inside.s3 exists, so it finishes.
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "killed",
            "steps": [
                {"id": "s1", "run": "echo x >> s1.count"},
                {"id": "s2", "run": "echo x >> s2.count", "depends_on": ["s1"]},
                {
                    "id": "s3",
                    "run": "echo x >> s3.count; test -f inside.s3 || { touch inside.s3; "
                    "sleep 600; }",
                    "depends_on": ["s2"],
                },
                {"id": "s4", "run": "echo x >> s4.count", "depends_on": ["s3"]},
            ],
        },
    )
    log = tmp_path / "runner.log"
    proc = start_cli("run", str(plan), "--ledger", ledger_url, cwd=tmp_path, log=log)
    wait_for_file(tmp_path / "inside.s3", proc, log)
    kill_group(proc)  # the runner and the step's shell: nothing gets to record anything

    assert step_states(ledger_url, "killed")["s3"].status == "in_progress"
    summary = run_inprocess(plan, ledger_url=ledger_url)
    assert summary.result == "completed"
    assert summary.interrupted_steps == ["s3"]
    assert summary.skipped_count == 2
    assert summary.executed_steps == ["s3", "s4"]
    assert [runs_of(tmp_path / f"s{i}.count") for i in range(1, 5)] == [1, 1, 2, 1]
    interrupted = ledger_events(ledger_url, "killed", "step_interrupted")
    assert [e.step_id for e in interrupted] == ["s3"]
    assert "stopped while the step was in_progress" in interrupted[0].data["reason"]
    assert step_states(ledger_url, "killed")["s3"].interrupted == 1
    # The killed run's flow run would show Running for ever: the resume marked it Crashed.
    from prefect.client.orchestration import get_client

    killed_run = ledger_events(ledger_url, "killed", "run_started")[0].data["flow_run_id"]
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(killed_run).state
    assert state is not None and state.type.value == "CRASHED"


RECOVER_MODULE = '''
import json
import os
import signal
import sqlite3
import threading
import time

from prefect_waymark.tasks import step_result_key

_HELD = []

def produce(ctx):
    with open(ctx.path("produce.count"), "a") as fh:
        fh.write("x\\n")
    if not ctx.path("killed-once").exists():
        ctx.path("killed-once").touch()
        _die_after_result_is_persisted(ctx)
    return {"n": 7}


def consume(ctx):
    with open(ctx.path("consume.count"), "a") as fh:
        fh.write("x\\n")
    ctx.path("consumed.txt").write_text(json.dumps(ctx.upstream["produce"]))
    return None


def _die_after_result_is_persisted(ctx):
    """Kill this runner after Prefect wrote the step's result, before the ledger records it.

    Holding the SQLite ledger's write lock (a real lock, as any other writer would hold it)
    makes the order certain: the runner cannot record step_completed, and the kill comes
    only once the result file Prefect writes after this function returns is complete.
    """
    key = step_result_key(ctx.plan_id, ctx.step_id, ctx.step.definition_hash(), 0)
    result_file = ctx.workdir / ".waymark" / "results" / key
    lock = sqlite3.connect(ctx.workdir / ".waymark" / "ledger.db", isolation_level=None,
                           check_same_thread=False)
    lock.execute("BEGIN IMMEDIATE")
    _HELD.append(lock)  # referenced until the kill: a collected connection releases the lock

    def killer():
        while True:
            try:
                json.loads(result_file.read_text())
                break
            except (OSError, ValueError):
                time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=killer, daemon=True).start()
'''


def test_task_finished_but_ledger_not_updated_uses_prefect_cache(
    prefect_server: str, tmp_path: Path
) -> None:
    (tmp_path / "recover_mod.py").write_text(RECOVER_MODULE)
    plan = write_plan(tmp_path, produce_consume("recover", "recover_mod"))
    log = tmp_path / "runner.log"
    proc = start_cli("run", str(plan), cwd=tmp_path, log=log)
    proc.wait(timeout=300)
    assert proc.returncode == -9, log.read_text()[-3000:]
    url = sqlite_url(tmp_path)
    assert step_states(url, "recover")["produce"].status == "in_progress"
    assert runs_of(tmp_path / "produce.count") == 1

    summary = run_inprocess(plan)
    assert summary.result == "completed"
    assert summary.interrupted_steps == ["produce"]
    assert summary.cached_steps == ["produce"]  # Prefect's cache for the step's key
    assert summary.executed_steps == ["consume"]
    assert runs_of(tmp_path / "produce.count") == 1  # not executed twice
    assert json.loads((tmp_path / "consumed.txt").read_text()) == {"n": 7}
    completed = ledger_events(url, "recover", "step_completed")
    assert [(e.step_id, e.data["cached"]) for e in completed] == [
        ("produce", True),
        ("consume", False),
    ]
    assert "recovered from Prefect's cache" in summary.text()


VALUE_MODULE = """
def produce(ctx):
    with open(ctx.path("produce.count"), "a") as fh:
        fh.write("x\\n")
    return {"n": 41, "pid": __import__("os").getpid()}


def consume(ctx):
    with open(ctx.path("consume.count"), "a") as fh:
        fh.write("x\\n")
    value = ctx.upstream["produce"]
    ctx.path("consumed.json").write_text(
        __import__("json").dumps({"n": value["n"] + 1, "producer_pid": value["pid"],
                                  "consumer_pid": __import__("os").getpid()}))
    return value["n"] + 1
"""


def test_max_steps_then_new_process_gets_upstream_values_from_persisted_results(
    prefect_server: str, tmp_path: Path
) -> None:
    (tmp_path / "value_mod.py").write_text(VALUE_MODULE)
    plan = write_plan(tmp_path, produce_consume("values", "value_mod"))
    first = run_cli("run", str(plan), "--max-steps", "1")
    assert first.returncode == 3, first.stdout + first.stderr
    assert "steps run: 1 (produce)" in first.stdout
    assert "next start: consume (budget reached (--max-steps 1))" in first.stdout
    assert runs_of(tmp_path / "consume.count") == 0

    second = run_cli("resume", str(plan))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "skipped (done before): 1" in second.stdout
    assert "steps run: 1 (consume)" in second.stdout
    got = json.loads((tmp_path / "consumed.json").read_text())
    assert got["n"] == 42
    assert got["producer_pid"] != got["consumer_pid"]  # two processes: the value came from disk
    assert runs_of(tmp_path / "produce.count") == 1


def test_two_runners_at_once_run_each_step_once(prefect_server: str, tmp_path: Path) -> None:
    steps = []
    for branch in ("left", "right"):
        for i in range(1, 4):
            steps.append(
                {
                    "id": f"{branch}{i}",
                    "branch": branch,
                    "run": f"echo x >> {branch}{i}.count; sleep 0.3",
                    "depends_on": [f"{branch}{i - 1}"] if i > 1 else [],
                }
            )
    steps.append({"id": "join", "run": "echo x >> join.count", "depends_on": ["left3", "right3"]})
    plan = write_plan(tmp_path, {"plan_id": "two-runners", "steps": steps})
    logs = [tmp_path / "one.log", tmp_path / "two.log"]
    procs = [start_cli("run", str(plan), cwd=tmp_path, log=log) for log in logs]
    codes = [p.wait(timeout=300) for p in procs]
    for code, log in zip(codes, logs, strict=True):
        assert code in (0, 3), log.read_text()[-3000:]
    final = run_cli("status", str(plan), "--json")
    assert final.returncode == 0, final.stderr
    if not json.loads(final.stdout)["complete"]:  # both stopped early: a third run finishes
        assert run_inprocess(plan).result == "completed"
    ids = [s["id"] for s in steps]
    assert [runs_of(tmp_path / f"{sid}.count") for sid in ids] == [1] * len(ids)
    starts = ledger_events(sqlite_url(tmp_path), "two-runners", "step_started")
    assert sorted(e.step_id for e in starts) == sorted(ids)
    # One in_progress step per branch: in each branch, starts and completions alternate.
    events = ledger_events(sqlite_url(tmp_path), "two-runners")
    for branch in ("left", "right", "main"):
        open_steps = 0
        for e in events:
            if e.branch != branch:
                continue
            if e.kind == "step_started":
                open_steps += 1
            elif e.kind in ("step_completed", "step_failed", "step_interrupted"):
                open_steps -= 1
            assert 0 <= open_steps <= 1


def test_a_run_takes_over_a_branch_whose_holder_dies_while_it_runs(
    prefect_server: str, tmp_path: Path
) -> None:
    """Run A holds branch main (m1); run B, started while A is alive, works on branch other.
    A is killed meanwhile: B takes A's step over (interrupted) instead of waiting forever."""
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "takeover",
            "steps": [
                {
                    "id": "m1",
                    "run": "echo x >> m1.count; test -f inside.m1 || { touch inside.m1; "
                    "sleep 600; }",
                },
                {"id": "m2", "run": "echo x >> m2.count"},  # same branch, not after m1
                {
                    "id": "o1",
                    "branch": "other",
                    "run": "echo x >> o1.count; touch inside.o1; "
                    "for i in $(seq 1 1200); do test -f a-killed && break; sleep 0.1; done; "
                    "test -f a-killed",
                },
            ],
        },
    )
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    run_a = start_cli("run", str(plan), "--until", "m1", cwd=tmp_path, log=log_a)
    wait_for_file(tmp_path / "inside.m1", run_a, log_a)
    run_b = start_cli("run", str(plan), cwd=tmp_path, log=log_b)
    wait_for_file(tmp_path / "inside.o1", run_b, log_b)
    kill_group(run_a)
    (tmp_path / "a-killed").touch()
    assert run_b.wait(timeout=300) == 0, log_b.read_text()[-4000:]
    out = log_b.read_text()
    assert "interrupted by a dead run, run again: m1" in out
    assert [runs_of(tmp_path / f"{s}.count") for s in ("m1", "m2", "o1")] == [2, 1, 1]
    interrupted = ledger_events(sqlite_url(tmp_path), "takeover", "step_interrupted")
    assert [e.step_id for e in interrupted] == ["m1"]


def test_a_run_stops_when_only_a_live_runs_branch_is_left(
    prefect_server: str, tmp_path: Path
) -> None:
    """B finds A alive on the only branch with work: B stops (exit 3) and A finishes the plan."""
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "busy",
            "steps": [
                {
                    "id": "m1",
                    "run": "echo x >> m1.count; touch inside.m1; "
                    "for i in $(seq 1 1200); do test -f b-done && break; sleep 0.1; done",
                },
                {"id": "m2", "run": "echo x >> m2.count"},
            ],
        },
    )
    log_a = tmp_path / "a.log"
    run_a = start_cli("run", str(plan), cwd=tmp_path, log=log_a)
    wait_for_file(tmp_path / "inside.m1", run_a, log_a)
    b = run_cli("run", str(plan))
    (tmp_path / "b-done").touch()
    assert b.returncode == 3, b.stdout + b.stderr
    assert "steps run: 0" in b.stdout
    assert "another run holds the branch" in b.stdout
    assert run_a.wait(timeout=300) == 0, log_a.read_text()[-4000:]
    assert [runs_of(tmp_path / f"{s}.count") for s in ("m1", "m2")] == [1, 1]
