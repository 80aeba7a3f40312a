"""A run's identity across the executions of one flow run, and the suspend at its end
(review stops free the worker; :mod:`prefect_waymark.review.suspend`)."""

from __future__ import annotations

from ..ledger import Ledger
from ..ledger.event_writers import record_review_resumed
from ..ledger.events import EventKind
from ..ledger.identity import execution_run_id
from ..ledger.run_hashes import light_events
from ..review.suspend import in_deployment_run, suspend_now
from .run_record import RunRecord

__all__ = ["run_id_of_execution", "suspend_run"]

#: The executions of one flow run looked up at a time (a suspended run is resumed a few times).
_PROBE = 8


def run_id_of_execution(ledger: Ledger, plan_id: str, flow_run_id: str) -> str:
    """This execution's run id: the flow run's id, or — a deployment's suspended run resumed,
    executed again — ``<id>-r<N>`` (Prefect's ``run_count`` does not count it)."""
    if not in_deployment_run():
        return flow_run_id
    # The executions so far have the run ids of execution_run_id(flow_run_id, 1, 2, ...):
    # theirs are read by run id, a few at a time (the plan's other runs never are).
    before = 0
    while True:
        ids = [execution_run_id(flow_run_id, before + n) for n in range(1, _PROBE + 1)]
        found = {  # without their step hashes: a big plan's history is big
            ev.run_id
            for ev in light_events(ledger, plan_id, [EventKind.run_started], run_ids=ids)
            if ev.data.get("flow_run_id") == flow_run_id
        }
        before += len(found)
        if len(found) < _PROBE:
            return execution_run_id(flow_run_id, before + 1)


def suspend_run(run: RunRecord, suspend: tuple[str, str | None], wait_seconds: float) -> None:
    """Suspend the flow run (Prefect's ``Pause`` ends it); if Prefect refuses, the run ends
    stopped for review like any other, and the ledger says the suspension did not happen."""
    key, description = suspend
    try:
        suspend_now(key, wait_seconds, description)
    except Exception as exc:  # noqa: BLE001 - Pause is not an Exception: it passes through
        then = (
            "it ends waiting for the check-in; the next run follows it"
            if description is None
            else "it ends stopped for review; answer with `waymark review`, and the next run "
            "follows the answer"
        )
        run.logger.warning(
            "could not suspend the flow run (%s: %s): %s", type(exc).__name__, exc, then
        )
        record_review_resumed(
            run.ledger,
            run.spec.plan_id,
            run_id=run.run_id,
            flow_run_id=str(run.flow_run_id),
            pause_key=key,
            decision="",
            applied=False,
            error=f"not suspended: {type(exc).__name__}: {str(exc)[:300]}",
        )
