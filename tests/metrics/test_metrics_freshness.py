"""The order of ``ref_freshness``'s detail, fed events with chosen timestamps (no run, no
clock): stale decisions first, then the oldest reads; a decision taken at the very instant of
its re-read (0.0 s) is the freshest of all, not an unknown age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from prefect_waymark.ledger.events import EventKind, ProgressEvent
from prefect_waymark.metrics.base import MetricInput
from prefect_waymark.metrics.freshness import RefFreshness
from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import write_plan

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _metric(tmp_path: Path) -> RefFreshness:
    (tmp_path / "terms.md").write_text("v1\n")
    doc = {
        "plan_id": "fresh-order",
        "state_refs": [{"name": "terms", "kind": "file", "path": "terms.md"}],
        "steps": [
            {"id": s, "run": "true", "reads": ["terms"], **({"depends_on": [d]} if d else {})}
            for s, d in (("a", None), ("b", "a"), ("c", "b"), ("d", "c"))
        ],
    }
    spec = load_plan(write_plan(tmp_path, doc))
    given = MetricInput(spec=spec, states={}, contract=None, contract_source=None, receipts=None)
    return RefFreshness(given)


def _ev(
    kind: EventKind, run: str, seconds: float, step: str | None = None, **data: object
) -> ProgressEvent:
    at = T0 + timedelta(seconds=seconds)
    return ProgressEvent(plan_id="fresh-order", kind=kind, step_id=step, run_id=run, at=at,
                         data=dict(data))  # fmt: skip


def test_detail_puts_stale_then_oldest_first_and_a_same_instant_read_last(
    tmp_path: Path,
) -> None:
    m = _metric(tmp_path)
    m.feed(_ev(EventKind.reanchor, "r1", 0.0, refs=[{"name": "terms"}]))
    m.feed(_ev(EventKind.step_started, "r1", 0.0, "a"))  # the same instant as the read: 0.0 s
    m.feed(_ev(EventKind.step_started, "r1", 0.4, "b"))
    m.feed(_ev(EventKind.action_intent, "r1", 1.6, "b", key="K", action="notify"))
    m.feed(_ev(EventKind.step_started, "outside", 3.0, "c"))  # never re-read in its run
    out = m.result()
    assert (out["decisions"], out["fresh"], out["stale"]) == (4, 3, 1)
    order = [(d["step"], d["decision"], d["fresh"], d["staleness_seconds"]) for d in out["detail"]]
    assert order == [
        ("c", "start", False, 3.0),
        ("b", "action", True, 1.6),
        ("b", "start", True, 0.4),
        ("a", "start", True, 0.0),
    ]
    assert out["max_staleness_seconds"] == 3.0


def test_a_ref_never_read_sorts_before_any_known_age(tmp_path: Path) -> None:
    m = _metric(tmp_path)
    m.feed(_ev(EventKind.step_started, "r0", 0.0, "a"))  # no read of `terms` anywhere yet
    m.feed(_ev(EventKind.reanchor, "r1", 1.0, refs=[{"name": "terms"}]))
    m.feed(_ev(EventKind.step_started, "r2", 9.0, "b"))  # stale: 8 s since r1's read
    m.feed(_ev(EventKind.step_started, "r1", 1.0, "c"))  # fresh, 0.0 s
    out = m.result()
    order = [(d["step"], d["fresh"], d["staleness_seconds"]) for d in out["detail"]]
    assert order == [("a", False, None), ("b", False, 8.0), ("c", True, 0.0)]
