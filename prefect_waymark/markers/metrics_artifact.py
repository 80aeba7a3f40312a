"""The plan's metrics as a Prefect table artifact at the end of each run,
``waymark-<plan>-<copy>-metrics`` (one version per run): what the run's ``run_finished`` event
recorded (``metrics``; :mod:`prefect_waymark.metrics`). The plan page shows them too
(:mod:`.page_metrics`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..metrics.table import metric_rows

if TYPE_CHECKING:
    from ..ledger.base import LedgerReader

__all__ = ["publish_metrics_table"]


def publish_metrics_table(
    metrics: Mapping[str, Any],
    marker: Mapping[str, Any],
    ledger: LedgerReader,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> None:
    """Create the run's metrics table artifact (inside the flow run); a failure is logged."""
    from .artifacts import _create
    from .plan_copy import plan_copy

    try:
        copy = plan_copy(str(marker["plan_id"]), ledger, str(marker["workdir"]))
        rows = metric_rows(metrics)
        closed = (metrics.get("plan_omission_rate") or {}).get("closed")
        when = "at close" if closed else "so far"
        description = (
            f"the plan's metrics {when}, after run {marker['run_id']} — {copy.label} "
            f"(`waymark metrics PLAN --json` has every count)"
        )
        _create("table", copy.key("metrics"), json.dumps(rows), description, copy.metadata())
    except Exception as exc:  # noqa: BLE001 - the UI copy must not fail the run
        logger.error("metrics artifact not published: %s", exc)
