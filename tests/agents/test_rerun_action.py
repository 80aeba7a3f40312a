"""A `waymark rerun` of an agent's action step whose action was done: the action is
never done twice. `next` and `start` tell the next executor the receipt that stands, `done`
completes the step on it without a new receipt, and a second receipt is refused — nothing of it
recorded. Real `waymark` subprocesses on a real SQLite ledger, no Prefect server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import open_ledger
from tests._support.helpers import run_cli, write_plan

PLAN: dict[str, Any] = {
    "plan_id": "invoice",
    "title": "Send the invoice",
    "steps": [
        {"id": "send", "kind": "agent", "instructions": "Send the invoice.",
         "action": "send-invoice"},
    ],
}  # fmt: skip
NO_SERVER = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}


def cli(*args: str) -> Any:
    """`waymark` with no Prefect server to reach (check-ins need none)."""
    return run_cli(*args, env=NO_SERVER)


def test_after_a_rerun_the_action_is_not_done_again(tmp_path: Path) -> None:
    p = str(write_plan(tmp_path, PLAN))

    assert cli("start", p, "send", "--executor", "a").returncode == 0
    proc = cli("done", p, "send", "--executor", "a", "--receipt", "external_id=inv-1")
    assert proc.returncode == 0, proc.stderr
    proc = cli("rerun", p, "send")
    assert proc.returncode == 0, proc.stderr
    assert "whoever takes the step is told so" in proc.stdout
    assert "finds the receipt and skips it" not in proc.stdout  # not true of an agent's step

    doc = json.loads(cli("next", p, "--executor", "b", "--json").stdout)
    (receipt,) = doc["step"]["receipts"]
    assert receipt["external_id"] == "inv-1" and receipt["by"] == "a"
    assert receipt["key"] == "invoice/send/send-invoice"
    assert "do not do it again" in receipt["note"]
    text = cli("next", p, "--executor", "b").stdout
    assert "action send-invoice: applied at" in text and "external id inv-1" in text

    proc = cli("start", p, "send", "--executor", "b")
    assert proc.returncode == 0 and "do not do it again" in proc.stdout, proc.stdout
    proc = cli("done", p, "send", "--executor", "b", "--receipt", "external_id=inv-2")
    assert proc.returncode == 2 and "has a receipt already" in proc.stderr, proc.stderr
    assert "(no --receipt) completes the step" in proc.stderr
    db = f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}"
    with open_ledger(db) as led:
        assert led.step_states("invoice")["send"].status == "in_progress"  # nothing recorded
    proc = cli("done", p, "send", "--executor", "b")
    assert proc.returncode == 0, proc.stderr
    with open_ledger(db) as led:
        st = led.step_states("invoice")["send"]
        rows = led.receipts("invoice", "send")
    assert st.status == "completed" and st.executor == "b"
    assert [(r.state, r.external_id) for r in rows] == [("applied", "inv-1")]  # one, unchanged


def test_an_action_step_without_a_receipt_still_needs_one(tmp_path: Path) -> None:
    p = str(write_plan(tmp_path, PLAN))
    assert run_cli("start", p, "send", "--executor", "a", env=NO_SERVER).returncode == 0
    proc = run_cli("done", p, "send", "--executor", "a", env=NO_SERVER)
    assert proc.returncode == 2 and "give --receipt external_id=" in proc.stderr
    doc = json.loads(run_cli("next", p, "--executor", "a", "--json", env=NO_SERVER).stdout)
    assert doc["step"]["receipts"] == []


def test_a_renamed_action_is_another_action_and_needs_its_own_receipt(tmp_path: Path) -> None:
    p = str(write_plan(tmp_path, PLAN))
    assert run_cli("start", p, "send", "--executor", "a", env=NO_SERVER).returncode == 0
    proc = run_cli("done", p, "send", "--executor", "a", "--receipt", "external_id=inv-1",
                   env=NO_SERVER)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    renamed = {**PLAN, "steps": [{**PLAN["steps"][0], "action": "charge-card"}]}
    write_plan(tmp_path, renamed)
    proc = run_cli("rerun", p, "send", env=NO_SERVER)
    assert proc.returncode == 0 and "committed receipt" not in proc.stdout, proc.stdout
    doc = json.loads(run_cli("next", p, "--executor", "b", "--json", env=NO_SERVER).stdout)
    assert doc["step"]["receipts"] == []  # send-invoice's receipt is not charge-card's
    proc = run_cli("start", p, "send", "--executor", "b", env=NO_SERVER)
    assert proc.returncode == 0 and "do not do it again" not in proc.stdout
    proc = run_cli("done", p, "send", "--executor", "b", env=NO_SERVER)
    assert proc.returncode == 2 and "give --receipt external_id=" in proc.stderr
    proc = run_cli("done", p, "send", "--executor", "b", "--receipt", "external_id=ch-1",
                   env=NO_SERVER)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        rows = led.receipts("invoice", "send")
    assert sorted((r.action, r.external_id) for r in rows) == [
        ("charge-card", "ch-1"), ("send-invoice", "inv-1")
    ]  # fmt: skip


def test_a_renamed_agent_step_finds_its_actions_receipt(tmp_path: Path) -> None:
    """The receipt follows the action: an agent's step renamed after its action was applied is
    told so at `start`, completes without a new receipt, and a second one is refused."""
    p = str(write_plan(tmp_path, PLAN))

    assert cli("start", p, "send", "--executor", "a").returncode == 0
    proc = cli("done", p, "send", "--executor", "a", "--receipt", "external_id=inv-1")
    assert proc.returncode == 0, proc.stderr
    renamed = {**PLAN, "steps": [{**PLAN["steps"][0], "id": "send-invoice"}]}
    write_plan(tmp_path, renamed)
    proc = cli("start", p, "send-invoice", "--executor", "b")
    assert proc.returncode == 0 and "do not do it again" in proc.stdout, proc.stdout
    proc = cli("done", p, "send-invoice", "--executor", "b", "--receipt", "external_id=inv-2")
    assert proc.returncode == 2 and "has a receipt already" in proc.stderr, proc.stderr
    proc = cli("done", p, "send-invoice", "--executor", "b")
    assert proc.returncode == 0, proc.stderr
    with open_ledger(f"sqlite:///{tmp_path / '.waymark' / 'ledger.db'}") as led:
        rows = led.receipts("invoice")
        assert led.step_states("invoice")["send-invoice"].status == "completed"
    assert [(r.key, r.external_id) for r in rows] == [("invoice/send/send-invoice", "inv-1")]
