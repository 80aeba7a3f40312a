"""The body of a step: a shell command (``run:``) or a Python callable (``call:``)."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ShellStepError, StepError
from .output_capture import step_log_path
from .shell_command import CommandResult, run_command
from .step_context import StepContext

__all__ = [
    "TAIL_CHARS",
    "call_step",
    "command_env",
    "log_note",
    "output_tail",
    "run_shell_step",
    "tail",
]

TAIL_CHARS = 2000


def tail(text: str, limit: int = TAIL_CHARS) -> str:
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


def run_shell_step(
    ctx: StepContext, command: str, *, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run the command in the workdir; a non-zero exit raises :class:`ShellStepError`."""
    env = command_env(ctx, extra_env)
    proc = run_command(
        command,
        cwd=ctx.workdir,
        env=env,
        timeout=ctx.step.timeout_seconds,
        log_path=step_log_path(ctx.workdir, ctx.plan_id, ctx.step_id, ctx.attempt, ctx.run_id),
    )
    out_tail = output_tail(proc)
    if out_tail.strip():
        ctx.logger.info("step %s output (tail):\n%s%s", ctx.step_id, out_tail, log_note(proc))
    elif proc.log_error:
        ctx.logger.warning("step %s: %s", ctx.step_id, proc.log_error)
    if proc.returncode is None:
        raise ShellStepError(
            f"step {ctx.step_id!r}: command timed out after {ctx.step.timeout_seconds}s "
            "(its process group was killed)",
            out_tail,
        )
    if proc.returncode != 0:
        raise ShellStepError(
            f"step {ctx.step_id!r}: command exited with code {proc.returncode}", out_tail
        )
    return {"returncode": 0, "stdout": tail(proc.stdout)}


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
