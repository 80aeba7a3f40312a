"""``waymark run``: choose the Prefect server, run the flow, print the summary, map exit codes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..run import exit_codes
from ..run.identity import default_executor
from ..run.summary import summary_from_state

__all__ = ["configure_prefect", "default_executor", "run_from_cli"]


def configure_prefect() -> str:
    """Point Prefect at a server before it is imported; return a description of the choice.

    ``PREFECT_API_URL`` set: that server. ``WAYMARK_PREFECT_SERVER=ephemeral``: Prefect's
    in-process server, with a startup timeout long enough for a cold start. Otherwise: the local
    server waymark starts once and reuses (``waymark server start|stop|status``).
    """
    if os.environ.get("PREFECT_API_URL"):
        return f"Prefect server {os.environ['PREFECT_API_URL']}"
    if os.environ.get("WAYMARK_PREFECT_SERVER", "local") == "ephemeral":
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
        os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        return "Prefect's ephemeral server"
    from ..run.local_server import ensure_local_server

    info = ensure_local_server(echo=True)
    os.environ["PREFECT_API_URL"] = info.api_url
    return f"local Prefect server {info.api_url} (UI: {info.ui_url})"


def run_from_cli(
    *,
    plan_path: Path,
    workdir: Path,
    ledger_url: str | None,
    max_steps: int | None,
    until: str | None,
    executor: str | None,
    markers_dir: Path | None = None,
    checked: bool = False,
) -> int:
    """Run the plan in a flow run and map its end to an exit code. ``checked``: the caller has
    checked ``until`` and the marker files already (``waymark run`` does, before Prefect starts);
    the flow then takes the plan it parsed (same file, same bytes) and does not check again."""
    from ..errors import WaymarkError

    try:
        where = configure_prefect()
    except WaymarkError as exc:
        print(f"waymark: {exc}", file=sys.stderr)
        return exit_codes.STEP_FAILED
    print(f"waymark: running {plan_path} on {where}", file=sys.stderr)
    from ..flows.run_plan import run_plan

    state = run_plan(
        plan=str(plan_path),
        workdir=str(workdir),
        ledger_url=ledger_url,
        max_steps=max_steps,
        until=until,
        executor=executor or default_executor(),
        markers_dir=str(markers_dir) if markers_dir is not None else None,
        checked=checked,
        return_state=True,
    )
    summary = summary_from_state(state)
    if isinstance(summary, BaseException):
        print(f"waymark: the run failed: {summary}", file=sys.stderr)
        return exit_codes.STEP_FAILED
    print(summary.text())
    return summary.exit_code
