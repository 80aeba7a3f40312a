"""Re-anchoring at the seed's risk points inside one run: switching milestone and entering another
branch re-read the contract and every ref; other steps re-read only what they read."""

from __future__ import annotations

from pathlib import Path

from prefect_waymark.ledger import default_ledger_url, open_ledger
from tests._support.helpers import write_plan


def test_milestone_and_branch_switches_reanchor(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1\n")
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "points",
            "contract": {"goal_id": "g", "version": 1, "objective": "test re-anchor points"},
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                {"id": "m1a", "milestone": "one", "run": "true"},
                {"id": "m1b", "milestone": "one", "depends_on": ["m1a"], "run": "true"},
                {"id": "m2a", "milestone": "two", "depends_on": ["m1b"], "run": "true"},
                {"id": "side", "branch": "side", "depends_on": ["m2a"], "run": "true"},
            ],
        },
    )
    assert run_plan(plan=str(plan))["result"] == "completed"
    with open_ledger(default_ledger_url(tmp_path)) as led:
        events = led.events("points", kinds=["reanchor"])
    points = [(e.step_id, e.data["point"]) for e in events]
    assert points[0] == (None, "run_start")
    by_step = {sid: p for sid, p in points[1:]}
    assert by_step.get("m2a") == "milestone_switch"
    assert by_step.get("side") == "branch_switch"
    assert "m1b" not in by_step  # same branch, same milestone, reads nothing: no re-read
    for e in events:
        if e.data["point"] in ("milestone_switch", "branch_switch"):
            assert [r["name"] for r in e.data["refs"]] == ["terms"]
            assert e.data["contract"]["current"]["goal_id"] == "g"


def test_a_ref_edited_mid_run_stops_at_the_milestone_switch(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1\n")
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "points-edit",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [
                # The first milestone's step edits the ref behind the plan's back (it does not
                # declare `writes`), so the next milestone's re-anchor must see a conflict.
                {"id": "a", "milestone": "one", "run": "echo v2 > terms.md"},
                {"id": "b", "milestone": "two", "depends_on": ["a"], "run": "echo b > b.txt"},
            ],
        },
    )
    summary = run_plan(plan=str(plan))
    assert summary["result"] == "needs_review"
    assert summary["needs_review"][0]["step"] == "b"
    assert not (tmp_path / "b.txt").exists()
