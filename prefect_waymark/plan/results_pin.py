"""A plan pins its result storage beside its ledger: the ``results:`` field of a plan file.

A plan whose ledger is shared (``ledger:``) is continued from other folders and machines; the
completed steps' results and declared outputs must be where every one of them looks, or a
second folder finds the plan's history without its values. A pinned storage is given as
exactly one of:

- ``storage``: an absolute folder path (a shared mount) or a saved file-system block's slug
  (``local-file-system/team-results``, ``remote-file-system/team-results``, ...);
- ``env``: the name of an environment variable that holds one of those.

With ``required: true`` (the default) a run or check-in that cannot get the storage (the
variable is not set) is refused before anything is recorded; ``required: false`` falls back to
the workdir's own ``.waymark/results``. ``--results`` on the command line (``result_storage=``
in Python) overrides the pin. The shorthand ``results: VALUE`` is ``results: {storage: VALUE}``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import ResultsUnavailable

__all__ = ["ResultsPin", "check_storage_text", "chosen_storage", "pinned_storage"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_storage_text(value: str) -> str | None:
    """Why ``value`` is not an absolute folder path nor a block slug; ``None`` if it is one."""
    if value.startswith("/"):
        return None
    if _SLUG.fullmatch(value):
        return None
    if value.startswith(("./", "../", "~")) or "/" not in value or value.count("/") > 1:
        return (
            f"{value[:100]!r} is neither an absolute folder path nor a saved file-system "
            "block's slug (e.g. local-file-system/team-results); a relative path would be "
            "another folder in each folder a run starts from"
        )
    return (
        f"{value[:100]!r} is not a block slug: BLOCK-TYPE/BLOCK-NAME in lowercase letters, "
        "digits and dashes (e.g. local-file-system/team-results)"
    )


class ResultsPin(BaseModel):
    """Where the plan's step results and declared outputs are kept: ``storage`` or ``env``."""

    model_config = ConfigDict(extra="forbid")

    storage: str | None = Field(
        default=None,
        description="An absolute folder path, or a saved file-system block's slug "
        "(e.g. local-file-system/team-results).",
    )
    env: str | None = Field(
        default=None,
        description="Name of an environment variable that holds the folder path or block slug.",
    )
    required: bool = Field(
        default=True,
        strict=True,
        description="Refuse a run or check-in that cannot get this storage (the variable is "
        "not set); false falls back to the workdir's own .waymark/results.",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"storage": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_source(self) -> ResultsPin:
        given = [k for k in ("storage", "env") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of storage, env" + (f" (got {', '.join(given)})" if given else "")
            )
        if self.storage is not None and (problem := check_storage_text(self.storage)):
            raise ValueError(f"storage: {problem}")
        if self.env is not None and not _ENV_NAME.match(self.env):
            raise ValueError(f"env: {self.env[:80]!r} is not an environment variable name")
        return self

    def describe(self, source: str = "the plan file") -> str:
        """Where the pin is, for messages: ``results.env ($TEAM_RESULTS) in plan.yaml``."""
        if self.env is not None:
            return f"results.env (${self.env}) in {source}"
        return f"results.storage in {source}"


def pinned_storage(pin: ResultsPin, source: str) -> str | None:
    """The pinned storage (a folder path or block slug), checked; ``None`` if the pin is not
    required and its variable is not set. Raises :class:`ResultsUnavailable`."""
    where = pin.describe(source)
    if pin.storage is not None:
        return pin.storage
    assert pin.env is not None
    value = os.environ.get(pin.env, "").strip()
    if not value:
        if not pin.required:
            return None
        raise ResultsUnavailable(
            f"the plan pins its result storage to ${pin.env} ({where}), which is not set; "
            f"nothing was recorded. Set it (export {pin.env}=/SHARED/FOLDER or "
            f"{pin.env}=BLOCK-TYPE/BLOCK-NAME) and run again"
        )
    if (problem := check_storage_text(value)) is not None:
        raise ResultsUnavailable(f"${pin.env} ({where}): {problem}; nothing was recorded")
    return value


def chosen_storage(given: Any, plan: Any) -> Any:
    """The storage a run or check-in uses: ``given`` (``--results``, ``result_storage=``), else
    the plan's pinned ``results:``, else ``None`` (the workdir's own ``.waymark/results``).
    Raises :class:`ResultsUnavailable` when a required pin cannot be had. No Prefect import."""
    if given is not None and given != "":
        return given
    pin = getattr(plan, "results", None)
    if pin is None:
        return None
    return pinned_storage(pin, getattr(plan, "source", "the plan file"))
