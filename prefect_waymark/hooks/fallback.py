"""The forbidden list while the plan file is invalid: what was last read from a valid one.

A plan file that is being edited can be invalid for a while, and the hook cannot read its
contract then. Rather than let every tool call through, ``PreToolUse`` checks it against the
list last read while the plan was valid, much as a contract kept in a Prefect block is
checked: this session's last list (the plan file's inline contract at the session's last tool
call, else what ``SessionStart``'s re-anchor read: every entry), else the free-text entries of
the last ``reanchor`` the ledger recorded for the plan (``action:`` entries are not recorded
there).
Without either, nothing is checked until the plan file is valid again.

The plan's id, ledger pin and folder come from the invalid file as far as it can be read
(YAML or JSON), else from the session's state.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import WaymarkError
from ..ledger import open_reader, resolve_ledger_url
from ..ledger.events import EventKind
from ..ledger.pin import LedgerPin
from .counter import read_session
from .payload import HookInput
from .settings import HookSettings

__all__ = ["Recorded", "recorded_forbidden"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Recorded:
    """A forbidden list recorded while the plan was valid, and where it was found."""

    plan_id: str | None
    forbidden: list[str]
    source: str  # "this session" or "the ledger's last re-anchor (<time>)"


def _raw(path: Path) -> dict[str, Any]:
    """The plan file's top level, if it can be read at all (else empty)."""
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - safe
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _ledger_url(raw: dict[str, Any], settings: HookSettings, workdir: Path, path: Path) -> str:
    pin: LedgerPin | None = None
    with contextlib.suppress(ValidationError, ValueError, TypeError):
        pin = LedgerPin.model_validate(raw["ledger"]) if raw.get("ledger") else None
    if pin is not None and pin.secret is not None:
        raise WaymarkError("the ledger is pinned in a Prefect Secret block")
    return resolve_ledger_url(
        settings.ledger, workdir, source="--ledger", pin=pin, pin_source=str(path)
    )


def recorded_forbidden(path: Path, settings: HookSettings, payload: HookInput) -> Recorded | None:
    """The forbidden list last recorded for the plan at ``path``, or None. A ledger that
    cannot be had is no record."""
    workdir = settings.workdir or path.resolve().parent
    raw = _raw(path)
    session = read_session(workdir, payload.session_id)
    plan_id = raw.get("plan_id") if isinstance(raw.get("plan_id"), str) else None
    plan_id = plan_id or (session.plan_id if session else None)
    if session is not None and session.plan_id == plan_id:
        kept = session.plan_forbidden if session.plan_forbidden is not None else session.forbidden
        if kept is not None:
            return Recorded(plan_id, list(kept), "this session")
    if plan_id is None:
        return None
    try:
        with open_reader(_ledger_url(raw, settings, workdir, path)) as r:
            last = r.last_event(plan_id, [EventKind.reanchor])
    except Exception:  # noqa: BLE001 - no ledger (or an unreadable one): nothing recorded
        return None
    if last is None:
        return None
    forbidden = [str(f) for f in (last.data.get("forbidden") or [])]
    at = last.at.isoformat(timespec="seconds")
    return Recorded(plan_id, forbidden, f"the ledger's last re-anchor ({at})")
