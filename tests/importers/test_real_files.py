"""Real trackers' files (``samples/real/``, see its NOTICE.md): each imports, with a quirk its
own tracker accepts resolved the way the tracker reads it, and every change listed in the
command's report and at the top of the plan file. Real CLI runs, real files, a real ledger."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.importers.helpers import SAMPLES, ledger_events, run_import

REAL = SAMPLES / "real"
BEADS_CYCLE = REAL / "steveyegge-beads" / ".beads" / "issues.jsonl"
BLOCKS_CYCLE = REAL / "blocks-cycle" / ".beads" / "beads.jsonl"
TASK_MASTER = REAL / "claude-task-master" / ".taskmaster" / "tasks" / "tasks.json"


def _steps(plan: Path) -> dict[str, dict[str, object]]:
    return {s["id"]: s for s in yaml.safe_load(plan.read_text(encoding="utf-8"))["steps"]}


def _changes_in_header(plan: Path) -> list[str]:
    return [
        ln.removeprefix("# - ")
        for ln in plan.read_text(encoding="utf-8").splitlines()
        if ln.startswith("# - ")
    ]


def test_beads_epic_read_with_blocks_makes_no_refusal(tmp_path: Path) -> None:
    """beads' own database: epic bd-222's child bd-240 waits (blocks) for bd-224, which waits
    for bd-222. beads does not hold an epic for its children, so the epic does not wait for the
    children that wait for it; everything else is as beads has it."""
    out = tmp_path / "plan.yaml"
    r = run_import(str(BEADS_CYCLE), "--from", "beads", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    report = r.stdout.splitlines()
    assert report[1] == (
        f"changed 11 things to read the source as a plan (listed at the top of {out}):"
    )
    assert report[2] == (
        f"  - {BEADS_CYCLE}:9: bd-222 does not wait for its child bd-240, which waits for it "
        "(bd-240 -> bd-224 -> bd-222): beads does not hold an epic for its children (only "
        "`blocks` holds an issue)"
    )
    steps = _steps(out)
    assert steps["bd-236"].get("milestone") == "bd-224"
    assert steps["bd-240"]["depends_on"] == ["bd-224"]
    assert "depends_on" not in steps["bd-222"]  # every child waits for it, one way or another
    assert steps["bd-235"]["milestone"] == "bd-224"  # still its epic's
    # its blocks link and the children that wait for nothing of its (not 234, 237-239)
    assert steps["bd-224"]["depends_on"] == ["bd-222", "bd-235", "bd-236"]
    # the plan file lists the same changes, the line named (the header names the file)
    header = _changes_in_header(out)
    assert len(header) == 11
    assert header[0].startswith("line 9: bd-222 does not wait for its child bd-240, which")
    # every closed issue is recorded
    done = {e["step_id"] for e in ledger_events(tmp_path, "steveyegge-beads")} - {None}
    assert done == set(steps)


def test_task_master_repeated_subtask_ids_get_stable_new_ones(tmp_path: Path) -> None:
    """Task Master's own tasks.json: task 42's eight subtasks all carry the id 42. The first keeps
    task-42.42 (Task Master's lookups find the first), the others get -2 ... -8; subtasks 12.1 and
    12.4 wait for each other, both done: 12.1's wait is left out (a done task holds nothing back).
    Importing the same file elsewhere gives the same ids and the same report."""
    reports = []
    for run in ("a", "b"):
        folder = tmp_path / run
        out = folder / "plan.yaml"
        r = run_import(str(TASK_MASTER), "--from", "taskmaster", "-o", str(out))
        assert r.returncode == 0, r.stderr
        steps = _steps(out)
        assert [s for s in steps if s.startswith("task-42.")] == [
            "task-42.42",
            *(f"task-42.42-{n}" for n in range(2, 9)),
        ]
        assert set(steps["task-42"]["depends_on"]) == {
            "task-42.42",
            *(f"task-42.42-{n}" for n in range(2, 9)),
        }
        assert steps["task-42.42-2"]["title"] == "Implement adapter pattern for MCP integration"
        assert "depends_on" not in steps["task-12.1"]
        assert steps["task-12.4"]["depends_on"] == ["task-12.1"]
        reports.append(r.stdout.replace(str(out), "PLAN").splitlines()[1:10])
        header = _changes_in_header(out)
        assert header[0] == (
            "master.tasks[1].subtasks[1].id: 42 repeats the id of master.tasks[1].subtasks[0]: "
            "this one is step task-42.42-2 (a dependency on task-42.42 names "
            "master.tasks[1].subtasks[0], as Task Master finds it)"
        )
        assert header[-1] == (
            "master.tasks[0].subtasks[0].dependencies[0]: task-12.1 does not wait for task-12.4 "
            "(done), which waits for it (task-12.4 -> task-12.1): a done task holds nothing back"
        )
    assert reports[0] == reports[1]
    assert (
        reports[0][0]
        == "changed 8 things to read the source as a plan (listed at the top of PLAN):"
    )


def test_a_cycle_of_blocks_alone_is_refused_as_beads_never_readies_it(tmp_path: Path) -> None:
    """beads' own file: an open epic and four open tasks that block each other. beads never lists
    them as ready; the import is refused, naming the line, nothing written."""
    out = tmp_path / "plan.yaml"
    r = run_import(str(BLOCKS_CYCLE), "--from", "beads", "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"waymark: {BLOCKS_CYCLE}:3: dependencies[0]: dependency cycle: bd-ge7 -> bd-4h3 -> "
        "bd-ge7; expected tasks that do not wait for themselves (`bd dep cycles` lists them; "
        "beads never makes these issues ready)"
    )
    assert not out.exists() and not (tmp_path / ".waymark").exists()
