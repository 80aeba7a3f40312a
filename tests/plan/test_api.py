"""The Python ``Plan`` builder produces the same validated plan as the equivalent plan file, and
fails the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefect_waymark import GoalContract, Plan, PlanError, PlanSpec, load_plan
from tests._support.helpers import write_plan


def collect_data(ctx: Any) -> dict[str, int]:
    """A step body, referenced as ``tests.plan.test_api:collect_data``."""
    return {"rows": 3}


def summarize(ctx: Any) -> str:
    return "ok"


CONTRACT = {
    "goal_id": "weekly",
    "objective": "Publish the weekly report",
    "acceptance": ["numbers reconcile"],
    "forbidden": ["email customers"],
}

FILE_DOC: dict[str, Any] = {
    "plan_id": "weekly-report",
    "title": "Weekly report",
    "contract": CONTRACT,
    "state_refs": [{"name": "orders", "kind": "file", "path": "orders.json"}],
    "steps": [
        {
            "id": "collect-data",
            "call": "tests.plan.test_api:collect_data",
            "outputs": ["data.csv"],
            "writes": ["orders"],
        },
        {
            "id": "render",
            "run": "python render.py",
            "depends_on": ["collect-data"],
            "branch": "docs",
            "retries": 2,
        },
        {
            "id": "sum",
            "call": "tests.plan.test_api:summarize",
            "depends_on": ["collect-data"],
            "reads": ["orders"],
            "owner": "ana",
        },
        {"id": "publish", "run": "./publish.sh", "depends_on": ["render", "sum"], "action": "pub"},
    ],
}


def build_api_plan(contract: GoalContract | dict[str, Any] = CONTRACT) -> Plan:
    plan = Plan(
        "weekly-report",
        title="Weekly report",
        contract=contract,
        state_refs=[{"name": "orders", "kind": "file", "path": "orders.json"}],
    )
    returned = plan.step(outputs=["data.csv"], writes=["orders"])(collect_data)
    assert returned is collect_data  # the decorator hands the function back unchanged
    plan.add_step(
        id="render", run="python render.py", depends_on=["collect-data"], branch="docs", retries=2
    )
    plan.step(id="sum", depends_on=["collect-data"], reads=["orders"], owner="ana")(summarize)
    plan.add_step(id="publish", run="./publish.sh", depends_on=["render", "sum"], action="pub")
    return plan


def same_plan(a: PlanSpec, b: PlanSpec) -> None:
    assert a.model_dump() == b.model_dump()
    assert a.plan_hash() == b.plan_hash()
    assert a.step_hashes() == b.step_hashes()
    assert a.topological_order() == b.topological_order()


def test_api_plan_equals_the_file_plan(tmp_path: Path) -> None:
    from_file = load_plan(write_plan(tmp_path, FILE_DOC))
    from_api = build_api_plan().build()
    same_plan(from_api, from_file)
    assert from_api.step("collect-data").call == "tests.plan.test_api:collect_data"
    assert from_api.topological_order() == ["collect-data", "render", "sum", "publish"]
    assert from_api.source == "<Plan weekly-report>"
    assert isinstance(from_api.contract, GoalContract)
    assert from_api.contract.forbidden == ["email customers"]


def test_contract_model_or_dict_give_the_same_plan() -> None:
    same_plan(build_api_plan(GoalContract(**CONTRACT)).build(), build_api_plan().build())


def test_to_dict_is_a_plan_file(tmp_path: Path) -> None:
    plan = build_api_plan()
    from_dict_file = load_plan(write_plan(tmp_path, plan.to_dict(), name="from_api.yaml"))
    same_plan(plan.build(), from_dict_file)


def test_a_changed_step_changes_only_its_hash_and_the_plan_hash() -> None:
    base = build_api_plan().build()
    changed_plan = build_api_plan()
    changed_plan._steps[1]["run"] = "python render.py --fast"
    changed = changed_plan.build()
    assert changed.plan_hash() != base.plan_hash()
    diff = {k for k in base.step_hashes() if base.step_hashes()[k] != changed.step_hashes()[k]}
    assert diff == {"render"}
    # Fields outside the definition (title, owner, retries) do not make results stale.
    cosmetic = build_api_plan()
    cosmetic._steps[1]["title"] = "Render the report"
    cosmetic._steps[1]["retries"] = 5
    assert cosmetic.build().step_hashes() == base.step_hashes()


def test_api_errors_match_the_file_errors(tmp_path: Path) -> None:
    plan = Plan("bad plan")
    plan.add_step(id="a", run="x").add_step(id="a", depend_on=["a"])
    plan.add_step(id="c", run="y", depends_on=["zz"])
    with pytest.raises(PlanError) as api:
        plan.build()
    with pytest.raises(PlanError) as file:
        load_plan(write_plan(tmp_path, plan.to_dict()))
    api_problems = {(p.path, p.message) for p in api.value.problems}
    file_problems = {(p.path, p.message) for p in file.value.problems}
    assert api_problems == file_problems
    assert {p.path for p in api.value.problems} == {
        "plan_id",
        "steps[1]",
        "steps[1].id",
        "steps[1].depend_on",
        "steps[2].depends_on[0]",
    }
    assert all(p.file == "<Plan bad plan>" and p.line is None for p in api.value.problems)
    assert all(p.line is not None for p in file.value.problems)


def test_decorator_on_a_local_function_is_refused() -> None:
    plan = Plan("p")

    @plan.step()
    def local_step(ctx: Any) -> None:  # not importable: its qualname has <locals>
        return None

    with pytest.raises(PlanError) as info:
        plan.build()
    problem = info.value.problems[0]
    assert problem.path == "steps[0].call"
    assert "package.module:function" in problem.message


def test_empty_api_plan() -> None:
    with pytest.raises(PlanError) as info:
        Plan("p").build()
    assert info.value.problems[0].path == "steps"
    assert "no steps" in info.value.problems[0].message


def test_base_dir_is_kept(tmp_path: Path) -> None:
    spec = Plan("p", base_dir=tmp_path).add_step(id="a", run="x").build()
    assert spec.base_dir == tmp_path
    assert Plan("p").add_step(id="a", run="x").build().base_dir is None
