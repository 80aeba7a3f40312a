"""After a check-in (``waymark start / done / fail / block``): the Prefect UI says it too.

A flow run publishes the plan page and the steps table as its steps end; an agent or a person
who checks in from outside a flow run changes the same plan, so the check-in publishes a new
version of the same two artifacts (keys ``waymark-<plan>-<copy>`` and ``…-steps``, see
:mod:`.plan_copy`), each with no flow run. Only when a server is known (``PREFECT_API_URL``,
or the local server waymark started) — none is ever started for it — over plain HTTP with one
short deadline for both requests (no Prefect import, no retries). A server that does not answer
is one warning: the check-in is in the ledger either way, and the next run's versions say it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from ..ledger.progress_view import build_view

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec

__all__ = ["CHECKIN_DEADLINE", "publish_checkin_artifacts"]

#: Seconds for both requests together: a check-in is an agent's tool call, it must not hang.
CHECKIN_DEADLINE = 3.0


def _ui_url(api: str) -> str:
    """``PREFECT_UI_URL``, else the API's address without ``/api`` (as Prefect derives it)."""
    import os

    given = os.environ.get("PREFECT_UI_URL")
    if given:
        return given.rstrip("/")
    return api[: -len("/api")] if api.endswith("/api") else api


def publish_checkin_artifacts(
    plan: PlanSpec, ledger: Ledger, workdir: Path, what: str
) -> str | None:
    """Publish the plan page and steps table as the ledger has them now; ``what`` is the
    check-in in words (``"draft done by writer"``). Returns None when published or when no
    server is known, else why not (one line, for a warning)."""
    from ..run.local_server import api_headers, known_api_url
    from .artifacts import steps_table
    from .plan_copy import plan_copy
    from .plan_page_publish import PlanPagePublisher

    api = known_api_url()
    if api is None:
        return None  # the ledger alone: nothing to tell
    states = ledger.step_states(plan.plan_id)
    view = build_view(plan, dict(states))
    page = PlanPagePublisher(plan, ledger, workdir, run_id=f"check-in {what}")
    markdown, description = page.render(live=False, states=states, view=view, ui_url=_ui_url(api))
    copy = plan_copy(plan.plan_id, ledger, str(workdir))
    meta = {**copy.metadata(), "check-in": what[:400]}
    sends = [
        (copy.key(), "markdown", markdown, description),
        (copy.key("steps"), "table", steps_table(view), f"{description} · check-in: {what}"),
    ]
    end = time.monotonic() + CHECKIN_DEADLINE
    try:
        with httpx.Client(base_url=api, headers=api_headers()) as http:
            for key, kind, data, text in sends:
                body = {"key": key, "type": kind, "data": data, "description": text,
                        "metadata_": meta}  # fmt: skip
                sent = http.post("/artifacts/", json=body, timeout=max(0.1, end - time.monotonic()))
                sent.raise_for_status()
    except httpx.HTTPError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return f"the Prefect server at {api} did not take the plan page ({first})"
    return None
