"""A receipt that contradicts the ledger stops the plan at needs_review (the third kind of
conflict, beside refs and the contract): the ledger says the publishing step completed, the
receipts table disagrees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefect_waymark.ledger import default_ledger_url, open_ledger
from tests._support.helpers import run_cli, write_plan


def _plan(folder: Path) -> Path:
    return write_plan(
        folder,
        {
            "plan_id": "receipt-conflict",
            "steps": [
                {"id": "draft", "run": "echo draft > draft.md"},
                {
                    "id": "publish",
                    "depends_on": ["draft"],
                    "run": "echo published >> published.log",
                    "action": "publish-report",
                },
                {"id": "announce", "depends_on": ["publish"], "run": "echo hi >> announce.log"},
            ],
        },
    )


@pytest.mark.parametrize("tamper", ["deleted", "not_applied"])
def test_receipt_contradicting_the_ledger_stops_for_review(
    prefect_server: str, tmp_path: Path, tamper: str
) -> None:
    from sqlalchemy import create_engine, text

    from prefect_waymark.flows import run_plan

    plan = _plan(tmp_path)
    assert run_plan(plan=str(plan), until="publish")["result"] == "stopped"
    url = default_ledger_url(tmp_path)
    engine = create_engine(url)
    with engine.begin() as conn:  # another writer (or a person with SQL) changed the receipt
        if tamper == "deleted":
            conn.execute(text("DELETE FROM waymark_receipts"))
        else:
            conn.execute(text("UPDATE waymark_receipts SET state = 'not_applied'"))
    engine.dispose()

    summary = run_plan(plan=str(plan))
    assert summary["result"] == "needs_review"
    review = summary["needs_review"][0]
    assert review["step"] == "publish"
    assert "receipt contradicts the ledger" in review["reason"]
    assert summary["executed_steps"] == []
    assert not (tmp_path / "announce.log").exists()
    assert (tmp_path / "published.log").read_text() == "published\n"  # never repeated
    status = run_cli("status", str(plan), "--json")
    assert status.returncode == 4
    assert json.loads(status.stdout)["needs_review"][0]["step"] == "publish"
    with open_ledger(url) as led:
        assert led.step_states("receipt-conflict")["publish"].status == "needs_review"


def test_consistent_receipts_do_not_stop(prefect_server: str, tmp_path: Path) -> None:
    from prefect_waymark.flows import run_plan

    plan = _plan(tmp_path)
    assert run_plan(plan=str(plan), until="publish")["result"] == "stopped"
    summary = run_plan(plan=str(plan))
    assert summary["result"] == "completed"
    assert summary["executed_steps"] == ["announce"]
    assert (tmp_path / "published.log").read_text() == "published\n"
