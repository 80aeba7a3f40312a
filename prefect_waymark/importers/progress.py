"""The progress an import records: each step the source has done is completed in the ledger
(``step_started`` then ``step_completed``, in dependency order, under the run id
``import-<sha256[:12]>``), then one ``imported`` event names the source file and its sha256.

The ``imported`` event is written last and once: a plan that has one is not imported again
(the same source is a no-op, another is refused by the command). An import interrupted
before it is simply run again: steps it completed already are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..ledger import Hold, Ledger, LedgerReader
from ..ledger.event_writers import record_step_completed, record_step_started
from ..ledger.events import EventKind, ProgressEvent
from ..plan.spec import PlanSpec

__all__ = [
    "Recorded",
    "busy_holds",
    "earlier_import",
    "foreign_events",
    "import_run_id",
    "imported_definitions",
    "record_import",
]


def import_run_id(sha256: str) -> str:
    """The run id an import's step events carry."""
    return f"import-{sha256[:12]}"


def earlier_import(ledger: LedgerReader, plan_id: str) -> ProgressEvent | None:
    """The plan's ``imported`` event, if it was imported before."""
    found = ledger.events(plan_id, kinds=[EventKind.imported])
    return found[0] if found else None


def foreign_events(ledger: LedgerReader, plan_id: str, sha256: str) -> list[ProgressEvent]:
    """The plan's events that this import (of the source ``sha256``) did not write. In a plan
    with no ``imported`` event they are another plan's, which has the same id: an import must
    not complete its steps. (An interrupted run of this same import wrote only its own.)"""
    mine = import_run_id(sha256)
    return [e for e in ledger.events(plan_id) if e.run_id != mine]


def imported_definitions(ledger: LedgerReader, plan_id: str, sha256: str) -> dict[str, str]:
    """The definition hash of each step the import of ``sha256`` completed: what the plan file
    it wrote defined, to tell whether a plan file written again is that one."""
    mine = import_run_id(sha256)
    return {
        e.step_id: str(e.data.get("def_hash", ""))
        for e in ledger.events(plan_id, kinds=[EventKind.step_completed])
        if e.run_id == mine and e.step_id is not None
    }


def busy_holds(ledger: LedgerReader, plan_id: str, sha256: str) -> list[Hold]:
    """Branches a live run of the plan holds (an import cannot start steps there now); an
    interrupted import's own hold does not count."""
    mine = import_run_id(sha256)
    return [h for h in ledger.holds(plan_id) if h.run_id != mine and not h.is_stale()]


@dataclass
class Recorded:
    """What an import recorded: the steps it completed, those the ledger had completed already,
    and those it left alone because the ledger has them in another state (step, status)."""

    completed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)


def record_import(
    ledger: Ledger,
    spec: PlanSpec,
    done: Iterable[str],
    *,
    source_format: str,
    source_path: str,
    sha256: str,
) -> Recorded:
    """Complete the ``done`` steps of ``spec`` in the ledger, then record the ``imported``
    event. Raises :class:`~prefect_waymark.errors.LedgerError` if the ledger refuses a write."""
    plan_id = spec.plan_id
    run_id = import_run_id(sha256)
    states = ledger.step_states(plan_id)
    steps = {s.id: s for s in spec.steps}
    wanted = set(done)
    out = Recorded()
    for sid in spec.topological_order():
        if sid not in wanted:
            continue
        step = steps[sid]
        state = states.get(sid)
        status = str(state.status) if state is not None else "pending"
        resumed = status == "in_progress" and state is not None and state.run_id == run_id
        if status == "completed":
            out.already.append(sid)
            continue
        if status not in ("pending", "failed") and not resumed:
            out.left.append((sid, status))
            continue
        if not resumed:  # an interrupted import's own start is completed, not started again
            record_step_started(
                ledger,
                plan_id,
                step_id=sid,
                branch=step.branch,
                run_id=run_id,
                lease_seconds=60,
                def_hash=step.definition_hash(),
                result_key=None,
                host="import",
                pid=0,
            )
        record_step_completed(
            ledger,
            plan_id,
            step_id=sid,
            branch=step.branch,
            run_id=run_id,
            def_hash=step.definition_hash(),
            outputs={},
            attempts=0,
            imported=True,
        )
        out.completed.append(sid)
    ledger.record(
        plan_id,
        EventKind.imported,
        source_format=source_format,
        source_path=source_path,
        source_sha256=sha256,
        completed=out.completed,
    )
    return out
