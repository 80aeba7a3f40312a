"""Schema migrations: ledgers written by 0.1.0 (schema 1) and 0.2.0 (schema 2), the committed
fixtures, are migrated in place to the current version in one transaction — on SQLite and on
PostgreSQL restored from that version's dump — get an identity and the events indexes of
schema 3, record each step, and a migration that cannot finish changes nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from prefect_waymark.errors import LedgerError
from prefect_waymark.ledger import SCHEMA_VERSION, open_ledger, open_reader
from prefect_waymark.ledger import migrations as migrations_module
from prefect_waymark.ledger.migrations import DROPPED_INDEX, Migration
from prefect_waymark.ledger.sql import EVENT_INDEXES
from tests._support.postgres import PgServer

FIXTURES = Path(__file__).parent / "fixtures"


def _meta(url: str) -> dict[str, str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {k: v for k, v in conn.execute(text("SELECT key, value FROM waymark_meta"))}
    finally:
        engine.dispose()


def _old_sqlite(tmp_path: Path, release: str = "v0.1.0") -> str:
    db = tmp_path / "ledger.db"
    shutil.copy(FIXTURES / f"{release}-sqlite" / ".waymark" / "ledger.db", db)
    return f"sqlite:///{db}"


def _old_postgres(pg_server: PgServer, pg_url: str, release: str = "v0.1.0") -> str:
    pg_server.restore(pg_url, FIXTURES / f"{release}-postgres" / "ledger.sql")
    return pg_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A ledger written by prefect-waymark 0.1.0 (schema 1), on SQLite or PostgreSQL."""
    if request.param == "sqlite":
        return _old_sqlite(tmp_path)
    return _old_postgres(request.getfixturevalue("pg_server"), request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def schema2_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A ledger written by prefect-waymark 0.2.0 (schema 2), on SQLite or PostgreSQL."""
    if request.param == "sqlite":
        return _old_sqlite(tmp_path, "v0.2.0")
    pg = request.getfixturevalue("pg_server"), request.getfixturevalue("pg_url")
    return _old_postgres(*pg, "v0.2.0")


def test_an_old_ledger_is_migrated_in_place_once(old_ledger: str) -> None:
    assert _meta(old_ledger) == {"schema_version": "1"}
    events_before = _count_events(old_ledger)
    with open_ledger(old_ledger, create=False) as reading:  # reads, records: never migrates
        assert reading.ledger_id is None
    assert _meta(old_ledger) == {"schema_version": "1"}
    with open_ledger(old_ledger) as led:  # a run's open migrates
        first_id = led.ledger_id
    meta = _meta(old_ledger)
    assert meta["schema_version"] == str(SCHEMA_VERSION) == "3"
    assert first_id is not None and str(uuid.UUID(first_id)) == first_id == meta["ledger_id"]
    record = json.loads(meta["migration_2"])
    assert record["from"] == 1 and "ledger_id" in record["what"] and record["at"]
    assert json.loads(meta["migration_3"])["from"] == 2  # the steps ran in order
    assert _indexes(old_ledger) == set(EVENT_INDEXES)
    assert _count_events(old_ledger) == events_before  # records kept, none added
    with open_ledger(old_ledger) as again:  # a second open finds nothing to do
        assert again.ledger_id == first_id
    assert _meta(old_ledger) == meta


def _indexes(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {str(ix["name"]) for ix in inspect(conn).get_indexes("waymark_events")}
    finally:
        engine.dispose()


def test_a_0_2_0_ledger_gets_the_events_indexes_of_schema_3(schema2_ledger: str) -> None:
    """Schema 3 keeps the events indexes the reads use and drops the step index no read used
    (a page less for every append); a reader's open changes nothing; the identity stays."""
    before = _meta(schema2_ledger)
    assert before["schema_version"] == "2" and DROPPED_INDEX in _indexes(schema2_ledger)
    events_before = _count_events(schema2_ledger)
    with open_ledger(schema2_ledger, create=False) as reading:
        newest = reading.events("upgrade-fixture", kinds=["run_started"], last=1)
        assert reading.ledger_id == before["ledger_id"]
    assert _meta(schema2_ledger) == before and DROPPED_INDEX in _indexes(schema2_ledger)
    with open_ledger(schema2_ledger) as led:
        assert led.ledger_id == before["ledger_id"]
        assert led.events("upgrade-fixture", kinds=["run_started"], last=1) == newest
        assert led.step_states("upgrade-fixture")["publish"].status == "completed"
    meta = _meta(schema2_ledger)
    assert meta["schema_version"] == "3" and json.loads(meta["migration_3"])["from"] == 2
    assert "migration_2" not in meta  # 0.2.0 created it at schema 2
    assert _indexes(schema2_ledger) == set(EVENT_INDEXES)
    assert _count_events(schema2_ledger) == events_before
    with open_ledger(schema2_ledger) as again:  # nothing left to do
        assert again.ledger_id == before["ledger_id"]
    assert _meta(schema2_ledger) == meta


def _count_events(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM waymark_events")).scalar_one())
    finally:
        engine.dispose()


def test_a_migration_that_cannot_finish_changes_nothing(
    old_ledger: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The identity step runs, then a later step fails: the whole migration rolls back."""

    def boom(conn: object) -> None:
        raise RuntimeError("disk on fire")

    steps = (*migrations_module.MIGRATIONS, Migration(2, "a step that fails", boom))
    monkeypatch.setattr(migrations_module, "MIGRATIONS", steps)
    with pytest.raises(LedgerError) as err:
        open_ledger(old_ledger)
    message = str(err.value)
    assert "from schema version 1 to 3" in message and "disk on fire" in message
    assert "nothing was changed" in message
    assert _meta(old_ledger) == {"schema_version": "1"}  # no ledger_id, no record, version 1


def test_a_new_ledger_has_an_identity_and_the_current_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    with open_ledger(url) as led:
        assert led.ledger_id is not None
    meta = _meta(url)
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["ledger_id"] == led.ledger_id
    assert "migration_2" not in meta and json.loads(meta["created"])["at"]
    with open_ledger(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert other.ledger_id != led.ledger_id


def test_the_read_only_reader_never_migrates(tmp_path: Path) -> None:
    url = _old_sqlite(tmp_path)
    reader = open_reader(url)
    try:
        assert reader.ledger_id is None
        assert reader.step_states("upgrade-fixture")["publish"].status == "completed"
    finally:
        reader.close()
    conn = sqlite3.connect(tmp_path / "ledger.db")
    assert conn.execute("SELECT key, value FROM waymark_meta").fetchall() == [
        ("schema_version", "1")
    ]
    conn.close()


@pytest.mark.postgres
def test_concurrent_openers_migrate_a_postgres_ledger_once(
    pg_server: PgServer, pg_url: str
) -> None:
    url = _old_postgres(pg_server, pg_url)
    ids: list[str | None] = []
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            with open_ledger(url) as led:
                ids.append(led.ledger_id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert len(ids) == 4 and len(set(ids)) == 1 and ids[0] == _meta(url)["ledger_id"]
