"""The plan file's ``results:`` field: its forms, and bad input refused with the file and field
named (exit 2), before anything is recorded; ``waymark schema`` describes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._support.helpers import run_cli, write_plan


def _plan(folder: Path, results: Any) -> Path:
    return write_plan(
        folder,
        {"plan_id": "pin-results", "results": results, "steps": [{"id": "a", "run": "echo a"}]},
    )


@pytest.mark.parametrize(
    ("results", "needle"),
    [
        ("data/team/results", "neither an absolute folder path nor"),
        ("./results", "neither an absolute folder path nor"),
        ("Local-File-System/x", "not a block slug"),
        ({"storage": "/x", "env": "TEAM_RESULTS"}, "exactly one of storage, env"),
        ({}, "exactly one of storage, env"),
        ({"env": "not a name"}, "not an environment variable name"),
        ({"env": "TEAM_RESULTS", "required": "yes"}, "required"),
        (
            {"env": "TEAM_RESULTS", "bucket": "b"},
            "unknown field 'bucket' (expected one of: storage",
        ),
    ],
)
def test_a_bad_results_pin_names_the_file_and_field(
    tmp_path: Path, results: Any, needle: str
) -> None:
    plan = _plan(tmp_path, results)
    proc = run_cli("validate", str(plan))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{plan}:" in proc.stderr and "results" in proc.stderr and needle in proc.stderr


@pytest.mark.parametrize(
    "results", ["/mnt/team/results", "local-file-system/team-results", {"env": "TEAM_RESULTS"}]
)
def test_the_forms_a_results_pin_takes(tmp_path: Path, results: Any) -> None:
    proc = run_cli("validate", str(_plan(tmp_path, results)))
    assert proc.returncode == 0, proc.stderr


def test_an_unset_variable_refuses_every_command_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    plan = _plan(tmp_path, {"env": "WAYMARK_TEST_UNSET_RESULTS"})
    for command in (["run", str(plan)], ["next", str(plan)], ["start", str(plan), "a"]):
        proc = run_cli(*command, env={"WAYMARK_TEST_UNSET_RESULTS": ""})
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "$WAYMARK_TEST_UNSET_RESULTS" in proc.stderr and "not set" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / ".waymark").exists()  # no ledger, no results folder


def test_the_schema_describes_results() -> None:
    proc = run_cli("schema")
    doc = json.loads(proc.stdout)
    assert "results" in doc["properties"]
    assert set(doc["$defs"]["ResultsPin"]["properties"]) == {"storage", "env", "required"}
