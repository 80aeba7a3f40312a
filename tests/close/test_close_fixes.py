"""`waymark close` after the review: contract ids are unique across acceptance and exit
conditions (a block's repeated ids are unmet), ``--evidence`` is checked and kept when the block
cannot be read, ``forced`` means something was unmet, every hint on a closed plan is a command
that works, and a rerun or skip voids a verification step's completion."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.errors import PlanClosedError
from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.metrics import compute_metrics
from prefect_waymark.plan import load_plan
from tests._support.helpers import run_cli, write_plan

from ._plans import close_plan_doc, events, ledger_of


def _doc(proc: Any) -> dict[str, Any]:
    try:
        out: dict[str, Any] = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(proc.stdout + proc.stderr) from exc
    return out


def test_contract_ids_are_unique_across_acceptance_and_exit_conditions(tmp_path: Path) -> None:
    doc = close_plan_doc(acceptance=[{"id": "E1", "text": "twice"}], exit_conditions=["x"])
    doc["steps"][0]["serves"] = ["E1"]
    doc["steps"][1]["serves"] = []
    checked = run_cli("validate", str(write_plan(tmp_path, doc)))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    out = checked.stdout + checked.stderr
    assert "contract.exit_conditions[0]" in out and "duplicate id 'E1'" in out
    assert "first used by acceptance[0]" in out and "Traceback" not in out


def test_a_block_with_repeated_ids_is_unmet_and_evidence_is_checked_when_unreadable(
    prefect_server: str, tmp_path: Path
) -> None:
    from prefect_waymark.blocks.goal_contract import GoalContractBlock

    name = f"gc-dup-{uuid.uuid4().hex[:8]}"
    GoalContractBlock(
        goal_id="dup",
        objective="o",
        acceptance=[{"id": "E1", "text": "an acceptance item"}],
        exit_conditions=["an exit condition"],
    ).save(name)
    doc = close_plan_doc()
    doc["contract"] = {"block": name}
    for s in doc["steps"]:
        s["serves"] = []
    p = str(write_plan(tmp_path / "dup", doc))
    refused = run_cli("close", p, "--json", "--evidence", "E1: shown")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert _doc(refused)["unmet"][0]["what"] == (
        f"the contract block '{name}' has duplicate item ids: E1"
    )

    doc["contract"] = {"block": f"no-such-{uuid.uuid4().hex[:8]}"}
    lost = str(write_plan(tmp_path / "lost", doc))
    url = ledger_of(tmp_path / "lost")
    bad = run_cli("close", lost, "--force", "--reason", "gone", "--evidence", "no colon here")
    assert bad.returncode == 2 and 'expected "ID: text"' in bad.stderr, bad.stdout + bad.stderr
    assert not (tmp_path / "lost" / ".waymark").exists()  # nothing recorded, no ledger made
    kept = run_cli("close", lost, "--force", "--reason", "gone", "--evidence", "E1: announced")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    [ev] = [e for e in events(url, "closing") if e.kind == EventKind.plan_closed]
    assert ev.data["given"] == {"E1": "announced"} and ev.data["forced"] is True


def test_every_hint_on_a_closed_plan_is_a_command_that_works(tmp_path: Path) -> None:
    doc = {
        "plan_id": "hinted",
        "steps": [
            {"id": "s1", "run": "true"},
            {"id": "pay", "run": "true", "action": "pay", "depends_on": ["s1"]},
        ],
    }
    p, url = str(write_plan(tmp_path, doc)), ledger_of(tmp_path)
    with open_ledger(url) as led:
        led.record("hinted", EventKind.step_needs_review, step_id="s1", reason="look", details={})
        led.record("hinted", EventKind.step_needs_review, step_id="pay", reason="unknown",
                   details={})  # fmt: skip
        led.record("hinted", EventKind.action_intent, step_id="pay", key="hinted/pay/pay",
                   action="pay", by="run-1")  # fmt: skip
    closed = run_cli("close", p, "--force", "--reason", "dropped", "--by", "ann", cwd=tmp_path)
    assert closed.returncode == 0, closed.stdout + closed.stderr
    status = run_cli("status", p, cwd=tmp_path)
    assert "— forced, with 3 thing(s) unmet" in status.stdout, status.stdout
    count = len(events(url, "hinted"))

    rerun = run_cli("review", p, "--step", "s1", "--rerun", cwd=tmp_path)
    assert rerun.returncode == 2, rerun.stdout + rerun.stderr
    assert "was closed on" in rerun.stderr and "will run again" not in rerun.stdout
    assert len(events(url, "hinted")) == count

    receipt = run_cli("receipt", p, "pay", "--not-applied", cwd=tmp_path)
    assert receipt.returncode == 0, receipt.stdout + receipt.stderr
    assert "`waymark run` continues" not in receipt.stdout
    assert "the plan is closed, so no run continues it" in receipt.stdout

    for args in (("deploy", p, "--pool", "nowhere"), ("serve", p)):
        refused = run_cli(*args, cwd=tmp_path)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "nothing was deployed" in refused.stderr and "by ann: dropped" in refused.stderr

    renamed = write_plan(tmp_path, {**doc, "plan_id": "hinted2"})
    moved = run_cli("rename-plan", str(renamed), "--from", "hinted", cwd=tmp_path)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "next: waymark run" not in moved.stdout and "the plan stays closed" in moved.stdout
    with open_ledger(url) as led, pytest.raises(PlanClosedError, match="already closed"):
        led.close_plan("hinted2", lambda states: None)  # the new id is closed in the ledger too
    again = run_cli("skip", str(renamed), "s1", "--reason", "x", cwd=tmp_path)
    assert again.returncode == 2 and "was closed" in again.stderr


def test_a_rerun_or_a_skip_voids_a_verification_steps_completion(tmp_path: Path) -> None:
    doc = {
        "plan_id": "verified",
        "steps": [
            {"id": "build", "run": "true"},
            {"id": "check", "run": "true", "verify": True, "depends_on": ["build"]},
        ],
    }
    spec = load_plan(write_plan(tmp_path, doc))
    url = ledger_of(tmp_path)

    def done(led: Any, step: str) -> None:
        led.record("verified", EventKind.step_started, step_id=step, branch="main", run_id="r",
                   def_hash="h", result_key=None, host="h", pid=0)  # fmt: skip
        led.record("verified", EventKind.step_completed, step_id=step, branch="main",
                   run_id="r", def_hash="h")  # fmt: skip

    with open_ledger(url) as led:
        done(led, "build")
        done(led, "check")
        assert compute_metrics(spec, led)["verification_coverage"]["value"] == 1.0
        led.record("verified", EventKind.step_rerun_requested, step_id="check", by="b", reason="")
        assert compute_metrics(spec, led)["verification_coverage"]["value"] == 0.0
        led.record("verified", EventKind.step_skipped, step_id="check", reason="no", by="b")
        assert compute_metrics(spec, led)["verification_coverage"]["value"] == 0.0
