"""The metrics can fail: violations forged directly in a scratch SQLite ledger (raw ``sqlite3``
inserts that bypass the ledger's holds, transition checks and the receipts' primary key) show up
in the metrics; the same history written through the ledger API gives the same clean metrics on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import Ledger, open_ledger
from prefect_waymark.ledger.events import EventKind
from prefect_waymark.metrics import compute_metrics
from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import run_cli, write_plan

PLAN_ID = "metrics-forged"
RUN_START = {"flow_run_id": None, "executor": "t", "workdir": ".", "host": "h", "pid": 1,
             "plan_hash": "p", "step_hashes": {}, "started_from": None, "max_steps": None,
             "until": None}  # fmt: skip


def _plan(folder: Path) -> Path:
    steps = [
        {"id": "a", "run": "echo a", "action": "pay"},
        {"id": "b", "run": "echo b", "depends_on": ["a"]},
        {"id": "c", "run": "echo c", "branch": "side"},
    ]
    return write_plan(folder, {"plan_id": PLAN_ID, "steps": steps})


def _clean_history(led: Ledger) -> None:
    """Two runs, as waymark writes them: run 1 does a (with its action) and c, run 2 does b."""
    started = {"def_hash": "d", "result_key": "k", "host": "h", "pid": 1}
    done = {"def_hash": "d", "result_key": "k", "cached": False, "output_tail": None, "outputs": {}}
    led.record(PLAN_ID, EventKind.run_started, run_id="r1", **RUN_START)
    led.record(PLAN_ID, EventKind.step_started, step_id="a", branch="main", run_id="r1", **started)
    claim = led.claim_action(plan_id=PLAN_ID, step_id="a", action="pay", key="K-pay", run_id="r1")
    led.settle_action("K-pay", outcome="applied", token=claim.record.token, run_id="r1")
    led.record(PLAN_ID, EventKind.step_completed, step_id="a", branch="main", run_id="r1", **done)
    led.record(PLAN_ID, EventKind.step_started, step_id="c", branch="side", run_id="r1", **started)
    led.record(PLAN_ID, EventKind.step_completed, step_id="c", branch="side", run_id="r1", **done)
    led.record(PLAN_ID, EventKind.run_started, run_id="r2", **RUN_START)
    led.record(PLAN_ID, EventKind.step_started, step_id="b", branch="main", run_id="r2", **started)


def _metrics(url: str, plan: Path) -> dict[str, Any]:
    with open_ledger(url, create=False) as led:
        return compute_metrics(load_plan(plan), led)


def _insert(
    db: Path, kind: str, step: str | None, branch: str | None, run: str, **data: Any
) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO waymark_events (plan_id, step_id, branch, kind, run_id, at, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (PLAN_ID, step, branch, kind, run, datetime.now(UTC).isoformat(), json.dumps(data)),
        )


def test_clean_history_gives_the_same_metrics_on_sqlite_and_postgres(
    ledger_url: str, tmp_path: Path
) -> None:
    plan = _plan(tmp_path)
    with open_ledger(ledger_url) as led:
        _clean_history(led)
    m = _metrics(ledger_url, plan)
    # `waymark metrics` reads receipts through the read-only reader
    from prefect_waymark.ledger import Ledger, open_reader

    with open_reader(ledger_url) as reader, open_ledger(ledger_url) as led:
        assert isinstance(reader, Ledger)
        assert reader.receipts(PLAN_ID) == led.receipts(PLAN_ID) != []
        assert reader.receipts(PLAN_ID, "c") == led.receipts(PLAN_ID, "c") == []
    assert m["duplicate_side_effects"]["value"] == 0
    assert m["duplicate_side_effects"]["keys"] == 1
    assert m["duplicate_side_effects"]["receipt_rows_duplicated"] == 0
    assert m["single_in_progress_compliance"]["value"] == 0
    assert m["single_in_progress_compliance"]["intervals"] == 3
    assert m["single_in_progress_compliance"]["open_now"] == 1  # b, still running
    assert m["resume_success_rate"]["value"] == 1.0
    assert m["plan_omission_rate"]["value"] == 0.0


def test_forged_duplicates_and_overlaps_are_reported(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    db = tmp_path / "scratch.db"
    url = f"sqlite:///{db}"
    with open_ledger(url) as led:
        _clean_history(led)
    clean = _metrics(url, plan)
    assert clean["duplicate_side_effects"]["value"] == 0
    assert clean["single_in_progress_compliance"]["value"] == 0

    # An overlap: a starts in branch main while b holds it — and a is completed, no re-run
    # requested: run 2 re-executes a completed step.
    _insert(db, "step_started", "a", "main", "r2", def_hash="d", result_key="k", host="h", pid=1)
    # The action applied a second time for its key, and a second receipt row for the key (the
    # primary key dropped by rebuilding the table without it).
    _insert(db, "action_applied", "a", "main", "r2", key="K-pay", action="pay", outcome="applied")
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "CREATE TABLE forged AS SELECT * FROM waymark_receipts;"
            "DROP TABLE waymark_receipts;"
            "ALTER TABLE forged RENAME TO waymark_receipts;"
            "INSERT INTO waymark_receipts SELECT * FROM waymark_receipts WHERE key = 'K-pay';"
        )
    # Another key claimed twice with no release in between: two runs both executed it.
    for run in ("r1", "r2"):
        _insert(db, "action_intent", "c", "side", run, key="K-mail", action="mail", claims=1)

    m = _metrics(url, plan)
    ip = m["single_in_progress_compliance"]
    assert ip["value"] == 1
    assert ip["detail"] == [
        {"branch": "main", "started": "a", "run_id": "r2", "while_in_progress": ["b"],
         "at": ip["detail"][0]["at"], "seq": ip["detail"][0]["seq"]}
    ]  # fmt: skip
    dup = m["duplicate_side_effects"]
    assert dup["value"] == 2  # K-pay and K-mail
    assert (dup["repeated_applied_events"], dup["intents_reexecuted"]) == (1, 1)
    assert dup["receipt_rows_duplicated"] == 1
    why = {d["key"]: d["why"] for d in dup["detail"]}
    assert why["K-pay"] == ["2 action_applied events", "2 receipt rows"]
    assert why["K-mail"] == ["claimed twice without a release"]
    rs = m["resume_success_rate"]
    assert (rs["resumed"], rs["failed"], rs["value"]) == (1, 1, 0.0)
    assert rs["detail"] == [{"run_id": "r2", "re_executed": ["a"], "repeated_actions": ["K-pay"]}]

    # The command shows them too.
    shown = run_cli("metrics", str(plan), "--ledger", url, "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["duplicate_side_effects"]["value"] == 2
    assert doc["single_in_progress_compliance"]["value"] == 1
    table = run_cli("metrics", str(plan), "--ledger", url)
    assert "2 of 2 action keys executed more than once" in table.stdout
    assert "1 overlaps in 4 in_progress intervals" in table.stdout
