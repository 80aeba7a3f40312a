"""The eight metrics of a plan, from its spec and its ledger, in one pass over its events.

What is passed over is what the metrics need, not the plan's whole history: every event of the
kinds they fold except ``run_started`` (those grow with the plan's work, not with its runs), and
of the ``run_started`` events — one per run, however little it did — the plan's first (it is no
resume) and those of the runs that started a step or claimed or applied an action (a resume
that did nothing re-executed nothing), with the number of runs counted in the database
(:func:`metric_events`). A run after 10,000 runs that found nothing to do reads what a run after
ten reads; the result is the one-pass fold over every event (``waymark metrics`` and a run's
metrics agree; ``tests/metrics/test_metrics_history.py``).
"""

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

__all__ = [
    "METRICS",
    "METRIC_NAMES",
    "SCHEMA_VERSION",
    "compute_metrics",
    "metric_events",
    "metric_values",
]

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
#: One per run: read only for the runs the metrics look at (:func:`metric_events`).
_PER_RUN = EventKind.run_started
#: The kinds whose runs the resume metric checks (what a resumed run could have done again).
_RUN_WORK = frozenset({EventKind.step_started, EventKind.action_intent, EventKind.action_applied})


def metric_events(ledger: LedgerReader, plan_id: str) -> tuple[list[ProgressEvent], int]:
    """The events the metrics fold, in the ledger's order, and the plan's number of runs.

    Every event of the kinds the metrics read but ``run_started``, and the ``run_started`` of the
    plan's first run and of each run that started a step or claimed or applied an action: the
    fold over these gives what the fold over every event gives, given the number of runs
    (:class:`~.resume.ResumeSuccess` counts the other runs as resumed without a failure). Read
    without the step hashes some ``run_started`` events hold.
    """
    kinds = [k for k in _EVENT_KINDS if k != _PER_RUN]
    events = light_events(ledger, plan_id, kinds)
    runs = ledger.count_events(plan_id, kinds=[_PER_RUN])
    if not runs:
        return events, 0
    worked = {e.run_id for e in events if e.kind in _RUN_WORK and e.run_id}
    starts = light_events(ledger, plan_id, [_PER_RUN], first=1)
    if worked:
        starts += light_events(ledger, plan_id, [_PER_RUN], run_ids=sorted(worked))
    by_seq = {e.seq: e for e in [*events, *starts]}
    return [by_seq[seq] for seq in sorted(by_seq, key=lambda s: s or 0)], runs


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
    read from ``ledger`` when not given (receipts only from a ledger that keeps them; events:
    :func:`metric_events`, not every event). Given ``events`` are folded as they are: they
    must hold every ``run_started`` of the plan.
    """
    plan_id = spec.plan_id
    runs: int | None = None  # given events: their run_started events are every run
    if events is None:  # what the metrics need (not every run), without step hashes
        events, runs = metric_events(ledger, plan_id)
    if states is None:
        states = ledger.step_states(plan_id)
    if receipts is None and isinstance(ledger, ReceiptStore):
        receipts = ledger.receipts(plan_id)
    source: str | None = "run" if contract is not None else None
    if contract is None and isinstance(spec.contract, GoalContract):
        contract, source = spec.contract, "inline"
    given = MetricInput(spec, states, contract, source, receipts, runs)
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
