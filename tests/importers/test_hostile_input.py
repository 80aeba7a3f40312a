"""Input that breaks Python's parsers is bad input like any other: a tasks.json or issues.jsonl
nested 100,000 levels deep (``RecursionError`` in ``json``) or holding a number of more than
4,300 digits (``ValueError`` from the int conversion limit), or a Task Master id that long, is
one line and exit 2 with nothing written, never a traceback (real subprocess runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefect_waymark.importers import prepare_import
from tests.importers.helpers import run_import

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5_000
TM_SHAPE = 'expected Task Master\'s tasks.json: {"master": {"tasks": [...]}} or {"tasks": [...]}'
BD_SHAPE = "expected one issue object per line, as `bd export` writes"
TOO_DEEP = "lists or objects nested too deeply to read (hundreds of levels inside each other)"
TOO_LONG = "a number with too many digits to read (Python's limit: 4,300 by default)"


def _refused(tmp_path: Path, name: str, text: str, fmt: str) -> str:
    src = tmp_path / "src" / name
    src.parent.mkdir(exist_ok=True)
    src.write_text(text)
    res = run_import(str(src), "--from", fmt, "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr[-2000:]
    assert res.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]  # no plan file, no ledger
    prefix = f"waymark: {src}"
    assert lines[0].startswith(prefix)
    return lines[0][len(prefix) :]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"tasks": ' + DEEP + "}", f": {TOO_DEEP}; {TM_SHAPE}"),
        (
            '{"master": {"tasks": [{"id": 1, "details": ' + DEEP + "}]}}",
            f": {TOO_DEEP}; {TM_SHAPE}",
        ),
        ('{"tasks": [{"id": ' + HUGE + "}]}", f": {TOO_LONG}; {TM_SHAPE}"),
        ('{"tasks": [{"id": 1, "priority": -' + HUGE + "}]}", f": {TOO_LONG}; {TM_SHAPE}"),
    ],
    ids=["deep", "deep-in-an-ignored-field", "huge-id", "huge-unknown-field"],
)
def test_taskmaster_json_python_cannot_parse(tmp_path: Path, text: str, message: str) -> None:
    assert _refused(tmp_path, "tasks.json", text, "taskmaster") == message


def test_taskmaster_id_of_thousands_of_digits(tmp_path: Path) -> None:
    text = json.dumps({"tasks": [{"id": 1}, {"id": HUGE, "dependencies": [1]}]})
    got = _refused(tmp_path, "tasks.json", text, "taskmaster")
    assert got.startswith(
        ": tasks[1].id: the step id it makes is longer than 100 characters; expected a shorter "
        "id, got '99999"
    ), got
    assert len(got) < 300


def test_taskmaster_dependency_of_thousands_of_digits_is_dropped(tmp_path: Path) -> None:
    src = tmp_path / "tasks.json"
    src.write_text(json.dumps({"tasks": [{"id": 1, "dependencies": [HUGE, "1." + HUGE]}]}))
    res = run_import(str(src), "--from", "taskmaster", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert res.stderr.count(", which is not in the source: dropped") == 2
    assert f"depends on task-{HUGE[:95]}… (5,005 characters), which" in res.stderr
    assert all(len(line) < 400 for line in res.stderr.splitlines())


def test_taskmaster_ids_compare_without_leading_zeros(tmp_path: Path) -> None:
    """Ids are compared as Task Master does ("007" is 7, "3.01" is 3.1), with the zeros
    stripped rather than converted by int()."""
    src = tmp_path / "tasks.json"
    tasks = [
        {"id": "007", "status": "done"},
        {"id": "000"},
        {
            "id": 8,
            "dependencies": ["07", 0],
            "subtasks": [{"id": "01"}, {"id": 2, "dependencies": ["8.001"]}],
        },
    ]
    src.write_text(json.dumps({"tasks": tasks}))
    prep = prepare_import(src, "taskmaster", out=tmp_path / "plan.yaml")
    deps = {s["id"]: s.get("depends_on", []) for s in prep.built.data["steps"]}
    assert deps == {
        "task-7": [],
        "task-0": [],
        "task-8.1": ["task-7", "task-0"],
        "task-8.2": ["task-8.1"],
        "task-8": ["task-7", "task-0", "task-8.1", "task-8.2"],
    }
    assert prep.built.done == ["task-7"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a", "notes": ' + DEEP + "}", f":2: {TOO_DEEP}; {BD_SHAPE}"),
        (DEEP, f":2: {TOO_DEEP}; {BD_SHAPE}"),
        ('{"id": "a", "priority": ' + HUGE + "}", f":2: {TOO_LONG}; {BD_SHAPE}"),
        ('{"id": "a", "x": [1, 2, -' + HUGE + "]}", f":2: {TOO_LONG}; {BD_SHAPE}"),
    ],
    ids=["deep", "deep-alone", "huge-priority", "huge-unknown-field"],
)
def test_beads_line_python_cannot_parse(tmp_path: Path, line: str, message: str) -> None:
    text = '{"id": "ok-1", "title": "fine", "status": "closed"}\n' + line + "\n"
    assert _refused(tmp_path, "issues.jsonl", text, "beads") == message


def test_a_deeply_nested_markdown_checklist_is_read_without_recursion(tmp_path: Path) -> None:
    """Markdown is read line by line: 1,500 items each nested under the one before import."""
    src = tmp_path / "TODO.md"
    src.write_text("".join(f"{' ' * i}- [x] item {i}\n" for i in range(1500)))
    res = run_import(str(src), "--from", "markdown", "-o", "plan.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("wrote plan.yaml: plan ")
    assert "with 1500 steps" in res.stdout and "recorded 1500 steps as completed" in res.stdout
