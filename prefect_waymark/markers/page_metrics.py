"""The plan page's "Metrics" section: the metrics the last finished run recorded (its
``run_finished`` event's ``metrics``; :mod:`prefect_waymark.metrics`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics.table import MUST_BE_ZERO, metric_rows
from ..text.markdown import code, table

__all__ = ["metrics_section"]


def metrics_section(finished: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The plan page's "Metrics" section: the metrics the last finished run recorded."""
    last = next((f for f in reversed(finished) if f and f.get("metrics")), None)
    if last is None:
        return []
    metrics = last["metrics"]
    rows = []
    for row in metric_rows(metrics):
        bad = row["key"] in MUST_BE_ZERO and row["value"] not in ("0", "-")
        value = f"**{row['value']} (must be 0)**" if bad else row["value"]
        rows.append([row["metric"], value, row["made of"]])
    return [
        "",
        "## Metrics",
        "",
        f"As the last run ({code(str(last.get('run_id', '?')))}) ended; "
        "`waymark metrics PLAN` computes them now.",
        "",
        *table(["metric", "value", "made of"], rows),
    ]
