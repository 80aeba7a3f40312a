"""A step whose plan entry names an ``action:``: its whole body is one irreversible action.

A ``run:`` command gets ``WAYMARK_IDEMPOTENCY_KEY`` and never runs again once a receipt is
committed; its optional ``probe:`` command answers for an intent without a receipt. The action
protocol itself (intent, effect, receipt, reconciling) is :class:`~.actions.Action`'s.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from ..run.env_settings import probe_timeout
from .actions import Action, Probe
from .output_capture import step_log_path
from .shell_command import run_command
from .step_body import call_step, command_env, log_note, run_shell_step, tail
from .step_context import StepContext

__all__ = ["run_step_action"]


def _shell_probe(ctx: StepContext, command: str) -> Probe:
    def probe(key: str) -> bool | None:
        extra = {"WAYMARK_IDEMPOTENCY_KEY": key, "WAYMARK_ACTION": str(ctx.step.action)}
        env = command_env(ctx, extra)
        log = step_log_path(
            ctx.workdir, ctx.plan_id, ctx.step_id, ctx.attempt, ctx.run_id, kind="probe"
        )
        limit = min(ctx.step.timeout_seconds or float("inf"), probe_timeout())
        proc = run_command(command, cwd=ctx.workdir, env=env, timeout=limit, log_path=log)
        if proc.returncode is None:
            ctx.logger.warning(
                "step %s: probe timed out after %.0f s (the answer is unknown)%s",
                ctx.step_id,
                limit,
                log_note(proc),
            )
            return None
        ctx.logger.info(
            "step %s: probe exited %s%s",
            ctx.step_id,
            proc.returncode,
            f"\n{tail(proc.stdout + proc.stderr)}{log_note(proc)}"
            if (proc.stdout + proc.stderr).strip()
            else "",
        )
        return {0: True, 1: False}.get(proc.returncode)

    return probe


def _read_receipt_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_step_action(ctx: StepContext) -> Any:
    """Run a step whose plan entry names an ``action``: the whole body is the action.

    ``run:`` commands get ``WAYMARK_IDEMPOTENCY_KEY``, ``WAYMARK_ACTION`` and
    ``WAYMARK_RECEIPT_FILE`` (write ``{"external_id": ...}`` there to put it in the receipt);
    the optional ``probe:`` command answers for an intent without a receipt (exit 0 applied,
    1 not applied, anything else unknown). A ``call:`` step's return value is kept in the
    receipt and returned again when the action is skipped.
    """
    step = ctx.step
    assert step.action is not None
    probe = _shell_probe(ctx, step.probe) if step.run is not None and step.probe else None
    act = Action(ctx, step.action, probe=probe)
    with act:
        if act.needed and step.run is not None:
            with tempfile.TemporaryDirectory(prefix="waymark-receipt-") as tmp:
                receipt_file = Path(tmp) / "receipt.json"
                out = run_shell_step(
                    ctx,
                    step.run,
                    extra_env={
                        "WAYMARK_IDEMPOTENCY_KEY": act.key,
                        "WAYMARK_ACTION": step.action,
                        "WAYMARK_RECEIPT_FILE": str(receipt_file),
                    },
                )
                told = _read_receipt_file(receipt_file)
            act.record(
                external_id=told.get("external_id"),
                response=told.get("response", out.get("stdout", "")),
                result=out,
            )
        elif act.needed:
            assert step.call is not None
            act.record(result=call_step(ctx, step.call))
    receipt = act.receipt.model_dump(mode="json") if act.receipt else None
    if step.run is not None:
        if act.ran:
            return {**act.result, "receipt": receipt}
        return {"returncode": 0, "stdout": "", "skipped": act.how, "receipt": receipt}
    return act.result
