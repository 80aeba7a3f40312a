"""A beads issues.jsonl read into a plan: blocks and parent-child dependencies, epics, every
status (tombstones left out, unknown newer ones pending with a warning), priorities ordering the
steps where the graph allows, and bad lines refused with their line number."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.errors import PlanError
from prefect_waymark.importers import PreparedImport, first_problem, prepare_import
from tests.importers.helpers import BEADS, SAMPLES


def _prep(src: Path, tmp: Path, **kw: Any) -> PreparedImport:
    return prepare_import(src, "beads", out=tmp / "plan.yaml", **kw)


def _steps(prep: PreparedImport) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in prep.built.data["steps"]}


def _refused(src: Path, tmp: Path) -> str:
    with pytest.raises(PlanError) as info:
        _prep(src, tmp)
    line = first_problem(info.value)
    assert "\n" not in line
    return line


def _issue(iid: str, **kw: Any) -> dict[str, Any]:
    return {"id": iid, "title": iid.upper(), "status": "open", "priority": 2, **kw}


def _jsonl(tmp: Path, *issues: dict[str, Any] | str) -> Path:
    p = tmp / "issues.jsonl"
    lines = [i if isinstance(i, str) else json.dumps(i) for i in issues]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _blocks(iid: str, on: str, kind: str = "blocks") -> dict[str, str]:
    return {"issue_id": iid, "depends_on_id": on, "type": kind}


def test_sample_export(tmp_path: Path) -> None:
    prep = _prep(BEADS, tmp_path)
    steps = _steps(prep)
    assert prep.spec.plan_id == "shop"  # the folder holding .beads
    # priority order where the graph allows: P0 first, the file's order breaking ties
    assert list(steps) == [
        "shop-2",
        "shop-9",
        "shop-3",
        "shop-5",
        "shop-7",
        "shop-4",
        "shop-1",
        "shop-8",
    ]
    # the epic waits for its children; they share its milestone
    assert steps["shop-1"]["depends_on"] == ["shop-2", "shop-3", "shop-4"]
    assert {steps[s].get("milestone") for s in ("shop-1", "shop-2", "shop-3", "shop-4")} == {
        "shop-1"
    }
    assert steps["shop-8"]["depends_on"] == ["shop-1"]  # blocked by the epic: waits for all of it
    # related / discovered-from do not order; the tombstone is left out
    assert "depends_on" not in steps["shop-5"]
    assert steps["shop-7"]["depends_on"] == ["shop-3"]
    assert "shop-6" not in steps
    assert steps["shop-2"]["owner"] == "ana"
    assert steps["shop-2"]["instructions"] == (
        "Compute subtotal, tax and shipping.\n\nDesign:\nMoney as integer cents; tax tables per "
        "region.\n\nNotes:\nRounding agreed with finance on 2025-08-02."
    )
    assert steps["shop-1"]["acceptance"] == [
        "A guest can pay with a card",
        "A logged-in customer can pay with a saved card",
    ]
    assert steps["shop-2"]["acceptance"] == [
        "Totals match the finance team's spreadsheet for the 40 sample baskets."
    ]
    assert prep.built.done == ["shop-2", "shop-5"]  # closed
    text = "\n".join(prep.warnings)
    assert f"{BEADS}:8: dependencies[1]: shop-7 depends on shop-6, which is deleted" in text
    assert f"{BEADS}:9: dependencies[1]: shop-8 depends on shop-99, which is not in the source" in (
        text
    )
    assert "issues in progress (1: shop-3): imported as pending" in text


def test_newer_statuses_and_types(tmp_path: Path) -> None:
    prep = _prep(SAMPLES / "beads" / "newer_statuses.jsonl", tmp_path)
    steps = _steps(prep)
    assert set(steps) == {"gt-a1b2", "gt-c3d4", "gt-e5f6", "gt-e5f6.1"}
    assert prep.built.done == ["gt-e5f6.1"]
    assert steps["gt-e5f6"]["depends_on"] == ["gt-e5f6.1"]  # waits-for does not order
    text = "\n".join(prep.warnings)
    assert "issues with the status 'pinned', unknown to this importer (1: gt-a1b2)" in text
    assert "issues with the status 'deferred', unknown to this importer (1: gt-c3d4)" in text
    assert "issues with a 'waits-for' dependency (1: gt-e5f6): not used for ordering" in text


def test_priority_orders_only_where_the_graph_allows(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path,
        _issue("a", priority=4),
        _issue("b", priority=3),
        _issue("c", priority=0, dependencies=[_blocks("c", "a")]),
        _issue("d", priority=0),
        _issue("e", priority=3),
    )
    prep = _prep(src, tmp_path)
    assert [s.id for s in prep.spec.steps] == ["d", "b", "e", "a", "c"]


def test_children_wait_for_what_blocks_their_epic(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path,
        _issue("x", status="closed"),
        _issue("epic", issue_type="epic", dependencies=[_blocks("epic", "x")]),
        _issue("c1", dependencies=[_blocks("c1", "epic", "parent-child")]),
        _issue("c2", dependencies=[_blocks("c2", "epic", "parent-child"), _blocks("c2", "c1")]),
    )
    steps = _steps(_prep(src, tmp_path))
    assert steps["c1"]["depends_on"] == ["x"]
    assert steps["c2"]["depends_on"] == ["c1"]  # waits for a sibling: x comes through it
    assert steps["epic"]["depends_on"] == ["x", "c1", "c2"]


def test_invalid_id_is_made_valid_and_told(tmp_path: Path) -> None:
    src = _jsonl(tmp_path, _issue("bd 1"), _issue("bd-2", dependencies=[_blocks("bd-2", "bd 1")]))
    prep = _prep(src, tmp_path)
    assert [s.id for s in prep.spec.steps] == ["bd-1", "bd-2"]
    assert prep.spec.step("bd-2").depends_on == ["bd-1"]
    assert any(":1: id 'bd 1' is not a valid step id: bd-1" in w for w in prep.warnings)


def test_a_second_parent_is_not_used(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path,
        _issue("e1"),
        _issue("e2"),
        _issue(
            "c",
            dependencies=[_blocks("c", "e1", "parent-child"), _blocks("c", "e2", "parent-child")],
        ),
    )
    prep = _prep(src, tmp_path)
    assert prep.spec.step("e1").depends_on == ["c"] and prep.spec.step("e2").depends_on == []
    assert any("c already belongs to e1; its parent-child link to e2" in w for w in prep.warnings)


def test_blank_lines_allowed_and_line_numbers_kept(tmp_path: Path) -> None:
    src = SAMPLES / "beads" / "bad_line.jsonl"
    assert _refused(src, tmp_path) == (
        f"{src}:4: not JSON: Unterminated string starting at (column 47); expected one issue "
        "object per line, as `bd export` writes"
    )


def test_merge_conflict_marker_is_named(tmp_path: Path) -> None:
    line = _refused(SAMPLES / "beads" / "conflict.jsonl", tmp_path)
    assert ":2: not JSON" in line and "a git merge conflict marker" in line


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id":"p-2","priority":7}', ":2: priority: expected an integer from 0 to 4, got 7"),
        ('{"id":"p-2","priority":"high"}', ":2: priority: expected an integer from 0 to 4"),
        ('{"id":"p-2","priority":true}', ":2: priority: expected an integer from 0 to 4"),
        ('{"title":"no id"}', ":2: id: required field is missing; expected an issue id"),
        ('{"id":5}', ":2: id: expected an issue id (a string), got 5"),
        ("[1]", ":2: expected a JSON object (an issue), got [1]"),
        (
            '{"id":"p-2","dependencies":[{"issue_id":"p-2","type":"blocks"}]}',
            ":2: dependencies[0].depends_on_id: required field is missing",
        ),
        ('{"id":"p-2","dependencies":[3]}', ":2: dependencies[0]: expected an object"),
        ('{"id":"p-2","dependencies":{"a":1}}', ":2: dependencies: expected a list of"),
    ],
)
def test_bad_lines_name_line_and_field(tmp_path: Path, line: str, expected: str) -> None:
    src = _jsonl(tmp_path, _issue("p-1"), line)
    got = _refused(src, tmp_path)
    assert got.startswith(str(src)) and expected in got, got


def test_cycle_is_refused_with_its_line(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path,
        _issue("a", dependencies=[_blocks("a", "b")]),
        _issue("b", dependencies=[_blocks("b", "a")]),
    )
    assert _refused(src, tmp_path) == (
        f"{src}:1: dependencies[0]: dependency cycle: a -> b -> a; expected tasks that do not "
        "wait for themselves (`bd dep cycles` lists them; beads never makes these issues ready)"
    )


def test_parent_loop_is_refused(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path,
        _issue("a", dependencies=[_blocks("a", "b", "parent-child")]),
        _issue("b", dependencies=[_blocks("b", "a", "parent-child")]),
    )
    assert _refused(src, tmp_path) == (
        f"{src}:1: parent loop: b contains a contains b; expected a tree of parents"
    )


def test_only_tombstones_is_nothing_to_import(tmp_path: Path) -> None:
    src = _jsonl(tmp_path, _issue("a", status="tombstone"), "", "   ")
    assert _refused(src, tmp_path).endswith(
        "nothing to import: no tasks (1 left out: cancelled or deleted)"
    )


def test_sample_with_a_bad_priority(tmp_path: Path) -> None:
    src = SAMPLES / "beads" / "bad_priority.jsonl"
    assert _refused(src, tmp_path) == f"{src}:2: priority: expected an integer from 0 to 4, got 7"
