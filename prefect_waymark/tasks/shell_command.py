"""Run a step's shell command (or probe) in its own process group.

``subprocess.run(shell=True, timeout=...)`` kills only the shell on a timeout: what the command
started (a ``sleep``, a server, a script's children) keeps running and keeps writing outputs
while Prefect retries the step. Here the command gets a session of its own and a timeout ends the
whole group: SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CommandResult", "run_command"]

KILL_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None: timed out (the group was killed)
    stdout: str
    stderr: str


def _kill_group(proc: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


def run_command(
    command: str, *, cwd: Path, env: dict[str, str], timeout: float | None
) -> CommandResult:
    """Run ``command`` with the shell; on timeout kill its process group and return
    ``returncode=None`` with whatever output it wrote."""
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return CommandResult(None, out or "", err or "")
    except BaseException:
        _kill_group(proc)  # the runner is stopping: take the command's processes with it
        raise
    finally:
        if proc.returncode is None:
            _kill_group(proc)
    return CommandResult(proc.returncode, out, err)
