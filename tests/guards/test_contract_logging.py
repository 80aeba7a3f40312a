"""The goal contract and its forbidden list are logged once per run, and again only when a re-read
finds them changed — not at every re-anchor (three or more times a run, filling the first screen).
A real flow run whose contract block gets a new version between two milestones."""

from __future__ import annotations

import uuid
from pathlib import Path

from prefect_waymark.blocks import GoalContractBlock
from tests._support.artifacts import flow_run_logs
from tests._support.helpers import write_plan
from tests._support.inprocess import run_inprocess

BUMP = """
from prefect_waymark.blocks import GoalContractBlock

def bump(ctx):
    GoalContractBlock(
        goal_id="launch", version=2, objective="Launch in two regions",
        forbidden=["never email customers"],
    ).save("{name}", overwrite=True)
"""


def test_the_contract_is_logged_once_and_again_when_it_changed(
    prefect_server: str, tmp_path: Path
) -> None:
    name = f"gc-{uuid.uuid4().hex[:8]}"
    GoalContractBlock(
        goal_id="launch", objective="Launch in one region", forbidden=["never email customers"]
    ).save(name)
    (tmp_path / "bump.py").write_text(BUMP.replace("{name}", name))
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "contract-logs",
            "contract": {"block": name},
            "steps": [
                {"id": "a", "milestone": "m1", "call": "bump:bump"},
                {"id": "b", "milestone": "m2", "depends_on": ["a"], "run": "true"},
                {"id": "c", "milestone": "m3", "depends_on": ["b"], "run": "true"},
            ],
        },
    )
    summary = run_inprocess(plan)
    assert summary.result == "completed" and summary.flow_run_id is not None
    logs = [r.message for r in flow_run_logs(summary.flow_run_id, want="plan contract-logs")]
    reanchors = [m for m in logs if m.startswith("re-anchor (")]
    assert len(reanchors) >= 3  # run start and two milestone switches re-read the contract
    said = [m for m in logs if "goal contract launch" in m]
    assert said == [
        "goal contract launch v1 (accepted): Launch in one region\n"
        "  forbidden: never email customers",
        "the goal contract changed — now goal contract launch v2 (accepted): Launch in two "
        "regions\n  forbidden: never email customers",
    ], said
