"""The schema a new SQLite ledger gets from its statements (``ledger/sql.py``): five tables,
three indexes, the two append-only triggers; and neither importing the ledger package nor
opening a ledger loads SQLAlchemy."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_waymark.ledger import SqlLedger


def test_a_new_sqlite_ledger_has_the_tables_indexes_and_triggers(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    SqlLedger(f"sqlite:///{db}").close()
    with sqlite3.connect(db) as raw:
        rows = raw.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
    kinds = [t for t, _ in rows]
    assert kinds.count("table") == 5 and kinds.count("index") == 3 and kinds.count("trigger") == 2
    assert {n for t, n in rows if t == "index"} == {
        "ix_waymark_events_plan_seq",
        "ix_waymark_events_plan_kind_seq",
        "ix_waymark_events_plan_run_seq",
    }
    assert {n for t, n in rows if t == "table"} == {
        "waymark_events",
        "waymark_holds",
        "waymark_meta",
        "waymark_receipts",
        "waymark_steps",
    }


def test_the_events_are_append_only_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with SqlLedger(f"sqlite:///{db}") as led:
        led.record("p", "run_started", run_id="r1")
    with sqlite3.connect(db) as raw, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM waymark_events")


def test_a_holds_lease_is_a_float(tmp_path: Path) -> None:
    with SqlLedger(f"sqlite:///{tmp_path / 'ledger.db'}") as led:
        led.record("p", "step_started", step_id="s", branch="main", run_id="r")
        assert led.renew("r", 7) == 1
        lease = led.holds("p")[0].lease_until
    assert isinstance(lease, float)


def test_importing_the_ledger_package_loads_no_sqlalchemy() -> None:
    code = (
        "import sys, prefect_waymark.ledger as l\n"
        "l.EventKind; l.resolve_ledger_url; l.default_ledger_url\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'sqlmodel')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout[-2000:]


def test_opening_writing_and_reading_a_ledger_loads_no_sqlalchemy(tmp_path: Path) -> None:
    """The ledger runs on the driver itself: a process that opens a ledger, appends, reads and
    claims an action imports no SQL toolkit (issue 36: its import alone cost ~0.25 s)."""
    code = (
        "import sys\n"
        "from prefect_waymark.ledger import open_ledger\n"
        f"led = open_ledger('sqlite:///{tmp_path / 'l.db'}')\n"
        "led.record('p', 'step_started', step_id='s', run_id='r')\n"
        "led.claim_action(plan_id='p', step_id='s', action='a', key='k', run_id='r')\n"
        "assert led.step_states('p')['s'].status == 'in_progress'\n"
        "assert len(led.events('p')) == 2\n"
        "led.close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'sqlmodel')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout[-2000:]
