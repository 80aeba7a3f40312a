"""Run a step's shell command (or probe), and on a timeout end everything it started.

``subprocess.run(shell=True, timeout=...)`` kills only the shell on a timeout: what the command
started (a ``sleep``, a server, a script's children) keeps running and keeps writing outputs while
Prefect retries the step. Here a timeout kills the command's whole process tree (found through
``/proc``), children first. The command stays in the runner's process group on purpose: a runner
killed with its group (SIGKILL to the group, a terminal's Ctrl-C) takes its step's command with it,
so no orphan finishes a side effect after the run that started it died.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CommandResult", "run_command"]


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None: timed out (the process tree was killed)
    stdout: str
    stderr: str


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, deepest first (Linux ``/proc``; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found[::-1]


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    for pid in [*_descendants(proc.pid), proc.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def run_command(
    command: str, *, cwd: Path, env: dict[str, str], timeout: float | None
) -> CommandResult:
    """Run ``command`` with the shell; on timeout kill its process tree and return
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
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        out, err = proc.communicate()
        return CommandResult(None, out or "", err or "")
    except BaseException:
        _kill_tree(proc)  # the runner is stopping: take the command's processes with it
        raise
    return CommandResult(proc.returncode, out, err)
