"""``waymark replay``: the plan's active view as it was at one point of its history.

The point is a ``seq`` (the events with ``seq <= SEQ``) or a time: the events in ``seq`` order up
to the first one recorded after it (``at > TIME``) — what a ``waymark status`` at that moment
read. The step states are folded from those events with the ledger's own pure fold
(:func:`~prefect_waymark.ledger.step_state.apply_event`, as ``Ledger.rebuild`` does).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..ledger.events import STEP_EVENT_KINDS, ProgressEvent
from ..ledger.step_state import StepState, apply_event

__all__ = ["ReplayPoint", "events_until", "fold_states", "parse_point"]

_SEQ = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class ReplayPoint:
    """``--at``: a sequence number or a time with its timezone."""

    seq: int | None = None
    time: datetime | None = None

    def describe(self) -> str:
        return f"seq {self.seq}" if self.seq is not None else f"{self.time:%Y-%m-%d %H:%M:%S%z}"


def parse_point(text: str) -> ReplayPoint:
    """``--at SEQ`` (digits) or ``--at TIME`` (ISO 8601 with a timezone: ``Z`` or ``+01:00``).
    A time without a timezone is refused (``ValueError``): it would mean a different moment on
    each machine."""
    text = text.strip()
    if _SEQ.match(text):
        return ReplayPoint(seq=int(text))
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a sequence number nor an ISO 8601 time "
            "(e.g. 42, or 2026-12-01T09:30:00+00:00)"
        ) from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(
            f"{text!r} has no timezone; add one (2026-12-01T09:30:00Z, or +01:00 for CET)"
        )
    return ReplayPoint(time=when)


def events_until(events: Sequence[ProgressEvent], point: ReplayPoint) -> list[ProgressEvent]:
    """The prefix of ``events`` (in ``seq`` order) recorded at ``point``."""
    out: list[ProgressEvent] = []
    for ev in events:
        if point.seq is not None and (ev.seq or 0) > point.seq:
            break
        if point.time is not None and ev.at > point.time:
            break
        out.append(ev)
    return out


def fold_states(events: Sequence[ProgressEvent]) -> dict[str, StepState]:
    """Each step's state after ``events``: the ledger's fold of its step events."""
    states: dict[str, StepState] = {}
    for ev in events:
        if ev.kind in STEP_EVENT_KINDS and ev.step_id is not None:
            states[ev.step_id] = apply_event(states.get(ev.step_id), ev)
    return states
