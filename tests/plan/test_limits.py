"""The loader's limits and bounds, from the accepting side: the edges of every numeric bound are
valid, YAML anchors, aliases and merge keys within the limits still work (an override through a
merge key is not a duplicate), the schema carries the bounds, and a plan with many problems lists
the first 100 and counts the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefect_waymark import Plan, PlanError, load_plan
from prefect_waymark.plan.reading import MAX_DEPTH, MAX_PROBLEMS, MAX_VALUES
from prefect_waymark.plan.spec import MAX_RETRY_DELAY_SECONDS, MAX_TIMEOUT_SECONDS
from tests._support.helpers import run_cli, write_plan


def test_the_edges_of_each_bound_are_valid(tmp_path: Path) -> None:
    step = {
        "id": "a",
        "run": "x",
        "retries": 100,
        "retry_delay_seconds": MAX_RETRY_DELAY_SECONDS,
        "timeout_seconds": MAX_TIMEOUT_SECONDS,
    }
    doc = {
        "plan_id": "p" * 100,
        "contract": {"goal_id": "g", "objective": "o", "version": 1_000_000},
        "steps": [step, {"id": "b", "run": "x", "retries": 0, "timeout_seconds": 1}],
    }
    spec = load_plan(write_plan(tmp_path, doc))
    assert spec.steps[0].retries == 100
    assert spec.steps[0].timeout_seconds == MAX_TIMEOUT_SECONDS
    assert spec.steps[1].timeout_seconds == 1.0
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    json_spec = load_plan(tmp_path / "plan.json")
    assert json_spec.steps[0].retry_delay_seconds == MAX_RETRY_DELAY_SECONDS


def test_anchors_aliases_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "defaults: &defaults {retries: 2, timeout_seconds: 60}\n"
        "checks: &checks [tests pass, lint passes]\n"
        "plan_id: p\n"
        "steps:\n"
        "  - {<<: *defaults, id: a, run: x, acceptance: *checks}\n"
        "  - <<: *defaults\n"
        "    id: b\n"
        "    run: y\n"
        "    retries: 5\n"  # overrides the merged value: not a duplicate
    )
    with pytest.raises(PlanError) as info:  # 'defaults' and 'checks' are not plan fields...
        load_plan(path)
    assert {p.path for p in info.value.problems} == {"defaults", "checks"}
    assert all("unknown field" in p.message for p in info.value.problems)
    # ...but as the values of a real field the aliases load, merged and overridden.
    path.write_text(
        "plan_id: p\n"
        "steps:\n"
        "  - &first {id: a, run: x, retries: 2, acceptance: &checks [tests pass, lint passes]}\n"
        "  - <<: *first\n"
        "    id: b\n"
        "    retries: 5\n"
        "    acceptance: *checks\n"
    )
    spec = load_plan(path)
    assert [s.retries for s in spec.steps] == [2, 5]
    assert spec.steps[1].run == "x"
    assert spec.steps[1].acceptance == ["tests pass", "lint passes"]


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    # params of a sql ref may nest; 64 levels of collections in all are fine, 65 are not.
    inner = MAX_DEPTH - 4  # below the plan mapping, state_refs, the ref and params
    params = "{a: " * (inner + 1) + "1" + "}" * (inner + 1)
    ref = f"{{name: r, kind: sql, url: 'sqlite:///x.db', query: q, params: {{x: {params}}}}}"
    path = tmp_path / "plan.yaml"
    path.write_text(f"plan_id: p\nstate_refs: [{ref}]\nsteps: [{{id: a, run: x}}]\n")
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert f"nested more than {MAX_DEPTH}" in str(info.value)
    params = "{a: " * inner + "1" + "}" * inner
    ref = f"{{name: r, kind: sql, url: 'sqlite:///x.db', query: q, params: {{x: {params}}}}}"
    path.write_text(f"plan_id: p\nstate_refs: [{ref}]\nsteps: [{{id: a, run: x}}]\n")
    assert load_plan(path).plan_id == "p"


def test_an_alias_expansion_over_the_value_limit_names_the_limit(tmp_path: Path) -> None:
    width = 1000
    path = tmp_path / "plan.yaml"
    row = "[" + ", ".join(["x"] * width) + "]"
    uses = MAX_VALUES // width + 1
    path.write_text(
        f"row: &row {row}\nplan_id: p\n"
        "steps:\n  - id: a\n    run: x\n    acceptance: [" + ", ".join(["*row"] * uses) + "]\n"
    )
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert f"more than {MAX_VALUES:,} values" in str(info.value)
    assert "YAML aliases counted each time they are used" in str(info.value)


def test_many_problems_list_the_first_hundred_and_count_the_rest(tmp_path: Path) -> None:
    deps = [f"missing{i}" for i in range(MAX_PROBLEMS + 50)]
    path = write_plan(
        tmp_path, {"plan_id": "p", "steps": [{"id": "a", "run": "x", "depends_on": deps}]}
    )
    with pytest.raises(PlanError) as info:
        load_plan(path)
    problems = info.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].message == "... and 50 more problems not listed"
    assert all(p.line is not None for p in problems[:-1])


def test_a_json_duplicate_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{"plan_id": "p",\n "steps": [{"id": "a",\n  "run": "x",\n  "run": "y"}]}\n')
    with pytest.raises(PlanError) as info:
        load_plan(path)
    (problem,) = info.value.problems
    assert (problem.path, problem.line) == ("steps[0].run", 4)


def test_the_builder_refuses_outputs_outside_the_workdir() -> None:
    plan = Plan("p")
    plan.add_step(id="a", run="x", outputs=["../elsewhere.txt"])
    with pytest.raises(PlanError) as info:
        plan.build()
    assert "outside the workdir" in str(info.value)


def test_the_schema_carries_the_bounds_and_the_outside_flag() -> None:
    result = run_cli("schema")
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert schema["properties"]["allow_outside_workdir"]["type"] == "boolean"
    step = schema["$defs"]["StepSpec"]["properties"]
    assert step["retries"]["maximum"] == 100
    assert step["retry_delay_seconds"]["maximum"] == MAX_RETRY_DELAY_SECONDS
    timeout = next(t for t in step["timeout_seconds"]["anyOf"] if t.get("type") == "number")
    assert timeout["maximum"] == MAX_TIMEOUT_SECONDS
    assert step["id"]["maxLength"] == 100
