"""``waymark import`` end to end, in real subprocesses: the plan file it writes validates and
``waymark status`` reads it; the done steps and one ``imported`` event are in a real SQLite
ledger; the once-rule; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from prefect_waymark import load_plan
from prefect_waymark.importers import prepare_import
from prefect_waymark.ledger import EventKind, default_ledger_url, open_ledger
from prefect_waymark.ledger.base import this_host
from tests._support.helpers import run_cli
from tests.importers.helpers import BEADS, KIRO, LEGACY, TAGGED, ledger_events, run_import


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if not ln.startswith("waymark: warning:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_taskmaster_import_writes_the_plan_and_the_progress(tmp_path: Path) -> None:
    res = run_import(str(TAGGED), "--from", "taskmaster", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    sha = prepare_import(TAGGED, "taskmaster", out=tmp_path / "plan.yaml").sha256
    assert res.stdout.splitlines() == [
        f"wrote plan.yaml: plan 'proj' with 12 steps (from taskmaster {TAGGED}, tag master)",
        f"recorded 3 steps as completed, and the import (sha256 {sha[:12]}…), in "
        f"sqlite:///{tmp_path.resolve()}/.waymark/ledger.db",
        "next: waymark status plan.yaml",
    ]
    assert all(ln.startswith("waymark: warning: ") for ln in res.stderr.splitlines())
    assert "task-7 depends on task-5, which is cancelled" in res.stderr

    plan = tmp_path / "plan.yaml"
    text = plan.read_text()
    assert text.startswith("# Imported by `waymark import --from taskmaster` from ")
    assert f"# source sha256: {sha}\n" in text
    assert (
        run_cli("validate", str(plan)).stdout.strip() == f"{plan}: valid plan 'proj' with 12 steps"
    )
    spec = load_plan(plan)
    assert {s.kind for s in spec.steps} == {"agent"}

    events = ledger_events(tmp_path, "proj")
    run_id = f"import-{sha[:12]}"
    assert [(e["kind"], e["step_id"]) for e in events] == [
        ("step_started", "task-1"),
        ("step_completed", "task-1"),
        ("step_started", "task-2"),
        ("step_completed", "task-2"),
        ("step_started", "task-3.1"),
        ("step_completed", "task-3.1"),
        ("imported", None),
    ]
    assert {e["run_id"] for e in events[:-1]} == {run_id}
    completed = events[1]["data"]
    assert completed["imported"] is True and completed["outputs"] == {}
    assert completed["def_hash"] == spec.step("task-1").definition_hash()
    assert events[-1]["data"] == {
        "source_format": "taskmaster",
        "source_path": str(TAGGED.resolve()),
        "source_sha256": sha,
        "completed": ["task-1", "task-2", "task-3.1"],
    }

    status = run_cli("status", str(plan), "--json")
    doc = yaml.safe_load(status.stdout)  # JSON is YAML
    assert doc["counts"] == {"completed": 3, "pending": 9}
    by_id = {s["id"]: s for s in doc["steps"]}
    assert by_id["task-1"]["status"] == "completed"
    assert not any(s["definition_changed"] for s in doc["steps"])


def test_same_source_again_is_a_no_op(tmp_path: Path) -> None:
    first = run_import(str(BEADS), "--from", "beads", "-o", "plan.yaml", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = ledger_events(tmp_path, "shop")
    again = run_import(str(BEADS), "--from", "beads", "-o", "plan.yaml", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "plan 'shop' already has this import" in again.stdout
    assert again.stdout.rstrip().endswith(": nothing to do")
    assert again.stderr == ""
    assert ledger_events(tmp_path, "shop") == before
    # The plan file was edited since: still nothing to do, and the file is left as it is.
    plan = tmp_path / "plan.yaml"
    edited = plan.read_text().replace("Write the runbook", "Write the on-call runbook")
    plan.write_text(edited)
    third = run_import(str(BEADS), "--from", "beads", "-o", "plan.yaml", cwd=tmp_path)
    assert third.returncode == 0 and "is left as it is" in third.stdout
    assert plan.read_text() == edited and ledger_events(tmp_path, "shop") == before


def test_another_source_into_an_imported_plan_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    tasks = src / "tasks.json"
    shutil.copy(LEGACY, tasks)
    first = run_import(str(tasks), "--from", "taskmaster", "--plan-id", "site", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    plan_before = (tmp_path / "plan.yaml").read_text()
    before = ledger_events(tmp_path, "site")
    tasks.write_text(tasks.read_text().replace('"status": "pending"', '"status": "done"', 1))
    res = run_import(str(tasks), "--from", "taskmaster", "--plan-id", "site", cwd=tmp_path)
    assert res.returncode == 2
    line = _one_error_line(res.stderr)
    assert line.startswith(f"waymark: plan 'site' was already imported from {tasks.resolve()}")
    assert "is another source: a plan is imported once" in line
    assert (tmp_path / "plan.yaml").read_text() == plan_before
    assert ledger_events(tmp_path, "site") == before


def test_output_that_is_not_this_imports_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "plan.yaml"
    theirs.write_text("plan_id: mine\nsteps: [{id: a, run: echo a}]\n")
    res = run_import(str(KIRO), "--from", "markdown", "-o", str(theirs), cwd=tmp_path)
    assert res.returncode == 2
    assert _one_error_line(res.stderr) == (
        f"waymark: -o {theirs}: the file exists and is not this import's (no import wrote it); "
        "nothing written: choose another -o, or remove the file"
    )
    assert theirs.read_text() == "plan_id: mine\nsteps: [{id: a, run: echo a}]\n"
    assert not (tmp_path / ".waymark").exists()
    # Another source's import output is not this import's either.
    other = tmp_path / "other.yaml"
    assert run_import(str(BEADS), "--from", "beads", "-o", str(other)).returncode == 0
    res = run_import(str(KIRO), "--from", "markdown", "-o", str(other), "--plan-id", "x")
    assert res.returncode == 2 and "an import of another source (sha256" in res.stderr


def test_this_imports_file_without_its_ledger_record_is_finished(tmp_path: Path) -> None:
    """An import that wrote its plan and stopped part way through the ledger is finished by
    running it again: a step it completed stays as it is, one it started is completed."""
    plan = tmp_path / "plan.yaml"
    prep = prepare_import(KIRO, "markdown", out=plan)
    plan.write_text(prep.text)
    run_id = f"import-{prep.sha256[:12]}"
    with open_ledger(default_ledger_url(tmp_path)) as led:
        for sid in ("task-1", "task-2.1"):
            led.record(
                "user-auth",
                EventKind.step_started,
                step_id=sid,
                branch="main",
                run_id=run_id,
                lease_seconds=60,
                def_hash=prep.spec.step(sid).definition_hash(),
                result_key=None,
                host="import",
                pid=0,
            )
            if sid == "task-1":  # task-2.1 was started when the import stopped
                led.record(
                    "user-auth",
                    EventKind.step_completed,
                    step_id=sid,
                    branch="main",
                    run_id=run_id,
                    def_hash=prep.spec.step(sid).definition_hash(),
                    outputs={},
                    attempts=0,
                    imported=True,
                )
    res = run_import(str(KIRO), "--from", "markdown", "-o", str(plan))
    assert res.returncode == 0, res.stderr
    assert "recorded 1 step as completed; 1 step completed already" in res.stdout
    events = ledger_events(tmp_path, "user-auth")
    assert [(e["kind"], e["step_id"]) for e in events] == [
        ("step_started", "task-1"),
        ("step_completed", "task-1"),
        ("step_started", "task-2.1"),
        ("step_completed", "task-2.1"),
        ("imported", None),
    ]
    assert events[-1]["data"]["completed"] == ["task-2.1"]
    with open_ledger(default_ledger_url(tmp_path), create=False) as led:
        assert led.holds("user-auth") == []


def test_a_live_run_holding_the_branch_refuses_the_import(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    prep = prepare_import(KIRO, "markdown", out=plan)
    with open_ledger(default_ledger_url(tmp_path)) as led:
        led.record(
            "user-auth",
            EventKind.step_started,
            step_id="task-3",
            branch="main",
            run_id="run-live",
            lease_seconds=600,
            def_hash=prep.spec.step("task-3").definition_hash(),
            result_key="k",
            host=this_host(),
            pid=os.getpid(),
        )
    res = run_import(str(KIRO), "--from", "markdown", "-o", str(plan))
    assert res.returncode == 2
    assert _one_error_line(res.stderr) == (
        "waymark: plan 'user-auth': run run-live holds branch 'main' (step task-3); nothing "
        "written: import when the run has finished"
    )
    assert not plan.exists()
    assert [e["kind"] for e in ledger_events(tmp_path, "user-auth")] == ["step_started"]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.json"
    bad.write_text('{"tasks": [{"id": 1}, {"id": 2, "dependencies": [1, [3]]}]}')
    res = run_import(str(bad), "--from", "taskmaster", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 2
    assert _one_error_line(res.stderr) == (
        f"waymark: {bad}: tasks[1].dependencies[1]: expected a task id (a number, or a string "
        'such as "115.1"), got [3]'
    )
    assert res.stdout == ""
    assert not (tmp_path / "plan.yaml").exists() and not (tmp_path / ".waymark").exists()


def test_bad_arguments(tmp_path: Path) -> None:
    cases = {
        ("--from", "jira"): "waymark: --from 'jira': expected one of taskmaster, beads, markdown",
        ("--from", "beads", "--tag", "x"): "waymark: --tag goes with --from taskmaster",
        ("--from", "beads", "--plan-id", "a b"): "waymark: --plan-id 'a b': expected letters",
        ("--from", "beads", "--kind", "robot"): "waymark: --kind 'robot': expected agent or",
        ("--from", "beads", "-o", "plan.json"): "waymark: -o plan.json: expected a .yaml or",
        ("--from", "beads", "-o", "."): "waymark: -o .: expected a .yaml or .yml file",
    }
    for args, start in cases.items():
        res = run_import(str(BEADS), *args, cwd=tmp_path)
        assert res.returncode == 2, (args, res.stderr)
        assert _one_error_line(res.stderr).startswith(start), (args, res.stderr)
    missing = run_import(str(tmp_path / "nope.jsonl"), "--from", "beads", cwd=tmp_path)
    assert missing.returncode == 2
    assert _one_error_line(missing.stderr) == f"waymark: {tmp_path / 'nope.jsonl'}: file not found"
    assert list(tmp_path.iterdir()) == []


def test_ledger_and_workdir_options_and_manual_kind(tmp_path: Path) -> None:
    wd = tmp_path / "work"
    wd.mkdir()
    url = f"sqlite:///{tmp_path}/elsewhere/ledger.db"
    res = run_import(
        str(KIRO),
        "--from",
        "markdown",
        "-o",
        str(tmp_path / "plans" / "auth.yaml"),
        "--kind",
        "manual",
        "--workdir",
        str(wd),
        "--ledger",
        url,
        "--plan-id",
        "auth",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1] == (
        f"next: waymark status {tmp_path / 'plans' / 'auth.yaml'} --workdir {wd} --ledger {url}"
    )
    spec = load_plan(tmp_path / "plans" / "auth.yaml")
    assert {s.kind for s in spec.steps} == {"manual"}
    assert not (wd / ".waymark").exists() and not (tmp_path / "plans" / ".waymark").exists()
    with open_ledger(url, create=False) as led:
        (imported,) = led.events("auth", kinds=[EventKind.imported])
    assert imported.data["completed"] == ["task-1", "task-2.1"]
    status = run_cli("status", str(tmp_path / "plans" / "auth.yaml"), "--ledger", url, "--json")
    assert yaml.safe_load(status.stdout)["counts"] == {"completed": 2, "pending": 4}


def test_the_workdir_defaults_to_the_plan_files_folder(tmp_path: Path) -> None:
    res = run_import(str(BEADS), "--from", "beads", "-o", str(tmp_path / "p" / "plan.yml"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "p" / ".waymark" / "ledger.db").is_file()
    kinds = [e["kind"] for e in ledger_events(tmp_path / "p", "shop")]
    assert kinds.count("step_completed") == 2 and kinds[-1] == "imported"
