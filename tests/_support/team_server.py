"""A team's Prefect for tests: its own ``prefect server start`` on a fresh PostgreSQL database,
process workers on a pool, and a client that talks to it — not the session's server.

:func:`team_server` creates the database, starts the server (own ``PREFECT_HOME``, 127.0.0.1 on a
free port, ``PREFECT_API_DATABASE_CONNECTION_URL`` on ``postgresql+asyncpg://``), waits for
``/api/health`` and on exit stops the workers and the server and drops the database.
:meth:`TeamServer.env` is the environment every subprocess gets (``PREFECT_API_URL`` is this
server's, never the session's); :meth:`TeamServer.client` is an in-process sync client pointed at
it for the test's API checks, with the session's settings restored afterwards.

Stopping: a worker needs SIGINT, then SIGTERM after a grace period (DESIGN: "A worker needs SIGINT
then SIGTERM to stop"), then SIGKILL; each worker and the server run in their own process group,
so the flow-run processes a worker started go with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests._support.postgres import PgServer

PREFECT = str(Path(sys.executable).parent / "prefect")
STARTUP_TIMEOUT = float(os.environ.get("WAYMARK_TEST_TEAM_SERVER_TIMEOUT", "240"))

#: Settings of the team's server that keep a test short; a team's real server needs none of them.
#: A run that finds the deployment's one slot taken is rescheduled after this many seconds
#: (Prefect's default: 30).
SERVER_SETTINGS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS": "3",
}
#: Workers poll every 2 s instead of 10 s.
WORKER_SETTINGS = {"PREFECT_WORKER_QUERY_SECONDS": "2"}


def _dies_with(sig: signal.Signals) -> Any:
    """A ``preexec_fn``: on Linux the child gets ``sig`` when the test process dies, so a
    SIGKILLed pytest leaves no server or worker behind (its ``finally`` never runs; the databases
    do stay). The server stops on SIGTERM; a worker ignores a lone SIGINT or SIGTERM while its
    server is gone, hence SIGKILL for workers."""
    if not sys.platform.startswith("linux"):
        return None

    def arm() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(sig))  # PR_SET_PDEATHSIG

    return arm


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client_env(base: dict[str, str], api_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith("PREFECT_")}
    env["PREFECT_API_URL"] = api_url
    env["PREFECT_HOME"] = str(home)
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return env


@dataclass
class TeamServer:
    """A running ``prefect server start`` on PostgreSQL and the workers started against it."""

    pg: PgServer
    database: str
    port: int
    folder: Path
    proc: subprocess.Popen[bytes] | None = None
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def database_url(self) -> str:
        """What the server's ``PREFECT_API_DATABASE_CONNECTION_URL`` is (asyncpg driver)."""
        return f"postgresql+asyncpg://{self.pg.user}@{self.pg.host}:{self.pg.port}/{self.database}"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a subprocess that uses this server (``waymark``, ``prefect``): the
        test's environment without its ``PREFECT_*`` settings, this server's API URL and a
        client ``PREFECT_HOME`` of its own."""
        env = _client_env(dict(os.environ), self.api_url, self.folder / "client-home")
        env.update(extra)
        return env

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """A sync Prefect client of this server, in this process (settings restored after)."""
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.api_url}):
            with get_client(sync_client=True) as client:
                assert str(client.api_url).rstrip("/") == self.api_url
                yield client

    # --- the server ---------------------------------------------------------------------------

    def start(self, timeout: float = STARTUP_TIMEOUT) -> None:
        home = self.folder / "server-home"
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(SERVER_SETTINGS)
        env.update(
            PREFECT_HOME=str(home),
            PREFECT_API_DATABASE_CONNECTION_URL=self.database_url,
            PREFECT_SERVER_API_HOST="127.0.0.1",
            PREFECT_SERVER_API_PORT=str(self.port),
            PREFECT_UI_API_URL=self.api_url,
        )
        cmd = [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_dies_with(signal.SIGTERM),
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"prefect server exited with {self.proc.returncode}:\n{self.tail(self.log)}"
                )
            try:
                if httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"prefect server did not answer in {timeout:.0f} s:\n{self.tail()}")

    def tail(self, path: Path | None = None, chars: int = 4000) -> str:
        path = path or self.log
        return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"

    # --- workers ------------------------------------------------------------------------------

    def start_worker(self, pool: str, name: str, *, limit: int = 1) -> subprocess.Popen[bytes]:
        """A long-lived process worker on ``pool`` (``--limit 1``: two workers on one pool
        share its runs; without it the first takes every run). Its log: ``<name>.log``."""
        cmd = [PREFECT, "worker", "start", "--pool", pool, "--name", name, "--limit", str(limit)]
        with self.worker_log(name).open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env(**WORKER_SETTINGS),
                cwd=self.folder,
                start_new_session=True,
                preexec_fn=_dies_with(signal.SIGKILL),
            )
        self.workers[name] = proc
        return proc

    def worker_log(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def worker_logs(self) -> str:
        """Every worker's log (flow-run logs included: the worker prints its runs' output)."""
        return "\n".join(
            f"===== {n}\n{self.worker_log(n).read_text(errors='replace')}" for n in self.workers
        )

    def wait_for_workers(self, pool: str, timeout: float = 120) -> list[str]:
        """Wait until every started worker has registered with ``pool``; their names."""
        deadline = time.monotonic() + timeout
        names: list[str] = []
        while time.monotonic() < deadline:
            for name, proc in self.workers.items():
                if proc.poll() is not None:
                    raise AssertionError(
                        f"worker {name} exited with {proc.returncode}:\n"
                        + self.tail(self.worker_log(name))
                    )
            with self.client() as client:
                names = sorted(w.name for w in client.read_workers_for_work_pool(pool))
            if set(self.workers) <= set(names):
                return names
            time.sleep(1)
        raise AssertionError(f"workers {sorted(self.workers)} not registered (saw {names})")

    def stop_workers(self, grace: float = 20.0) -> None:
        for name in list(self.workers):
            stop_group(self.workers.pop(name), grace=grace)

    def stop(self) -> None:
        """Stop the workers, then the server, then drop the server's database."""
        try:
            self.stop_workers()
        finally:
            try:
                if self.proc is not None:
                    stop_group(self.proc, first=signal.SIGTERM, grace=30.0)
            finally:
                drop_database(self.pg, self.database)


def stop_group(
    proc: subprocess.Popen[bytes], *, first: signal.Signals = signal.SIGINT, grace: float = 20.0
) -> int | None:
    """Stop a process started with ``start_new_session=True`` and its group: ``first``
    (SIGINT), then SIGTERM after ``grace`` seconds, then SIGKILL; its exit code."""
    signals = [first, signal.SIGTERM] if first != signal.SIGTERM else [first]
    for sig in [*signals, signal.SIGKILL]:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace if sig != signal.SIGKILL else 30)
        except subprocess.TimeoutExpired:
            continue
        break
    with contextlib.suppress(ProcessLookupError):  # what the leader left behind in its group
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode


def create_database(pg: PgServer, prefix: str = "waymark_team") -> str:
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg.admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(pg: PgServer, name: str) -> None:
    import psycopg

    with psycopg.connect(pg.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def team_server(pg: PgServer, folder: Path) -> Iterator[TeamServer]:
    """A Prefect server of its own on a new PostgreSQL database; everything stopped and the
    database dropped on exit, whatever happened."""
    folder.mkdir(parents=True, exist_ok=True)
    server = TeamServer(pg=pg, database=create_database(pg), port=free_port(), folder=folder)
    try:
        server.start()
        yield server
    finally:
        server.stop()
