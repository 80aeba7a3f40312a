"""The plan's metrics as a Prefect table artifact at the end of each run,
``waymark-<plan>-<copy>-metrics`` (one version per run): what the run's ``run_finished`` event
recorded (``metrics``; :mod:`prefect_waymark.metrics`). The plan page shows them too
(:func:`.plan_page.render.metrics_section`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..metrics.table import metric_rows
from .concurrent_sends import Send, send_all

if TYPE_CHECKING:
    from ..ledger.base import LedgerReader

__all__ = ["metrics_table_send", "publish_metrics_table"]

#: How a failure to render or send the table is logged.
NOT_PUBLISHED = "metrics artifact not published"


def metrics_table_send(
    metrics: Mapping[str, Any],
    marker: Mapping[str, Any],
    ledger: LedgerReader,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> Send | None:
    """The run's metrics table artifact (inside the flow run), rendered here, to send; None
    (logged) if it cannot be rendered."""
    from .artifacts import _artifact, create_send
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
        artifact = _artifact(
            "table", copy.key("metrics"), json.dumps(rows), description, copy.metadata()
        )
    except Exception as exc:  # noqa: BLE001 - the UI copy must not fail the run
        logger.error("%s: %s", NOT_PUBLISHED, exc)
        return None
    return create_send(NOT_PUBLISHED, artifact)


def publish_metrics_table(
    metrics: Mapping[str, Any],
    marker: Mapping[str, Any],
    ledger: LedgerReader,
    logger: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> None:
    """Create the run's metrics table artifact (inside the flow run); a failure is logged."""
    send = metrics_table_send(metrics, marker, ledger, logger)
    if send is not None:
        send_all([send], logger)
