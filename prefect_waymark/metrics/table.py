"""The metrics as rows for people: the ``waymark metrics`` table, the run's table artifact and
the plan page's section show the same three columns — metric, value, what it is made of."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LABELS", "MUST_BE_ZERO", "metric_rows", "shown_value"]

LABELS = {
    "plan_omission_rate": "plan omission rate",
    "acceptance_coverage": "acceptance coverage",
    "goal_drift_events": "goal drift events",
    "verification_coverage": "verification coverage",
    "resume_success_rate": "resume success rate",
    "duplicate_side_effects": "duplicate side effects",
    "ref_freshness": "state-ref freshness",
    "single_in_progress_compliance": "single-in_progress violations",
}
#: The metrics whose value is a count that must stay 0 (the rest are rates from 0 to 1).
MUST_BE_ZERO = ("duplicate_side_effects", "single_in_progress_compliance")


def shown_value(name: str, value: Any) -> str:
    """A rate as a percentage, a count as it is, ``-`` when there is nothing to measure."""
    if value is None:
        return "-"
    if name in ("goal_drift_events", *MUST_BE_ZERO):
        return str(value)
    return f"{100 * float(value):.1f}%"


def _omission(m: Mapping[str, Any]) -> str:
    when = "at close" if m.get("closed") else "so far"
    return (
        f"{m['omitted']} of {m['steps']} steps omitted {when} "
        f"({m['executed']} executed, {m['skipped']} skipped)"
    )


def _acceptance(m: Mapping[str, Any]) -> str:
    items = (
        f"{m['items_with_evidence']} of {m['items']} acceptance items with evidence"
        if m["items"]
        else "no contract items known"
    )
    return f"{m['steps_serving']} of {m['steps']} steps serve a contract item; {items}"


def _drift(m: Mapping[str, Any]) -> str:
    return (
        f"{m['forbidden_refusals']} forbidden-action refusals, {m['unlinked_steps']} steps "
        f"without serves or milestone, {m['contract_changes']} contract changes"
    )


def _verification(m: Mapping[str, Any]) -> str:
    return f"{m['covered']} of {m['units']} units (milestones + the plan) verified after changes"


def _resume(m: Mapping[str, Any]) -> str:
    return f"{m['succeeded']} of {m['resumed']} resumed runs clean ({m['runs']} runs in all)"


def _duplicates(m: Mapping[str, Any]) -> str:
    return f"{m['value']} of {m['keys']} action keys executed more than once"


def _freshness(m: Mapping[str, Any]) -> str:
    worst = m.get("max_staleness_seconds")
    stale = f"; oldest read {worst:.1f} s at its decision" if worst is not None else ""
    return f"{m['fresh']} of {m['decisions']} decisions on refs re-read in their run{stale}"


def _in_progress(m: Mapping[str, Any]) -> str:
    return f"{m['violations']} overlaps in {m['intervals']} in_progress intervals"


_MADE_OF: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "plan_omission_rate": _omission,
    "acceptance_coverage": _acceptance,
    "goal_drift_events": _drift,
    "verification_coverage": _verification,
    "resume_success_rate": _resume,
    "duplicate_side_effects": _duplicates,
    "ref_freshness": _freshness,
    "single_in_progress_compliance": _in_progress,
}


def metric_rows(metrics: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per metric: ``{"key", "metric", "value", "made of"}``."""
    rows = []
    for name, m in metrics.items():
        if not isinstance(m, Mapping):
            continue
        try:
            made_of = _MADE_OF[name](m)
        except (KeyError, TypeError, ValueError):  # a document of another version
            made_of = ""
        rows.append(
            {
                "key": name,
                "metric": LABELS.get(name, name),
                "value": shown_value(name, m.get("value")),
                "made of": made_of,
            }
        )
    return rows
