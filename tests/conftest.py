"""Shared fixtures: one real Prefect server per test session, real SQLite and PostgreSQL ledgers.

The Prefect API URL is fixed in ``pytest_configure`` (before Prefect is imported anywhere) and
the server behind it starts on first use, so tests that never touch Prefect pay nothing.
Subprocesses (CLI, kill and race tests) inherit the same URL and share the one server.
PostgreSQL is the server at ``$WAYMARK_TEST_PG_URL`` when it answers, else a throwaway cluster
started on first use (tests/_support/postgres.py).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._support import postgres as pg
from tests._support.postgres import PgServer

ROOT = Path(__file__).resolve().parents[1]


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
    # A shell without job control starts a background job (`make test &`) with SIGINT ignored,
    # and every process started from here would inherit that: the Ctrl-C tests' runs would
    # never see their SIGINT. Caught here instead, the children start with the default.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Registered first, so it runs last at exit: after Prefect's log and event workers drained.
    atexit.register(_stop_server, home)


def _stop_server(home: Path) -> None:
    from prefect_waymark.prefect_server.local import stop_local_server

    stop_local_server()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_server() -> str:
    """A real ``prefect server start`` shared by the whole session; returns its API URL."""
    from prefect_waymark.prefect_server.local import ensure_local_server

    port = int(os.environ["WAYMARK_TEST_PREFECT_PORT"])
    info = ensure_local_server(port=port)
    assert info.api_url == os.environ["PREFECT_API_URL"]
    return info.api_url


@pytest.fixture(autouse=True)
def _prefect_server_answers(request: pytest.FixtureRequest) -> None:
    """Before each test that uses the session's Prefect server: a server that died fails the
    test with the tail of its log (``$PREFECT_HOME/waymark-server.log``), not with a connection
    refused deep in Prefect's client. (Its pid is checked, not its health: a busy machine may
    answer late.)"""
    if "prefect_server" not in request.fixturenames:
        return
    request.getfixturevalue("prefect_server")
    home = Path(os.environ["PREFECT_HOME"])
    pid = json.loads((home / "waymark-server.json").read_text())["pid"]
    if not Path(f"/proc/{pid}").exists():
        log = home / "waymark-server.log"
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
        pytest.fail(f"the session's Prefect server has exited; its log's tail:\n{tail}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The PostgreSQL server of this session: ``$WAYMARK_TEST_PG_URL`` (default
    postgresql://postgres@127.0.0.1:5432/postgres) when it answers, else a throwaway cluster
    started here on first use and removed at the end (tests/_support/postgres.py)."""
    wanted = pg.parse_server(os.environ.get(pg.ENV_VAR) or pg.DEFAULT_URL)
    if pg.answers(wanted):
        yield wanted
        return
    bindir = pg.find_bindir()
    if bindir is None:
        reason = (
            f"no PostgreSQL answers at {wanted.admin_url} (${pg.ENV_VAR}) and no initdb/pg_ctl "
            "was found to start one (pg_config --bindir, /usr/lib/postgresql/*/bin)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    cluster = pg.ThrowawayCluster(bindir)
    try:
        server = cluster.start()
    except pg.ClusterError as exc:
        cluster.stop()
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    import psycopg

    name = f"waymark_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield pg_server.url(name)
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests the fast inner loop (``pytest -m "not prefect and not postgres"``) leaves out:

    - ``prefect``: every test that uses the session's Prefect server (``prefect_server``, asked
      for directly, by ``usefixtures`` or through another fixture); tests that start a server or
      flow runs another way (a CLI subprocess) carry the mark explicitly;
    - ``postgres``: every test that needs the PostgreSQL server: it asks for ``pg_url`` or
      ``pg_server``, or is the ``postgres`` case of a parametrized fixture (``ledger_url``...).
    """
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        values = callspec.params.values() if callspec is not None else ()
        by_param = any(
            isinstance(v, str) and (v == "postgres" or v.endswith("-postgres")) for v in values
        )
        if names & {"pg_url", "pg_server"} or by_param:
            item.add_marker(pytest.mark.postgres)
        if "prefect_server" in names:
            item.add_marker(pytest.mark.prefect)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on the SQLite and on the PostgreSQL ledger."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url
