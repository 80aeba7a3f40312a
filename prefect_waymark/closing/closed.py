"""Whether a plan was closed, and what runs, resumes, skips and check-ins say when it was.

A plan is closed by its ``plan_closed`` event (``waymark close``); the event is final. The full
history stays in the ledger and is read as before (``waymark status``, ``waymark marker
--history``); only new work is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PlanClosedError
from ..ledger.plan_close import read_closed

if TYPE_CHECKING:
    import logging
    from pathlib import Path

    from ..ledger import Ledger
    from ..ledger.base import LedgerReader
    from ..plan.spec import PlanSpec

__all__ = [
    "check_not_closed",
    "closed_line",
    "closed_refusal",
    "deploy_refusal",
    "refuse_closed_run",
]


def closed_line(plan_id: str, record: dict[str, Any]) -> str:
    """``plan 'x' was closed on 2026-12-01 18:20 UTC by ann: done`` (``(forced)`` if so)."""
    when = str(record.get("at") or "")[:16].replace("T", " ")
    from ..text.markdown import cell  # one line: a reason's newlines never start another

    forced = " (forced)" if record.get("forced") else ""
    why = f": {cell(record['reason'])}" if record.get("reason") else ""
    who = cell(record.get("by"), 100)
    return f"plan {plan_id!r} was closed{forced} on {when} UTC by {who}{why}"


def closed_refusal(plan_id: str, source: str, record: dict[str, Any]) -> str:
    """The one line a run, resume, skip or check-in of a closed plan is refused with."""
    return (
        f"{closed_line(plan_id, record)}; nothing ran. Its history: `waymark status {source}`, "
        f"`waymark marker {source} --history`, `waymark export {source} --format jsonl`"
    )


def check_not_closed(ledger: LedgerReader | None, plan_id: str, source: str) -> None:
    """Raise :class:`PlanClosedError` if the plan was closed."""
    record = read_closed(ledger, plan_id)
    if record is not None:
        raise PlanClosedError(closed_refusal(plan_id, source, record), record)


def deploy_refusal(plan: PlanSpec, ledger_url: str | None, workdir: Path) -> str | None:
    """Why ``waymark deploy`` / ``serve`` refuses ``plan``: it was closed, as its ledger says
    when it can be read from here; ``None`` otherwise (a ledger only a worker reaches is left to
    the run, which refuses the plan and pauses the deployment's schedules)."""
    from ..ledger import open_reader, resolve_ledger_url

    try:
        url = resolve_ledger_url(ledger_url, workdir, source="--ledger", pin=plan.ledger)
        with open_reader(url) as led:
            record = read_closed(led, plan.plan_id)
    except Exception:  # noqa: BLE001 - not readable from here: the run checks it
        return None
    if record is None:
        return None
    return (
        f"{closed_line(plan.plan_id, record)}; a closed plan runs nothing, so nothing was "
        f"deployed. Its history: `waymark status {plan.source}`"
    )


def refuse_closed_run(
    ledger: Ledger,
    plan: PlanSpec,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> None:
    """At a run's start (``run_plan``), before anything is recorded: raise
    :class:`PlanClosedError` for a closed plan. A deployment's run pauses the deployment's
    schedules first, as for a complete plan, so it makes no more runs."""
    try:
        check_not_closed(ledger, plan.plan_id, plan.source)
    except PlanClosedError:
        from ..review.schedules import pause_finished_schedules

        pause_finished_schedules("closed", ledger, plan.plan_id, logger)
        raise
