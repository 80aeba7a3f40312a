"""Run a step's shell command (or probe), and on a timeout end everything it started.

``subprocess.run(shell=True, timeout=...)`` kills only the shell on a timeout: what the command
started (a ``sleep``, a server, a script's children) keeps running and keeps writing outputs while
Prefect retries the step. Here a timeout kills the command's whole process tree (found through
``/proc``): stopped from the top down first, then killed, so no process of the tree as listed
runs another line after a child's death (a shell's next command, its "Killed" report). The
command stays in the runner's process group on purpose: a runner killed with its group (SIGKILL
to the group, a terminal's Ctrl-C) takes its step's command with it, so no orphan finishes a
side effect after the run that started it died.

Output is streamed, never accumulated: each chunk goes to the step run's capped log file and to
bounded tails (:mod:`.output_capture`), so the runner's memory stays flat whatever the command
prints. :class:`CommandResult` carries the tails, not the whole output.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .._masking import mask
from .output_capture import OutputCapture

__all__ = ["CommandResult", "run_command"]


_DRAIN_AFTER_KILL_SECONDS = 5.0  # output still in the pipes after a kill; then they are closed


@dataclass(frozen=True)
class CommandResult:
    """How a command ended; ``stdout``/``stderr`` are the last bytes of each stream (at least
    :data:`~.output_capture.STREAM_TAIL_BYTES`) with secrets masked (``_masking``: what every
    tail, error and log line is cut from), the whole output is in ``log_path``."""

    returncode: int | None  # None: timed out (the process tree was killed)
    stdout: str
    stderr: str
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    log_path: Path | None = None
    log_dropped: int = 0  # bytes of output the capped log file does not hold
    log_error: str | None = None  # why the log file is missing or incomplete


#: Listings of the tree while freezing it (a process may fork just before its parent stops).
_FREEZE_PASSES = 3


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before their children (Linux ``/proc``; empty
    elsewhere)."""
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
    return found


def _signal(pid: int, sig: signal.Signals) -> bool:
    """Whether the signal was sent (False: the process is gone, or not ours to signal)."""
    try:
        os.kill(pid, sig)
    except OSError:  # ProcessLookupError, PermissionError (a `sudo` in the command)
        return False
    return True


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop the shell and what it started, parents first, then kill every process stopped.

    Killing children first woke their parent shell, which could run its next command (a side
    effect after the timeout) or print ``Killed`` before its own signal came. A stopped process
    neither reacts nor forks; the tree is listed again after each pass for what forked before
    its parent stopped. What was stopped is killed whatever happens meanwhile (an error, a
    second Ctrl-C): a stopped process left alive would hang for good."""
    frozen: list[int] = []
    try:
        for _ in range(_FREEZE_PASSES):
            new = [pid for pid in [proc.pid, *_descendants(proc.pid)] if pid not in frozen]
            if not new:
                break
            frozen += [pid for pid in new if _signal(pid, signal.SIGSTOP)]
    finally:
        for pid in frozen:
            _signal(pid, signal.SIGKILL)


def _pump(sel: selectors.BaseSelector, capture: OutputCapture, deadline: float | None) -> bool:
    """Move output from the pipes to ``capture`` until both are closed (True) or ``deadline``
    passes (False)."""
    while sel.get_map():
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            return False
        for key, _ in sel.select(wait):
            data = os.read(key.fd, 65536)
            if data:
                capture.feed(key.data, data)
            else:
                sel.unregister(key.fileobj)
    return True


def _wait(proc: subprocess.Popen[bytes], deadline: float | None) -> bool:
    try:
        proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


def run_command(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float | None,
    log_path: Path | None = None,
) -> CommandResult:
    """Run ``command`` with the shell, its output streamed to ``log_path`` (capped) and to
    bounded tails; on timeout kill its process tree and return ``returncode=None`` with the
    tails of what it wrote."""
    capture = OutputCapture(log_path)
    try:
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except BaseException:
        capture.close()
        raise
    assert proc.stdout is not None and proc.stderr is not None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
            sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
            finished = _pump(sel, capture, deadline) and _wait(proc, deadline)
            if not finished:
                _kill_tree(proc)
                # What the tree wrote before it died; a process that escaped the tree and
                # holds a pipe open does not hold the step.
                _pump(sel, capture, time.monotonic() + _DRAIN_AFTER_KILL_SECONDS)
                proc.wait()
    except BaseException:
        _kill_tree(proc)  # the runner is stopping: take the command's processes with it
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
        capture.close()
    return CommandResult(
        proc.returncode if finished else None,
        mask(capture.text("stdout")),
        mask(capture.text("stderr")),
        stdout_bytes=capture.total("stdout"),
        stderr_bytes=capture.total("stderr"),
        log_path=log_path,
        log_dropped=capture.dropped if log_path is not None else 0,
        log_error=capture.log_error,
    )
