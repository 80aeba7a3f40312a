"""Shared fixtures: one real Prefect server per test session, real SQLite and PostgreSQL ledgers.

The Prefect API URL is fixed in ``pytest_configure`` (before Prefect is imported anywhere) and
the server behind it starts on first use, so tests that never touch Prefect pay nothing.
Subprocesses (CLI, kill and race tests) inherit the same URL and share the one server.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pytest_configure(config: pytest.Config) -> None:
    home = Path(tempfile.mkdtemp(prefix="waymark-test-prefect-"))
    port = _free_port()
    os.environ["PREFECT_HOME"] = str(home)
    os.environ["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["WAYMARK_TEST_PREFECT_PORT"] = str(port)
    os.environ.pop("WAYMARK_LEDGER_URL", None)
    # Registered first, so it runs last at exit: after Prefect's log and event workers drained.
    atexit.register(_stop_server, home)


def _stop_server(home: Path) -> None:
    from prefect_waymark.run.local_server import stop_local_server

    stop_local_server()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_server() -> str:
    """A real ``prefect server start`` shared by the whole session; returns its API URL."""
    from prefect_waymark.run.local_server import ensure_local_server

    port = int(os.environ["WAYMARK_TEST_PREFECT_PORT"])
    info = ensure_local_server(port=port)
    assert info.api_url == os.environ["PREFECT_API_URL"]
    return info.api_url


def _pg_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN, connect_timeout=3):
            return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def pg_available() -> bool:
    ok = _pg_available()
    if not ok and os.environ.get("CI"):
        pytest.fail("PostgreSQL is not reachable on 127.0.0.1:5432 (CI must start it)")
    return ok


@pytest.fixture
def pg_url(pg_available: bool) -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    if not pg_available:
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    import psycopg

    name = f"waymark_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on the SQLite and on the PostgreSQL ledger."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url
