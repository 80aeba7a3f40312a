"""Goal contract conflicts and forbidden actions in real Prefect runs.

A contract edited without a version bump, a revoked contract and an older version stop the
plan; a version bump marked accepted is followed; ``action:<glob>`` entries refuse matching
steps before they run (a drift event, shown in status).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import yaml

from prefect_waymark.blocks import GoalContractBlock
from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import flow_outcome
from tests._support.plans import counting_chain


def count(folder: Path, name: str) -> int:
    path = folder / f"{name}.count"
    return len(path.read_text().splitlines()) if path.exists() else 0


def ledger_events(folder: Path, plan_id: str, kind: str) -> list[dict[str, Any]]:
    with open_ledger(f"sqlite:///{folder / '.waymark' / 'ledger.db'}") as led:
        return [e.data | {"step_id": e.step_id} for e in led.events(plan_id, kinds=[kind])]


def test_contract_block_edit_bump_and_revoke(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    name = f"gc-{uuid.uuid4().hex[:8]}"
    contract = GoalContractBlock(
        goal_id="report",
        objective="Publish the Q3 report",
        acceptance=["numbers reconciled"],
        forbidden=["never email customers"],
    )
    contract.save(name)
    plan = write_plan(tmp_path, counting_chain("gc", "abcd", contract={"block": name}))
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["a"]
    first = ledger_events(tmp_path, "gc", "accepted_versions")[0]["contract"]
    assert (first["goal_id"], first["version"], first["source"]) == ("report", 1, f"block:{name}")
    start = ledger_events(tmp_path, "gc", "reanchor")[0]
    assert start["point"] == "run_start" and start["forbidden"] == ["never email customers"]

    # Edited in place without a version bump: stop before anything runs.
    contract.objective = "Publish the Q3 and Q4 reports"
    contract.save(name, overwrite=True)
    out = run_plan(plan=str(plan))
    assert out["result"] == "needs_review" and out["executed_steps"] == []
    item = out["needs_review"][0]
    assert item["step"] == "b" and item["ref"] == "contract"
    assert "edited without a version bump" in item["reason"]
    assert run_cli("review", str(plan), "--accept").returncode == 0
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["b"]

    # A real new version, marked accepted by its author: followed, recorded, no review.
    contract.version = 2
    contract.acceptance = ["numbers reconciled", "CFO sign-off"]
    contract.save(name, overwrite=True)
    out = run_plan(plan=str(plan), max_steps=1)
    assert out["executed_steps"] == ["c"] and out["needs_review"] == []
    assert ledger_events(tmp_path, "gc", "accepted_versions")[-1]["contract"]["version"] == 2

    # Revoked: stop, nothing runs; the reason names the status.
    contract.version = 3
    contract.status = "revoked"
    contract.save(name, overwrite=True)
    out = run_plan(plan=str(plan))
    assert out["result"] == "needs_review" and out["executed_steps"] == []
    assert "is revoked" in out["needs_review"][0]["reason"]
    assert [count(tmp_path, s) for s in "abcd"] == [1, 1, 1, 0]
    # Accepting does not un-revoke it: the next run stops again.
    proc = run_cli("review", str(plan), "--accept")
    assert proc.returncode == 0 and "the contract is revoked" in proc.stdout
    assert run_plan(plan=str(plan))["result"] == "needs_review"
    assert count(tmp_path, "d") == 0


def test_inline_contract_edited_without_version_bump(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    doc = counting_chain(
        "inline-gc",
        "ab",
        contract={"goal_id": "g", "version": 4, "objective": "Migrate the billing DB"},
    ).to_dict()
    plan = write_plan(tmp_path, doc)
    assert run_plan(plan=str(plan), max_steps=1)["executed_steps"] == ["a"]
    doc["contract"]["objective"] = "Migrate the billing DB and drop the old one"
    plan.write_text(yaml.safe_dump(doc))
    out = run_plan(plan=str(plan))
    assert out["result"] == "needs_review" and count(tmp_path, "b") == 0
    assert "v4 was edited without a version bump" in out["needs_review"][0]["reason"]
    # Going back to an older version is a conflict too.
    doc["contract"]["version"] = 3
    plan.write_text(yaml.safe_dump(doc))
    assert run_cli("review", str(plan), "--accept").returncode == 0
    out = run_plan(plan=str(plan))
    assert "older than the accepted v4" in out["needs_review"][0]["reason"]


PROBE = """
import json

def show(ctx):
    (ctx.workdir / "forbidden.json").write_text(json.dumps(ctx.forbidden))
"""


def test_forbidden_action_is_refused_before_it_runs(prefect_server: str, tmp_path: Path) -> None:
    name = f"gc-{uuid.uuid4().hex[:8]}"
    GoalContractBlock(
        goal_id="vendor-onboarding",
        objective="Onboard the vendor",
        forbidden=["action:pay-*", "Never email the vendor's customers"],
    ).save(name)
    (tmp_path / "probe.py").write_text(PROBE)
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "forbid",
            "contract": {"block": name},
            "steps": [
                {"id": "prep", "call": "probe:show"},
                {
                    "id": "pay",
                    "depends_on": ["prep"],
                    "action": "pay-vendor",
                    "run": "echo paid >> pay.count",
                },
                {"id": "report", "depends_on": ["prep"], "run": "echo r >> report.count"},
            ],
        },
    )
    ended, summary = flow_outcome(plan)
    assert ended == "Failed"
    assert summary.failed_steps == ["pay"] and "report" in summary.executed_steps
    assert count(tmp_path, "pay") == 0 and count(tmp_path, "report") == 1
    # The step context carries the contract's forbidden entries (loaded from the block).
    assert json.loads((tmp_path / "forbidden.json").read_text()) == [
        "action:pay-*",
        "Never email the vendor's customers",
    ]
    drift = ledger_events(tmp_path, "forbid", "drift")
    assert len(drift) == 1
    assert drift[0]["rule"] == "action:pay-*" and drift[0]["drift"] == "forbidden_action"
    assert drift[0]["action"] == "pay-vendor" and drift[0]["step_id"] == "pay"
    proc = run_cli("status", str(plan))
    assert "pay" in proc.stdout and "forbidden by goal contract 'vendor-onboarding'" in proc.stdout
    doc = json.loads(run_cli("status", str(plan), "--json").stdout)
    pay = next(s for s in doc["steps"] if s["id"] == "pay")
    assert pay["status"] == "failed" and "refused before it ran" in pay["error"]


LONG_STEP = """
def work(ctx):
    for i in range(30):
        with open(ctx.workdir / "work.count", "a") as fh:
            fh.write(f"{i}\\n")
        if i == 13:  # someone edits the terms while the long step is running
            (ctx.workdir / "terms.md").write_text("edited by legal")
        ctx.tick(every=5)
"""


def test_tick_re_anchors_inside_a_long_call_step(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    (tmp_path / "terms.md").write_text("v1")
    (tmp_path / "longstep.py").write_text(LONG_STEP)
    plan = write_plan(
        tmp_path,
        {
            "plan_id": "ticks",
            "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
            "steps": [{"id": "work", "call": "longstep:work", "reads": ["terms"], "retries": 2}],
        },
    )
    out = run_plan(plan=str(plan))
    assert out["result"] == "needs_review"
    item = out["needs_review"][0]
    assert item["step"] == "work" and item["ref"] == "terms" and "tick 15" in item["reason"]
    # Stopped at the first re-anchor after the edit (tick 15), not retried, not run to the end.
    assert count(tmp_path, "work") == 15
    points = [e["point"] for e in ledger_events(tmp_path, "ticks", "reanchor")]
    assert points.count("tick") == 3
