"""The SQLite ledger's text is SQLAlchemy's: every statement of ``ledger/statements.py``
compiled for SQLite is its text, and a ledger created on ``sqlite3`` from the DDL text has the
very tables, indexes and triggers ``metadata.create_all`` gives (read from ``sqlite_master``)."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.dialects import sqlite

from prefect_waymark.ledger import SqlLedger
from prefect_waymark.ledger.dbapi_conn import DbapiConnection
from prefect_waymark.ledger.statements import ALL, Stmt, table


def _flat(sql: str) -> str:
    return " ".join(sql.split())


@pytest.mark.parametrize("stmt", ALL, ids=lambda s: s.name)
def test_each_statement_is_its_sqlalchemy_form_compiled_for_sqlite(stmt: Stmt) -> None:
    # An INSERT without values() names the columns it is given: the text's own.
    keys = [k for k in re.findall(r":(\w+)", stmt.sqlite) if not k.startswith("p_")]
    compiled = stmt.sa("sqlite").compile(
        dialect=sqlite.dialect(paramstyle="named"), column_keys=keys
    )
    assert _flat(compiled.string) == stmt.sqlite
    assert stmt.sa("postgresql") is not None  # and PostgreSQL has a form of each


def test_every_statement_of_the_module_is_checked() -> None:
    from prefect_waymark.ledger import statements

    found = [v for v in vars(statements).values() if isinstance(v, Stmt)]
    assert len(found) == len(ALL) >= 20


def _schema(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as raw:
        rows = raw.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY type, name"
        ).fetchall()
    return [(t, n, _flat(s)) for t, n, s in rows]


def test_a_ledger_created_on_sqlite3_has_the_schema_sqlalchemy_creates(tmp_path: Path) -> None:
    made = {}
    for lean in (True, False):
        db = tmp_path / f"lean-{lean}.db"
        led = SqlLedger(f"sqlite:///{db}", lean=lean)
        assert (led._lean is not None) == lean
        led.close()
        made[lean] = _schema(db)
    assert made[True] == made[False]
    kinds = [t for t, _, _ in made[True]]
    assert kinds.count("table") == 5 and kinds.count("index") == 2 and kinds.count("trigger") == 2


def test_the_events_are_append_only_on_a_ledger_made_on_sqlite3(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with SqlLedger(f"sqlite:///{db}") as led:
        led.record("p", "run_started", run_id="r1")
    with sqlite3.connect(db) as raw, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM waymark_events")


def test_a_rare_commands_statement_runs_on_the_sqlite3_connection(tmp_path: Path) -> None:
    """What a rename, an archive or a migration runs there: values inside the statement, an
    ``IN`` list, many rows at once, a float column — compiled for SQLite where it runs."""
    from sqlalchemy import func, insert, select, update

    db = tmp_path / "ledger.db"
    with SqlLedger(f"sqlite:///{db}") as led:
        assert led._lean is not None
        meta, holds = table("waymark_meta"), table("waymark_holds")
        with led._lean.begin() as conn:
            assert isinstance(conn, DbapiConnection)
            conn.execute(insert(meta).values(key="a", value="1"))
            conn.execute(insert(meta), [{"key": "b", "value": "2"}, {"key": "c", "value": "3"}])
            with pytest.raises(ValueError, match="no rows"):
                conn.execute(insert(meta), [])
            rows = conn.execute(
                select(meta.c.key, meta.c.value).where(meta.c.key.in_(["a", "c", "zz"]))
            ).all()
            assert sorted((r.key, r.value) for r in rows) == [("a", "1"), ("c", "3")]
            hold = {"plan_id": "p", "branch": "main", "step_id": "s", "run_id": "r"}
            extra = {"host": "h", "pid": 1, "since": "t", "lease_until": 5}
            conn.execute(insert(holds).values(**hold, **extra))
            conn.execute(update(holds).where(holds.c.run_id == "r").values(lease_until=7))
            count = conn.execute(select(func.count()).select_from(meta)).scalar_one()
        lease = led.holds("p")[0].lease_until
    assert count >= 5  # the new ledger's own rows and the three above
    assert lease == 7.0 and isinstance(lease, float)


def test_opening_a_sqlite_ledger_imports_no_sqlalchemy(tmp_path: Path) -> None:
    """Creating, writing (an append, a claim and its receipt) and reading a SQLite ledger: no
    SQLAlchemy, no SQLModel in the process."""
    db = tmp_path / "ledger.db"
    code = f"""
import sys
from prefect_waymark.ledger import open_ledger
from prefect_waymark.ledger.light_events import light_events
led = open_ledger({f"sqlite:///{db}"!r})
led.record("p", "step_started", step_id="a", run_id="r1")
claim = led.claim_action(plan_id="p", step_id="a", action="x", key="k", run_id="r1")
led.settle_action("k", outcome="applied", token=claim.record.token)
led.record("p", "step_completed", step_id="a", run_id="r1")
assert led.step_states("p")["a"].status == "completed"
assert len(light_events(led, "p", ["step_started"])) == 1 and led.receipts("p")
led.renew("r1", 60); led.holds("p"); led.events("p"); led.last_event("p", ["step_started"])
led.close()
print(sorted(m for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "sqlmodel")))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout[-2000:]
