"""Numbers a run takes from the environment (``$WAYMARK_REVIEW_WAIT_SECONDS``,
``$WAYMARK_AGENT_WAIT_SECONDS``, ``$WAYMARK_PROBE_TIMEOUT_SECONDS``), read the same way by the
CLI's preflight and the flow."""

from __future__ import annotations

import os

from ..errors import WaymarkError

__all__ = ["PROBE_TIMEOUT_ENV", "probe_timeout", "seconds_from_env"]

#: How long a ``probe:`` (or an ``@action``'s probe) may take before its answer counts as
#: unknown (the step stops for review): nothing waits for ever.
PROBE_TIMEOUT_ENV = "WAYMARK_PROBE_TIMEOUT_SECONDS"
PROBE_TIMEOUT_DEFAULT = 120.0


def probe_timeout() -> float:
    """``$WAYMARK_PROBE_TIMEOUT_SECONDS`` (default 120): above 0, at most a year."""
    value = seconds_from_env(PROBE_TIMEOUT_ENV, default=PROBE_TIMEOUT_DEFAULT)
    if value <= 0:
        raise WaymarkError(
            f"${PROBE_TIMEOUT_ENV}: expected seconds above 0 (a probe never waits for ever), "
            f"got {os.environ.get(PROBE_TIMEOUT_ENV)!r}"
        )
    return value


def seconds_from_env(name: str, default: float = 0.0) -> float:
    """A number of seconds from the environment variable ``name`` (unset or empty:
    ``default``); a bad value is a :class:`~prefect_waymark.errors.WaymarkError` naming the
    variable."""
    raw = os.environ.get(name) or repr(default)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 366 * 86400:
        raise WaymarkError(f"${name}: expected seconds from 0 to a year, got {raw[:40]!r}")
    return value
