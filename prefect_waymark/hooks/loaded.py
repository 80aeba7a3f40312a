"""The plan a hook answers for, and its ledger, opened without Prefect.

The plan file is read on every call (it is small, and the contract may have been edited); the
ledger is opened read-only (:func:`~prefect_waymark.ledger.open_reader`: SQLite through the
standard library) only when a decision needs it. What cannot be had — no plan configured, a
plan file with problems (:class:`InvalidPlan`), a ledger pinned in a Prefect Secret block
(hooks read no Prefect), no ledger yet — raises :class:`~prefect_waymark.errors.WaymarkError`
with the one line the hook writes on stderr.
"""

from __future__ import annotations

from pathlib import Path

from ..agents.identity import agent_run_id, item_ids
from ..errors import HookPlanInvalid, LedgerError, LedgerNotFound, PlanError, WaymarkError
from ..ledger import LedgerReader, open_reader, resolve_ledger_url
from ..ledger.urls import shown_url
from ..models import GoalContract
from ..plan.loader import load_plan
from ..plan.spec import BlockRef, PlanSpec
from .payload import HookInput
from .settings import HookSettings

__all__ = ["InvalidPlan", "LoadedPlan", "agent_run_id", "item_ids", "load"]


#: The plan file has problems (one line, with the first problem).
InvalidPlan = HookPlanInvalid


class LoadedPlan:
    """A plan file, its workdir and (when it can be had) its ledger's URL."""

    def __init__(self, spec: PlanSpec, path: Path, workdir: Path, settings: HookSettings):
        self.spec = spec
        self.path = path
        self.workdir = workdir
        self.settings = settings
        self._url: str | None = None
        self._url_error: str | None = None
        pin = spec.ledger
        if pin is not None and pin.secret is not None:
            self._url_error = (
                f"{spec.source}: the ledger is pinned in the Prefect Secret block "
                f"{pin.secret!r}, and hooks read no Prefect; the hook reads no ledger"
            )
            return
        try:
            self._url = resolve_ledger_url(
                settings.ledger, workdir, source="--ledger", pin=pin, pin_source=spec.source
            )
        except (LedgerError, WaymarkError) as exc:
            self._url_error = str(exc)

    @property
    def ledger_url(self) -> str:
        if self._url is None:
            raise WaymarkError(self._url_error or "no ledger URL")
        return self._url

    def where(self) -> str:
        return shown_url(self._url) if self._url else "(none)"

    def reader(self) -> LedgerReader:
        """The ledger, read-only. Raises :class:`WaymarkError` (no ledger yet, or unreadable)."""
        try:
            return open_reader(self.ledger_url)
        except LedgerNotFound:
            raise WaymarkError(
                f"plan {self.spec.plan_id!r}: no ledger yet at {self.where()} (nothing "
                f"recorded; `waymark next {self.path}` starts one)"
            ) from None
        except (LedgerError, WaymarkError) as exc:
            raise WaymarkError(f"plan {self.spec.plan_id!r}: {exc}") from None

    def contract_label(self) -> str:
        c = self.spec.contract
        if isinstance(c, GoalContract):
            return f"{c.goal_id} v{c.version}"
        if isinstance(c, BlockRef):
            return f"block {c.block}"
        return "none"


def load(settings: HookSettings, payload: HookInput) -> LoadedPlan:
    """The configured plan. Raises :class:`WaymarkError` (:class:`InvalidPlan` for a plan file
    with problems)."""
    path = settings.plan_path(payload.cwd)
    if path is None:
        raise WaymarkError("no plan configured: set $WAYMARK_PLAN (or --plan) to the plan file")
    try:
        spec = load_plan(path)
    except PlanError as exc:
        raise InvalidPlan(path, exc) from None
    workdir = settings.workdir or spec.base_dir or path.parent
    return LoadedPlan(spec, path, workdir, settings)
