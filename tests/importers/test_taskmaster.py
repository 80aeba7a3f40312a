"""Task Master's tasks.json read into a plan: the tagged and the legacy format, numeric and
string ids, subtasks with sibling and dotted dependencies, every status, dangling and cyclic
dependencies, and bad shapes refused with the field path of what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.errors import PlanError
from prefect_waymark.importers import PreparedImport, first_problem, prepare_import
from tests.importers.helpers import LEGACY, SAMPLES, TAGGED


def _prep(src: Path, tmp: Path, **kw: Any) -> PreparedImport:
    return prepare_import(src, "taskmaster", out=tmp / "plan.yaml", **kw)


def _steps(prep: PreparedImport) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in prep.built.data["steps"]}


def _refused(src: Path, tmp: Path, **kw: Any) -> str:
    with pytest.raises(PlanError) as info:
        _prep(src, tmp, **kw)
    line = first_problem(info.value)
    assert "\n" not in line
    return line


def _write(tmp: Path, doc: Any, name: str = "tasks.json") -> Path:
    p = tmp / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return p


def test_tagged_master_ids_subtasks_and_dependencies(tmp_path: Path) -> None:
    prep = _prep(TAGGED, tmp_path)
    steps = _steps(prep)
    assert prep.spec.plan_id == "proj"  # the folder holding .taskmaster
    assert prep.built.data["title"] == "Tasks for master context"
    assert list(steps) == [
        "task-1",
        "task-2",
        "task-3.1",
        "task-3.2",
        "task-3.3",
        "task-3",
        "task-4",
        "task-6",
        "task-7",
        "task-115.1",
        "task-115.2",
        "task-115",
    ]
    # A parent waits for its subtasks; they share its milestone.
    assert steps["task-3"]["depends_on"] == ["task-2", "task-3.1", "task-3.2", "task-3.3"]
    assert {steps[s]["milestone"] for s in ("task-3", "task-3.1", "task-3.2")} == {"task-3"}
    assert "milestone" not in steps["task-1"]
    # A subtask's bare number is its sibling; the first subtask waits for the parent's needs.
    assert steps["task-3.2"]["depends_on"] == ["task-3.1"]
    assert steps["task-3.3"]["depends_on"] == ["task-3.1", "task-3.2"]
    assert steps["task-3.1"]["depends_on"] == ["task-2"]
    assert steps["task-115.1"]["depends_on"] == ["task-4"]
    # A dotted dependency names a subtask.
    assert steps["task-4"]["depends_on"] == ["task-3.1", "task-2"]
    # details and testStrategy: instructions and acceptance.
    assert steps["task-2"]["instructions"] == (
        "Define the tables for accounts, invoices and payments.\n\n"
        "Write the SQLAlchemy models and the first Alembic migration."
    )
    assert steps["task-2"]["acceptance"] == [
        "The migration applies and rolls back on an empty PostgreSQL database."
    ]
    assert "acceptance" not in steps["task-3.2"]
    assert all(s["kind"] == "agent" for s in steps.values())
    assert prep.built.done == ["task-1", "task-2", "task-3.1"]


def test_statuses_cancelled_left_out_deferred_kept(tmp_path: Path) -> None:
    prep = _prep(TAGGED, tmp_path)
    steps = _steps(prep)
    assert "task-5" not in steps  # cancelled
    assert "task-6" in steps and "task-6" not in prep.built.done  # deferred: pending
    assert steps["task-7"]["depends_on"] == ["task-6"]  # its dependency on task-5 dropped
    text = "\n".join(prep.warnings)
    assert "master.tasks[6].dependencies[0]: task-7 depends on task-5, which is cancelled" in text
    assert "deferred tasks (1: task-6): imported as pending steps" in text
    assert "cancelled tasks (1: task-5): left out of the plan" in text
    assert "tasks in progress or in review (2: task-3, task-3.2)" in text
    # in-progress / review / blocked are pending: only done counts
    assert not {"task-3", "task-3.2", "task-7"} & set(prep.built.done)


def test_another_tag(tmp_path: Path) -> None:
    prep = _prep(TAGGED, tmp_path, tag="feature-auth")
    assert prep.spec.plan_id == "proj-feature-auth"
    assert prep.built.data["title"] == "Authentication feature branch"
    assert [s.id for s in prep.spec.steps] == ["task-1", "task-2"]
    assert prep.built.done == ["task-1"]
    assert prep.doc.detail == "tag feature-auth"


def test_unknown_tag_names_the_tags(tmp_path: Path) -> None:
    line = _refused(TAGGED, tmp_path, tag="nope")
    assert line.startswith(f"{TAGGED}: unknown tag 'nope'")
    assert "master, feature-auth" in line and "--tag" in line


def test_legacy_format(tmp_path: Path) -> None:
    prep = _prep(LEGACY, tmp_path)
    steps = _steps(prep)
    assert prep.built.data["title"] == "Recipe site"  # meta.projectName
    assert list(steps) == ["task-1.1", "task-1.2", "task-1", "task-2", "task-3"]
    assert steps["task-1.2"]["depends_on"] == ["task-1.1"]  # "1.2" written in full, "1.1" dotted
    assert steps["task-2"]["depends_on"] == ["task-1"]  # string id "1"
    assert steps["task-3"]["depends_on"] == ["task-2"]
    assert prep.built.done == ["task-1.1", "task-1.2", "task-1"]  # "completed" counts too
    text = "\n".join(prep.warnings)
    assert "tasks[2].dependencies[1]: task-3 depends on task-9, which is not in the source" in text
    assert (
        "tasks[2].dependencies[2]: task-3 depends on task-2.4, which is not in the source" in text
    )
    assert _refused(LEGACY, tmp_path, tag="x").endswith(
        "--tag x: the file is in the legacy format (one task list, no tags); leave --tag out"
    )


def test_edge_cases_warn_and_never_crash(tmp_path: Path) -> None:
    prep = _prep(SAMPLES / "taskmaster" / "edge_tasks.json", tmp_path)
    steps = _steps(prep)
    text = "\n".join(prep.warnings)
    assert "master.tasks[0].dependencies[0]: task-10 depends on itself: dropped" in text
    assert (
        "master.tasks[0].subtasks[0].dependencies[0]: task-10.1 depends on task-10, which "
        "contains it" in text
    )
    assert "subtasks[1].dependencies[0]: task-10 has no subtask 11; taken as task-11" in text
    assert "subtasks[2].dependencies[0]: task-10.3 depends on task-10.7, which is not in" in text
    assert "tasks with the unknown status 'waiting-for-vendor' (1: task-13)" in text
    assert "task-11 is done but waits for task-12 (pending)" in text
    assert steps["task-10.2"]["depends_on"] == ["task-11"]
    assert steps["task-10"]["depends_on"] == ["task-11", "task-10.1", "task-10.2", "task-10.3"]
    assert "task-13" in steps and "task-13" not in prep.built.done
    assert prep.built.done == ["task-11", "task-10.1"]


def test_a_cycle_is_refused_where_it_is_written(tmp_path: Path) -> None:
    line = _refused(SAMPLES / "taskmaster" / "cycle_tasks.json", tmp_path)
    assert (
        "tasks[0].dependencies[0]: dependency cycle: task-1 -> task-3 -> task-2 -> task-1" in line
    )
    assert "task-master fix-dependencies" in line


def test_bad_dependency_names_its_field_path(tmp_path: Path) -> None:
    src = SAMPLES / "taskmaster" / "bad_dependency.json"
    assert _refused(src, tmp_path) == (
        f"{src}: tasks[3].dependencies[1]: expected a task id (a number, or a string such as "
        "\"115.1\"), got {'id': 3}"
    )


def _task(i: int, **kw: Any) -> dict[str, Any]:
    return {"id": i, "title": f"T{i}", "status": "pending", "dependencies": [], **kw}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("[1, 2]", ': expected Task Master\'s tasks.json: {"master": {"tasks": [...]}} or'),
        ('{"tasks": {"1": {}}}', ": tasks: expected a list of tasks, got {'1': {}}"),
        ('{"tasks": [{"id": 1}, 7]}', ": tasks[1]: expected an object (a task), got 7"),
        ('{"tasks": [{"title": "x"}]}', ": tasks[0].id: required field is missing; expected"),
        ('{"tasks": [{"id": true}]}', ": tasks[0].id: expected a task id: a number, or a string"),
        ('{"tasks": [{"id": 1.5}]}', ": tasks[0].id: expected a task id"),
        ('{"tasks": [{"id": "a b"}]}', ": tasks[0].id: expected a task id: a number, or a str"),
        ('{"tasks": [{"id": 1, "title": 5}]}', ": tasks[0].title: expected a string, got 5"),
        ('{"tasks": [{"id": 1, "dependencies": 2}]}', ": tasks[0].dependencies: expected a list"),
        ('{"tasks": [{"id": 1, "subtasks": [3]}]}', ": tasks[0].subtasks[0]: expected an object"),
        ('{"tasks": []}', ": nothing to import: no tasks"),
        ('{"master": {"tasks": [{"id": 1, "status": "cancelled"}]}}', ": nothing to import"),
        ('{"master": []}', ': master: expected an object with a "tasks" list, got []'),
        ('{"projects": 1}', ": expected Task Master's tasks.json"),
        ('{"tasks": [\n  {"id": 1,}\n]}', ":2: not JSON: Expecting property name"),
    ],
)
def test_bad_shapes_are_one_line_with_the_field_path(
    tmp_path: Path, doc: str, expected: str
) -> None:
    src = _write(tmp_path, doc)
    line = _refused(src, tmp_path)
    assert line.startswith(str(src)), line
    assert expected in line, line


def test_many_problems_are_counted_in_the_one_line(tmp_path: Path) -> None:
    src = _write(tmp_path, {"tasks": [{"id": True}, {"id": 2, "title": 3}, {"id": None}]})
    line = _refused(src, tmp_path)
    assert line.startswith(f"{src}: tasks[0].id: expected a task id") and "(and 2 more" in line


def test_parents_dependencies_are_inherited_without_making_a_cycle(tmp_path: Path) -> None:
    """Task 3 waits for subtask 5.2 and task 5 waits for task 3: 5.2 cannot also wait for 3
    (a cycle the source does not have); it is told, not refused."""
    doc = {
        "tasks": [
            _task(3, dependencies=["5.2"]),
            _task(5, dependencies=[3], subtasks=[_task(1), _task(2)]),
        ]
    }
    prep = _prep(_write(tmp_path, doc), tmp_path)
    steps = _steps(prep)
    assert steps["task-5.1"]["depends_on"] == ["task-3"]
    assert "depends_on" not in steps["task-5.2"]
    assert any(
        "task-5.2 would wait for task-3 as its parent task-5 does" in w for w in prep.warnings
    )
    prep.spec.topological_order()  # acyclic


def test_subtasks_of_a_cancelled_task_are_left_out(tmp_path: Path) -> None:
    doc = {
        "tasks": [
            _task(1, status="cancelled", subtasks=[_task(1, status="done")]),
            _task(2, dependencies=["1.1"]),
        ]
    }
    prep = _prep(_write(tmp_path, doc), tmp_path)
    assert [s.id for s in prep.spec.steps] == ["task-2"]
    assert prep.built.done == []
    assert any(
        "task-2 depends on task-1.1, which is in cancelled task-1" in w for w in prep.warnings
    )


def test_manual_kind_and_instructions_never_empty(tmp_path: Path) -> None:
    prep = _prep(_write(tmp_path, {"tasks": [{"id": 9}]}), tmp_path, kind="manual")
    (step,) = prep.spec.steps
    assert (step.kind, step.title, step.instructions) == ("manual", "task-9", "task-9")
