"""The resolver protocol: read the current version of one piece of authoritative state.

A state ref points at a database row, an HTTP resource, a commit, a file or a Prefect Variable.
The ledger never stores the state itself, only the version a plan last accepted; before a
decision the resolver reads the current version again and the two are compared.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from .._masking import remember_secret, secret_forms
from ..errors import ResolverError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ABSENT",
    "RefConfig",
    "RefReading",
    "ResolveContext",
    "ResolverError",
    "SecretRefConfig",
    "StateResolver",
    "value_version",
]

ABSENT = "absent"
"""The version of something that does not exist (a missing file, row or variable)."""

NAME_PATTERN = r"^[A-Za-z0-9._-]+$"


class RefConfig(BaseModel):
    """Fields every state ref has; each resolver adds its own (its ``config_model``)."""

    model_config = ConfigDict(extra="forbid")

    locator_field: ClassVar[str] = "locator"
    """The kind's main field; a StateRefs block item's ``locator`` lands in it."""
    version_field: ClassVar[str | None] = None
    """The kind's "how to read the version" field; a block item's ``version_from`` lands in it."""

    name: str = Field(pattern=NAME_PATTERN, description="Name steps use in reads/writes.")
    kind: str = Field(description="Resolver kind.")
    on_error: Literal["review", "fail"] = Field(
        default="review",
        description="When the ref cannot be read: stop at needs_review, or fail the step.",
    )

    def describe(self) -> str:
        """Where the ref points, safe to log (no credentials)."""
        return str(getattr(self, self.locator_field, self.name))


class SecretRefConfig(RefConfig):
    """A ref that may need a credential: a ``SecretStr`` or the name of a Prefect Secret block.

    A plan file may only name a Secret block; the ``secret`` value itself comes from a StateRefs
    block's ``credentials`` (stored encrypted by Prefect and masked in its UI).
    """

    secret: SecretStr | None = Field(default=None, description="Credential value.")
    secret_block: str | None = Field(
        default=None, description="Name of a Prefect Secret block holding the credential."
    )

    @model_validator(mode="after")
    def _one_secret(self) -> SecretRefConfig:
        if self.secret is not None and self.secret_block is not None:
            raise ValueError("give either secret or secret_block, not both")
        return self

    @property
    def has_secret(self) -> bool:
        return self.secret is not None or self.secret_block is not None


@dataclass(frozen=True)
class RefReading:
    """One read of a ref: its current version, or why it could not be read."""

    name: str
    kind: str
    version: str | None
    error: str | None
    at: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ResolveContext:
    """Shared by every ref read for one decision: one async HTTP client, the workdir, secrets."""

    workdir: Path
    _http: httpx.AsyncClient | None = None
    _own_http: bool = False
    secrets_used: set[str] = field(default_factory=set)

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(
                follow_redirects=True,
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            )
            self._own_http = True
        return self._http

    async def secret(self, config: SecretRefConfig) -> str | None:
        """The credential's value (remembered so error messages can be scrubbed of it)."""
        value: str | None = None
        if config.secret is not None:
            value = config.secret.get_secret_value()
        elif config.secret_block is not None:
            from prefect.blocks.system import Secret

            block: Secret[Any] = await Secret.aload(config.secret_block)
            raw: Any = block.get()
            value = raw if isinstance(raw, str) else json.dumps(raw)
        if value:
            self.remember_secret(value)
        return value

    def remember_secret(self, value: str) -> None:
        """Scrub ``value`` from this context's errors and versions, and its encoded forms too
        (percent-encoded, base64, JSON-escaped); a resolver adds what it derives (basic auth).
        The process masks it from now on too (``_masking``): in a step's output, a log line,
        the ledger."""
        self.secrets_used.update(secret_forms(value))
        remember_secret(value)

    def scrub(self, text: str) -> str:
        """``text`` with every secret this context used replaced by ``***`` (longest first)."""
        for value in sorted(self.secrets_used, key=len, reverse=True):
            if value in text:
                text = text.replace(value, "***")
        return text

    def scrub_reading(self, reading: RefReading) -> RefReading:
        """The reading without any secret: a version read from a response that echoes the
        credential (a header, a JSON field) keeps its shape with the secret as ``***``."""
        if not self.secrets_used:
            return reading
        version = None if reading.version is None else self.scrub(reading.version)
        error = None if reading.error is None else self.scrub(reading.error)
        if version == reading.version and error == reading.error:
            return reading
        return replace(reading, version=version, error=error)

    async def aclose(self) -> None:
        if self._http is not None and self._own_http:
            await self._http.aclose()
        self._http = None


@runtime_checkable
class StateResolver(Protocol):
    """Reads the current version of refs of one ``kind``.

    Register your own through the ``prefect_waymark.resolvers`` entry-point group
    (``mykind = "my_package.resolvers:MyResolver"``) or :func:`register_resolver`.
    """

    kind: str
    config_model: type[RefConfig]

    async def read_version(self, config: Any, ctx: ResolveContext) -> str:
        """The ref's current version; raise to report it unreadable."""
        ...


def value_version(value: Any) -> str:
    """A version string for a value: scalars as themselves, anything else as a sha256."""
    if isinstance(value, str | int | float | bool) and not isinstance(value, bool):
        return str(value)
    raw = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


def now_iso() -> str:
    from ..models import utcnow

    return utcnow().isoformat()
