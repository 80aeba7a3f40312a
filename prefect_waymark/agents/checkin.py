"""Check-ins: ``waymark start / tick / done / fail / block`` on the ledger alone.

An executor's check-ins are one ledger run, ``agent:<executor>``: ``start`` takes the branch's
in_progress slot under that run (``BranchBusyError`` names who holds it and since when), so an
executor's second step in a branch, another executor, and a flow run are all refused alike.
The hold's host is ``agent:<executor>`` and its pid 0: no process on this machine stands for it,
so only its lease (renewed by ``tick``) says whether it is alive. ``done`` is accepted only from
the executor that started the step. Errors that are the user's are :class:`CheckinError` (the
CLI's exit 2), a stop for review is :class:`CheckinStopped` (exit 4).
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

from ..errors import BranchBusyError, CheckinError, CheckinStopped
from ..guards.base import Verdict
from ..guards.receipts import receipts_of_action
from ..ledger import Ledger
from ..ledger.event_writers import record_drift, record_step_failed, record_step_started
from ..ledger.events import EventKind
from ..ledger.receipts import ReceiptRecord
from ..ledger.step_state import StepState
from ..plan.spec import PlanSpec, StepSpec
from ..review.gate import ReviewGate
from ..text.commands import review_command, waymark_command
from ..text.lists import capped_list
from .anchor import reanchor
from .identity import agent_run_id, item_ids

__all__ = [
    "AGENT_LEASE_SECONDS",
    "CheckinError",
    "CheckinStopped",
    "acceptance_ids",
    "agent_run_id",
    "block_step",
    "fail_step",
    "start_step",
    "tick_step",
]

#: How long an executor's hold lives without a ``tick`` (agents work in minutes, not seconds).
AGENT_LEASE_SECONDS = 3600.0
log = logging.getLogger("prefect_waymark.agents")


def acceptance_ids(step: StepSpec) -> dict[str, str]:
    """The step's acceptance items by id: ``A1``, ``A2``, … in order."""
    return item_ids(step.acceptance)


def checkin_step(plan: PlanSpec, step_id: str) -> StepSpec:
    try:
        step = plan.step(step_id)
    except KeyError:
        known = capped_list([s.id for s in plan.steps])
        raise CheckinError(
            f"plan {plan.plan_id!r} has no step {step_id!r} (steps: {known})"
        ) from None
    return step


def _stop(plan: PlanSpec, ledger: Ledger, run_id: str, step: StepSpec, verdict: Verdict) -> None:
    """Stop ``step`` through the review gate and raise :class:`CheckinStopped`. A step in
    progress cannot be refused (the ledger allows that only before it starts): a forbidden
    action found then stops it for review, which releases its branch."""
    st = ledger.step_states(plan.plan_id).get(step.id)
    if verdict.kind == "refuse" and st is not None and st.status == "in_progress":
        if verdict.drift is not None:
            record_drift(ledger, plan.plan_id, step_id=step.id, run_id=run_id, **verdict.drift)
        verdict = Verdict("review", verdict.reason, verdict.details)
    gate = ReviewGate(plan, ledger, run_id, log)
    outcome = gate.stop(step.id, verdict)
    if outcome == "moved":
        raise CheckinError(
            f"step {step.id} was moved on by another run meanwhile ({verdict.reason}); "
            f"`{waymark_command('next', plan.source)}` says where it stands"
        )
    if outcome == "refused":
        raise CheckinStopped(f"step {step.id} refused: {verdict.reason}")
    raise CheckinStopped(
        f"step {step.id} stopped for review: {verdict.reason}; answer with "
        f"`{review_command(plan.source, step.id)}`"
    )


def refused_before(st: StepState | None) -> bool:
    """The step was refused (a forbidden action): it is not offered again until someone
    re-runs it (`waymark rerun`) — after the contract changed, say."""
    return st is not None and st.status == "failed" and st.last_event == "step_refused"


def start_step(
    plan: PlanSpec,
    ledger: Ledger,
    workdir: Path,
    step_id: str,
    executor: str,
    lease_seconds: float = AGENT_LEASE_SECONDS,
) -> str:
    """Take the branch's in_progress slot for ``step_id``; return what happened, in words."""
    step = checkin_step(plan, step_id)
    if not step.checked_in:
        raise CheckinError(
            f"step {step_id} is code that a flow run executes (run: / call:); `waymark run "
            f"{plan.source}` runs it"
        )
    run_id = agent_run_id(executor)
    states = ledger.step_states(plan.plan_id)
    st = states.get(step_id)
    status = st.status if st else "pending"
    if status == "in_progress":
        if st is not None and st.run_id == run_id:
            return f"step {step_id} is already yours (started {st.last_at}); go on with it"
        since = f" since {st.last_at}" if st is not None and st.last_at else ""
        raise CheckinError(
            f"step {step_id} is in progress by {_who(st.run_id if st else None)}{since}"
        )
    if status not in ("pending", "failed", "blocked"):
        raise CheckinError(f"step {step_id} is {status}; nothing to start")
    if step.owner is not None and step.owner != executor:
        raise CheckinError(
            f"step {step_id} is for {step.owner!r} (its owner in the plan), not {executor!r}; "
            f"start it as {step.owner}, or change its owner in {plan.source}"
        )
    missing = [
        d for d in step.depends_on if (states.get(d) is None or states[d].status != "completed")
    ]
    if missing:
        raise CheckinError(f"step {step_id} waits for {', '.join(missing)} (not completed)")
    holder = next((h for h in ledger.holds(plan.plan_id) if h.branch == step.branch), None)
    if holder is not None and not holder.is_stale():  # refuse before anything is recorded
        raise CheckinError(
            f"branch {step.branch} is busy: step {holder.step_id} is in progress by "
            f"{_who(holder.run_id)} since {holder.since}; one step per branch at a time"
        )
    reading = reanchor(plan, ledger, workdir, run_id, step)
    if reading.verdict is not None:
        _stop(plan, ledger, run_id, step, reading.verdict)
    try:
        record_step_started(
            ledger,
            plan.plan_id,
            step_id=step_id,
            branch=step.branch,
            run_id=run_id,
            lease_seconds=lease_seconds,
            def_hash=step.definition_hash(),
            result_key=None,
            host=run_id,
            pid=0,
        )
    except BranchBusyError as exc:
        holder = next((h for h in ledger.holds(plan.plan_id) if h.branch == step.branch), None)
        since = f" since {holder.since}" if holder else ""
        raise CheckinError(
            f"branch {step.branch} is busy: step {exc.holder_step} is in progress by "
            f"{_who(exc.holder_run)}{since}; one step per branch at a time"
        ) from exc
    line = f"started step {step_id} as {executor} (branch {step.branch}; hold renewed by tick)"
    done_before = action_done_before(ledger, plan, step)
    if done_before is not None:  # a `waymark rerun` after the action was done: say it first
        line += (
            f"\nnote: its action {step.action!r} was {done_before}: do not do it again; `done` "
            "completes the step on that receipt"
        )
    return line


def _who(run_id: str | None) -> str:
    if run_id and run_id.startswith("agent:"):
        return f"executor {run_id.removeprefix('agent:')!r}"
    return f"run {run_id}" if run_id else "someone"


def require_holder(
    plan: PlanSpec, ledger: Ledger, step: StepSpec, executor: str, verb: str
) -> None:
    st = ledger.step_states(plan.plan_id).get(step.id)
    if st is None or st.status != "in_progress":
        status = st.status if st else "pending"
        if st is not None and st.last_event == "step_interrupted" and st.error:
            raise CheckinError(
                f"step {step.id}: your hold ran out (no `waymark tick` within its lease) and was "
                f"released ({st.error}); "
                f"`{waymark_command('start', plan.source, step.id, '--executor', executor)}` "
                "takes it again"
            )
        hint = (
            f": `{waymark_command('start', plan.source, step.id, '--executor', executor)}` first"
            if status in ("pending", "failed", "blocked")
            else ""
        )
        raise CheckinError(f"step {step.id} is {status}, not in progress{hint}")
    if st.run_id != agent_run_id(executor):
        run_id = st.run_id or ""
        holder = run_id.removeprefix("agent:") if run_id.startswith("agent:") else None
        hint = (
            f"; if you are {holder!r}, say so: add `--executor {shlex.quote(holder)}` to the "
            f"command, or set `WAYMARK_EXECUTOR={shlex.quote(holder)}` for the session"
            if holder
            else ""
        )
        raise CheckinError(
            f"step {step.id} was started by {_who(st.run_id)}, not by {executor!r}; only "
            f"its executor can {verb} it{hint}"
        )


def applied_receipts(ledger: Ledger, plan: PlanSpec, step: StepSpec) -> list[ReceiptRecord]:
    """The committed receipts of the step's ``action`` as it is named now (a renamed action is
    another): it was done already, before a ``waymark rerun`` or under the step's old id (the
    receipt follows the action: :func:`~prefect_waymark.guards.receipts.receipts_of_action`)."""
    if step.action is None:
        return []
    rows = receipts_of_action(plan, step.id, step.action, ledger.receipts(plan.plan_id))
    return [r for r in rows if r.state == "applied"]


def action_done_before(ledger: Ledger, plan: PlanSpec, step: StepSpec) -> str | None:
    """The step's action's committed receipt in words, if it was done already."""
    found = applied_receipts(ledger, plan, step)
    return found[0].applied_words() if found else None


def fail_step(plan: PlanSpec, ledger: Ledger, step_id: str, executor: str, reason: str) -> None:
    step = checkin_step(plan, step_id)
    require_holder(plan, ledger, step, executor, "fail")
    record_step_failed(
        ledger,
        plan.plan_id,
        step_id=step_id,
        branch=step.branch,
        run_id=agent_run_id(executor),
        error=reason,
        output_tail=None,
        attempts=1,
    )


def block_step(
    plan: PlanSpec, ledger: Ledger, step_id: str, executor: str, on: str | None, reason: str
) -> None:
    """Record that ``step_id`` cannot go on: behind step ``on``, or for ``reason``."""
    step = checkin_step(plan, step_id)
    if not step.checked_in:
        raise CheckinError(
            f"step {step_id} is code that a flow run executes; only agent and manual steps are "
            "blocked by hand (a failed code step blocks the steps after it by itself)"
        )
    if on is not None:
        checkin_step(plan, on)
        if on == step_id:
            raise CheckinError(f"--on {on}: a step cannot wait behind itself")
    st = ledger.step_states(plan.plan_id).get(step_id)
    status = st.status if st else "pending"
    run_id = agent_run_id(executor)
    if status == "in_progress" and st is not None and st.run_id != run_id:
        raise CheckinError(f"step {step_id} is in progress by {_who(st.run_id)}: they block it")
    if status not in ("pending", "failed", "in_progress", "blocked"):
        raise CheckinError(f"step {step_id} is {status}; only an open step can be blocked")
    data: dict[str, Any] = {"by": executor}
    if on is not None:
        data["on"] = on
    if reason:
        data["reason"] = reason
    ledger.record(
        plan.plan_id, EventKind.step_blocked, step_id=step_id, branch=step.branch, run_id=run_id,
        **data,
    )  # fmt: skip


def tick_step(
    plan: PlanSpec,
    ledger: Ledger,
    workdir: Path,
    step_id: str,
    executor: str,
    *,
    count: int,
    every: int,
    lease_seconds: float = AGENT_LEASE_SECONDS,
) -> dict[str, Any] | None:
    """Renew the executor's hold; on every ``every``-th tick (``count`` is this one's number)
    re-anchor and return the contract (goal, forbidden) — a conflict raises
    :class:`CheckinStopped`."""
    step = checkin_step(plan, step_id)
    require_holder(plan, ledger, step, executor, "tick")
    run_id = agent_run_id(executor)
    if not ledger.renew(run_id, lease_seconds):  # the step is ours, but no hold row is
        raise CheckinError(
            f"step {step.id}: no hold of branch {step.branch} by {_who(run_id)} in this ledger "
            "to renew; nothing renewed"
        )
    if count % max(1, every):
        return None
    reading = reanchor(plan, ledger, workdir, run_id, step, point="tick")
    if reading.verdict is not None:
        _stop(plan, ledger, run_id, step, reading.verdict)
    return {"goal": reading.goal, "forbidden": reading.forbidden, "refs": reading.refs}
