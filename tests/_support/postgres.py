"""The PostgreSQL server the tests use: the one at ``$WAYMARK_TEST_PG_URL`` when it answers, else a
throwaway cluster of the tests' own (``initdb`` + ``pg_ctl`` in a temporary folder, trust auth,
127.0.0.1 on a free port, its unix socket in that folder), stopped and removed afterwards.

``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres`` system user
(``runuser -u postgres -- ...``) in a folder chowned to it.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
ENV_VAR = "WAYMARK_TEST_PG_URL"
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class PgServer:
    """Where a PostgreSQL server answers: enough to build URLs and ``psql`` command lines."""

    host: str
    port: int
    user: str = "postgres"
    admin_db: str = "postgres"

    @property
    def admin_url(self) -> str:
        """A libpq/psycopg URL of the admin database (``CREATE DATABASE`` goes through it)."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.admin_db}"

    @property
    def server_url(self) -> str:
        """The SQLAlchemy URL of the server with no database named."""
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}"

    def url(self, dbname: str) -> str:
        """The SQLAlchemy (psycopg 3) URL of one database on this server."""
        return f"{self.server_url}/{dbname}"

    def libpq_url(self, dbname: str) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{dbname}"

    def psql_args(self, dbname: str) -> list[str]:
        """``psql`` for one database on this server (quiet, stop on the first error)."""
        return ["psql", "-q", "-v", "ON_ERROR_STOP=1"] + [
            *("-h", self.host, "-p", str(self.port), "-U", self.user, "-d", dbname)
        ]

    def restore(self, url: str, dump: Path) -> None:
        """Load a ``pg_dump`` file into the database ``url`` names (the fixture ledgers of
        earlier releases); fails the test with psql's own message if it cannot."""
        dbname = url.rsplit("/", 1)[1]
        restored = subprocess.run(
            self.psql_args(dbname) + ["-f", str(dump)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert restored.returncode == 0, restored.stderr


def parse_server(url: str) -> PgServer:
    """The server a ``postgresql://user@host:port/db`` URL names (defaults: libpq's)."""
    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        raise ValueError(f"{ENV_VAR} is not a postgresql:// URL: {url!r}")
    return PgServer(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        admin_db=parts.path.lstrip("/") or "postgres",
    )


def answers(server: PgServer, timeout: int = 3) -> bool:
    """True when the server accepts a connection to its admin database."""
    import psycopg

    try:
        with psycopg.connect(server.admin_url, connect_timeout=timeout):
            return True
    except Exception:
        return False


def find_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``: ``pg_config --bindir``, else the
    newest ``/usr/lib/postgresql/*/bin``, else ``initdb`` on ``$PATH``."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        got = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.strip():
            candidates.append(Path(got.stdout.strip()))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(p) for p in versions), key=_version_key, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if all((bindir / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


def _version_key(bindir: Path) -> tuple[int, str]:
    name = bindir.parent.name
    return (int(name), name) if name.isdigit() else (0, name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ClusterError(RuntimeError):
    """The throwaway cluster could not be made or started; the message carries its log."""


class ThrowawayCluster:
    """A PostgreSQL cluster in a temporary folder, for one test session.

    ``start()`` runs ``initdb`` and ``pg_ctl start`` and waits until it accepts connections;
    ``stop()`` runs ``pg_ctl stop -m fast`` and removes the folder (idempotent, also at exit).
    """

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.folder: Path | None = None
        self.server: PgServer | None = None
        self._as_postgres = os.geteuid() == 0

    @property
    def data(self) -> Path:
        assert self.folder is not None
        return self.folder / "data"

    def _run(self, *args: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        # cwd: the postgres user may not be allowed into the caller's folder.
        return subprocess.run(cmd, cwd=self.folder, capture_output=True, text=True, timeout=timeout)

    def start(self) -> PgServer:
        if self.server is not None:
            return self.server
        # /tmp keeps the unix socket path short (its limit is about 100 bytes).
        self.folder = Path(tempfile.mkdtemp(prefix="waymark-test-pg-", dir="/tmp"))
        atexit.register(self.stop)
        if self._as_postgres:
            if shutil.which("runuser") is None:
                raise ClusterError("running as root and runuser is missing (initdb refuses root)")
            shutil.chown(self.folder, user="postgres", group=None)
        init = self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "-E", "UTF8", "--no-locale", "--no-sync",
        )  # fmt: skip
        if init.returncode != 0:
            raise ClusterError(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")
        last = ""
        for _ in range(3):  # a free port can be taken between asking and binding
            port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {self.folder} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=200"
            )
            log = str(self.folder / "postgres.log")
            started = self._run("pg_ctl", "-D", str(self.data), "-l", log, "-w", "-t", "60",
                                "-o", options, "start")  # fmt: skip
            server = PgServer(host="127.0.0.1", port=port)
            if started.returncode == 0 and self._wait_until_it_answers(server):
                self.server = server
                return server
            last = self._log_tail() or started.stderr
            self._stop_postgres()
        raise ClusterError(f"the throwaway PostgreSQL cluster did not start: {last.strip()}")

    def _wait_until_it_answers(self, server: PgServer) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if answers(server, timeout=2):
                return True
            time.sleep(0.2)
        return False

    def _log_tail(self) -> str:
        assert self.folder is not None
        log = self.folder / "postgres.log"
        return "\n".join(log.read_text().splitlines()[-15:]) if log.exists() else ""

    def postmaster_pid(self) -> int | None:
        """The cluster's postmaster process id while it runs (from ``postmaster.pid``)."""
        if self.folder is None:
            return None
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is cut; same port, same data."""
        assert self.server is not None
        assert self.folder is not None
        log = str(self.folder / "postgres.log")
        got = self._run("pg_ctl", "-D", str(self.data), "-l", log, "-w", "-t", "60",
                        "-m", "fast", "restart")  # fmt: skip
        if got.returncode != 0 or not self._wait_until_it_answers(self.server):
            raise ClusterError(f"the cluster did not restart: {self._log_tail() or got.stderr}")

    def _stop_postgres(self) -> None:
        pid = self.postmaster_pid()
        if pid is None:
            return
        stopped = self._run("pg_ctl", "-D", str(self.data), "stop", "-m", "fast", "-w", "-t", "30")
        if stopped.returncode != 0:  # our own postmaster, by its id: immediate shutdown
            try:
                os.kill(pid, signal.SIGQUIT)
            except ProcessLookupError:
                pass
            _wait_gone(pid, 10.0)

    def stop(self) -> None:
        if self.folder is None:
            return
        try:
            self._stop_postgres()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
            self.server = None


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        time.sleep(0.1)
    return False


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" not in status
