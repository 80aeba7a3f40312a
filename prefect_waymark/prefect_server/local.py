"""A local Prefect server that waymark starts once and every later run reuses.

Why: with no ``PREFECT_API_URL`` Prefect starts an ephemeral server inside each process. On a
2-core machine its first start takes ~28 s (longer than Prefect's default startup timeout) and
its shutdown logs "Error flushing N events" tracebacks, losing the last task run's record in the
UI. A long-running local server starts once (its state lives in ``$PREFECT_HOME``), serves the UI
and receives every event. ``waymark server stop`` ends it.

Prefect's own ``prefect server start`` runs it and ``prefect server stop`` stops it (Prefect's
stop finds the server by the ``server.pid`` in ``$PREFECT_HOME``; waymark writes that file in
Prefect's format). The start is not ``--background``: Prefect's background start hands the
server's output to pipes that close when the start command ends, and the server dies at its next
burst of output (a warning under load, any ``DEBUG`` logging). Started here instead, detached in
a session of its own, it writes to ``$PREFECT_HOME/waymark-server.log``. Around Prefect's
commands waymark keeps what they do not do: a free port chosen, the UI pointed at this server's
API, waiting until the server answers, the server's address recorded (``waymark-server.json``)
so that later runs find it, one start at a time (a lock), and waiting until a stopped server is
gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import WaymarkError

__all__ = [
    "ServerInfo",
    "api_headers",
    "ensure_local_server",
    "find_local_server",
    "known_api_url",
    "prefect_command",
    "stop_local_server",
    "ui_api_url",
]

STARTUP_TIMEOUT = float(os.environ.get("WAYMARK_SERVER_STARTUP_TIMEOUT", "300"))
#: Where ``prefect server start --background`` keeps its server's pid, in ``$PREFECT_HOME``.
PID_FILE = "server.pid"


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    port: int
    api_url: str
    ui_url: str
    home: str


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def _state_file() -> Path:
    return prefect_home() / "waymark-server.json"


def _healthy(api_url: str) -> bool:
    import httpx  # here: a check-in that finds no server record loads no HTTP client

    try:
        return httpx.get(f"{api_url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def find_local_server() -> ServerInfo | None:
    """The running server waymark started for this ``PREFECT_HOME``, if it answers."""
    info = _recorded()
    return info if info is not None and _healthy(info.api_url) else None


def known_api_url() -> str | None:
    """The Prefect API a command outside a flow run reports to: ``PREFECT_API_URL`` from the
    environment, else the local server waymark started (if it answers); never starts one."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        return url.rstrip("/")
    info = find_local_server()
    return info.api_url.rstrip("/") if info is not None else None


def api_headers() -> dict[str, str]:
    """The headers Prefect's client sends to that API: ``PREFECT_API_AUTH_STRING`` (a server
    with basic auth) as basic auth, else ``PREFECT_API_KEY`` (Prefect Cloud) as a bearer token."""
    import base64

    if auth := os.environ.get("PREFECT_API_AUTH_STRING"):  # Prefect's client: this one wins
        return {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}
    if key := os.environ.get("PREFECT_API_KEY"):
        return {"Authorization": f"Bearer {key}"}
    return {}


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    home = prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "waymark-server.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prefect_command() -> list[str]:
    """Prefect's own ``prefect`` command: the one beside this Python, else on ``PATH``."""
    exe = Path(sys.executable).parent / "prefect"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("prefect")
    if found is None:
        raise WaymarkError("cannot find the `prefect` command (is Prefect installed?)")
    return [found]


def _server_env(home: Path, port: int, api_url: str) -> dict[str, str]:
    """The server's environment. ``--port`` alone moves only the API: the UI would keep calling
    Prefect's default port 4200 ("Can't connect to Server API at http://127.0.0.1:4200/api", or
    another server's data if one runs there). The UI's API URL is derived from
    ``PREFECT_API_URL`` if set (here: from the user's profile, say Prefect Cloud), else from
    ``PREFECT_SERVER_API_HOST``/``PORT``: set all three explicitly to this server."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env["PREFECT_HOME"] = str(home)
    env["PREFECT_SERVER_API_HOST"] = "127.0.0.1"
    env["PREFECT_SERVER_API_PORT"] = str(port)
    env["PREFECT_UI_API_URL"] = api_url
    return env


def ui_api_url(info: ServerInfo, timeout: float = 5.0) -> str | None:
    """The API URL the server's UI calls (its ``/ui-settings``), or None if it does not say."""
    import httpx

    try:
        resp = httpx.get(f"{info.ui_url}/ui-settings", timeout=timeout)
        found = resp.json().get("api_url") if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def _prefect(*args: str, env: dict[str, str], log: Path) -> int:
    """Run ``prefect <args>`` in a session of its own (a Ctrl-C of this run never reaches the
    server it starts); its output goes to ``log``. Returns its exit code."""
    with open(log, "ab") as out:
        return subprocess.run(
            [*prefect_command(), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            check=False,
        ).returncode


def _start_detached(args: tuple[str, ...], env: dict[str, str], log: Path) -> int:
    """Start ``prefect <args>`` detached: a session of its own (a Ctrl-C of this run never
    reaches it), its output appended to ``log`` (a file that outlives this process, never a pipe
    that closes with it), nothing to read on stdin. Returns its pid."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*prefect_command(), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return proc.pid


def _alive(pid: int) -> bool:
    """The process runs (a zombie waiting to be reaped does not)."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except ProcessLookupError:
        return False
    except OSError:  # not ours to signal, or no /proc: it runs
        return True


def _runs_prefect(pid: int) -> bool:
    """The process is a ``prefect server start`` (a pid recorded before a reboot may name
    another process now: it is never waited for nor stopped)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc here: trust the pid
        return True
    return b"prefect" in cmdline and b"server\x00start" in cmdline


def _server_pid(home: Path) -> int | None:
    try:
        return int((home / PID_FILE).read_text())
    except (OSError, ValueError):
        return None


def _wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.2)


def _recorded() -> ServerInfo | None:
    try:
        return ServerInfo(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _wait_answering(pid: int, api_url: str, timeout: float, log_path: Path) -> bool:
    """Wait until the server answers (True), exits (an error with its log's tail) or the time
    is up (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise WaymarkError(
                f"the local Prefect server (pid {pid}) exited before it answered; "
                f"the tail of {log_path}:\n{tail}"
            )
        if _healthy(api_url):
            return True
        time.sleep(0.5)
    return False


def ensure_local_server(
    *, echo: bool = False, timeout: float = STARTUP_TIMEOUT, port: int | None = None
) -> ServerInfo:
    """Return the running local server, starting one (``prefect server start``, detached) if
    there is none. A server that runs but is slow to answer (a busy machine) is waited for, never
    started twice."""
    with _lock():
        home = prefect_home()
        log_path = home / "waymark-server.log"
        known = _recorded()
        if known is not None and _alive(known.pid) and _runs_prefect(known.pid):
            if _healthy(known.api_url) or _wait_answering(
                known.pid, known.api_url, timeout, log_path
            ):
                return known
            raise WaymarkError(
                f"the local Prefect server (pid {known.pid}) did not answer within "
                f"{timeout:.0f}s; `waymark server stop` stops it"
            )
        _state_file().unlink(missing_ok=True)
        if (other := _server_pid(home)) is not None and _alive(other) and _runs_prefect(other):
            raise WaymarkError(
                f"a Prefect server started by `prefect server start --background` runs for "
                f"{home} (pid {other}); `prefect server stop` stops it, or set PREFECT_API_URL "
                "to its API"
            )
        (home / PID_FILE).unlink(missing_ok=True)
        port = port or _free_port()
        api_url = f"http://127.0.0.1:{port}/api"
        if echo:
            print(f"starting a local Prefect server on {api_url}", file=sys.stderr)
        start = ("server", "start", "--host", "127.0.0.1", "--port", str(port))
        pid = _start_detached(start, _server_env(home, port, api_url), log_path)
        (home / PID_FILE).write_text(str(pid))  # Prefect's format: `prefect server stop` finds it
        try:
            answered = _wait_answering(pid, api_url, timeout, log_path)
        except WaymarkError:
            (home / PID_FILE).unlink(missing_ok=True)
            raise
        if not answered:
            _prefect("server", "stop", env={**os.environ, "PREFECT_HOME": str(home)}, log=log_path)
            _wait_gone(pid, 30.0)
            raise WaymarkError(
                f"the local Prefect server did not answer within {timeout:.0f}s; "
                "raise WAYMARK_SERVER_STARTUP_TIMEOUT"
            )
        info = ServerInfo(pid, port, api_url, f"http://127.0.0.1:{port}", str(home))
        _state_file().write_text(json.dumps(asdict(info)))
        return info


def stop_local_server(timeout: float = 30.0) -> bool:
    """Stop the server waymark started for this ``PREFECT_HOME`` (``prefect server stop``) and
    wait until it is gone; False if none was running."""
    with _lock():
        info = _recorded()
        if info is None:
            return False
        _state_file().unlink(missing_ok=True)
        if not (_alive(info.pid) and _runs_prefect(info.pid)):
            (Path(info.home) / PID_FILE).unlink(missing_ok=True)
            return False
        env = {**os.environ, "PREFECT_HOME": info.home}
        _prefect("server", "stop", env=env, log=Path(info.home) / "waymark-server.log")
        _wait_gone(info.pid, timeout)  # then SIGKILL: it had its SIGTERM
        return True
