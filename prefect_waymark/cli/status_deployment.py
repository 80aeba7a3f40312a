"""``waymark status``'s deployment line: the deployment whose runs advance the plan, its
schedules and its next run — read through Prefect's client (three requests, each with a timeout
of a few seconds and no retry), only when the ledger says a deployment ran the plan and a server
is known (``PREFECT_API_URL``, or the local server waymark started). Never starts a server."""

from __future__ import annotations

from typing import Any

__all__ = ["deployment_status", "describe_schedule"]

_TIMEOUT = 4.0  # seconds for each request


def describe_schedule(schedule: Any) -> str:
    """One schedule of a deployment (Prefect's cron, rrule or interval schedule) in words."""
    tz = getattr(schedule, "timezone", None)
    where = f" ({tz})" if tz else ""
    if cron := getattr(schedule, "cron", None):
        return f"cron {cron!r}{where}"
    if rrule := getattr(schedule, "rrule", None):
        return f"rrule {rrule!r}{where}"
    if (interval := getattr(schedule, "interval", None)) is not None:
        return f"every {interval.total_seconds():g} s"
    return "schedule"


def deployment_status(deployment_id: str) -> dict[str, Any]:
    """What the server says about the deployment: ``name``, ``schedules`` (``schedule`` in
    words, ``active``), ``next_run`` (the soonest scheduled run's time, or None); or
    ``unreachable`` with the reason."""
    out: dict[str, Any] = {"id": deployment_id}
    from ..prefect_server.local import known_api_url

    api = known_api_url()
    if api is None:
        out["unreachable"] = "no Prefect server known (PREFECT_API_URL is not set)"
        return out
    import httpx
    from prefect.exceptions import ObjectNotFound

    try:
        out.update(_read(api, deployment_id))
    except ObjectNotFound:
        out["unreachable"] = f"the server at {api} has no deployment {deployment_id}"
    except (httpx.HTTPError, ValueError, TypeError, AttributeError) as exc:
        out["unreachable"] = f"{api}: {type(exc).__name__}: {str(exc)[:160]}"
    return out


def _read(api: str, deployment_id: str) -> dict[str, Any]:
    import httpx
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import (
        PREFECT_API_AUTH_STRING,
        PREFECT_API_KEY,
        PREFECT_CLIENT_MAX_RETRIES,
        temporary_settings,
    )

    client = SyncPrefectClient(
        api,
        auth_string=PREFECT_API_AUTH_STRING.value(),
        api_key=PREFECT_API_KEY.value(),
        httpx_settings={"timeout": _TIMEOUT},
    )
    with temporary_settings({PREFECT_CLIENT_MAX_RETRIES: 0}), client:  # a status waits little
        dep = client.read_deployment(deployment_id)
        try:
            flow_name = client.read_flow(dep.flow_id).name
        except (ObjectNotFound, httpx.HTTPStatusError):  # the deployment's name still says
            flow_name = "?"
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                deployment_id=FlowRunFilterDeploymentId(any_=[dep.id]),
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
            ),
            sort=FlowRunSort.EXPECTED_START_TIME_ASC,
            limit=1,
        )
    # As the API's JSON says it (``...Z``), which ``--json`` printed before.
    start = runs[0].model_dump(mode="json")["expected_start_time"] if runs else None
    return {
        "name": f"{flow_name}/{dep.name}",
        "paused": bool(dep.paused),
        "schedules": [
            {"schedule": describe_schedule(s.schedule), "active": bool(s.active)}
            for s in dep.schedules or []
        ],
        "next_run": start,
    }


def deployment_line(info: dict[str, Any]) -> str:
    """``waymark status``'s line about the deployment."""
    if "unreachable" in info:
        return f"deployment: {info['id']} (not read: {info['unreachable']})"
    parts = [str(info["name"])]
    scheds = info.get("schedules") or []
    if not scheds:
        parts.append("no schedule")
    for s in scheds:
        parts.append(f"{s['schedule']} ({'active' if s['active'] else 'paused'})")
    if info.get("paused"):
        parts.append("deployment paused")
    nxt = info.get("next_run")
    parts.append(f"next run {str(nxt)[:19].replace('T', ' ')} UTC" if nxt else "no run scheduled")
    return "deployment: " + " · ".join(parts)
