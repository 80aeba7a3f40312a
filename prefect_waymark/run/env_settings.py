"""Numbers a run takes from the environment (``$WAYMARK_REVIEW_WAIT_SECONDS``,
``$WAYMARK_AGENT_WAIT_SECONDS``), read the same way by the CLI's preflight and the flow."""

from __future__ import annotations

import os

from ..errors import WaymarkError

__all__ = ["seconds_from_env"]


def seconds_from_env(name: str) -> float:
    """A number of seconds from the environment variable ``name`` (unset or empty: 0); a bad
    value is a :class:`~prefect_waymark.errors.WaymarkError` naming the variable."""
    raw = os.environ.get(name) or "0"
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 366 * 86400:
        raise WaymarkError(f"${name}: expected seconds from 0 to a year, got {raw[:40]!r}")
    return value
