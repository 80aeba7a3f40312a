"""A local ``prefect server start`` that waymark starts once and every later run reuses.

Why: with no ``PREFECT_API_URL`` Prefect starts an ephemeral server inside each process. On a
2-core machine its first start takes ~28 s (longer than Prefect's default startup timeout) and
its shutdown logs "Error flushing N events" tracebacks, losing the last task run's record in the
UI. A long-running local server starts once (its state lives in ``$PREFECT_HOME``), serves the UI
and receives every event. ``waymark server stop`` ends it.
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

import httpx

from ..errors import WaymarkError

__all__ = [
    "ServerInfo",
    "api_headers",
    "ensure_local_server",
    "find_local_server",
    "known_api_url",
    "stop_local_server",
    "ui_api_url",
]

STARTUP_TIMEOUT = float(os.environ.get("WAYMARK_SERVER_STARTUP_TIMEOUT", "300"))


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
    try:
        return httpx.get(f"{api_url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def find_local_server() -> ServerInfo | None:
    """The running server waymark started for this ``PREFECT_HOME``, if it answers."""
    try:
        info = ServerInfo(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return info if _healthy(info.api_url) else None


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


def _prefect_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "prefect"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("prefect")
    if found is None:
        raise WaymarkError("cannot find the `prefect` command to start a local server")
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
    try:
        resp = httpx.get(f"{info.ui_url}/ui-settings", timeout=timeout)
        found = resp.json().get("api_url") if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def ensure_local_server(
    *, echo: bool = False, timeout: float = STARTUP_TIMEOUT, port: int | None = None
) -> ServerInfo:
    """Return the running local server, starting one (detached) if there is none."""
    with _lock():
        found = find_local_server()
        if found is not None:
            return found
        home = prefect_home()
        port = port or _free_port()
        api_url = f"http://127.0.0.1:{port}/api"
        log_path = home / "waymark-server.log"
        env = _server_env(home, port, api_url)
        if echo:
            print(
                f"starting a local Prefect server on {api_url} (log: {log_path})", file=sys.stderr
            )
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [*_prefect_cmd(), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise WaymarkError(
                    f"the local Prefect server exited with code {proc.returncode}; "
                    f"log tail:\n{tail}"
                )
            if _healthy(api_url):
                info = ServerInfo(proc.pid, port, api_url, f"http://127.0.0.1:{port}", str(home))
                _state_file().write_text(json.dumps(asdict(info)))
                return info
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGTERM)
        raise WaymarkError(
            f"the local Prefect server did not answer within {timeout:.0f}s (log: {log_path}); "
            "raise WAYMARK_SERVER_STARTUP_TIMEOUT"
        )


def stop_local_server(timeout: float = 30.0) -> bool:
    """Stop the server waymark started for this ``PREFECT_HOME``; False if none was running."""
    with _lock():
        try:
            info = ServerInfo(**json.loads(_state_file().read_text()))
        except (OSError, ValueError, TypeError):
            return False
        _state_file().unlink(missing_ok=True)
        try:
            os.killpg(info.pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(info.pid, 0)
            except ProcessLookupError:
                return True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.pid, os.WNOHANG)
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.pid, signal.SIGKILL)
        return True
