"""The parent plan's forbidden actions hold inside its sub-plans (real Prefect runs)."""

from __future__ import annotations

from pathlib import Path

from tests._support.helpers import write_plan
from tests._support.inprocess import run_inprocess


def test_parent_forbidden_action_refused_inside_the_subplan(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.ledger import open_ledger

    write_plan(
        tmp_path,
        {
            "plan_id": "ship",
            "steps": [
                {"id": "pack", "run": "echo pack >> pack.count"},
                {
                    "id": "deploy",
                    "depends_on": ["pack"],
                    "action": "deploy-prod",
                    "run": "echo deployed >> deploy.count",
                },
            ],
        },
        "ship.yaml",
    )
    parent = write_plan(
        tmp_path,
        {
            "plan_id": "release",
            "contract": {
                "goal_id": "release-goal",
                "objective": "release without touching production",
                "forbidden": ["action:deploy-*"],
            },
            "steps": [{"id": "ship", "plan": "ship.yaml"}],
        },
    )
    summary = run_inprocess(parent)
    assert summary.result == "failed"
    assert summary.failed_steps == ["ship"]
    assert (tmp_path / "pack.count").read_text() == "pack\n"
    assert not (tmp_path / "deploy.count").exists()  # refused before it ran
    with open_ledger(f"sqlite:///{tmp_path}/.waymark/ledger.db", create=False) as led:
        error = led.step_states("release")["ship"].error or ""
        assert "sub-plan 'ship' failed at step 'deploy'" in error
        assert "forbidden by the parent plan (release/ship: 'action:deploy-*')" in error
        drift = [e for e in led.events("ship") if e.kind == "drift"]
        assert len(drift) == 1
        assert drift[0].data["rule"] == "action:deploy-*"
        assert drift[0].data["parent"] == "release/ship"
        assert drift[0].data["goal_id"] == "release-goal"
