"""The tests bring their own PostgreSQL (tests/_support/postgres.py): when nothing answers at
``$WAYMARK_TEST_PG_URL`` a throwaway cluster is made in a temporary folder on a free port, it
takes a ledger, and afterwards its postmaster is gone and its folder removed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prefect_waymark.ledger import open_ledger, open_reader
from prefect_waymark.ledger.events import EventKind
from tests._support import postgres as pg

ROOT = Path(__file__).resolve().parents[2]
NOTHING_THERE = "postgresql://postgres@127.0.0.1:1/postgres"  # port 1: nothing answers


def _bindir() -> Path:
    bindir = pg.find_bindir()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("no initdb/pg_ctl found: CI must have PostgreSQL installed")
        pytest.skip("no initdb/pg_ctl found (pg_config --bindir, /usr/lib/postgresql/*/bin)")
    return bindir


@pytest.mark.postgres
def test_a_throwaway_cluster_answers_keeps_a_ledger_and_is_removed() -> None:
    cluster = pg.ThrowawayCluster(_bindir())
    try:
        server = cluster.start()
        folder, pid = cluster.folder, cluster.postmaster_pid()
        assert folder is not None and folder.is_dir() and pid is not None
        assert pg.process_alive(pid)
        assert server.host == "127.0.0.1" and server.port != 5432
        assert cluster.start() is server  # once per session: a second start reuses it
        assert pg.answers(server)
        import psycopg

        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute('CREATE DATABASE "selftest"')
        with open_ledger(server.url("selftest")) as led:
            led.record("p", EventKind.run_started, run_id="r1")
        with open_reader(server.url("selftest")) as reader:
            assert [e.run_id for e in reader.events("p")] == ["r1"]
        listed = subprocess.run(
            server.psql_args("selftest") + ["-Atc", "SELECT count(*) FROM waymark_events"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (listed.returncode, listed.stdout.strip()) == (0, "1"), listed.stderr
    finally:
        cluster.stop()
    assert not folder.exists()
    assert not pg.process_alive(pid)
    assert not pg.answers(server)
    cluster.stop()  # idempotent (the atexit safety net calls it again)


CHILD_TEST = """
    import os
    from pathlib import Path

    import psycopg


    def test_child(pg_url, pg_server):
        with psycopg.connect(pg_url.replace("+psycopg", "")) as conn:
            assert conn.execute("SELECT 41 + 1").fetchone() == (42,)
        with psycopg.connect(pg_server.admin_url) as conn:
            folder = conn.execute("SHOW data_directory").fetchone()[0]
        postmaster = (Path(folder) / "postmaster.pid").read_text().split()[0]
        Path(os.environ["REPORT"]).write_text(f"{pg_server.port} {folder} {postmaster}")
"""


@pytest.mark.postgres
def test_a_session_with_no_server_at_the_url_starts_and_removes_its_own(tmp_path: Path) -> None:
    """A real pytest session (the project's conftest) pointed at a URL where nothing answers."""
    _bindir()
    child = tmp_path / "test_child.py"  # outside tests/, with the project's conftest as a plugin
    child.write_text(textwrap.dedent(CHILD_TEST))
    report = tmp_path / "report"
    env = {**os.environ, "WAYMARK_TEST_PG_URL": NOTHING_THERE, "REPORT": str(report)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest"]
        + ["--rootdir", str(tmp_path), str(child)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    port, data_dir, postmaster = report.read_text().split()
    assert int(port) not in (1, 5432)
    assert data_dir.startswith("/tmp/waymark-test-pg-")
    assert not Path(data_dir).parent.exists()  # the folder is removed
    assert not pg.process_alive(int(postmaster))
    assert not pg.answers(pg.PgServer("127.0.0.1", int(port)))
