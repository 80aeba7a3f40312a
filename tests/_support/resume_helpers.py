"""Helpers for the resume tests: count side effects, read the ledger, start and kill the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests._support.helpers import WAYMARK


def runs_of(path: Path) -> int:
    """How many times a step appended its line to ``path`` (0 if it never ran)."""
    return len(path.read_text().splitlines()) if path.exists() else 0


def ledger_events(url: str, plan_id: str, kind: str | None = None) -> list[Any]:
    from prefect_waymark.ledger import SqlLedger

    with SqlLedger(url, create=False) as led:
        return led.events(plan_id, kinds=[kind] if kind else None)


def step_states(url: str, plan_id: str) -> dict[str, Any]:
    from prefect_waymark.ledger import SqlLedger

    with SqlLedger(url, create=False) as led:
        return led.step_states(plan_id)


def sqlite_url(workdir: Path) -> str:
    return f"sqlite:///{workdir / '.waymark' / 'ledger.db'}"


def start_logged(
    cmd: list[str], *, cwd: Path, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own process group (so a test can stop or kill it), its output
    appended to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def start_cli(*args: str, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start the real ``waymark`` command in its own process group (so a test can kill it)."""
    return start_logged([WAYMARK, *args], cwd=cwd, log=log)


def wait_for_file(path: Path, proc: subprocess.Popen[bytes], log: Path, limit: float = 180) -> None:
    """Wait until ``path`` exists; fail with the runner's log if the runner exits first."""
    deadline = time.monotonic() + limit
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(
                f"runner exited with {proc.returncode} before {path.name} appeared:\n"
                + log.read_text(errors="replace")[-4000:]
            )
        if time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError(f"{path.name} did not appear:\n" + log.read_text()[-4000:])
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the runner and every process it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)
