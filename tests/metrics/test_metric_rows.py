"""The metrics as people read them (``waymark metrics``, the table artifact, the plan page): a
metric of a feature the plan does not use reads "not used", never 0 %."""

from __future__ import annotations

from typing import Any

from prefect_waymark.markers.plan_page.render import metrics_section
from prefect_waymark.metrics.table import NOT_USED, metric_rows

#: A plan that never used `serves`, `verify: true` or an irreversible action.
UNUSED: dict[str, Any] = {
    "acceptance_coverage": {"value": 0.0, "steps": 6, "steps_serving": 0, "items": 2,
                            "items_with_evidence": 0},
    "verification_coverage": {"value": 0.0, "units": 4, "covered": 0, "verify_steps": 0},
    "duplicate_side_effects": {"value": 0, "keys": 0},
    "resume_success_rate": {"value": None, "runs": 1, "resumed": 0, "succeeded": 0},
}  # fmt: skip
#: The same metrics where the plan uses each feature.
USED: dict[str, Any] = {
    "acceptance_coverage": {"value": 0.0, "steps": 6, "steps_serving": 1, "items": 2,
                            "items_with_evidence": 0},
    "verification_coverage": {"value": 0.0, "units": 4, "covered": 0, "verify_steps": 1},
    "duplicate_side_effects": {"value": 1, "keys": 2},
}  # fmt: skip


def _values(metrics: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {r["key"]: (r["value"], r["made of"]) for r in metric_rows(metrics)}


def test_metrics_of_unused_features_read_not_used() -> None:
    rows = _values(UNUSED)
    assert rows["acceptance_coverage"] == (
        NOT_USED,
        "no step names a contract item it serves (serves:)",
    )
    assert rows["verification_coverage"] == (NOT_USED, "no step has verify: true")
    assert rows["duplicate_side_effects"] == (NOT_USED, "no irreversible action (action:) ran")
    assert rows["resume_success_rate"][0] == "-"  # nothing measured yet: not a 0 % either
    assert not any(v.endswith("%") and float(v[:-1]) == 0 for v, _ in rows.values())


def test_metrics_of_used_features_keep_their_values() -> None:
    rows = _values(USED)
    assert rows["acceptance_coverage"][0] == "0.0%"  # one step serves: a real 0 %
    assert rows["verification_coverage"][0] == "0.0%"
    assert rows["duplicate_side_effects"][0] == "1"


def test_the_plan_page_never_flags_a_metric_that_is_not_used() -> None:
    section = "\n".join(metrics_section([{"run_id": "r1", "metrics": UNUSED}]))
    assert "| duplicate side effects | not used | no irreversible action (action:) ran |" in section
    assert "must be 0" not in section
    flagged = "\n".join(metrics_section([{"run_id": "r1", "metrics": USED}]))
    assert "| duplicate side effects | **1 (must be 0)** |" in flagged
