"""Plan validation: every error names the file, the field path, the line and what is expected;
``waymark validate`` prints them all, exits 2 and writes nothing; ``waymark schema`` is a JSON
Schema that accepts the plans the loader accepts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark import PlanError, PlanProblem, load_plan
from prefect_waymark.plan.loader import validate_plan_data
from tests._support.helpers import run_cli, write_plan


def problems_of(path: Path) -> list[PlanProblem]:
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert str(path) in str(info.value)
    return info.value.problems


def only(problems: list[PlanProblem], path: str) -> PlanProblem:
    found = [p for p in problems if p.path == path]
    assert len(found) == 1, f"expected one problem at {path!r}, got {problems}"
    return found[0]


def write_text(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


GOOD: dict[str, Any] = {
    "plan_id": "report",
    "title": "Weekly report",
    "contract": {"goal_id": "g1", "objective": "Ship it", "acceptance": ["numbers match"]},
    "state_refs": [{"name": "orders", "kind": "file", "path": "orders.json"}],
    "steps": [
        {"id": "collect", "run": "echo collect", "writes": ["orders"], "outputs": ["data.csv"]},
        {"id": "write.v2", "call": "mypkg.report:write", "depends_on": ["collect"]},
        {"id": "publish_1", "run": "echo pub", "depends_on": ["write.v2"], "reads": ["orders"]},
    ],
}


# -- the problem kinds, each with file, line, field path and expectation ----------------
def test_valid_plan_loads_with_its_source(tmp_path: Path) -> None:
    spec = load_plan(write_plan(tmp_path, GOOD))
    assert spec.plan_id == "report"
    assert [s.id for s in spec.steps] == ["collect", "write.v2", "publish_1"]
    assert spec.source == str(tmp_path / "plan.yaml")
    assert spec.base_dir == tmp_path.resolve()
    assert spec.topological_order() == ["collect", "write.v2", "publish_1"]


def test_duplicate_step_id_names_both_places(tmp_path: Path) -> None:
    doc = {"plan_id": "p", "steps": [{"id": "a", "run": "x"}, {"id": "a", "run": "y"}]}
    problem = only(problems_of(write_plan(tmp_path, doc)), "steps[1].id")
    assert "duplicate step id 'a'" in problem.message
    assert "steps[0]" in problem.message
    assert problem.line == 5  # the second "- id: a"
    assert problem.file == str(tmp_path / "plan.yaml")


def test_unknown_dependency_suggests_the_near_id(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "steps": [
            {"id": "collect", "run": "x"},
            {"id": "b", "run": "y", "depends_on": ["collect", "colect", "nowhere-near"]},
        ],
    }
    problems = problems_of(write_plan(tmp_path, doc))
    assert len(problems) == 2
    near = only(problems, "steps[1].depends_on[1]")
    assert "unknown step 'colect'" in near.message and "did you mean 'collect'" in near.message
    far = only(problems, "steps[1].depends_on[2]")
    assert "unknown step 'nowhere-near'" in far.message and "did you mean" not in far.message


def test_dependency_on_a_step_that_failed_to_parse_is_not_called_unknown(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "steps": [
            {"id": "a", "run": "x", "retries": "many"},
            {"id": "b", "run": "y", "depends_on": ["a"]},
        ],
    }
    problems = problems_of(write_plan(tmp_path, doc))
    assert [p.path for p in problems] == ["steps[0].retries"]
    assert "'many'" in problems[0].message


def test_dependency_cycle_is_named(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "steps": [
            {"id": "start", "run": "x"},
            {"id": "a", "run": "x", "depends_on": ["start", "c"]},
            {"id": "b", "run": "x", "depends_on": ["a"]},
            {"id": "c", "run": "x", "depends_on": ["b"]},
        ],
    }
    problems = problems_of(write_plan(tmp_path, doc))
    assert len(problems) == 1
    problem = problems[0]
    assert problem.path.startswith("steps[") and problem.path.endswith("].depends_on")
    assert "dependency cycle" in problem.message
    cycle = problem.message.split("dependency cycle: ", 1)[1].split(" -> ")
    assert cycle[0] == cycle[-1]
    assert sorted(set(cycle)) == ["a", "b", "c"]  # start is not part of it


def test_self_dependency(tmp_path: Path) -> None:
    doc = {"plan_id": "p", "steps": [{"id": "a", "run": "x", "depends_on": ["a"]}]}
    problem = only(problems_of(write_plan(tmp_path, doc)), "steps[0].depends_on[0]")
    assert "cannot depend on itself" in problem.message


@pytest.mark.parametrize(
    ("step", "which"),
    [
        ({"id": "a"}, "neither"),
        ({"id": "a", "run": "echo", "call": "pkg.mod:fn"}, "both"),
    ],
)
def test_run_xor_call(tmp_path: Path, step: dict[str, Any], which: str) -> None:
    doc = {"plan_id": "p", "steps": [{"id": "ok", "run": "x"}, step]}
    problem = only(problems_of(write_plan(tmp_path, doc)), "steps[1]")
    assert f"has {which} of 'run' and 'call'" in problem.message
    assert "expected exactly one" in problem.message
    assert problem.line == 5  # "- id: a" (safe_dump does not indent the list)


@pytest.mark.parametrize(
    ("where", "typo", "suggestion"),
    [
        ("step", "depend_on", "depends_on"),
        ("step", "ouputs", "outputs"),
        ("top", "stpes", "steps"),
        ("top", "plan_di", "plan_id"),
        ("contract", "acceptence", "acceptance"),
    ],
)
def test_unknown_field_suggests_the_near_name(
    tmp_path: Path, where: str, typo: str, suggestion: str
) -> None:
    doc: dict[str, Any] = {
        "plan_id": "p",
        "contract": {"goal_id": "g", "objective": "o"},
        "steps": [{"id": "a", "run": "x"}],
    }
    target = {"step": doc["steps"][0], "top": doc, "contract": doc["contract"]}[where]
    target[typo] = ["whatever"]
    problems = problems_of(write_plan(tmp_path, doc))
    path = {"step": f"steps[0].{typo}", "top": typo, "contract": f"contract.{typo}"}[where]
    problem = only(problems, path)
    assert f"unknown field {typo!r}" in problem.message
    assert f"did you mean {suggestion!r}?" in problem.message
    assert "expected one of:" in problem.message and suggestion in problem.message
    assert problem.line is not None


def test_loader_fields_are_not_plan_file_fields(tmp_path: Path) -> None:
    doc = {"plan_id": "p", "source": "x", "base_dir": "/", "steps": [{"id": "a", "run": "x"}]}
    problems = problems_of(write_plan(tmp_path, doc))
    assert {p.path for p in problems} == {"source", "base_dir"}
    assert all("unknown field" in p.message for p in problems)


@pytest.mark.parametrize(
    "text",
    ["plan_id: p\nsteps: []\n", "plan_id: p\nsteps:\n"],
    ids=["empty-list", "null"],
)
def test_empty_plan(tmp_path: Path, text: str) -> None:
    problem = only(problems_of(write_text(tmp_path, "plan.yaml", text)), "steps")
    assert "no steps" in problem.message and "at least one step" in problem.message
    assert problem.line == 2


def test_missing_steps_and_empty_file(tmp_path: Path) -> None:
    problem = only(problems_of(write_text(tmp_path, "a.yaml", "plan_id: p\n")), "steps")
    assert problem.message == "required field is missing"
    empty = problems_of(write_text(tmp_path, "b.yaml", ""))
    assert len(empty) == 1
    assert "expected a mapping with plan_id and steps" in empty[0].message
    assert "empty document" in empty[0].message
    listed = problems_of(write_text(tmp_path, "c.yaml", "- a\n- b\n"))
    assert "got list" in listed[0].message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("steps[0].id", "has space"),
        ("steps[0].id", "slash/id"),
        ("steps[0].id", "ünïcode"),
        ("steps[0].branch", "feature/x"),
        ("steps[0].action", "pay now"),
        ("plan_id", "my plan"),
        ("state_refs[0].name", "a:b"),
    ],
)
def test_ids_outside_the_allowed_characters(tmp_path: Path, field: str, value: str) -> None:
    doc: dict[str, Any] = {
        "plan_id": "p",
        "state_refs": [{"name": "r", "kind": "file", "path": "r.json"}],
        "steps": [{"id": "a", "run": "x"}],
    }
    if field == "plan_id":
        doc["plan_id"] = value
    elif field.startswith("state_refs"):
        doc["state_refs"][0]["name"] = value
    else:
        doc["steps"][0][field.split(".")[1]] = value
    problem = only(problems_of(write_plan(tmp_path, doc)), field)
    assert repr(value) in problem.message
    assert "[A-Za-z0-9._-]" in problem.message
    assert "letters, digits, '.', '_' and '-'" in problem.message


def test_reads_and_writes_must_name_declared_refs(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "state_refs": [
            {"name": "orders", "kind": "file", "path": "o.json"},
            {"name": "invoices", "kind": "file", "path": "i.json"},
        ],
        "steps": [{"id": "a", "run": "x", "reads": ["orders", "order"], "writes": ["ledger"]}],
    }
    problems = problems_of(write_plan(tmp_path, doc))
    assert len(problems) == 2
    reads = only(problems, "steps[0].reads[1]")
    assert "unknown state ref 'order'" in reads.message
    assert "did you mean 'orders'?" in reads.message
    assert "declared refs: orders, invoices" in reads.message
    writes = only(problems, "steps[0].writes[0]")
    assert "unknown state ref 'ledger'" in writes.message
    none = problems_of(
        write_plan(tmp_path, {"plan_id": "p", "steps": [{"id": "a", "run": "x", "reads": ["r"]}]})
    )
    assert "declared refs: none declared" in only(none, "steps[0].reads[0]").message


def test_refs_from_a_block_are_not_checked_offline(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "state_refs": {"block": "my-refs"},
        "steps": [{"id": "a", "run": "x", "reads": ["anything"]}],
    }
    spec = load_plan(write_plan(tmp_path, doc))
    assert spec.steps[0].reads == ["anything"]


def test_wrong_types_say_what_was_expected(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "steps": [
            5,
            {"id": "a", "run": "x", "depends_on": "b", "retries": -1, "call_": 1},
            {"id": "b", "call": "not a call"},
        ],
    }
    problems = problems_of(write_plan(tmp_path, doc))
    assert "expected a mapping" in only(problems, "steps[0]").message
    assert "valid list" in only(problems, "steps[1].depends_on").message
    assert "an integer from 0 to 100, got -1" in only(problems, "steps[1].retries").message
    assert "did you mean 'call'" in only(problems, "steps[1].call_").message
    assert "'package.module:function'" in only(problems, "steps[2].call").message
    assert all(p.line is not None for p in problems)


def test_yaml_syntax_error_has_its_line(tmp_path: Path) -> None:
    text = "plan_id: p\nsteps:\n  - id: a\n    run: [unclosed\n  - id: b\n    run: y\n"
    problems = problems_of(write_text(tmp_path, "plan.yaml", text))
    assert len(problems) == 1
    assert problems[0].message.startswith("YAML syntax error")
    assert problems[0].line is not None and problems[0].line >= 4
    assert "line 4" in problems[0].message or problems[0].line == 4  # where the '[' opened
    bad_indent = "plan_id: p\nsteps:\n  - id: a\n   run: b\n"
    problem = problems_of(write_text(tmp_path, "indent.yaml", bad_indent))[0]
    assert problem.line == 4
    assert str(problem).startswith(f"{tmp_path / 'indent.yaml'}:4: YAML syntax error")


def test_json_plan_errors_have_lines_too(tmp_path: Path) -> None:
    broken = '{"plan_id": "p",\n "steps": [\n  {"id": "a" "run": "x"}]}\n'
    problem = problems_of(write_text(tmp_path, "a.json", broken))[0]
    assert problem.message.startswith("JSON syntax error") and problem.line == 3
    typo = (
        '{"plan_id": "p",\n "steps": [\n  {"id": "a", "run": "x"},\n  {"id": "b", "rnu": "y"}]}\n'
    )
    problems = problems_of(write_text(tmp_path, "b.json", typo))
    problem = only(problems, "steps[1].rnu")
    assert problem.line == 4 and "did you mean 'run'" in problem.message


def test_missing_file(tmp_path: Path) -> None:
    problems = problems_of(tmp_path / "nope.yaml")
    assert problems[0].message == "file not found"


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    doc = {
        "plan_id": "p",
        "stpes": 1,
        "state_refs": [{"name": "db", "kind": "file", "path": "db.json"}],
        "steps": [
            {"id": "a", "run": "x"},
            {"id": "a", "run": "x"},
            {"id": "b c", "depend_on": ["a"], "run": "x"},
            {"id": "d", "run": "x", "call": "m:f", "depends_on": ["zz"]},
            {"id": "e", "reads": ["dbb"]},
            {"id": "f", "run": "x", "depends_on": ["g"]},
            {"id": "g", "run": "x", "depends_on": ["f"]},
        ],
    }
    problems = problems_of(write_plan(tmp_path, doc))
    paths = {p.path for p in problems}
    assert paths == {
        "stpes",
        "steps[1].id",
        "steps[2].id",
        "steps[2].depend_on",
        "steps[3]",
        "steps[3].depends_on[0]",
        "steps[4]",
        "steps[4].reads[0]",
        "steps[5].depends_on",
    }
    assert all(p.file == str(tmp_path / "plan.yaml") and p.line for p in problems)


def test_problem_string_format() -> None:
    p = PlanProblem("plan.yaml", "steps[3].depends_on[0]", "unknown step 'x'", 12)
    assert str(p) == "plan.yaml:12: steps[3].depends_on[0]: unknown step 'x'"
    assert str(PlanProblem("plan.yaml", "", "file not found")) == "plan.yaml: file not found"
    err = PlanError([p, p])
    assert str(err).startswith("invalid plan (2 problems):\n  - plan.yaml:12:")


def test_validate_plan_data_names_its_source() -> None:
    with pytest.raises(PlanError) as info:
        validate_plan_data({"plan_id": "p", "steps": [{"id": "a"}]}, source="<agent>")
    assert info.value.problems[0].file == "<agent>"
    assert info.value.problems[0].path == "steps[0]"


# -- the command ----------------------------------------------------------------------------------
def test_validate_command_prints_all_problems_exits_2_writes_nothing(tmp_path: Path) -> None:
    plan_dir = tmp_path / "plans"
    doc = {
        "plan_id": "p",
        "steps": [
            {"id": "a", "run": "x"},
            {"id": "a", "depend_on": ["a"], "run": "x"},
            {"id": "c", "depends_on": ["zz"]},
        ],
    }
    plan = write_plan(plan_dir, doc)
    work = tmp_path / "cwd"
    work.mkdir()
    ledger_file = tmp_path / "elsewhere" / "ledger.db"
    before = snapshot(tmp_path)
    proc = run_cli(
        "validate",
        str(plan),
        cwd=work,
        env={"WAYMARK_LEDGER_URL": f"sqlite:///{ledger_file}"},
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    err = proc.stderr
    assert "invalid plan (4 problems)" in err
    for path in ("steps[1].id", "steps[1].depend_on", "steps[2]", "steps[2].depends_on[0]"):
        assert f"{plan}:" in err and f" {path}: " in err, path
    assert "did you mean 'depends_on'?" in err
    assert snapshot(tmp_path) == before  # no ledger, no .waymark, nothing
    assert not ledger_file.exists()


def test_validate_command_on_a_good_plan(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, GOOD)
    before = snapshot(tmp_path)
    proc = run_cli("validate", str(plan), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "valid plan 'report' with 3 steps" in proc.stdout
    assert snapshot(tmp_path) == before


def test_validate_command_yaml_error_and_missing_file(tmp_path: Path) -> None:
    bad = write_text(tmp_path, "plan.yaml", "plan_id: p\nsteps:\n  - id: a\n   run: b\n")
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:4: YAML syntax error" in proc.stderr
    proc = run_cli("validate", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2
    assert "missing.yaml: file not found" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]


# -- the schema ---------------------------------------------------------------------------------
def test_schema_command_is_a_json_schema_that_matches_the_loader(tmp_path: Path) -> None:
    import jsonschema

    proc = run_cli("schema", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {"plan_id", "steps"} <= set(schema["required"])
    assert "source" not in schema["properties"] and "base_dir" not in schema["properties"]
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(GOOD)) == []
    load_plan(write_plan(tmp_path, GOOD))  # the loader agrees
    typo = json.loads(json.dumps(GOOD))
    typo["steps"][0]["depend_on"] = ["x"]
    assert any("depend_on" in e.message for e in validator.iter_errors(typo))
    bad_id = json.loads(json.dumps(GOOD))
    bad_id["steps"][0]["id"] = "has space"
    assert list(validator.iter_errors(bad_id))
    assert os.listdir(tmp_path) == ["plan.yaml"]
