"""A run's options: one frozen object checked in one place (``run/options.py``), the flow's
form holding only what a user passes, and what the flow run's parameters keep of them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_waymark.errors import WaymarkError
from prefect_waymark.run.options import RunOptions, check_run
from tests._support.helpers import write_plan
from tests._support.plans import counting_chain

#: The flow's parameters: its Prefect form (the UI's "Run" form, a deployment's parameters).
FORM = [
    "plan",
    "workdir",
    "ledger_url",
    "max_steps",
    "until",
    "executor",
    "result_storage",
    "markers_dir",
    "review_wait_seconds",
    "agent_wait_seconds",
    "task_runner",
    "dask_address",
]


def test_the_flows_form_holds_only_what_a_user_passes() -> None:
    from prefect.utilities.callables import parameter_schema

    from prefect_waymark.flows.run_plan import run_plan

    schema = parameter_schema(run_plan).model_dump()  # what a deployment's form is made of
    assert list(schema["properties"]) == FORM
    assert schema["required"] == ["plan"]


def test_the_options_are_one_frozen_object(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, counting_chain("opts", ["a", "b"]))
    options = check_run(str(plan), max_steps=1, review_wait_seconds=5, command_line=lambda: None)
    assert options.spec.plan_id == "opts" and options.workdir == tmp_path.resolve()
    assert options.ledger_url == f"sqlite:///{tmp_path.resolve()}/.waymark/ledger.db"
    assert options.markers_folder == tmp_path.resolve()
    assert (options.max_steps, options.review_wait_seconds, options.agent_wait_seconds) == (1, 5, 0)
    assert (options.lease_seconds, options.publish_artifacts, options.subplan_of) == (
        60,
        True,
        None,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_steps = 2  # type: ignore[misc]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]  # checked, nothing made
    # Inside Prefect (no command line) the ledger is opened as the run opens it: made if new.
    assert check_run(str(plan)) == dataclasses.replace(
        options, max_steps=None, review_wait_seconds=0
    )
    assert (tmp_path / ".waymark" / "ledger.db").is_file()


def test_one_check_names_the_flags_or_the_parameters(tmp_path: Path) -> None:
    """The same check for ``waymark run`` (its flags) and the flow (its parameters)."""
    plan = write_plan(tmp_path, counting_chain("opts", ["a"]))
    with pytest.raises(WaymarkError, match=r"^until: plan 'opts' has no step 'x'$"):
        check_run(str(plan), until="x")
    with pytest.raises(WaymarkError, match=r"^--until: unknown step 'x' in .*plan\.yaml$"):
        check_run(str(plan), until="x", command_line=lambda: None)
    # What only the command line refuses; the flow keeps taking them as it did.
    with pytest.raises(WaymarkError, match=r"^--max-steps: expected a number >= 1$"):
        check_run(str(plan), max_steps=0, command_line=lambda: None)
    assert check_run(str(plan), max_steps=0).max_steps == 0
    with pytest.raises(WaymarkError, match=r"^--dask-address needs --task-runner dask$"):
        check_run(str(plan), dask_address="tcp://h:8786", command_line=lambda: None)
    assert check_run(str(plan), dask_address="tcp://h:8786").dask_address == "tcp://h:8786"


def test_the_flow_run_keeps_a_record_of_the_options_never_the_plan_or_the_ledger_url(
    tmp_path: Path,
) -> None:
    """The parameters Prefect keeps: the options' record (what no other parameter says), sent
    without Prefect's encoder; the plan is not sent twice, a ledger password never."""
    code = f"""
import dataclasses, json, sys
from pathlib import Path
from prefect_waymark.flows.run_plan import run_plan
from prefect_waymark.run.options import check_run
options = check_run({str(write_plan(tmp_path, counting_chain("rec", ["a"])))!r})
options = dataclasses.replace(options, ledger_url="postgresql+psycopg://u:s3cret@h/d")
sent = run_plan.serialize_parameters({{"plan": "plan.yaml", "options": options.as_parameter()}})
print(json.dumps(sent))
print("fastapi" in sys.modules)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent, fastapi = proc.stdout.splitlines()
    record = {"checked": True, "lease_seconds": 60.0, "publish_artifacts": True, "subplan_of": None}
    assert json.loads(sent) == {"plan": "plan.yaml", "options": record}
    assert "s3cret" not in sent and fastapi == "False"


def test_a_run_checked_before_it_starts_is_not_checked_again(
    prefect_server: str, tmp_path: Path
) -> None:
    """Given checked options, the flow goes by them and does not check its parameters again
    (they are the run's record only): the markers go where the options say, and an ``until``
    beside them that names no step is not looked at."""
    from prefect_waymark.flows.run_plan import run_plan

    plan = write_plan(tmp_path, counting_chain("given", ["a"]))
    (tmp_path / "notes").mkdir()
    options = check_run(str(plan), markers_dir=tmp_path / "notes", publish_artifacts=False)
    assert isinstance(options, RunOptions)
    summary = run_plan(plan=str(plan), until="nope", options=options.as_parameter())
    assert summary["result"] == "completed"
    assert (tmp_path / "notes" / "EXECUTION_MARKER.json").is_file()  # the options' folder
    assert not (tmp_path / "EXECUTION_MARKER.json").exists()  # not the default one
