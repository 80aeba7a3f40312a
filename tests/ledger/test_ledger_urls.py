"""Ledger URLs are checked before anything opens them: a ledger that cannot
keep a record (in-memory SQLite, in any spelling) is refused, a malformed URL is one line, and a
server URL must name its database — real SQLite files and a real PostgreSQL server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_waymark import LedgerError, LedgerUrlError
from prefect_waymark.ledger import open_ledger, open_reader, resolve_ledger_url
from prefect_waymark.ledger.events import EventKind
from prefect_waymark.ledger.urls import check_ledger_url, shown_url
from tests._support.postgres import PgServer

MEMORY_URLS = [
    "sqlite://",
    "sqlite:///",
    "sqlite:///:memory:",
    "sqlite+pysqlite:///:memory:",
    "SQLITE:///:memory:",
    "sqlite:///:memory:?cache=shared",
    "sqlite:///file::memory:?uri=true",
    "sqlite:///file:led?mode=memory&cache=shared&uri=true",
    "sqlite:///ledger.db?mode=memory&uri=true",
    "sqlite:///file:/tmp/ledger.db?uri=true&vfs=memdb",
    "sqlite:///%3Amemory%3A",
]

MALFORMED_URLS = [
    ("notaurl", "not a database URL"),
    ("", "empty"),
    ("://x", "not a database URL"),
    ("/abs/path/ledger.db", "not a database URL"),
    ("postgresql://u@h:notaport/db", "port is not a number"),
    ("postgresql://:::", "port is not a number"),
    ("postgres://u@localhost/db", "postgresql+psycopg://"),
    ("sqlite://host/ledger.db", "three slashes"),
    ("postgresql+psycopg2://u@localhost/db", "PostgreSQL database (psycopg 3)"),
    ("postgresql://u@localhost/db?dbname=other", "names its database twice"),
    ("mysql://u@localhost/db", "neither"),
]

NO_DATABASE_URLS = [
    "postgresql://",
    "postgresql+psycopg://",
    "postgresql+psycopg://postgres@127.0.0.1:5432",
    "postgresql+psycopg://postgres@127.0.0.1:5432/",
    "postgresql+psycopg://postgres@127.0.0.1:5432/?connect_timeout=3",
]


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """Work in an empty folder, so that anything a refused open creates would show."""
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


@pytest.mark.parametrize("url", MEMORY_URLS)
def test_an_in_memory_ledger_is_refused_everywhere(url: str, in_tmp: Path) -> None:
    for open_it in (open_ledger, open_reader, lambda u: resolve_ledger_url(u, in_tmp)):
        with pytest.raises(LedgerUrlError, match="in-memory SQLite") as info:
            open_it(url)
        assert isinstance(info.value, ValueError) and isinstance(info.value, LedgerError)
        assert "\n" not in str(info.value)
    assert list(in_tmp.iterdir()) == []  # no file named ledger.db, ":memory:" or "file:led"


@pytest.mark.parametrize(("url", "why"), MALFORMED_URLS)
def test_a_malformed_url_is_one_line_and_opens_nothing(url: str, why: str, in_tmp: Path) -> None:
    for open_it in (open_ledger, open_reader):
        with pytest.raises(LedgerUrlError) as info:
            open_it(url)
        message = str(info.value)
        assert why in message and "\n" not in message
        assert "Could not parse" not in message and "invalid literal" not in message
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("url", NO_DATABASE_URLS)
def test_a_server_url_must_name_its_database(url: str) -> None:
    with pytest.raises(LedgerUrlError, match="names no database") as info:
        open_ledger(url)
    assert "postgresql+psycopg://user@host:5432/DBNAME" in str(info.value)


def test_the_message_names_the_source_and_hides_the_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAYMARK_LEDGER_URL", "postgresql+psycopg://bob:s3cret@db:5432/")
    with pytest.raises(LedgerUrlError) as info:
        resolve_ledger_url(None, tmp_path)
    assert "$WAYMARK_LEDGER_URL" in str(info.value)
    assert "s3cret" not in str(info.value) and "bob:***@db" in str(info.value)
    with pytest.raises(LedgerUrlError, match=r"from --ledger"):
        resolve_ledger_url("sqlite://", tmp_path, source="--ledger")
    # A URL given wins over the environment, and is checked itself.
    good = f"sqlite:///{tmp_path / 'ledger.db'}"
    assert resolve_ledger_url(good, tmp_path) == good


def test_a_huge_url_is_not_echoed_in_full() -> None:
    url = "x" * 5_000_000
    with pytest.raises(LedgerUrlError) as info:
        check_ledger_url(url)
    assert len(str(info.value)) < 600
    assert shown_url("postgresql://a:b@h/d") == "postgresql://a:***@h/d"


def test_sqlledger_itself_refuses_a_bad_url(in_tmp: Path) -> None:
    from prefect_waymark.ledger import SqlLedger

    for url in ("notaurl", "sqlite://", "postgresql+psycopg://postgres@127.0.0.1:5432"):
        with pytest.raises(LedgerUrlError):
            SqlLedger(url)
    assert list(in_tmp.iterdir()) == []


def test_file_ledgers_and_named_databases_still_open(tmp_path: Path, pg_url: str) -> None:
    for url in (f"sqlite:///{tmp_path / 'a b' / 'ledger.db'}", pg_url):
        with open_ledger(url) as led:
            led.record("p", EventKind.run_started, run_id="r1")
        with open_reader(url) as reader:
            assert [e.run_id for e in reader.events("p")] == ["r1"]


def test_no_tables_go_into_the_servers_default_database(
    pg_server: PgServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a URL without a database wrote the ledger's tables into libpq's default database.
    Point that default (``$PGDATABASE``) at a fresh database and show it stays empty."""
    import psycopg

    fresh = pg_url.rsplit("/", 1)[1]
    monkeypatch.setenv("PGDATABASE", fresh)
    with pytest.raises(LedgerUrlError, match="names no database"):
        open_ledger(pg_server.server_url)
    with psycopg.connect(pg_server.libpq_url(fresh)) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert tables == (0,)


def test_an_unreachable_database_is_still_one_ledger_error(pg_server: PgServer) -> None:
    name = f"waymark_absent_{uuid.uuid4().hex[:8]}"
    with pytest.raises(LedgerError) as info:
        open_ledger(pg_server.url(name), create=False)
    assert not isinstance(info.value, LedgerUrlError)  # a good URL; the database is missing
    assert name in str(info.value)
