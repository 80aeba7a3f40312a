"""On SQLite, an action's intent and its receipt are committed with ``synchronous=FULL``.

The ledger runs SQLite in WAL mode with ``synchronous=NORMAL``: a commit survives a killed
process (the kill tests prove that) but a power loss or an OS crash may take back what was
committed since the last checkpoint. For an intent that would be the one loss that repeats an
irreversible action: the effect happened, the intent is gone, the next run claims the key again.
So claims and settlements commit with ``FULL`` (the WAL is synced before the commit returns) and
the connection goes back to ``NORMAL`` for everything else.

On PostgreSQL a durable transaction sets ``synchronous_commit = on`` for itself, whatever the
database or role says.

A power loss cannot be caused here; these tests read the setting each transaction ran with, on
the very connection that ran it (SQLite answers ``PRAGMA synchronous`` with 1 for NORMAL and 2
for FULL).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import SqlLedger

PLAN = "durable-plan"


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """(what, synchronous level) for every receipt row change and every action event."""
    levels: list[tuple[str, Any]] = []
    insert_new = SqlLedger._insert_new
    event = SqlLedger._event

    def level(conn: Any) -> Any:
        if conn.backend == "postgresql":
            return conn.execute_raw("SHOW synchronous_commit").scalar_one()
        return int(conn.execute_raw("PRAGMA synchronous").scalar_one())

    def spy_insert(self: SqlLedger, conn: Any, rec: Any) -> bool:
        levels.append(("insert", level(conn)))
        return insert_new(self, conn, rec)

    def spy_event(self: SqlLedger, conn: Any, rec: Any, kind: Any, *a: Any, **k: Any) -> None:
        levels.append((str(kind), level(conn)))
        event(self, conn, rec, kind, *a, **k)

    monkeypatch.setattr(SqlLedger, "_insert_new", spy_insert)
    monkeypatch.setattr(SqlLedger, "_event", spy_event)
    return levels


def _pool_level(led: SqlLedger) -> int:
    """The level the ledger's connection is at between transactions: that of a connection from
    the ledger's pool."""
    with led._database.connection() as conn:
        return int(conn.execute_raw("PRAGMA synchronous").scalar_one())


def test_claims_and_receipts_commit_with_full_sync(
    tmp_path: Path, seen: list[tuple[str, Any]]
) -> None:
    led = SqlLedger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        assert _pool_level(led) == 1  # the ledger's own setting: NORMAL
        claim = led.claim_action(plan_id=PLAN, step_id="pay", action="pay", key="k1", run_id="r1")
        assert claim.status == "claimed"
        led.settle_action("k1", outcome="applied", token=claim.record.token, external_id="x-1")
        assert _pool_level(led) == 1  # the pool's connection went back to NORMAL
        led.record(PLAN, "step_started", step_id="other", branch="side", run_id="r1")
        assert led.receipt("k1") is not None and led.receipt("k1").state == "applied"  # type: ignore[union-attr]
    finally:
        led.close()
    assert seen == [("insert", 2), ("action_intent", 2), ("action_applied", 2)]


def test_a_failed_claim_leaves_the_connection_at_normal(
    tmp_path: Path, seen: list[tuple[str, Any]]
) -> None:
    """A claim that raises (the key belongs to another action) rolls back and still restores."""
    led = SqlLedger(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        led.claim_action(plan_id=PLAN, step_id="pay", action="pay", key="k1", run_id="r1")
        with pytest.raises(Exception, match="already belongs to action"):
            led.claim_action(plan_id=PLAN, step_id="mail", action="mail", key="k1", run_id="r1")
        assert _pool_level(led) == 1
        assert [r.action for r in led.receipts(PLAN)] == ["pay"]
    finally:
        led.close()
    assert {lvl for _, lvl in seen} == {2}


def test_a_commit_that_fails_is_its_own_error_and_the_pool_stays_at_normal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A COMMIT that fails can leave SQLite's transaction open, where the pragma is refused: the
    claim raises the commit's own error (nothing is written) and no connection goes back to the
    pool at FULL. The failure is a deferred foreign key, the one COMMIT failure SQLite lets a
    test cause on purpose (a full disk or an I/O error behave alike)."""
    from prefect_waymark.ledger import connection

    db = tmp_path / "ledger.db"
    led = SqlLedger(f"sqlite:///{db}")
    try:
        pragmas = connection.set_ledger_pragmas

        def with_foreign_keys(raw: sqlite3.Connection) -> None:
            pragmas(raw)
            raw.execute("PRAGMA foreign_keys=ON")

        monkeypatch.setattr(connection, "set_ledger_pragmas", with_foreign_keys)
        led._database.close()  # the pool's next connections check foreign keys
        with led._write() as conn:
            conn.execute_raw("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
            conn.execute_raw(
                "CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)"
            )
        insert_new = SqlLedger._insert_new

        def orphan_then_insert(self: SqlLedger, conn: Any, rec: Any) -> bool:
            conn.execute_raw("INSERT INTO child (p) VALUES (42)")  # fails at COMMIT
            return insert_new(self, conn, rec)

        monkeypatch.setattr(SqlLedger, "_insert_new", orphan_then_insert)
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            led.claim_action(plan_id=PLAN, step_id="pay", action="pay", key="k1", run_id="r1")
        monkeypatch.setattr(SqlLedger, "_insert_new", insert_new)
        assert _pool_level(led) == 1
        assert led.receipt("k1") is None  # rolled back: no intent, no event
        assert led.step_states(PLAN) == {}
        claim = led.claim_action(plan_id=PLAN, step_id="pay", action="pay", key="k1", run_id="r1")
        assert claim.status == "claimed"  # the ledger works on afterwards
    finally:
        led.close()


def test_on_postgresql_claims_commit_synchronously_whatever_the_database_says(
    pg_url: str, seen: list[tuple[str, Any]]
) -> None:
    import psycopg

    dbname = pg_url.rsplit("/", 1)[1]
    libpq = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{dbname}" SET synchronous_commit = off')
    led = SqlLedger(pg_url)
    try:
        claim = led.claim_action(plan_id=PLAN, step_id="pay", action="pay", key="k1", run_id="r1")
        led.settle_action("k1", outcome="applied", token=claim.record.token, external_id="x-1")
        with led._database.transaction(write=False) as conn:  # any other: the database's setting
            assert conn.execute_raw("SHOW synchronous_commit").scalar_one() == "off"
    finally:
        led.close()
    assert seen == [("insert", "on"), ("action_intent", "on"), ("action_applied", "on")]
