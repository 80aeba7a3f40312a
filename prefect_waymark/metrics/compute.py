"""The eight metrics of a plan, from its spec and its ledger, in one pass over its events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ledger.base import LedgerReader
from ..ledger.events import EventKind, ProgressEvent
from ..ledger.receipts import ReceiptRecord, ReceiptStore
from ..ledger.run_hashes import light_events
from ..ledger.step_state import StepState
from ..models import GoalContract
from ..plan.spec import PlanSpec
from .acceptance import AcceptanceCoverage
from .base import Metric, MetricInput
from .drift import GoalDrift
from .freshness import RefFreshness
from .in_progress import SingleInProgress
from .omission import PlanOmission
from .resume import ResumeSuccess
from .side_effects import DuplicateSideEffects
from .verification import VerificationCoverage

__all__ = ["METRICS", "METRIC_NAMES", "SCHEMA_VERSION", "compute_metrics", "metric_values"]

#: The version of the ``waymark metrics --json`` document.
SCHEMA_VERSION = 1

#: The metrics, in the order the seed names them.
METRICS: tuple[type[Metric], ...] = (
    PlanOmission,
    AcceptanceCoverage,
    GoalDrift,
    VerificationCoverage,
    ResumeSuccess,
    DuplicateSideEffects,
    RefFreshness,
    SingleInProgress,
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
#: The kinds of events the metrics read, in a stable order.
_EVENT_KINDS: tuple[EventKind, ...] = tuple(
    k for k in EventKind if any(k in m.kinds for m in METRICS)
)


def compute_metrics(
    spec: PlanSpec,
    ledger: LedgerReader,
    contract: GoalContract | None = None,
    *,
    states: Mapping[str, StepState] | None = None,
    events: Sequence[ProgressEvent] | None = None,
    receipts: Sequence[ReceiptRecord] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each metric by name (:data:`METRIC_NAMES`): ``{"value": ..., <counts>..., "detail"}``.

    ``contract``: the goal contract whose acceptance items count (a run's re-read contract
    block); the plan's inline contract otherwise. ``states``, ``events`` and ``receipts`` are
    read from ``ledger`` when not given (receipts only from a ledger that keeps them).
    """
    plan_id = spec.plan_id
    if events is None:  # only the kinds some metric reads, without run_started's step hashes
        events = light_events(ledger, plan_id, _EVENT_KINDS)
    if states is None:
        states = ledger.step_states(plan_id)
    if receipts is None and isinstance(ledger, ReceiptStore):
        receipts = ledger.receipts(plan_id)
    source: str | None = "run" if contract is not None else None
    if contract is None and isinstance(spec.contract, GoalContract):
        contract, source = spec.contract, "inline"
    given = MetricInput(spec, states, contract, source, receipts)
    metrics = [cls(given) for cls in METRICS]
    by_kind: dict[EventKind, list[Metric]] = {}
    for m in metrics:
        for kind in m.kinds:
            by_kind.setdefault(kind, []).append(m)
    for ev in events:  # the one pass
        for m in by_kind.get(ev.kind, ()):
            m.feed(ev)
    return {m.name: m.result() for m in metrics}


def metric_values(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    """The value of each metric (what a marker keeps); empty without metrics."""
    if not metrics:
        return {}
    return {name: m.get("value") if isinstance(m, Mapping) else None for name, m in metrics.items()}
