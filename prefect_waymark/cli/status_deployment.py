"""``waymark status``'s deployment line: the deployment whose runs advance the plan, its
schedules and its next run — read from the Prefect API over plain HTTP (no Prefect import; the
three requests share one deadline of a few seconds), only when the ledger says a deployment ran
the plan and a server is known (``PREFECT_API_URL``, or the local server waymark started). Never
starts a server."""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["deployment_status", "describe_schedule"]

_DEADLINE = 4.0  # seconds for all the requests together


def describe_schedule(schedule: dict[str, Any]) -> str:
    """One schedule of the API's deployment JSON in words."""
    tz = f" ({schedule['timezone']})" if schedule.get("timezone") else ""
    if schedule.get("cron"):
        return f"cron {schedule['cron']!r}{tz}"
    if schedule.get("rrule"):
        return f"rrule {schedule['rrule']!r}{tz}"
    if schedule.get("interval") is not None:
        return f"every {float(schedule['interval']):g} s"
    return "schedule"


def deployment_status(deployment_id: str) -> dict[str, Any]:
    """What the server says about the deployment: ``name``, ``schedules`` (``schedule`` in
    words, ``active``), ``next_run`` (the soonest scheduled run's time, or None); or
    ``unreachable`` with the reason."""
    out: dict[str, Any] = {"id": deployment_id}
    from ..run.local_server import api_headers, known_api_url

    api = known_api_url()
    if api is None:
        out["unreachable"] = "no Prefect server known (PREFECT_API_URL is not set)"
        return out
    import time

    end = time.monotonic() + _DEADLINE

    def left() -> float:
        return max(0.1, end - time.monotonic())

    try:
        with httpx.Client(base_url=api, headers=api_headers()) as http:
            dep = http.get(f"/deployments/{deployment_id}", timeout=left())
            if dep.status_code == 404:
                out["unreachable"] = f"the server at {api} has no deployment {deployment_id}"
                return out
            dep.raise_for_status()
            body = dep.json()
            flow = http.get(f"/flows/{body['flow_id']}", timeout=left())
            flow_name = flow.json().get("name", "?") if flow.status_code == 200 else "?"
            runs = http.post(
                "/flow_runs/filter",
                json={
                    "flow_runs": {
                        "deployment_id": {"any_": [deployment_id]},
                        "state": {"type": {"any_": ["SCHEDULED"]}},
                    },
                    "sort": "EXPECTED_START_TIME_ASC",
                    "limit": 1,
                },
                timeout=left(),
            )
            runs.raise_for_status()
            found = runs.json()
            out["name"] = f"{flow_name}/{body.get('name', '?')}"
            out["paused"] = bool(body.get("paused"))
            out["schedules"] = [
                {
                    "schedule": describe_schedule(s.get("schedule") or {}),
                    "active": bool(s.get("active")),
                }
                for s in body.get("schedules") or []
            ]
            out["next_run"] = found[0].get("expected_start_time") if found else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        for key in ("name", "paused", "schedules", "next_run"):
            out.pop(key, None)
        out["unreachable"] = f"{api}: {type(exc).__name__}: {str(exc)[:160]}"
    return out


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
