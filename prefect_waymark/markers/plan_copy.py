"""Which copy of a plan an artifact belongs to, and where its pages are in the Prefect UI.

Two workdirs (or two ledgers) may hold the same plan id and report to one Prefect server. Their
artifacts must not mix: every artifact key carries a short **copy id**, the first 8 hex digits of
sha256 over the ledger's identity (``ledger_id``, a UUID written when the ledger was created) and
its URL (password masked, a relative SQLite path made absolute). The default ledger lives in the
workdir, so two workdirs are two copies; runners that share one ledger (a team's PostgreSQL) share
one plan state and so one copy. Keys: ``waymark-<plan>-<copy>-plan-page`` for the plan page
(the card a person opens: its name says so) and
``waymark-<plan>-<copy>-marker|steps|progress|metrics`` for the run artifacts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ..ledger.urls import shown_url
from .marker_record import artifact_key

if TYPE_CHECKING:
    from ..ledger.base import LedgerReader

__all__ = [
    "PAGE_SUFFIX",
    "PlanCopy",
    "artifact_url",
    "flow_run_url",
    "is_page_key",
    "normal_ledger_url",
    "plan_copy",
    "ui_base_url",
    "ui_pages",
    "version_url",
]

_SQLITE = re.compile(r"^(sqlite(?:\+[A-Za-z0-9_]+)?):///([^?]*)(\?.*)?$")


def normal_ledger_url(url: str) -> str:
    """The URL as the copy id sees it: password masked, a relative SQLite path made absolute."""
    shown = shown_url(url)
    match = _SQLITE.match(shown)
    if match and match.group(2) and not match.group(2).startswith("/"):
        path = Path(unquote(match.group(2))).resolve()
        return f"{match.group(1)}:///{quote(str(path), safe='/')}{match.group(3) or ''}"
    return shown


#: The plan page's key ends so: ``waymark-<plan>-<copy>-plan-page``.
PAGE_SUFFIX = "plan-page"


def is_page_key(key: str, plan_id: str) -> bool:
    """Whether ``key`` names a version of the plan's page, ``waymark-<plan>-<copy id>-plan-page``
    (:meth:`PlanCopy.page_key`)."""
    prefix = artifact_key(plan_id, "")
    return key.startswith(prefix) and _PAGE_END.fullmatch(key[len(prefix) :]) is not None


_PAGE_END = re.compile(f"[0-9a-f]{{8}}-{PAGE_SUFFIX}")


@dataclass(frozen=True)
class PlanCopy:
    """One copy of a plan: its id, where it runs and which ledger holds its progress."""

    plan_id: str
    copy_id: str
    workdir: str
    ledger: str  # the ledger URL, password masked
    ledger_id: str | None = None

    def key(self, suffix: str) -> str:
        """``waymark-<plan>-<copy>-<suffix>``: ``marker``, ``steps``, ``progress``, ``metrics``."""
        return artifact_key(self.plan_id, f"{self.copy_id}-{suffix}")

    def page_key(self) -> str:
        """The plan page's key, ``waymark-<plan>-<copy>-plan-page``."""
        return self.key(PAGE_SUFFIX)

    @property
    def label(self) -> str:
        """ "copy 3f9a2c1d · /home/me/report": what a description says about the copy."""
        return f"copy {self.copy_id} · {self.workdir}"

    def metadata(self) -> dict[str, str]:
        """Artifact metadata naming the copy (read back by ``waymark marker --from-prefect``)."""
        return {
            "waymark-plan": self.plan_id,
            "waymark-copy": self.copy_id,
            "workdir": self.workdir[:400],
            "ledger": self.ledger[:400],
            "ledger-id": self.ledger_id or "",
        }


def plan_copy(plan_id: str, ledger: LedgerReader, workdir: Path | str) -> PlanCopy:
    """The copy of ``plan_id`` whose progress ``ledger`` holds, run in ``workdir``."""
    ledger_id = ledger.ledger_id
    normal = normal_ledger_url(ledger.url)
    digest = hashlib.sha256(f"{ledger_id or ''}\n{normal}".encode()).hexdigest()
    return PlanCopy(
        plan_id=plan_id,
        copy_id=digest[:8],
        workdir=str(workdir),
        ledger=normal,
        ledger_id=ledger_id,
    )


def ui_base_url() -> str | None:
    """The Prefect UI's address (``PREFECT_UI_URL``, derived from the API URL), if known."""
    try:
        from prefect.settings import PREFECT_UI_URL

        value = PREFECT_UI_URL.value()
    except Exception:  # noqa: BLE001 - links are a convenience; a page without them still reads
        return None
    return str(value).rstrip("/") if value else None


@functools.lru_cache(maxsize=8)
def ui_pages(ui_url: str) -> str:
    """The base of the UI's page links: Prefect 3.9's server serves its default UI ("v2") under
    ``/v2`` (its ``/ui-settings`` says so; asked once per process and address); Prefect's own
    log links use the v1 paths at the root, which Prefect Cloud uses too."""
    import httpx

    try:
        resp = httpx.get(f"{ui_url}/ui-settings", timeout=3.0)
        settings = json.loads(resp.text) if resp.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        settings = {}
    if isinstance(settings, dict) and settings.get("default_ui") == "v2":
        prefix = str(settings.get("v2_base_url") or "/v2")
        return ui_url.rstrip("/") + "/" + prefix.strip("/")
    return ui_url.rstrip("/")


def version_url(ui_url: str | None, artifact_id: str) -> str | None:
    """One version of an artifact (the plan page as one run left it) in the UI's pages."""
    return f"{ui_pages(ui_url)}/artifacts/artifact/{artifact_id}" if ui_url else None


def flow_run_url(ui_url: str | None, flow_run_id: str | None) -> str | None:
    """The flow run's page in the UI."""
    if not ui_url or not flow_run_id:
        return None
    return f"{ui_url}/runs/flow-run/{flow_run_id}"


def artifact_url(ui_url: str | None, key: str) -> str | None:
    """The page of an artifact key in the UI: its latest version, with the history."""
    if not ui_url:
        return None
    return f"{ui_url}/artifacts/key/{key}"
