"""A rename closes the old id for a run already going under it (SQLite and PostgreSQL): after
``rename_plan``, that run can neither start a step nor claim an action under the old id — the
next run under the new id would not see them and could act again. On PostgreSQL a step start
that races the rename waits for it, then stops."""

from __future__ import annotations

import threading
import time

import pytest

from prefect_waymark.errors import LedgerError
from prefect_waymark.ledger import SqlLedger
from prefect_waymark.ledger.events import EventKind


def _complete(led: SqlLedger, plan: str, step: str, run: str) -> None:
    led.record(plan, EventKind.step_started, step_id=step, run_id=run)
    led.record(
        plan,
        EventKind.step_completed,
        step_id=step,
        run_id=run,
        def_hash="h",
        result_key="k",
        cached=False,
        output_tail=None,
        outputs={},
    )


def test_a_run_under_the_old_id_stops_after_a_rename(ledger_url: str) -> None:
    with SqlLedger(ledger_url) as led:
        led.record("old", EventKind.run_started, run_id="r1")
        _complete(led, "old", "s1", "r1")
        assert led.rename_plan("old", "new", by="tester")["steps"] == 1
        with pytest.raises(LedgerError, match="renamed to 'new' while this run went on"):
            led.record("old", EventKind.step_started, step_id="s2", run_id="r1")
        with pytest.raises(LedgerError, match="renamed to 'new'"):
            led.claim_action(
                plan_id="old", step_id="s2", action="pay", key="old/s2/pay", run_id="r1"
            )
        assert led.holds("old") == [] and led.receipts("old") == []
        # The new id goes on: its run claims the action once, under its own records.
        led.record("new", EventKind.step_started, step_id="s2", run_id="r2")
        claim = led.claim_action(
            plan_id="new", step_id="s2", action="pay", key="old/s2/pay", run_id="r2"
        )
        assert claim.status == "claimed"


@pytest.mark.postgres
def test_a_step_start_racing_the_rename_waits_then_stops(pg_url: str) -> None:
    """The rename's transaction, slowed down: it holds the rename's locks and has written its
    closing row when a step start of the old id arrives; the start waits, then stops."""
    with SqlLedger(pg_url) as led:
        led.record("old", EventKind.run_started, run_id="r1")
        _complete(led, "old", "s1", "r1")
    renamer, starter = SqlLedger(pg_url), SqlLedger(pg_url)
    outcome: list[BaseException | str] = []

    def start() -> None:
        try:
            starter.record("old", EventKind.step_started, step_id="s2", run_id="r1")
            outcome.append("started")
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome.append(exc)

    try:
        with renamer._database.transaction(write=True) as conn:
            for table in ("waymark_holds", "waymark_receipts", "waymark_steps"):
                conn.execute_raw(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")
            conn.execute_raw("INSERT INTO waymark_meta (key, value) VALUES ('renamed:old', 'new')")
            thread = threading.Thread(target=start)
            thread.start()
            time.sleep(1.5)
            assert outcome == []  # waiting for the rename to commit
        thread.join(30)
        assert len(outcome) == 1 and isinstance(outcome[0], LedgerError), outcome
        assert "renamed to 'new'" in str(outcome[0])
        assert starter.holds("old") == []  # its hold was rolled back with it
    finally:
        renamer.close()
        starter.close()
