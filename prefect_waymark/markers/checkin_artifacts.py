"""After a check-in (``waymark start / done / fail / block``): the Prefect UI says it too.

A flow run publishes the plan page and the steps table as its steps end; an agent or a person
who checks in from outside a flow run changes the same plan, so the check-in publishes a new
version of the same two artifacts (keys ``waymark-<plan>-<copy>`` and ``…-steps``, see
:mod:`.plan_copy`), each with no flow run. Only when a server is known (``PREFECT_API_URL``,
the local server waymark started, or the Prefect profile's API URL) — none is ever started for
it — over plain HTTP, the two requests within one deadline (no retries). A server that does not
answer is one warning: the check-in is in the ledger either way, and the next run's versions
say it. (A goal contract kept in a Prefect block is read for the page through Prefect's client.)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..ledger.progress_view import build_view

if TYPE_CHECKING:
    from ..ledger.base import Ledger
    from ..plan.spec import PlanSpec

__all__ = ["CHECKIN_DEADLINE", "publish_checkin_artifacts"]

#: Seconds for both requests together: a check-in is an agent's tool call, it must not hang.
CHECKIN_DEADLINE = 3.0


def _ui_url(api: str) -> str:
    """``PREFECT_UI_URL``, else derived from the API's address as Prefect derives it (a Prefect
    Cloud workspace's API on app.prefect.cloud; a server's without ``/api``)."""
    import os

    given = os.environ.get("PREFECT_UI_URL")
    if given:
        return given.rstrip("/")
    ui = api
    if ui.startswith(_CLOUD_API):
        ui = _CLOUD_UI + ui[len(_CLOUD_API) :]
    if ui.endswith("/api"):
        ui = ui[: -len("/api")]
    ui = ui.replace("/api/", "/").replace("/accounts/", "/account/")
    return ui.replace("/workspaces/", "/workspace/")


_CLOUD_API, _CLOUD_UI = "https://api.prefect.cloud/api", "https://app.prefect.cloud"


def _server() -> tuple[str, dict[str, str]] | None:
    """The API to send to and its headers: ``PREFECT_API_URL`` from the environment or the
    local server waymark started (no Prefect import), else the Prefect profile's settings
    (``prefect config set`` / ``prefect cloud login``); None when none is known."""
    from ..prefect_server.local import api_headers, known_api_url

    api = known_api_url()
    if api is not None:
        return api, api_headers()
    if not _settings_may_name_a_server():
        return None  # Prefect's own settings would say none (without ~0.5 s of importing it)
    from prefect.settings import get_current_settings

    settings = get_current_settings().api
    if not settings.url:
        return None
    headers: dict[str, str] = {}
    if settings.auth_string is not None:
        import base64

        raw = settings.auth_string.get_secret_value().encode()
        headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
    elif settings.key is not None:
        headers["Authorization"] = f"Bearer {settings.key.get_secret_value()}"
    return settings.url.rstrip("/"), headers


def _toml(text: str) -> Any:
    """``text`` read as TOML (a decoding error is a ``ValueError``)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    import toml  # type: ignore[import-untyped]  # Python 3.10: Prefect depends on it there

    return toml.loads(text)


def _settings_may_name_a_server() -> bool:
    """Whether Prefect's settings could hold an API URL that the environment does not: a
    ``PREFECT_API…`` or ``PREFECT_PROFILE…`` variable, a ``.env`` or ``prefect.toml`` here, a
    ``[tool.prefect]`` table in ``pyproject.toml`` here, or a user profiles file whose active
    profile sets a ``PREFECT_API…`` value. False only when none of them can (Prefect's packaged
    default profile names no server): then Prefect itself need not be imported to learn that.
    Anything unreadable counts as "may"."""
    if any(k.upper().startswith(("PREFECT_API", "PREFECT_PROFILE")) for k in os.environ):
        return True  # Prefect reads its variables in any case
    here = Path.cwd()
    if (here / ".env").exists() or (here / "prefect.toml").exists():
        return True
    try:
        tool = _toml((here / "pyproject.toml").read_text(encoding="utf-8")).get("tool")
    except FileNotFoundError:
        tool = None
    except (OSError, ValueError):  # unreadable, not UTF-8, not TOML
        return True
    if isinstance(tool, dict) and "prefect" in tool:
        return True
    from ..prefect_server.local import prefect_home

    try:
        data = _toml((prefect_home() / "profiles.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    profiles = data.get("profiles")
    active = profiles.get(data.get("active")) if isinstance(profiles, dict) else None
    if active is None:
        return False  # not there: Prefect takes its packaged default, which names no server
    return not isinstance(active, dict) or any(str(k).startswith("PREFECT_API") for k in active)


def publish_checkin_artifacts(
    plan: PlanSpec, ledger: Ledger, workdir: Path, what: str
) -> str | None:
    """Publish the plan page and steps table as the ledger has them now; ``what`` is the
    check-in in words (``"draft done by writer"``). Returns None when published or when no
    server is known, else why not (one line, for a warning)."""
    from .artifacts import steps_table
    from .plan_copy import plan_copy
    from .plan_page.publish import PlanPagePublisher

    server = _server()
    if server is None:
        return None  # the ledger alone: nothing to tell
    import httpx  # only with a server to send to

    api, headers = server
    states = ledger.step_states(plan.plan_id)
    view = build_view(plan, dict(states))
    page = PlanPagePublisher(plan, ledger, workdir, run_id=f"check-in {what}")
    markdown, description = page.render(
        live=False, states=states, view=view, ui_url=_ui_url(api), checkin=what
    )
    copy = plan_copy(plan.plan_id, ledger, str(workdir))
    meta = {**copy.metadata(), "check-in": what[:400]}
    line = f"{page.line} — {copy.label} · check-in: {what}"
    sends = [
        (copy.page_key(), "markdown", markdown, description),
        (copy.key("steps"), "table", steps_table(view), line),
    ]
    end = time.monotonic() + CHECKIN_DEADLINE
    try:
        with httpx.Client(base_url=api, headers=headers) as http:
            for key, kind, data, text in sends:
                body = {"key": key, "type": kind, "data": data, "description": text,
                        "metadata_": meta}  # fmt: skip
                sent = http.post("/artifacts/", json=body, timeout=max(0.1, end - time.monotonic()))
                sent.raise_for_status()
    except httpx.HTTPError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return f"the Prefect server at {api} did not take the plan page ({first})"
    return None
