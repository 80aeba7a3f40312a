"""``prefect-variable`` refs: the hash of a Prefect Variable's value (missing: ``absent``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import ABSENT, RefConfig, ResolveContext, ResolverError

__all__ = ["PrefectVariableRefConfig", "PrefectVariableResolver"]


class PrefectVariableRefConfig(RefConfig):
    """A Prefect Variable, read from the Prefect API."""

    locator_field: ClassVar[str] = "variable"

    kind: Literal["prefect-variable"] = Field(
        default="prefect-variable", description="Resolver kind."
    )
    variable: str = Field(
        pattern=r"^[a-z0-9_-]+$",
        description="Variable name (lowercase letters, digits, '_' and '-').",
    )

    def describe(self) -> str:
        return f"Prefect Variable {self.variable}"


class PrefectVariableResolver:
    kind = "prefect-variable"
    config_model = PrefectVariableRefConfig

    async def read_version(self, config: PrefectVariableRefConfig, ctx: ResolveContext) -> str:
        import hashlib
        import json

        from prefect.client.orchestration import get_client

        try:
            async with get_client() as client:
                variable = await client.read_variable_by_name(config.variable)
        except Exception as exc:  # noqa: BLE001 - the API's error, reported as unreadable
            raise ResolverError(f"{config.describe()}: {type(exc).__name__}: {exc}") from None
        if variable is None:
            return ABSENT
        raw = json.dumps(variable.value, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()
