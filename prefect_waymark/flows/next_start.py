"""Why the next run starts where it does: the words of a marker's ``next_start.why``."""

from __future__ import annotations

import re

from ..ledger.progress_view import PlanView, StepView, stale_words
from ..run.slot_budget import SlotBudget
from ..run.summary import RunResult

__all__ = ["failed_reason", "failed_start", "next_reason", "stale_reason", "waiting_reason"]


def next_reason(
    result: RunResult,
    loop_stop: str | None,
    max_steps: int | None,
    suspend: tuple[str, str | None] | None = None,
    budget: SlotBudget | None = None,
    review: str | None = None,
) -> str:
    """Why the next run starts where it does, in words (the marker's ``next_start.why``);
    ``review`` is the exact ``waymark review`` command of the first stop."""
    if result == "needs_review" and suspend is not None:
        return (
            "stopped for review; the flow run is suspended until someone answers (Prefect UI: "
            "Resume, or `waymark review`), then goes on"
        )
    if result == "needs_review":
        how = f"`{review}`" if review else "`waymark review`"
        return f"stopped for review: answer with {how}"
    if result == "failed":
        return "a step failed; the next run retries it"
    if loop_stop == "max-steps" and budget is not None and budget.used:
        return (
            f"budget of this schedule slot reached (--max-steps {budget.max_steps}: "
            f"{budget.used} started by earlier runs of the slot)"
        )
    if loop_stop == "max-steps":
        return f"budget reached (--max-steps {budget.max_steps if budget else max_steps})"
    if loop_stop == "until":
        return "--until step reached"
    if loop_stop == "busy":
        return "another run holds the branch and goes on with it"
    return ""


def waiting_reason(waiting: dict[str, str]) -> str:
    """Why a run stopped before agent or manual steps, in words."""
    who = "; ".join(f"{sid} waits for {owner}" for sid, owner in waiting.items())
    return f"{who} (check in with `waymark next` / `waymark start` / `waymark done`)"


def failed_reason(step_id: str, error: str | None) -> str:
    """Why the next run starts at a failed step: which one, and its error's first line (without
    the exception's name and the step's id, which the line already says)."""
    first = (error or "").strip().splitlines()[0] if (error or "").strip() else ""
    first = re.sub(r"^[A-Za-z_]\w*(?:Error|Exception): ", "", first)
    first = first.removeprefix(f"step '{step_id}': ")[:200]
    return f"step {step_id} failed{f' ({first})' if first else ''}; the next run retries it"


def failed_start(view: PlanView, start: str | None) -> StepView | None:
    """The failed step the next run starts with (``start`` is ``view.next_start``), if it is one."""
    if start is None or view.needs_review:
        return None
    step = view.step(start)
    return step if step.status == "failed" else None


def stale_reason(view: PlanView, start: str | None) -> str:
    """Why the next run starts at a stale step (completed, its inputs changed since), if so."""
    if start is None:
        return ""
    step = view.step(start)
    if not step.stale or step.status != "completed":
        return ""
    return f"step {start} is stale ({stale_words(step.stale)}); the next run runs it again"
