"""One execution marker: the boundary of one run, machine-readable (docs: concepts, markers)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..ledger import Ledger
from ..ledger.event_payloads import skip_counts
from ..ledger.events import REF_EVENT_KINDS, EventKind, ProgressEvent
from ..ledger.run_hashes import light_events
from ..ledger.step_state import StepState
from ..ledger.urls import shown_url
from ..metrics import metric_values
from ..models import GoalContract, contract_hash
from ..plan.spec import PlanSpec

__all__ = [
    "artifact_key",
    "build_marker",
    "contract_fingerprint",
    "marker_history",
]


def artifact_key(plan_id: str, suffix: str) -> str:
    """Prefect artifact keys allow only lowercase letters, digits and dashes.

    The plan id is lowercased and every run of other characters becomes one dash:
    ``Weekly_Report.v2`` → ``waymark-weekly-report-v2-marker``.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", plan_id.lower()).strip("-") or "plan"
    return f"waymark-{slug}-{suffix}"


def contract_fingerprint(contract: GoalContract) -> dict[str, Any]:
    """The contract's identity as a marker shows it; ``hash`` is :func:`contract_hash`, the value
    the ledger records, so a marker names the contract the way its re-anchors did."""
    return {
        "goal_id": contract.goal_id,
        "version": contract.version,
        "status": contract.status,
        "hash": contract_hash(contract),
    }


def _local_iso(at: datetime) -> str:
    return at.astimezone().isoformat(timespec="seconds")


def _refs_seen(events: list[ProgressEvent]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Names and versions of state refs (and the contract) seen by this run's re-anchors."""
    refs: dict[str, dict[str, Any]] = {}
    contract: dict[str, Any] | None = None
    for ev in events:
        if ev.kind not in REF_EVENT_KINDS:
            continue
        for ref in ev.data.get("refs", []) or []:
            if isinstance(ref, dict) and "name" in ref:
                refs[str(ref["name"])] = {
                    "name": ref["name"],
                    "version": ref.get("current", ref.get("version")),
                }
        seen = ev.data.get("contract")
        if isinstance(seen, dict) and isinstance(seen.get("current"), dict):
            seen = seen["current"]  # a re-anchor's entry: {current, accepted, result}
        if isinstance(seen, dict) and seen.get("goal_id") is not None:
            contract = {k: seen.get(k) for k in ("goal_id", "version", "hash", "status")}
    return list(refs.values()), contract


def build_marker(
    plan: PlanSpec,
    ledger: Ledger,
    summary: dict[str, Any],
    *,
    marker_file: str | None,
    states: Mapping[str, StepState] | None = None,
) -> dict[str, Any]:
    """The marker of the run that ``summary`` describes, from the summary and the ledger
    (``states``: the step states the run read at its end, if it has them)."""
    run_id = summary["run_id"]
    if states is None:
        states = ledger.step_states(plan.plan_id)
    executed = list(summary.get("executed_steps", [])) + list(summary.get("cached_steps", []))
    outputs: list[dict[str, str]] = []
    receipts: list[dict[str, Any]] = []
    for sid in executed:
        st = states.get(sid)
        if st is None:
            continue
        outputs += [{"step": sid, "path": p, "sha256": h} for p, h in sorted(st.outputs.items())]
        receipts += [dict(r, step=sid) for r in st.receipts]
    run_events = light_events(ledger, plan.plan_id, REF_EVENT_KINDS, run_id=run_id)
    refs, contract = _refs_seen(run_events)
    if contract is None and isinstance(plan.contract, GoalContract):
        contract = contract_fingerprint(plan.contract)
    finished = datetime.fromisoformat(summary["finished_at"])
    skipped, left_out = skip_counts(summary)
    nxt = summary.get("next_start")
    return {
        "plan_id": plan.plan_id,
        "run_id": run_id,
        "executed_at": _local_iso(finished),
        "started_at": _local_iso(datetime.fromisoformat(summary["started_at"])),
        "executor": summary["executor"],
        "workdir": summary["workdir"],
        "flow_run_id": summary.get("flow_run_id"),
        "started_from": summary.get("started_from"),
        "executed_steps": executed,
        # Counts, not lists: what this run passed over as done before, and the plan's steps
        # left out with `waymark skip` as it ended (`waymark status` names them).
        "skipped_count": skipped,
        "left_out_count": left_out,
        "failed_steps": list(summary.get("failed_steps", [])),
        "outputs": outputs,
        "receipts": receipts,
        "state_refs": refs,
        "contract": contract,
        "result": summary["result"],
        "next_start": {
            "step": nxt,
            "why": summary.get("next_start_reason")
            or ("plan complete" if nxt is None else "next pending step"),
        },
        "marker_file": marker_file,
        # Which ledger holds this run's records: a workdir whose marker names another ledger
        # refuses a run there (markers/marker_file.py).
        "ledger_id": ledger.ledger_id,
        "ledger": shown_url(ledger.url),
        # Where the run started and ended and what it changed beyond its outputs (boundary/).
        "boundary": summary.get("boundary"),
        # The value of each metric as the run ended (metrics/); the whole metrics are in the
        # run's run_finished event and `waymark metrics PLAN --json`.
        "metrics": metric_values(summary.get("metrics")),
    }


def marker_history(
    ledger: Ledger, plan_id: str, *, last: int | None = None
) -> list[dict[str, Any]]:
    """Every marker of the plan, oldest first, as recorded in the ledger; ``last``: only the
    newest ``last`` (what a run reads: its cost does not grow with the runs before it)."""
    kinds = [EventKind.marker_written]
    return [dict(e.data) for e in ledger.events(plan_id, kinds=kinds, last=last)]
