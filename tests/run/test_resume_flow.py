"""Resume with real in-process ``run_plan`` flow runs: only unfinished steps run again.

Every step appends a line to its own ``<step>.count`` file, so the number of lines is the number
of times the step's body really ran.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess
from tests._support.plans import counting_chain, produce_consume
from tests._support.resume_helpers import (
    ledger_events,
    runs_of,
    sqlite_url,
    step_states,
)


def _chain_plan(folder: Path, plan_id: str, n: int = 5, fail_at: int = 3) -> Path:
    steps = []
    for i in range(1, n + 1):
        cmd = f'echo "$WAYMARK_PLAN_ID $WAYMARK_STEP_ID $WAYMARK_RUN_ID" >> s{i}.count'
        if i == fail_at:
            cmd += " && test -f go"
        steps.append({"id": f"s{i}", "run": cmd, "depends_on": [f"s{i - 1}"] if i > 1 else []})
    return write_plan(folder, {"plan_id": plan_id, "steps": steps})


@pytest.mark.floor
def test_failed_at_step_k_then_rerun_executes_only_k_to_n(
    prefect_server: str, tmp_path: Path, ledger_url: str
) -> None:
    plan = _chain_plan(tmp_path, "chain-fail")

    first = run_inprocess(plan, ledger_url=ledger_url)
    assert first.result == "failed" and first.exit_code == 1
    assert first.executed_steps == ["s1", "s2"]
    assert first.failed_steps == ["s3"]
    assert [runs_of(tmp_path / f"s{i}.count") for i in range(1, 6)] == [1, 1, 1, 0, 0]
    assert first.next_start == "s3"
    failed = ledger_events(ledger_url, "chain-fail", "step_failed")
    assert [e.step_id for e in failed] == ["s3"]
    assert "exited with code 1" in failed[0].data["error"]
    assert ledger_events(ledger_url, "chain-fail", "step_started")[-1].step_id == "s3"

    (tmp_path / "go").write_text("")
    second = run_inprocess(plan, ledger_url=ledger_url)
    assert second.result == "completed" and second.exit_code == 0
    assert second.skipped_count == 2
    assert second.executed_steps == ["s3", "s4", "s5"]
    assert [runs_of(tmp_path / f"s{i}.count") for i in range(1, 6)] == [1, 1, 2, 1, 1]
    # The command's environment names the plan, the step and the run that executed it.
    assert (tmp_path / "s3.count").read_text().splitlines() == [
        f"chain-fail s3 {first.run_id}",
        f"chain-fail s3 {second.run_id}",
    ]
    assert second.run_id == second.flow_run_id != first.run_id

    third = run_inprocess(plan, ledger_url=ledger_url)
    assert third.result == "completed"
    assert third.executed_steps == []
    assert third.skipped_count == 5
    assert [runs_of(tmp_path / f"s{i}.count") for i in range(1, 6)] == [1, 1, 2, 1, 1]
    # Steps are started only in this plan's runs: 3 + 3 starts in all, none in the third run.
    assert len(ledger_events(ledger_url, "chain-fail", "step_started")) == 6


def test_until_stops_after_the_step_and_what_it_needs(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path,
        counting_chain("until-plan", "abc", echo="x").add_step(
            id="side", branch="other", run="echo x >> side.count"
        ),
    )
    first = run_inprocess(plan, until="b")
    assert first.result == "stopped" and first.exit_code == 3
    assert first.executed_steps == ["a", "b"]
    assert runs_of(tmp_path / "c.count") == 0
    assert runs_of(tmp_path / "side.count") == 0  # not needed by b
    assert first.next_start in ("c", "side")  # both are ready; the view names the first
    assert "--until" in first.next_start_reason

    again = run_inprocess(plan, until="b")  # nothing left to do for b: no step runs
    assert again.executed_steps == [] and again.result == "stopped"

    rest = run_inprocess(plan)
    assert rest.result == "completed"
    assert sorted(rest.executed_steps) == ["c", "side"]
    assert [runs_of(tmp_path / f"{s}.count") for s in ("a", "b", "c", "side")] == [1, 1, 1, 1]


def test_until_the_last_step_completes_the_plan(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, counting_chain("until-last", "ab", echo="x"))
    summary = run_inprocess(plan, until="b")
    assert summary.result == "completed" and summary.exit_code == 0
    assert summary.executed_steps == ["a", "b"]


def _value_steps(folder: Path, module: str) -> None:
    (folder / f"{module}.py").write_text(
        "def produce(ctx):\n"
        "    with open(ctx.path('produce.count'), 'a') as fh:\n"
        "        fh.write('x\\n')\n"
        "    return {'n': 41}\n"
        "\n"
        "def consume(ctx):\n"
        "    with open(ctx.path('consume.count'), 'a') as fh:\n"
        "        fh.write('x\\n')\n"
        "    value = ctx.upstream['produce']['n'] + 1\n"
        "    ctx.path('consumed.txt').write_text(str(value))\n"
        "    return value\n"
    )


def test_missing_persisted_result_stops_at_needs_review_then_rerun(
    prefect_server: str, tmp_path: Path
) -> None:
    _value_steps(tmp_path, "missing_mod")
    plan = write_plan(tmp_path, produce_consume("missing-result", "missing_mod"))
    first = run_inprocess(plan, max_steps=1)
    assert first.result == "stopped" and first.executed_steps == ["produce"]
    key = step_states(sqlite_url(tmp_path), "missing-result")["produce"].result_key
    result_file = tmp_path / ".waymark" / "results" / key
    assert result_file.exists()
    result_file.unlink()

    stopped = run_inprocess(plan)
    assert stopped.result == "needs_review" and stopped.exit_code == 4
    assert stopped.executed_steps == []
    assert runs_of(tmp_path / "consume.count") == 0
    assert stopped.needs_review[0]["step"] == "produce"
    assert "persisted result is missing" in stopped.needs_review[0]["reason"]
    assert stopped.next_start == "produce"

    proc = run_cli("rerun", str(plan), "produce", "--reason", "result file lost")
    assert proc.returncode == 0, proc.stderr
    done = run_inprocess(plan)
    assert done.result == "completed"
    assert done.executed_steps == ["produce", "consume"]
    assert runs_of(tmp_path / "produce.count") == 2
    assert (tmp_path / "consumed.txt").read_text() == "42"
    assert [
        e.data["reason"]
        for e in ledger_events(sqlite_url(tmp_path), "missing-result")
        if e.kind == "step_rerun_requested"
    ] == ["result file lost"]


def test_changed_definition_needs_review_until_rerun(prefect_server: str, tmp_path: Path) -> None:
    doc = counting_chain("changed-def", "abc", echo="x").to_dict()
    plan = write_plan(tmp_path, doc)
    first = run_inprocess(plan, max_steps=2)
    assert first.result == "stopped" and first.exit_code == 3
    assert first.executed_steps == ["a", "b"]

    doc["steps"][0]["run"] = "echo x >> a.count; echo changed"  # type: ignore[index]
    write_plan(tmp_path, doc)
    proc = run_cli("run", str(plan))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "needs review: a: definition changed since the step completed" in proc.stdout
    assert runs_of(tmp_path / "c.count") == 0  # the plan stops for a human; nothing else runs
    assert runs_of(tmp_path / "a.count") == 1
    review = ledger_events(sqlite_url(tmp_path), "changed-def", "step_needs_review")
    assert review[-1].step_id == "a"
    assert review[-1].data["details"]["recorded_hash"] != review[-1].data["details"]["current_hash"]

    again = run_inprocess(plan)  # still stopped: a review is answered only by a person
    assert again.result == "needs_review" and again.executed_steps == []

    proc = run_cli("rerun", str(plan), "a")  # a's dependent b goes stale with it (cascade)
    assert proc.returncode == 0, proc.stderr
    done = run_inprocess(plan)
    assert done.result == "completed"
    assert done.executed_steps == ["a", "b", "c"]
    assert done.skipped_count == 0
    assert [runs_of(tmp_path / f"{s}.count") for s in "abc"] == [2, 2, 1]
    assert step_states(sqlite_url(tmp_path), "changed-def")["a"].generation == 1


def test_skipped_steps_make_no_task_runs(prefect_server: str, tmp_path: Path) -> None:
    """A resumed run creates task runs only for the steps it executes."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    plan = _chain_plan(tmp_path, "no-task-runs", n=4, fail_at=0)
    first = run_inprocess(plan, max_steps=3)
    assert first.executed_steps == ["s1", "s2", "s3"]
    second = run_inprocess(plan)
    assert second.executed_steps == ["s4"] and second.skipped_count == 3
    assert second.flow_run_id is not None
    # Task runs reach the server as events; wait (bounded) until the executed step's shows up.
    names: list[str] = []
    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while "s4" not in names and time.monotonic() < deadline:
            time.sleep(0.5)
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[second.flow_run_id]))
            )
            names = sorted(r.name for r in runs)
    assert names == ["s4"]


def test_call_steps_of_two_workdirs_with_the_same_module_name(
    prefect_server: str, tmp_path: Path
) -> None:
    """One process, two plans, each with its own ``steps.py``: each plan calls its own."""
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "steps.py").write_text(
            "def which(ctx):\n"
            f"    ctx.path('which.txt').write_text({name!r})\n"
            f"    return {name!r}\n"
        )
        doc = {"plan_id": f"same-module-{name}", "steps": [{"id": "w", "call": "steps:which"}]}
        plan = write_plan(folder, doc)
        assert run_inprocess(plan).result == "completed"
        assert (folder / "which.txt").read_text() == name


def test_results_in_a_prefect_storage_block(prefect_server: str, tmp_path: Path) -> None:
    """Result storage given as a saved Prefect block: values and missing results go through it."""
    from prefect.filesystems import LocalFileSystem

    store = tmp_path / "block-store"
    LocalFileSystem(basepath=str(store)).save("waymark-test-results", overwrite=True)
    work = tmp_path / "work"
    work.mkdir()
    _value_steps(work, "block_mod")
    plan = write_plan(work, produce_consume("block-results", "block_mod"))
    slug = "local-file-system/waymark-test-results"
    first = run_inprocess(plan, max_steps=1, result_storage=slug)
    assert first.executed_steps == ["produce"]
    key = step_states(sqlite_url(work), "block-results")["produce"].result_key
    assert (store / key).exists()
    assert not (work / ".waymark" / "results" / key).exists()

    done = run_inprocess(plan, result_storage=slug)  # a new run reads produce's value
    assert done.executed_steps == ["consume"]
    assert (work / "consumed.txt").read_text() == "42"

    (store / key).unlink()
    stopped = run_inprocess(plan, result_storage=slug)
    assert stopped.result == "needs_review"
    assert "persisted result is missing" in stopped.needs_review[0]["reason"]


def test_started_from_is_the_first_step_the_run_really_started(
    prefect_server: str, tmp_path: Path
) -> None:
    """The previous marker said "next: two", but a rerun of one came first: this run started at
    one, and its summary (and marker) says so."""
    plan = write_plan(tmp_path, counting_chain("started-from", ["one", "two"]))
    first = run_inprocess(plan, max_steps=1)
    assert first.next_start == "two"
    assert run_cli("rerun", str(plan), "one").returncode == 0
    second = run_inprocess(plan)
    assert second.result == "completed"
    assert second.executed_steps == ["one", "two"]
    assert second.started_from == "one"
    nothing = run_inprocess(plan)  # nothing left to start: where it would have started
    assert nothing.executed_steps == [] and nothing.started_from is None
