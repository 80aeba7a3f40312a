"""Markdown checklists read into a plan: marks, nesting by indentation and by numbering, headings
as milestones, details and ``_Requirements: ..._`` references, fenced code and front matter
ignored, spec-kit ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.errors import PlanError
from prefect_waymark.importers import PreparedImport, first_problem, prepare_import
from tests.importers.helpers import KIRO, SAMPLES, TODO


def _prep(src: Path, tmp: Path, **kw: Any) -> PreparedImport:
    return prepare_import(src, "markdown", out=tmp / "plan.yaml", **kw)


def _steps(prep: PreparedImport) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in prep.built.data["steps"]}


def _md(tmp: Path, text: str, name: str = "TASKS.md") -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


def test_spec_tasks_numbered_nesting_and_requirements(tmp_path: Path) -> None:
    prep = _prep(KIRO, tmp_path)
    steps = _steps(prep)
    assert prep.spec.plan_id == "user-auth"  # the spec's folder
    assert prep.built.data["title"] == "Implementation Plan"
    assert list(steps) == ["task-1", "task-2.1", "task-2.2", "task-2.3", "task-2", "task-3"]
    # 2.1 .. 2.3 sit at 2.'s indentation: their number makes them its children
    assert steps["task-2"]["depends_on"] == ["task-2.1", "task-2.2", "task-2.3"]
    assert "depends_on" not in steps["task-1"] and "depends_on" not in steps["task-3"]
    assert {s["milestone"] for s in steps.values()} == {"Implementation Plan"}
    assert steps["task-2.1"]["acceptance"] == ["Requirements: 2.1, 3.3, 1.2"]
    assert steps["task-2.3"]["acceptance"] == ["Requirements: 2.2, 4.1"]  # trailing reference
    assert steps["task-2.3"]["title"] == "Implement Session model with relationships"
    assert steps["task-3"]["acceptance"] == [
        "Requirements: 4.2",
        "Leverage: src/middleware/rate_limit.ts",
    ]
    assert steps["task-1"]["instructions"] == (
        "Set up project structure and core interfaces\n\n"
        "- Create directory structure for models, services, repositories and API components\n"
        "- Define interfaces that establish system boundaries"
    )
    assert prep.built.done == ["task-1", "task-2.1"]
    assert any("items in progress (1: task-2.2): imported as pending" in w for w in prep.warnings)


def test_todo_indentation_headings_fences_and_marks(tmp_path: Path) -> None:
    prep = _prep(TODO, tmp_path)
    steps = _steps(prep)
    assert prep.built.data["title"] == "Release 2.0"  # the front matter's title is not read
    assert list(steps) == [
        "breaking-changes-section",
        "migration-script-walkthrough",
        "write-the-upgrade-guide",
        "regenerate-from-the-openapi-file",
        "review-the-examples",
        "update-the-api-reference",
        "tag-the-release",
        "announce-on-the-blog",
        "tag-the-release-2",
    ]
    assert steps["write-the-upgrade-guide"]["depends_on"] == [
        "breaking-changes-section",
        "migration-script-walkthrough",
    ]
    assert steps["update-the-api-reference"]["depends_on"] == [
        "regenerate-from-the-openapi-file",
        "review-the-examples",
    ]
    assert steps["review-the-examples"]["instructions"] == (
        "Review the examples\n\nEvery example must run against the staging server."
    )
    assert steps["tag-the-release"]["milestone"] == "Release"
    assert steps["breaking-changes-section"]["milestone"] == "Docs"
    assert not any("fence" in s for s in steps)  # checklists inside code blocks are not tasks
    assert prep.built.done == [
        "breaking-changes-section",
        "migration-script-walkthrough",
        "write-the-upgrade-guide",
    ]
    text = "\n".join(prep.warnings)
    assert (
        "items with a mark other than [ ], [x], [-], [~] or [/] (1: announce-on-the-blog)" in text
    )
    assert "items in progress (1: review-the-examples)" in text


def test_speckit_ids_and_phases(tmp_path: Path) -> None:
    prep = _prep(SAMPLES / "markdown" / "speckit_tasks.md", tmp_path)
    steps = _steps(prep)
    assert list(steps) == [f"T00{i}" for i in range(1, 8)]
    assert steps["T002"]["title"] == "[P] Initialize the Vite project with the React dependencies"
    assert steps["T004"]["milestone"] == "Phase 3.2: Tests First (TDD)"
    assert all("depends_on" not in s for s in steps.values())  # file order alone orders nothing
    assert prep.built.done == ["T001", "T002"]


def test_no_items_is_refused(tmp_path: Path) -> None:
    src = SAMPLES / "markdown" / "no_items.md"
    with pytest.raises(PlanError) as info:
        _prep(src, tmp_path)
    assert first_problem(info.value) == (
        f"{src}: no checklist items found; expected Markdown items such as '- [ ] task'"
    )


def test_tabs_numbered_bullets_and_a_heading_ending_a_nest(tmp_path: Path) -> None:
    src = _md(
        tmp_path,
        "- [ ] Parent\n\t- [x] Child by tab\n\t\t+ [ ] Grandchild\n"
        "1. [X] Numbered bullet\n"
        "## Next\n  - [ ] Indented under a new heading\n- [ ]\n",
    )
    prep = _prep(src, tmp_path)
    steps = _steps(prep)
    assert steps["parent"]["depends_on"] == ["child-by-tab"]
    assert steps["child-by-tab"]["depends_on"] == ["grandchild"]
    assert "depends_on" not in steps["indented-under-a-new-heading"]
    assert steps["indented-under-a-new-heading"]["milestone"] == "Next"
    assert "milestone" not in steps["numbered-bullet"]
    assert set(prep.built.done) == {"child-by-tab", "numbered-bullet"}
    assert any(f"{src}:7: an empty checklist item: skipped" in w for w in prep.warnings)


def test_numbering_restarts_under_a_heading(tmp_path: Path) -> None:
    src = _md(
        tmp_path,
        "# Plan\n## A\n- [ ] 1. First\n- [ ] 1.1 Sub\n## B\n- [ ] 1. Again\n- [ ] 1.1 Sub again\n",
    )
    steps = _steps(_prep(src, tmp_path))
    assert steps["task-1"]["depends_on"] == ["task-1.1"]
    assert steps["task-1-2"]["depends_on"] == ["task-1.1-2"]


def test_non_ascii_items_get_positional_ids(tmp_path: Path) -> None:
    src = _md(tmp_path, "- [ ] 資料を集める\n- [x] 報告を書く\n")
    prep = _prep(src, tmp_path)
    assert [(s.id, s.title) for s in prep.spec.steps] == [
        ("item-1", "資料を集める"),
        ("item-2", "報告を書く"),
    ]


def test_not_utf8_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "TODO.md"
    src.write_bytes(b"- [ ] ok\n- [ ] caf\xe9\n")
    with pytest.raises(PlanError) as info:
        _prep(src, tmp_path)
    assert first_problem(info.value) == f"{src}:2: not UTF-8 text (a binary file?)"


def test_a_plan_too_big_for_a_plan_file_is_refused(tmp_path: Path) -> None:
    src = _md(tmp_path, "- [ ] Huge\n  " + "word " * 900_000 + "\n")
    with pytest.raises(PlanError) as info:
        _prep(src, tmp_path)
    line = first_problem(info.value)
    assert line.startswith(f"{src}: the plan would be 4,5")
    assert "a plan file holds at most 4,194,304" in line
