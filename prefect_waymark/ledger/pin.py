"""A plan pins its ledger: the ``ledger:`` field of a plan file.

A multi-week plan's records and action receipts live in one ledger; a runner that silently used
another (a new SQLite file because ``$WAYMARK_LEDGER_URL`` was not set on that machine) would run
every step again, irreversible actions included. A pinned ledger is given as exactly one of:

- ``url``: the ledger URL itself (no password in it: use ``env`` or ``secret`` for those);
- ``env``: the name of an environment variable that holds the URL;
- ``secret``: the name of a Prefect ``Secret`` block that holds the URL.

With ``required: true`` (the default) a run that cannot get the URL, or is pointed at another
ledger with ``--ledger`` / ``ledger_url``, is refused before anything runs; ``required: false``
makes the pin a preference that yields to ``--ledger`` and falls back to
``$WAYMARK_LEDGER_URL`` or the embedded default when its variable or block is missing. The
shorthand ``ledger: URL`` is ``ledger: {url: URL}``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import LedgerUrlError, PinUnavailable
from .urls import check_ledger_url, has_password, is_relative_sqlite, shown_url

__all__ = ["LedgerPin", "pinned_url"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BLOCK_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class LedgerPin(BaseModel):
    """Where the plan's ledger is: exactly one of ``url``, ``env``, ``secret``."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="The ledger URL (no password in it).")
    env: str | None = Field(
        default=None, description="Name of an environment variable that holds the ledger URL."
    )
    secret: str | None = Field(
        default=None, description="Name of a Prefect Secret block that holds the ledger URL."
    )
    required: bool = Field(
        default=True,
        strict=True,
        description="Refuse a run that cannot reach this ledger or names another one.",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"url": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_source(self) -> LedgerPin:
        given = [k for k in ("url", "env", "secret") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of url, env, secret"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.url is not None:
            _check_pinned_url(self.url)
        if self.env is not None and not _ENV_NAME.match(self.env):
            raise ValueError(f"env: {self.env[:80]!r} is not an environment variable name")
        if self.secret is not None and not _BLOCK_NAME.match(self.secret):
            raise ValueError(
                f"secret: {self.secret[:80]!r} is not a block name (lowercase letters, digits, "
                "dashes)"
            )
        return self

    def describe(self, source: str = "the plan file") -> str:
        """Where the pin is, for messages: ``ledger.env ($TEAM_LEDGER) in plan.yaml``."""
        if self.env is not None:
            return f"ledger.env (${self.env}) in {source}"
        if self.secret is not None:
            return f"ledger.secret (Prefect Secret block {self.secret!r}) in {source}"
        return f"ledger.url in {source}"


def _check_pinned_url(url: str) -> None:
    try:
        check_ledger_url(url)
    except LedgerUrlError as exc:
        raise ValueError(str(exc).removeprefix("ledger URL ")) from None
    if has_password(url):
        raise ValueError(
            "url: has a password in it, which would be written to the plan file's history; "
            "pin the ledger with `env: VARIABLE` or `secret: BLOCK-NAME` instead"
        )
    if is_relative_sqlite(url):
        raise ValueError(
            "url: a pinned SQLite ledger needs an absolute path (sqlite:////ABSOLUTE/PATH/"
            "ledger.db): a relative one would be another ledger in each folder a run starts from"
        )


def _secret_value(name: str) -> str | None:
    from prefect.blocks.system import Secret

    try:
        value = Secret.load(name).get()  # type: ignore[union-attr]
    except ValueError:  # "Unable to find block document named ..."
        return None
    return value if isinstance(value, str) else str(value)


def pinned_url(pin: LedgerPin, source: str) -> str | None:
    """The pinned ledger's URL, checked; ``None`` if the pin is not required and its variable
    or block is missing. Raises :class:`PinUnavailable` (required) or :class:`LedgerUrlError`
    (the value is not a ledger URL)."""
    where = pin.describe(source)
    if pin.url is not None:
        return check_ledger_url(pin.url, source=where)
    if pin.env is not None:
        value = os.environ.get(pin.env)
        if not value:
            if not pin.required:
                return None
            raise PinUnavailable(
                f"the plan pins its ledger to ${pin.env} ({where}), which is not set; nothing "
                f"ran. Set it to the plan's ledger URL (export {pin.env}=URL) and run again"
            )
        return check_ledger_url(value, source=where)
    assert pin.secret is not None
    try:
        value = _secret_value(pin.secret)
    except Exception as exc:  # noqa: BLE001 - the Prefect API cannot be reached
        raise PinUnavailable(
            f"the plan pins its ledger to the Prefect Secret block {pin.secret!r} ({where}), "
            f"which cannot be read: {type(exc).__name__}: {shown_url(str(exc))}; nothing ran"
        ) from None
    if not value:
        if not pin.required:
            return None
        raise PinUnavailable(
            f"the plan pins its ledger to the Prefect Secret block {pin.secret!r} ({where}), "
            "which does not exist on this Prefect server; nothing ran. Create it (Blocks → "
            "Secret in the Prefect UI) with the plan's ledger URL as its value, or point "
            "PREFECT_API_URL at the server that has it"
        )
    return check_ledger_url(value, source=where)
