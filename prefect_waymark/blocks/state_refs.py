"""The ``StateRefsBlock``: a named set of state refs, with their credentials kept as secrets."""

from __future__ import annotations

from typing import Any, Literal

from prefect.blocks.core import Block
from prefect.types import SecretDict
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, SecretStr

from ..errors import StateRefsBlockError
from ..resolvers.base import RefConfig
from ..resolvers.validation import RefConfigError, parse_ref_config
from ._meta import DOCS_URL, LOGO_URL

__all__ = ["StateRefItem", "StateRefsBlock", "StateRefsBlockError"]


class StateRefItem(BaseModel):
    """One ref of a :class:`StateRefsBlock`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Name steps use in reads/writes.")
    kind: str = Field(description="Resolver kind: http, sql, git, file, prefect-variable.")
    locator: str = Field(
        description="Where the state lives: URL (http, sql), repository (git), path (file), "
        "variable name (prefect-variable)."
    )
    version_from: str | None = Field(
        default=None,
        description="How to read the version: etag, last-modified, body, json:/pointer (http); "
        "version column (sql); commit-ish (git).",
    )
    on_error: Literal["review", "fail"] = Field(
        default="review", description="When the ref cannot be read: needs_review or fail."
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Other kind-specific fields (e.g. table, key_column, key, timeout_seconds).",
    )
    credential: str | None = Field(
        default=None, description="Name of the block credential this ref uses."
    )
    secret_block: str | None = Field(
        default=None, description="Name of a Prefect Secret block holding this ref's credential."
    )


class StateRefsBlock(Block):
    """A named set of references to authoritative state, re-read before a plan's decisions.

    Each ref names a kind, a locator and how to read its version; credentials live in
    ``credentials`` (encrypted by Prefect, masked in its UI) or in a Prefect Secret block named
    by the ref. A plan names the set with ``state_refs: {block: NAME}``.

    Example:
        Load a saved set of state refs:
        ```python
        from prefect_waymark.blocks import StateRefsBlock

        refs = StateRefsBlock.load("BLOCK_NAME")
        print([ref.name for ref in refs.refs])
        ```
    """

    _block_type_name = "Waymark State Refs"
    _block_type_slug = "waymark-state-refs"
    _logo_url = HttpUrl(LOGO_URL)
    _documentation_url = HttpUrl(DOCS_URL)
    _description = (
        "References to authoritative business state (HTTP resources, SQL rows, git commits, "
        "files, Prefect Variables) that prefect-waymark re-reads before a plan's decisions."
    )

    refs: list[StateRefItem] = Field(
        default_factory=list, description="The refs: name, kind, locator, version source."
    )
    credentials: SecretDict = Field(
        default_factory=lambda: SecretDict({}),
        description="Named credentials (tokens, passwords) that refs use through 'credential'.",
    )

    def ref_configs(self, *, label: str = "state_refs") -> list[RefConfig]:
        """The typed config of every ref; raise :class:`StateRefsBlockError` naming each problem."""
        secrets: dict[str, Any] = dict(self.credentials.get_secret_value() or {})
        configs: list[RefConfig] = []
        problems: list[str] = []
        seen: set[str] = set()
        for i, item in enumerate(self.refs):
            where = f"{label}.refs[{i}]"
            if item.name in seen:
                problems.append(f"{where}.name: duplicate ref name {item.name!r}")
            seen.add(item.name)
            data = item_to_ref_data(item)
            if "secret" in item.options:
                problems.append(
                    f"{where}.options.secret: a raw secret is refused in a block's options (they "
                    "are not masked): put the value in this block's credentials and name it "
                    "with credential: NAME, or name a Prefect Secret block (secret_block: NAME)"
                )
                data.pop("secret")
            if item.credential is not None:
                if item.credential not in secrets:
                    known = ", ".join(sorted(secrets)) or "none"
                    problems.append(
                        f"{where}.credential: no credential {item.credential!r} in the block "
                        f"(known: {known})"
                    )
                    continue
                data["secret"] = SecretStr(str(secrets[item.credential]))
            try:
                configs.append(parse_ref_config(data))
            except RefConfigError as exc:
                for loc, msg in exc.problems:
                    field = ".".join(str(p) for p in loc)
                    problems.append(f"{where}.{_item_field(item, field)}: {msg}")
        if problems:
            raise StateRefsBlockError("; ".join(problems))
        return configs


def _item_field(item: StateRefItem, field: str) -> str:
    """Name a config field by the block item's field it came from."""
    from ..resolvers.registry import config_model_for

    try:
        model = config_model_for(item.kind)
    except Exception:  # noqa: BLE001 - the unknown kind is already the message
        return field or "kind"
    if field == model.locator_field:
        return "locator"
    if field == model.version_field:
        return "version_from"
    if field in ("name", "kind", "on_error", "secret_block", ""):
        return field or "<ref>"
    return f"options.{field}"


def item_to_ref_data(item: StateRefItem) -> dict[str, Any]:
    """Flatten a block item into the kind-specific ref fields a resolver validates."""
    data: dict[str, Any] = {"name": item.name, "kind": item.kind, "on_error": item.on_error}
    data.update(item.options)
    try:
        from ..resolvers.registry import config_model_for

        model = config_model_for(item.kind)
        data[model.locator_field] = item.locator
        if item.version_from is not None:
            data[model.version_field or "version_from"] = item.version_from
    except Exception:  # noqa: BLE001 - validation reports the unknown kind
        data["locator"] = item.locator
    if item.secret_block is not None:
        data["secret_block"] = item.secret_block
    return data
