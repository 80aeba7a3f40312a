"""What every metric shares: what it is computed from, how it reads the ledger's events, and
the shape of its result.

A metric is a small fold: :meth:`Metric.feed` sees each event of the kinds it names, once, in
the ledger's order (:func:`~.compute.compute_metrics` makes one pass over a plan's events for all
eight), and :meth:`Metric.result` gives ``{"value": ..., <counts>..., "detail": [...]}``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..ledger.events import EventKind, ProgressEvent
from ..ledger.receipts import ReceiptRecord
from ..ledger.step_state import StepState
from ..models import GoalContract
from ..plan.spec import PlanSpec

__all__ = ["DETAIL_MAX", "Metric", "MetricInput", "capped", "ratio"]

#: At most this many entries in a metric's ``detail`` list (``detail_total`` says how many).
DETAIL_MAX = 20


@dataclass(frozen=True)
class MetricInput:
    """What the metrics are computed from besides the events."""

    spec: PlanSpec
    states: Mapping[str, StepState]
    #: The goal contract whose items are counted (the run's, or the plan file's inline one).
    contract: GoalContract | None
    #: Where it came from: ``run`` (given by the caller), ``inline``, or None.
    contract_source: str | None
    #: The plan's rows of ``waymark_receipts`` (None: this reader cannot read them).
    receipts: Sequence[ReceiptRecord] | None
    #: The plan's number of runs, counted in the ledger, when the events fed hold only some
    #: of its ``run_started`` events (None: they hold all of them).
    runs: int | None = None


class Metric(ABC):
    """One metric: fed the events of its ``kinds`` in order, then asked for its result."""

    name: ClassVar[str]
    kinds: ClassVar[frozenset[EventKind]] = frozenset()

    def __init__(self, given: MetricInput) -> None:
        self.given = given

    def feed(self, ev: ProgressEvent) -> None:  # noqa: B027 - a metric may need no events
        """See one event (of :attr:`kinds`)."""

    @abstractmethod
    def result(self) -> dict[str, Any]:
        """``{"value": number or None, <counts>..., "detail": [...]}``."""


def ratio(part: int, whole: int) -> float | None:
    """``part / whole`` rounded to 4 places; None when there is nothing to measure."""
    return round(part / whole, 4) if whole else None


def capped(items: Iterable[Any], limit: int = DETAIL_MAX) -> dict[str, Any]:
    """``{"detail": first items}`` plus ``detail_total`` when some were left out."""
    found = list(items)
    out: dict[str, Any] = {"detail": found[:limit]}
    if len(found) > limit:
        out["detail_total"] = len(found)
    return out
