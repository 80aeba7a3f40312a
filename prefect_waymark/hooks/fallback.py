"""The forbidden list while the plan file is invalid: what was last read from a valid one.

A plan file that is being edited can be invalid for a while, and the hook cannot read its
contract then. Rather than let every tool call through, ``PreToolUse`` checks it against the
list last recorded while the plan was valid, in this order:

1. this session's last list (the list the hook enforced at the session's last tool call —
   the plan file's contract as accepted, :mod:`.accepted` — else what ``SessionStart``'s
   re-anchor read: every entry);
2. the ledger's: the forbidden list of the contract the plan last accepted (recorded with it
   since 0.2: every entry, ``action:`` ones too), else the free-text entries of the last
   ``reanchor`` event (``action:`` entries are not recorded there).

Without either, :class:`~prefect_waymark.errors.HookNotRecorded` says which record is
missing, and nothing is checked until the plan file is valid again.

The plan's id, ledger pin and folder come from the invalid file as far as it can be read
(YAML or JSON; a file that is not even YAML any more still gives its ``plan_id:`` line), else
from the session's state.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import HookNotRecorded, LedgerNotFound, WaymarkError
from ..guards.conflicts import accepted_forbidden, load_accepted
from ..ledger import open_reader, resolve_ledger_url
from ..ledger.events import EventKind
from ..ledger.pin import LedgerPin
from ..ledger.urls import shown_url
from .counter import read_session
from .payload import HookInput
from .settings import HookSettings

__all__ = ["Recorded", "recorded_forbidden"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAN_ID = re.compile(r"""^["']?plan_id["']?\s*:\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)""", re.M)


@dataclass(frozen=True)
class Recorded:
    """A forbidden list recorded while the plan was valid, and where it was found."""

    plan_id: str | None
    forbidden: list[str]
    source: str  # "this session" or "the ledger's last re-anchor (<time>)"


def _raw(path: Path) -> tuple[dict[str, Any], str | None]:
    """The plan file's top level, if it can be read at all (else empty), and its plan id."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return {}, None
    try:
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except (ValueError, yaml.YAMLError):
        doc = None
    raw = doc if isinstance(doc, dict) else {}
    plan_id = raw.get("plan_id")
    if not isinstance(plan_id, str):  # not YAML any more: its plan_id line, if it has one
        m = _PLAN_ID.search(text)
        plan_id = m[1] if m else None
    return raw, plan_id


def _ledger_url(raw: dict[str, Any], settings: HookSettings, workdir: Path, path: Path) -> str:
    pin: LedgerPin | None = None
    with contextlib.suppress(ValidationError, ValueError, TypeError):
        pin = LedgerPin.model_validate(raw["ledger"]) if raw.get("ledger") else None
    if pin is not None and pin.secret is not None:
        raise WaymarkError("the ledger is pinned in a Prefect Secret block")
    return resolve_ledger_url(
        settings.ledger, workdir, source="--ledger", pin=pin, pin_source=str(path)
    )


def recorded_forbidden(path: Path, settings: HookSettings, payload: HookInput) -> Recorded:
    """The forbidden list last recorded for the plan at ``path``. Raises
    :class:`~prefect_waymark.errors.HookNotRecorded` (why there is none)."""
    workdir = settings.workdir or path.resolve().parent
    raw, plan_id = _raw(path)
    session = read_session(workdir, payload.session_id)
    plan_id = plan_id or (session.plan_id if session else None)
    if session is not None and session.plan_id == plan_id:
        kept = session.plan_forbidden if session.plan_forbidden is not None else session.forbidden
        if kept is not None:
            return Recorded(plan_id, list(kept), "this session")
    if plan_id is None:
        raise HookNotRecorded(path, "its plan_id cannot be read, and this session has none")
    try:
        url = _ledger_url(raw, settings, workdir, path)
    except Exception as exc:  # noqa: BLE001 - no ledger to be had: no record
        raise HookNotRecorded(path, f"no ledger: {exc}") from None
    try:
        with open_reader(url) as r:
            accepted = load_accepted(r, plan_id).contract
            last = r.last_event(plan_id, [EventKind.reanchor])
    except LedgerNotFound:
        raise HookNotRecorded(path, f"no ledger yet at {shown_url(url)}") from None
    except Exception as exc:  # noqa: BLE001 - an unreadable ledger is no record
        raise HookNotRecorded(path, f"the ledger cannot be read: {exc}") from None
    kept = accepted_forbidden(accepted)
    if kept is not None and accepted is not None:
        which = f"{accepted['goal_id']} v{accepted['version']}"
        return Recorded(plan_id, kept, f"the contract the ledger last accepted ({which})")
    if last is None:
        raise HookNotRecorded(
            path, f"the ledger at {shown_url(url)} has no contract or re-anchor of {plan_id!r}"
        )
    forbidden = [str(f) for f in (last.data.get("forbidden") or [])]
    at = last.at.isoformat(timespec="seconds")
    return Recorded(plan_id, forbidden, f"the ledger's last re-anchor ({at})")
