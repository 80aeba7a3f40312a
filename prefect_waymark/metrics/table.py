"""The metrics as rows for people: the ``waymark metrics`` table, the run's table artifact and
the plan page's section show the same three columns — metric, value, what it is made of.

A metric that measures a feature the plan does not use reads "not used", never 0 %: acceptance
coverage of a plan whose steps never name the contract item they serve (``serves``),
verification coverage without a ``verify: true`` step, duplicate side effects without an
irreversible action (``action``). A metric with nothing to measure yet (no resumed run, no
decision on a state ref) reads ``-``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LABELS", "MUST_BE_ZERO", "NOT_USED", "metric_rows", "not_used", "shown_value"]

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


#: The value shown for a metric of a feature the plan does not use.
NOT_USED = "not used"


def not_used(name: str, m: Mapping[str, Any]) -> str | None:
    """Why the metric does not apply to the plan (the feature it measures, unused), or None."""
    if name == "acceptance_coverage" and m.get("steps_serving") == 0:
        return "no step names a contract item it serves (serves:)"
    if name == "verification_coverage" and m.get("verify_steps") == 0:
        return "no step has verify: true"
    if name == "duplicate_side_effects" and m.get("keys") == 0:
        return "no irreversible action (action:) ran"
    return None


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
        value = shown_value(name, m.get("value"))
        why = not_used(name, m)
        if why is not None:
            value, made_of = NOT_USED, why
        rows.append(
            {"key": name, "metric": LABELS.get(name, name), "value": value, "made of": made_of}
        )
    return rows
