"""The ledger's connection layer on the drivers themselves: what a statement reports and a URL
becomes are the same on SQLite and PostgreSQL, and a PostgreSQL role that may write the tables
but does not own them migrates a 0.2.0 ledger (the index DDL of schema 3 is let through)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from prefect_waymark.ledger import SCHEMA_VERSION, open_ledger
from prefect_waymark.ledger import sql as statements
from prefect_waymark.ledger.sql_ledger import SqlLedger
from prefect_waymark.ledger.urls import ledger_target
from tests._support.postgres import PgServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def led(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = (
        f"sqlite:///{tmp_path / 'l.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    ledger = SqlLedger(url)
    yield ledger
    ledger.close()


def test_a_returning_statement_counts_its_row_on_both_backends(led: SqlLedger) -> None:
    hold = dict.fromkeys(statements.HOLD_COLUMNS, "x") | {"pid": 1, "lease_until": 1.0}
    with led._write() as conn:
        taken = conn.execute(statements.TAKE_HOLD, hold)
        again = conn.execute(statements.TAKE_HOLD, hold)  # the primary key: nothing inserted
    assert (taken.rowcount, len(taken.all())) == (1, 1)
    assert (again.rowcount, again.first()) == (0, None)


def test_repeated_hosts_are_libpqs_list_and_the_password_is_unquoted() -> None:
    target = ledger_target("postgresql+psycopg://u:p%40ss@/db?host=a&host=b&port=5432&port=5433")
    assert target.password == "p@ss" and target.database == "db"
    assert "host=a,b" in target.conninfo and "port=5432,5433" in target.conninfo


@pytest.mark.postgres
def test_a_role_that_does_not_own_the_tables_migrates_a_0_2_0_ledger(
    pg_server: PgServer, pg_url: str
) -> None:
    pg_server.restore(pg_url, FIXTURES / "v0.2.0-postgres" / "ledger.sql")
    role = f"waymark_runner_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url.replace("+psycopg", ""), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    try:
        url = pg_url.replace("://postgres@", f"://{role}@")
        with open_ledger(url) as runner:  # a run's open: migrates
            runner.record("upgrade-fixture", "run_started", run_id="by-runner")
            assert runner.step_states("upgrade-fixture")["publish"].status == "completed"
        with psycopg.connect(pg_url.replace("+psycopg", "")) as admin:
            version = admin.execute(
                "SELECT value FROM waymark_meta WHERE key = 'schema_version'"
            ).fetchone()
        assert version is not None and version[0] == str(SCHEMA_VERSION)
    finally:
        with psycopg.connect(pg_url.replace("+psycopg", ""), autocommit=True) as admin:
            admin.execute(f"REASSIGN OWNED BY {role} TO postgres")
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
