"""How a run shows in the Prefect UI: its flow run's name, tags and final state, and the links
``waymark run`` prints.

A flow run of ``run_plan`` is named ``<plan_id> · <local date and time> · <executor>`` (plan and
date first: the runs list cuts a long name at its end, and a deployment's executor is the
worker's long name) and tagged ``waymark`` and ``plan:<plan_id>`` however it was started
(``waymark run``, a deployment, a Python call). Its final state says the plan's outcome, and its
type — which decides the badge's colour and icon in the runs list — never says "done" for a run
that stopped before the plan was:

=================  =====================================  ====================================
summary result     Prefect state (type, name)             badge in the runs list (3.9)
=================  =====================================  ====================================
completed          COMPLETED ``Completed``                green, a check: the plan is done
stopped            CANCELLED ``Stopped``                  grey, a "ban" sign: neither failed
                                                          nor done; the next run goes on
needs_review       FAILED ``NeedsReview``                 red, a cross: a person must act
aborted plan       CANCELLED ``Aborted``                  grey: a person called the plan off
failed             FAILED ``Failed``                      red, a cross: a step failed
interrupted        CRASHED ``Crashed``                    orange: Prefect's own (SIGINT/TERM)
=================  =====================================  ====================================

Why these types (looked at in Chromium on Prefect 3.9.1's runs list, whose badge colour and
icon come from the type alone, the name being only its text): COMPLETED gives every name a
green check, so a run waiting for a person read as done. Prefect has no final "attention" type:
PAUSED (grey-purple) is not final — the run would look resumable while no process waits — and
CRASHED (orange, a crashed-server icon) means the infrastructure failed, which Prefect itself
uses for interrupted runs. FAILED is the one final type that asks for a person; CANCELLED, grey,
is neither failed nor done. ``stopped`` is the routine end of a budgeted deployment run, hence
not red.

What the types change, and what keeps working: a FAILED or CANCELLED state makes Prefect raise
its data from ``state.result()``; the state carries a
:class:`~prefect_waymark.errors.PlanRunStopped` (or, a step failed,
:class:`~prefect_waymark.errors.PlanRunFailed`) holding the run's summary, which
:func:`~prefect_waymark.run.summary.summary_from_state` reads for ``waymark run`` (exit codes
unchanged) and for a sub-plan's parent step. ``run_plan(...)`` called as a function still
returns the summary dict for every stop (flows/json_flow.py: :class:`PlanFlow`) and raises
``PlanRunFailed`` when a step failed. The state *name* still carries the outcome: the UI's
"State names" filter lists it, and each final state emits the event
``prefect.flow-run.<name>`` that an automation can match (``prefect.flow-run.NeedsReview``,
``prefect.flow-run.Aborted``). The state message is the plan's one line (``needs review at
draft · 4/6 done · next: draft``), as the artifact descriptions say it
(:func:`~prefect_waymark.markers.plan_page.render.plan_line`); Prefect 3.9's runs list shows no
state message on its cards, the flow run's page shows it ("State Message" in its Details tab,
and its last log line, "Finished in state NeedsReview('needs review at …')").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

    from ..ledger import Ledger
    from ..ledger.progress_view import PlanView
    from .summary import RunResult, RunSummary

__all__ = [
    "STATE_NAMES",
    "deployment_url",
    "final_state",
    "format_run_name",
    "run_name",
    "run_name_and_tags",
    "run_tags",
    "state_name",
    "ui_links",
]

#: The final state's name for each outcome (``aborted``: the plan is aborted in the ledger).
STATE_NAMES: dict[str, str] = {
    "completed": "Completed",
    "stopped": "Stopped",
    "needs_review": "NeedsReview",
    "aborted": "Aborted",
    "failed": "Failed",
}


def run_tags(plan_id: str) -> list[str]:
    """The tags of every flow run of a plan (and of its deployment)."""
    return ["waymark", f"plan:{plan_id}"]


def format_run_name(plan_id: str, executor: str, when: datetime | None = None) -> str:
    """``research-report · 2026-12-01 09:30:05 · agent-1`` (local time): the plan and the date
    first, so a long executor (a worker's name) is what the UI cuts off."""
    moment = (when or datetime.now()).astimezone()
    return f"{plan_id} · {moment:%Y-%m-%d %H:%M:%S} · {executor}"


def state_name(result: RunResult, *, aborted: bool = False) -> str:
    """The final state's name of a run that ended with ``result`` (an interrupted run raises:
    Prefect ends it Crashed)."""
    if aborted and result in ("needs_review", "stopped"):
        return STATE_NAMES["aborted"]
    return STATE_NAMES[result]


def _plan_id(plan: Any) -> str:
    from ..plan.spec import PlanSpec

    if isinstance(plan, PlanSpec):
        return plan.plan_id
    if isinstance(plan, dict):
        return str(plan.get("plan_id") or "plan")
    try:
        from ..plan.loader import load_plan

        return load_plan(str(plan)).plan_id  # parsed once: the flow takes the cached PlanSpec
    except Exception:  # noqa: BLE001 - a bad plan fails in the flow, with its own message
        return Path(str(plan)).stem or "plan"


def run_name() -> str:
    """``run_plan``'s ``flow_run_name``: Prefect calls it as every flow run of it starts
    (``waymark run``, a Python call, a deployment's run, a sub-plan's subflow), with the run's
    parameters in :mod:`prefect.runtime`, and sets the name it returns. A run that lacks the
    plan's tags gets them here: a ``prefect.tags(...)`` around the call would tag every step's
    task run too, and Prefect spends a concurrency call per tagged task run."""
    from prefect.context import FlowRunContext
    from prefect.runtime import flow_run

    params = flow_run.parameters
    name, wanted = run_name_and_tags(params)
    ctx = FlowRunContext.get()
    if ctx is not None and ctx.flow_run is not None:
        tags = list(ctx.flow_run.tags or [])
        missing = [t for t in wanted if t not in tags]
        if missing:
            try:
                ctx.client.update_flow_run(ctx.flow_run.id, tags=tags + missing)
                ctx.flow_run.tags = tags + missing
            except Exception:  # noqa: BLE001 - a tag is never worth failing the run
                pass
    return name


def run_name_and_tags(params: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The name and the tags of a ``run_plan`` flow run with these parameters."""
    from ..ledger.identity import default_executor, worker_name

    plan_id = _plan_id(params.get("plan"))
    who = params.get("executor") or worker_name() or default_executor()
    return format_run_name(plan_id, str(who)), run_tags(plan_id)


def final_state(summary: RunSummary, view: PlanView, ledger: Ledger) -> State[Any]:
    """The flow run's final state for this summary (see the module's table); it carries the
    summary: as its data when Completed, else in a :class:`~prefect_waymark.errors.PlanRunFailed`
    (a step failed) or a :class:`~prefect_waymark.errors.PlanRunStopped` (any other stop). Its
    message is the plan's line, as the artifact descriptions say it."""
    from prefect.states import Cancelled, Completed, Failed

    from ..errors import PlanRunFailed, PlanRunStopped
    from ..markers.plan_page.render import plan_line
    from ..review.decisions import abort_event

    aborted = summary.result in ("needs_review", "stopped") and (
        abort_event(ledger, summary.plan_id) is not None
    )
    line = plan_line(
        view, result=summary.result, executed=len(summary.executed_steps), aborted=aborted
    )
    if summary.failed_steps or summary.result == "failed":  # Failed even beside a review stop
        return Failed(message=line, data=PlanRunFailed(summary))
    name = state_name(summary.result, aborted=aborted)
    if summary.result == "completed":
        return Completed(name=name, message=line, data=summary.model_dump())
    stop = PlanRunStopped(summary)
    if summary.result == "needs_review" and not aborted:  # a person must act: attention
        return Failed(name=name, message=line, data=stop)
    return Cancelled(name=name, message=line, data=stop)  # neither failed nor done


def _plan_page(flow_run_id: str, plan_id: str) -> tuple[str, str] | None:
    """This run's version of the plan page: (artifact id, key). Its key is
    ``waymark-<plan>-<copy id>-plan-page`` (markers/plan_copy.py)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    from ..markers.marker_record import artifact_key
    from ..markers.plan_copy import is_page_key

    prefix = artifact_key(plan_id, "")
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)]),
                key=ArtifactFilterKey(like_=prefix),
            )
        )
    for artifact in found:
        if artifact.key and is_page_key(artifact.key, plan_id):
            return str(artifact.id), artifact.key
    return None


def deployment_url(deployment_id: str | UUID, ui_url: str | None = None) -> str | None:
    """The deployment's page in the Prefect UI, opened on its Description tab — where a
    deployment's runs write where the plan stands (``review/schedules.py``): Prefect 3.9's
    deployment page opens on its Runs tab and shows no description there (checked in the
    browser). ``None`` when Prefect knows no UI."""
    if ui_url is None:
        from prefect.settings import PREFECT_UI_URL

        ui_url = PREFECT_UI_URL.value()
    if not ui_url:
        return None
    from ..markers.plan_copy import ui_pages

    return f"{ui_pages(ui_url)}/deployments/deployment/{deployment_id}?tab=Description"


def ui_links(flow_run_id: str | None, plan_id: str, ui_url: str | None = None) -> dict[str, str]:
    """The flow run's page and the plan page (this run's version, and the key's history) in the
    Prefect UI; empty when Prefect knows no UI. The key's page lists the versions only."""
    if ui_url is None:
        from prefect.settings import PREFECT_UI_URL

        ui_url = PREFECT_UI_URL.value()
    if not ui_url or not flow_run_id:
        return {}
    from ..markers.plan_copy import ui_pages
    from ..markers.plan_page.publish import created_page

    base = ui_pages(ui_url)
    links = {"flow run": f"{base}/runs/flow-run/{flow_run_id}"}
    # Made by this process's run (``waymark run``): known; else asked of the server.
    page = created_page(flow_run_id, plan_id) or _plan_page(flow_run_id, plan_id)
    if page is not None:
        links["plan page"] = f"{base}/artifacts/artifact/{page[0]}"
        links["plan page history"] = f"{base}/artifacts/key/{page[1]}"
    return links
