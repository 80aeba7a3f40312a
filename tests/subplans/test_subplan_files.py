"""The ``plan:`` field: the sub-plan file is validated with its parent (no Prefect here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_waymark import PlanError, load_plan
from tests._support.helpers import run_cli, write_plan


def _parent(folder: Path, plan: str = "sub.yaml", **step: object) -> Path:
    return write_plan(
        folder,
        {"plan_id": "parent", "steps": [{"id": "s", "plan": plan, **step}]},
    )


def _sub(folder: Path, doc: dict[str, object], name: str = "sub.yaml") -> Path:
    return write_plan(folder, doc, name)


def test_plan_step_kind_and_hash_follow_the_subplan(tmp_path: Path) -> None:
    sub = _sub(tmp_path, {"plan_id": "sub", "steps": [{"id": "a", "run": "true"}]})
    spec = load_plan(_parent(tmp_path))
    step = spec.step("s")
    assert step.kind == "plan" and not step.checked_in
    assert step.subplan_path == sub.resolve()
    assert step.subplan_spec is not None and step.subplan_spec.plan_id == "sub"
    before = step.definition_hash()
    _sub(tmp_path, {"plan_id": "sub", "steps": [{"id": "a", "run": "echo changed"}]})
    after = load_plan(tmp_path / "plan.yaml").step("s").definition_hash()
    assert before != after  # a changed sub-plan makes the parent step's result stale


def test_code_step_hash_unchanged() -> None:
    from prefect_waymark.plan.spec import StepSpec

    step = StepSpec(id="a", run="echo a")
    assert set(step.definition()) == {"run", "call", "depends_on", "outputs", "action"}


def test_subplan_id_equal_to_the_parent_refused(tmp_path: Path) -> None:
    _sub(tmp_path, {"plan_id": "parent", "steps": [{"id": "a", "run": "true"}]})
    plan = _parent(tmp_path)
    with pytest.raises(PlanError) as err:
        load_plan(plan)
    [problem] = err.value.problems
    assert problem.path == "steps[0].plan"
    assert "has plan_id 'parent', the id of a plan that runs it" in problem.message
    proc = run_cli("validate", str(plan))
    assert proc.returncode == 2
    assert "steps[0].plan" in proc.stderr and "Traceback" not in proc.stderr


def test_subplan_problem_named_by_its_file_and_field(tmp_path: Path) -> None:
    sub = _sub(tmp_path / "sub", {"plan_id": "sub", "steps": [{"id": "a", "rn": "true"}]})
    plan = _parent(tmp_path, "sub/sub.yaml")
    with pytest.raises(PlanError) as err:
        load_plan(plan)
    sources = {(p.file, p.path) for p in err.value.problems}
    assert (str(plan), "steps[0].plan") in sources
    assert (str(sub), "steps[0].rn") in sources
    proc = run_cli("validate", str(plan))
    assert proc.returncode == 2
    assert f"{sub}" in proc.stderr and "steps[0].rn" in proc.stderr


def test_missing_subplan_file(tmp_path: Path) -> None:
    with pytest.raises(PlanError) as err:
        load_plan(_parent(tmp_path, "nowhere.yaml"))
    assert any(p.message == "file not found" for p in err.value.problems)


def test_cycle_of_subplans_refused(tmp_path: Path) -> None:
    _sub(tmp_path, {"plan_id": "sub", "steps": [{"id": "back", "plan": "plan.yaml"}]})
    with pytest.raises(PlanError) as err:
        load_plan(_parent(tmp_path))
    assert any(
        "a cycle of sub-plans: plan.yaml -> sub.yaml -> plan.yaml" in p.message
        for p in err.value.problems
    )


def test_plan_step_fields_checked(tmp_path: Path) -> None:
    _sub(tmp_path, {"plan_id": "sub", "steps": [{"id": "a", "run": "true"}]})
    with pytest.raises(PlanError) as err:
        load_plan(_parent(tmp_path, run="echo no", action="x"))
    assert any("must not have 'run' or 'action'" in p.message for p in err.value.problems)
    doc = {"plan_id": "p", "steps": [{"id": "s", "kind": "plan"}]}
    with pytest.raises(PlanError) as err:
        load_plan(write_plan(tmp_path / "k", doc))
    assert any(p.path == "steps[0].plan" for p in err.value.problems)


def _leaf(folder: Path, name: str, plan_id: str) -> None:
    write_plan(folder, {"plan_id": plan_id, "steps": [{"id": "x", "run": "true"}]}, name)


def test_one_id_twice_in_the_tree_is_refused_at_any_depth(tmp_path: Path) -> None:
    # top -> a.yaml (id shared) and -> b.yaml -> c.yaml (id shared, one level deeper).
    _leaf(tmp_path, "a.yaml", "shared")
    _leaf(tmp_path, "c.yaml", "shared")
    mid = {"plan_id": "mid", "steps": [{"id": "c", "plan": "c.yaml"}]}
    write_plan(tmp_path, mid, "b.yaml")
    doc = {
        "plan_id": "top",
        "steps": [{"id": "a", "plan": "a.yaml"}, {"id": "b", "plan": "b.yaml"}],
    }
    with pytest.raises(PlanError) as err:
        load_plan(write_plan(tmp_path, doc, "top.yaml"))
    assert "sub-plan id 'shared' (at b/c) is also the sub-plan at a" in str(err.value)


def test_one_file_reached_through_two_branches_is_refused(tmp_path: Path) -> None:
    # top2 -> b.yaml -> c.yaml and top2 -> d.yaml -> c.yaml: one scope run from two steps.
    _leaf(tmp_path, "c.yaml", "leaf")
    write_plan(tmp_path, {"plan_id": "b", "steps": [{"id": "c", "plan": "c.yaml"}]}, "b.yaml")
    write_plan(tmp_path, {"plan_id": "d", "steps": [{"id": "c", "plan": "c.yaml"}]}, "d.yaml")
    doc = {
        "plan_id": "top2",
        "steps": [{"id": "b", "plan": "b.yaml"}, {"id": "d", "plan": "d.yaml"}],
    }
    with pytest.raises(PlanError) as err:
        load_plan(write_plan(tmp_path, doc, "top2.yaml"))
    assert "sub-plan id 'leaf'" in str(err.value)
    assert run_cli("validate", str(tmp_path / "top2.yaml")).returncode == 2
    assert load_plan(tmp_path / "b.yaml").steps[0].subplan_spec is not None  # alone: fine
