"""A contract kept in a Prefect block: the ledger records its items by id when a run re-reads
it, so the acceptance metric counts them after the run — without reaching Prefect again."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from prefect_waymark.blocks.goal_contract import GoalContractBlock
from prefect_waymark.models import ContractItem
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess


def test_a_block_contracts_items_come_from_the_ledger(prefect_server: str, tmp_path: Path) -> None:
    name = f"gc-metrics-{uuid.uuid4().hex[:8]}"
    GoalContractBlock(
        goal_id="block-goal",
        objective="Publish the report",
        acceptance=["Figures collected.", ContractItem(id="pub", text="Report published.")],
        exit_conditions=["The report is out."],
    ).save(name)
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "block-metrics",
            "contract": {"block": name},
            "steps": [
                {"id": "collect", "run": "echo x > figures.txt", "serves": ["A1"]},
                {"id": "draft", "run": "true", "depends_on": ["collect"]},
            ],
        },
    )
    assert run_inprocess(plan).result == "completed"
    out = run_cli("metrics", str(plan), "--json")
    assert out.returncode == 0, out.stderr
    coverage = json.loads(out.stdout)["acceptance_coverage"]
    assert coverage["items"] == 2  # A1 and pub, read from the ledger's record of the block
    assert coverage["items_with_evidence"] == 1  # only A1 has a completed step serving it
    assert coverage["steps_serving"] == 1 and coverage["steps"] == 2
    assert coverage["contract"]["goal_id"] == "block-goal"
    assert coverage["contract"]["source"].startswith("ledger")
