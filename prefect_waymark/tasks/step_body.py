"""The body of a step: a shell command (``run:``) or a Python callable (``call:``)."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ShellStepError, StepError
from ..models import OUTPUT_TAIL
from .output_capture import step_log_path
from .shell_command import CommandResult, run_command
from .step_context import StepContext

__all__ = [
    "FAILURE_LINES",
    "TAIL_CHARS",
    "call_step",
    "command_env",
    "failure_lines",
    "log_note",
    "output_tail",
    "run_shell_step",
    "tail",
]

TAIL_CHARS = OUTPUT_TAIL.chars  # the ledger keeps this much of a step's output
FAILURE_LINES = 15  # lines of a failed command's output on its ERROR line


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text``, after a ``…`` when it was cut."""
    return text if len(text) <= limit else "…" + text[-limit:]


def output_tail(proc: CommandResult) -> str:
    """The tail kept in the ledger and the Prefect logs: stdout, then ``[stderr]`` and stderr."""
    return tail(proc.stdout + (("\n[stderr]\n" + proc.stderr) if proc.stderr else ""))


def log_note(proc: CommandResult) -> str:
    """Where the whole output is (a line to append to the logged tail)."""
    if proc.log_path is None:
        return ""
    if proc.log_error:
        return f"\n[{proc.log_error}]"
    size = proc.stdout_bytes + proc.stderr_bytes
    dropped = f", {proc.log_dropped} bytes dropped to keep it capped" if proc.log_dropped else ""
    return f"\n[whole output ({size} bytes): {proc.log_path}{dropped}]"


def command_env(ctx: StepContext, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a step's commands: ours plus ``WAYMARK_*`` about the step."""
    env = dict(os.environ)
    env.update(
        WAYMARK_PLAN_ID=ctx.plan_id,
        WAYMARK_STEP_ID=ctx.step_id,
        WAYMARK_RUN_ID=ctx.run_id,
        WAYMARK_ATTEMPT=str(ctx.attempt),
        WAYMARK_WORKDIR=str(ctx.workdir),
    )
    env.update(extra or {})
    return env


def _last_words(proc: CommandResult) -> str:
    """The command's last non-empty line (stderr first: that is where commands say why), cut
    to ~200 characters; what the one-line error carries after the exit code."""
    for text in (proc.stderr, proc.stdout):
        for line in reversed(text.splitlines()):
            if line.strip():
                line = line.strip()
                return line if len(line) <= 200 else line[:199] + "…"
    return ""


def failure_lines(proc: CommandResult, count: int = FAILURE_LINES) -> str:
    """The last ``count`` lines of stdout and of stderr (stderr last: that is where commands
    say why they stopped), each line cut to 300 characters: what a failed command's ERROR line
    shows. Empty if it printed nothing."""

    def last(text: str) -> str:
        lines = text.rstrip().splitlines()[-count:]
        return "\n".join(line if len(line) <= 300 else line[:299] + "…" for line in lines)

    parts = [
        f"--- last lines of its {name} ---\n{last(text)}"
        for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr))
        if text.strip()
    ]
    return "\n".join(parts)


def run_shell_step(
    ctx: StepContext, command: str, *, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run the command in the workdir; a non-zero exit raises :class:`ShellStepError`.

    On success the tail of the output is logged at INFO. On a failure one ERROR line says how
    the command ended and carries the last lines of its stdout and stderr, and the error's
    message ends with the last line it printed, stderr first (the ledger keeps that message;
    the markers and the plan page show it)."""
    env = command_env(ctx, extra_env)
    proc = run_command(
        command,
        cwd=ctx.workdir,
        env=env,
        timeout=ctx.step.timeout_seconds,
        log_path=step_log_path(ctx.workdir, ctx.plan_id, ctx.step_id, ctx.attempt, ctx.run_id),
    )
    out_tail = output_tail(proc)
    if proc.returncode == 0:
        if out_tail.strip():
            ctx.logger.info("step %s output (tail):\n%s%s", ctx.step_id, out_tail, log_note(proc))
        elif proc.log_error:
            ctx.logger.warning("step %s: %s", ctx.step_id, proc.log_error)
        return {"returncode": 0, "stdout": tail(proc.stdout)}
    if proc.returncode is None:
        how = f"command timed out after {ctx.step.timeout_seconds}s (its process group was killed)"
    else:
        how = f"command exited with code {proc.returncode}"
    last = failure_lines(proc)
    ctx.logger.error(
        "step %s: %s%s%s",
        ctx.step_id,
        how,
        f"\n{last}" if last else "; it printed nothing",
        log_note(proc),
    )
    words = _last_words(proc)
    raise ShellStepError(f"step {ctx.step_id!r}: {how}" + (f": {words}" if words else ""), out_tail)


_imported_for: dict[str, str] = {}  # top-level module -> the workdir call_step imported it for
_import_lock = threading.RLock()


def _import_for_workdir(module_name: str, workdir: str) -> Any:
    """Import ``module_name`` with ``workdir`` first on ``sys.path``.

    A process that runs plans from several workdirs (a test session, a long-lived worker) must
    not reuse ``steps.py`` of the previous workdir: a top-level module this function imported
    for another workdir is dropped (with its submodules) and imported again. Modules imported
    by anyone else (the standard library, installed packages) are never touched.
    """
    top = module_name.partition(".")[0]
    with _import_lock:
        if sys.path[:1] != [workdir]:
            if workdir in sys.path:
                sys.path.remove(workdir)
            sys.path.insert(0, workdir)
        before = _imported_for.get(top)
        if before is not None and before != workdir:
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]
        if top not in sys.modules:
            importlib.invalidate_caches()  # files written since the last import are found
        # Imported under the lock: another branch's thread must not drop the module from
        # sys.modules while this one is importing it (KeyError in importlib).
        module = importlib.import_module(module_name)
        origin = getattr(sys.modules.get(top), "__file__", None) or ""
        if origin.startswith(workdir.rstrip(os.sep) + os.sep):
            _imported_for[top] = workdir
    return module


def _import_callable(ctx: StepContext, target: str) -> Callable[[StepContext], Any]:
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = _import_for_workdir(module_name, str(ctx.workdir))
    except ImportError as exc:
        raise StepError(f"step {ctx.step_id!r}: cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise StepError(
                f"step {ctx.step_id!r}: {module_name!r} has no attribute {attr!r}"
            ) from None
    if not callable(obj):
        raise StepError(f"step {ctx.step_id!r}: {target!r} is not callable")
    fn: Callable[[StepContext], Any] = obj
    return fn


def call_step(ctx: StepContext, target: str) -> Any:
    """Import ``package.module:function`` (workdir first on ``sys.path``) and call it."""
    return _import_callable(ctx, target)(ctx)
