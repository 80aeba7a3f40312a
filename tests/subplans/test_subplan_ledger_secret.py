"""A ``plan:`` step hands its ledger to the sub-plan's subflow without putting a password in
the subflow's parameters (Prefect keeps a flow run's parameters; its API and UI show them).

PostgreSQL here trusts local connections, so a URL with any password connects: the password is
real in the URL and must never reach Prefect."""

from __future__ import annotations

from pathlib import Path

from tests._support.helpers import write_plan
from tests._support.inprocess import run_inprocess


def test_a_ledger_password_never_reaches_the_subflows_parameters(
    prefect_server: str, tmp_path: Path, pg_url: str
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentTaskRunId

    from prefect_waymark.ledger import open_ledger

    secret = "s3cr3t-pw"
    url = pg_url.replace("postgres@", f"postgres:{secret}@", 1)
    assert secret in url, url
    write_plan(
        tmp_path,
        {"plan_id": "inner", "steps": [{"id": "i1", "run": "echo i1 >> i1.count"}]},
        "inner.yaml",
    )
    parent = write_plan(
        tmp_path,
        {"plan_id": "outer", "steps": [{"id": "sub", "plan": "inner.yaml"}]},
    )
    summary = run_inprocess(parent, ledger_url=url)
    assert summary.result == "completed", summary.text()
    assert (tmp_path / "i1.count").read_text().count("i1") == 1
    with open_ledger(url, create=False) as led:  # the sub-plan recorded in the parent's ledger
        assert led.step_states("inner")["i1"].status == "completed"
        parent_run = led.events("outer", kinds=["run_started"])[-1].data["flow_run_id"]
    with get_client(sync_client=True) as client:
        tasks = client.read_task_runs()
        sub_task = [
            t for t in tasks if t.flow_run_id is not None and str(t.flow_run_id) == parent_run
        ]
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                parent_task_run_id=FlowRunFilterParentTaskRunId(any_=[t.id for t in sub_task])
            )
        )
    assert runs, "the sub-plan ran as a subflow of the parent's step"
    for run in runs:
        assert secret not in repr(run.parameters), run.parameters
        # the URL as Prefect keeps it: its password masked (flows/json_flow.py)
        assert run.parameters.get("ledger_url") == url.replace(secret, "***"), run.parameters
