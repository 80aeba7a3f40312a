"""``waymark import`` never writes over someone else's work, in real subprocesses with real
SQLite ledgers: not into another plan that has the same id (its events, no import), not over a
plan file edited since the import (even when the ledger is not found), and a plan file that was
deleted is written again without recording the progress twice."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from prefect_waymark.importers import import_run_id, prepare_import
from prefect_waymark.ledger import EventKind, default_ledger_url, open_ledger
from tests._support.helpers import run_cli, write_plan
from tests.importers.helpers import BEADS, KIRO, ledger_events, run_import

CHECKLIST = "- [x] task a\n- [ ] task b\n"


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if not ln.startswith("waymark: warning:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def _statuses(plan: Path) -> dict[str, str]:
    res = run_cli("status", str(plan), "--json")
    assert res.returncode in (0, 1), res.stderr  # 1: a step failed
    return {s["id"]: s["status"] for s in yaml.safe_load(res.stdout)["steps"]}


def _hand_written_plan_run(folder: Path) -> Path:
    """A hand-written plan ``own2`` run for real: task-b completed, task-a failed."""
    plan = write_plan(
        folder,
        {
            "plan_id": "own2",
            "steps": [
                {"id": "task-b", "run": "echo b"},
                {"id": "task-a", "run": "exit 3", "depends_on": ["task-b"]},
            ],
        },
    )
    run = run_cli("run", str(plan), cwd=folder)
    assert run.returncode != 0, run.stdout
    assert _statuses(plan) == {"task-b": "completed", "task-a": "failed"}
    return plan


def test_an_import_does_not_complete_the_steps_of_another_plan_with_its_id(
    prefect_server: str, tmp_path: Path
) -> None:
    folder = tmp_path / "own2"  # the checklist's default plan id is its folder's name
    plan = _hand_written_plan_run(folder)
    (folder / "TODO.md").write_text(CHECKLIST)
    before = ledger_events(folder, "own2")
    assert {e["run_id"] for e in before} and all(
        not str(e["run_id"]).startswith("import-") for e in before
    )
    for extra in ([], ["--plan-id", "own2"]):
        res = run_import("TODO.md", "--from", "markdown", "-o", "imported.yaml", *extra, cwd=folder)
        assert res.returncode == 2, (extra, res.stdout, res.stderr)
        line = _one_error_line(res.stderr)
        assert line.startswith(
            f"waymark: plan id 'own2' is taken: the ledger has {len(before)} events of another "
            "plan 'own2' (the first: run_started, run "
        ), line
        assert line.endswith(
            "and no import of it. Nothing written; import under a new plan id: --plan-id NEW_ID"
        ), line
        assert res.stdout == ""
        assert not (folder / "imported.yaml").exists()
        assert ledger_events(folder, "own2") == before
    assert _statuses(plan) == {"task-b": "completed", "task-a": "failed"}

    # Under a new id the import goes ahead, and the hand-written plan is as it was.
    res = run_import(
        "TODO.md", "--from", "markdown", "-o", "imported.yaml", "--plan-id", "own3", cwd=folder
    )
    assert res.returncode == 0, res.stderr
    assert _statuses(folder / "imported.yaml") == {"task-a": "completed", "task-b": "pending"}
    assert ledger_events(folder, "own2") == before
    assert _statuses(plan) == {"task-b": "completed", "task-a": "failed"}


def test_an_unfinished_import_of_another_source_is_not_taken_over(tmp_path: Path) -> None:
    """A plan whose only events are another source's unfinished import (no `imported` event)
    is not this import's either: its steps were completed from that other file."""
    first = tmp_path / "a" / "TODO.md"
    first.parent.mkdir()
    first.write_text(CHECKLIST)
    prep = prepare_import(first, "markdown", out=tmp_path / "a.yaml", plan_id="p")
    step = prep.spec.step("task-a")
    with open_ledger(default_ledger_url(tmp_path)) as led:  # it stopped before its last event
        led.record(
            "p",
            EventKind.step_started,
            step_id="task-a",
            branch=step.branch,
            run_id=import_run_id(prep.sha256),
            lease_seconds=60,
            def_hash=step.definition_hash(),
            result_key=None,
            host="import",
            pid=0,
        )
        led.record(
            "p",
            EventKind.step_completed,
            step_id="task-a",
            branch=step.branch,
            run_id=import_run_id(prep.sha256),
            def_hash=step.definition_hash(),
            outputs={},
            attempts=0,
            imported=True,
        )
    before = ledger_events(tmp_path, "p")
    assert [e["kind"] for e in before] == ["step_started", "step_completed"]
    other = tmp_path / "TODO.md"
    other.write_text("- [x] task b\n- [ ] task a\n")
    res = run_import(
        str(other), "--from", "markdown", "-o", "b.yaml", "--plan-id", "p", cwd=tmp_path
    )
    assert res.returncode == 2
    assert _one_error_line(res.stderr).startswith(
        "waymark: plan id 'p' is taken: the ledger has 2 events of another plan 'p' (the first: "
        f"step_started task-a, run import-{prep.sha256[:12]}, "
    )
    assert not (tmp_path / "b.yaml").exists()
    assert ledger_events(tmp_path, "p") == before


def test_an_edited_plan_file_is_not_overwritten_when_the_ledger_is_not_found(
    tmp_path: Path,
) -> None:
    res = run_import(str(KIRO), "--from", "markdown", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    plan = tmp_path / "plan.yaml"
    edited = plan.read_text().replace("title: ", "title: (mine) ", 1)
    assert edited != plan.read_text()
    plan.write_text(edited)
    expected = (
        "waymark: -o plan.yaml: the file was edited since the import wrote it (or the import's "
        "options differ); nothing written or recorded: keep your edits and choose another -o"
    )
    other = tmp_path / "other.db"
    res = run_import(
        str(KIRO),
        "--from",
        "markdown",
        "-o",
        "plan.yaml",
        cwd=tmp_path,
        env={"WAYMARK_LEDGER_URL": f"sqlite:///{other}"},
    )
    assert res.returncode == 2
    assert _one_error_line(res.stderr) == expected
    assert res.stdout == ""
    assert plan.read_text() == edited and not other.exists()

    shutil.rmtree(tmp_path / ".waymark")
    res = run_import(str(KIRO), "--from", "markdown", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 2
    assert _one_error_line(res.stderr) == expected
    assert plan.read_text() == edited and not (tmp_path / ".waymark").exists()

    # Written by this import with other options: not what it writes now either.
    side = tmp_path / "side"
    side.mkdir()
    res = run_import(str(KIRO), "--from", "markdown", "-o", "m.yaml", "--kind", "manual", cwd=side)
    assert res.returncode == 0, res.stderr
    manual = (side / "m.yaml").read_text()
    (tmp_path / "m.yaml").write_text(manual)
    res = run_import(str(KIRO), "--from", "markdown", "-o", "m.yaml", cwd=tmp_path)
    assert res.returncode == 2
    assert _one_error_line(res.stderr) == expected.replace("plan.yaml", "m.yaml")
    assert (tmp_path / "m.yaml").read_text() == manual
    assert not (tmp_path / ".waymark").exists()


def test_the_unedited_plan_file_is_written_again_when_the_ledger_is_not_found(
    tmp_path: Path,
) -> None:
    """The file holds exactly what the import writes: the import goes on into the ledger it
    finds now (an import that stopped before its ledger record is finished this way)."""
    assert run_import(str(KIRO), "--from", "markdown", cwd=tmp_path).returncode == 0
    plan = tmp_path / "plan.yaml"
    text = plan.read_text()
    shutil.rmtree(tmp_path / ".waymark")
    res = run_import(str(KIRO), "--from", "markdown", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert plan.read_text() == text
    assert [e["kind"] for e in ledger_events(tmp_path, "user-auth")][-1] == "imported"


def test_a_deleted_plan_file_is_written_again_and_nothing_is_recorded_twice(
    tmp_path: Path,
) -> None:
    res = run_import(str(BEADS), "--from", "beads", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    plan = tmp_path / "plan.yaml"
    text = plan.read_text()
    before = ledger_events(tmp_path, "shop")
    plan.unlink()

    res = run_import(str(BEADS), "--from", "beads", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert plan.read_text() == text
    assert ledger_events(tmp_path, "shop") == before
    sha = prepare_import(BEADS, "beads", out=plan).sha256
    lines = res.stdout.splitlines()
    assert lines[0].startswith(
        f"wrote plan.yaml: plan 'shop' with 8 steps (from beads {BEADS}, 9 issues)"
    )
    assert lines[1].startswith(
        f"the ledger has this import's progress already ({BEADS.resolve()}, sha256 {sha[:12]}…, "
        "recorded "
    )
    assert lines[1].endswith(" UTC): nothing recorded again")
    assert lines[2] == "next: waymark status plan.yaml"
    assert _statuses(plan)["shop-2"] == "completed"

    again = run_import(str(BEADS), "--from", "beads", "-o", "plan.yaml", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.rstrip().endswith(": nothing to do")
    assert ledger_events(tmp_path, "shop") == before


def test_a_deleted_plan_file_is_not_written_again_with_other_options(tmp_path: Path) -> None:
    assert run_import(str(BEADS), "--from", "beads", cwd=tmp_path).returncode == 0
    plan = tmp_path / "plan.yaml"
    before = ledger_events(tmp_path, "shop")
    plan.unlink()
    res = run_import(str(BEADS), "--from", "beads", "--kind", "manual", cwd=tmp_path)
    assert res.returncode == 2
    line = _one_error_line(res.stderr)
    assert line.startswith(
        "waymark: -o plan.yaml: plan 'shop' was imported from this source with other options (step "
    ), line
    assert line.endswith(
        "is not defined as it was then: another --kind or --tag?); nothing written: run the "
        "import as it was first run to write its plan file again"
    ), line
    assert not plan.exists() and ledger_events(tmp_path, "shop") == before
