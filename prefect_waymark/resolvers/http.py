"""``http`` refs: a resource's version from its ``ETag``, ``Last-Modified``, body hash or a JSON
pointer into its body. All HTTP refs of one decision share one async client."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator, model_validator

from .base import ResolveContext, ResolverError, SecretRefConfig, value_version

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpRefConfig", "HttpResolver", "json_pointer", "safe_url"]


def safe_url(url: str) -> str:
    """The URL without user info and query string (which may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def json_pointer(doc: Any, pointer: str) -> Any:
    """Resolve an RFC 6901 JSON pointer (``/items/0/version``) in ``doc``."""
    if pointer == "":
        return doc
    if not pointer.startswith("/"):
        raise ResolverError(f"JSON pointer {pointer!r} must start with '/'")
    node = doc
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            if not token.isdigit() or int(token) >= len(node):
                raise ResolverError(f"JSON pointer {pointer!r}: no item {token!r}")
            node = node[int(token)]
        elif isinstance(node, dict):
            if token not in node:
                raise ResolverError(f"JSON pointer {pointer!r}: no key {token!r}")
            node = node[token]
        else:
            raise ResolverError(
                f"JSON pointer {pointer!r}: cannot look inside a {type(node).__name__}"
            )
    return node


class HttpRefConfig(SecretRefConfig):
    """An HTTP resource read with GET."""

    locator_field: ClassVar[str] = "url"
    version_field: ClassVar[str | None] = "version_from"

    kind: Literal["http"] = Field(default="http", description="Resolver kind.")
    url: str = Field(description="http:// or https:// URL of the resource.")
    version_from: str = Field(
        default="etag",
        description="etag, last-modified, body (sha256 of the body) or json:/pointer.",
    )
    timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        allow_inf_nan=False,
        strict=True,
        description="Request timeout, in seconds (above 0, at most 600).",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Extra request headers.")
    auth: Literal["bearer", "basic", "header"] | None = Field(
        default=None, description="How the credential is sent (default bearer if one is given)."
    )
    username: str | None = Field(default=None, description="User name for basic auth.")
    header_name: str | None = Field(default=None, description="Header carrying the credential.")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value

    @field_validator("version_from")
    @classmethod
    def _version_from(cls, value: str) -> str:
        if value in ("etag", "last-modified", "body"):
            return value
        if value.startswith("json:") and (value[5:] == "" or value[5:].startswith("/")):
            return value
        raise ValueError(
            f"expected etag, last-modified, body or json:/pointer (e.g. json:/data/version), "
            f"got {value!r}"
        )

    @model_validator(mode="after")
    def _auth(self) -> HttpRefConfig:
        if self.auth is not None and not self.has_secret:
            raise ValueError(f"auth {self.auth!r} needs a credential: secret_block (or secret)")
        if self.auth == "header" and not self.header_name:
            raise ValueError("auth 'header' needs header_name")
        return self

    def describe(self) -> str:
        return f"GET {safe_url(self.url)} ({self.version_from})"


class HttpResolver:
    kind = "http"
    config_model = HttpRefConfig

    async def read_version(self, config: HttpRefConfig, ctx: ResolveContext) -> str:
        import httpx

        headers, auth = _credentials(config, ctx, await ctx.secret(config))
        where = safe_url(config.url)
        try:
            resp = await ctx.http.get(
                config.url, headers=headers, auth=auth, timeout=config.timeout_seconds
            )
        except httpx.TimeoutException:
            raise ResolverError(
                f"GET {where}: no answer within {config.timeout_seconds:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise ResolverError(f"GET {where}: {type(exc).__name__}: {exc}") from None
        if resp.status_code >= 400:
            raise ResolverError(f"GET {where}: HTTP {resp.status_code} {resp.reason_phrase}")
        return _version(resp, config.version_from, where)


def _credentials(
    config: HttpRefConfig, ctx: ResolveContext, secret: str | None
) -> tuple[dict[str, str], httpx.Auth | None]:
    """The request's headers and auth, with the credential where ``config.auth`` puts it."""
    import httpx

    headers = dict(config.headers)
    auth: httpx.Auth | None = None
    if secret is not None:
        how = config.auth or "bearer"
        if how == "bearer":
            headers["Authorization"] = f"Bearer {secret}"
        elif how == "basic":
            auth = httpx.BasicAuth(config.username or "", secret)
            ctx.remember_secret(f"{config.username or ''}:{secret}")  # its base64 is sent
        else:
            assert config.header_name is not None
            headers[config.header_name] = secret
    return headers, auth


def _version(resp: httpx.Response, how_version: str, where: str) -> str:
    """The version ``version_from`` reads from the response."""
    if how_version == "etag":
        etag: str | None = resp.headers.get("etag")
        if not etag:
            raise ResolverError(f"GET {where}: the response has no ETag header")
        return etag
    if how_version == "last-modified":
        stamp: str | None = resp.headers.get("last-modified")
        if not stamp:
            raise ResolverError(f"GET {where}: the response has no Last-Modified header")
        return stamp
    if how_version == "body":
        return "sha256:" + hashlib.sha256(resp.content).hexdigest()
    try:
        doc = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResolverError(f"GET {where}: the body is not JSON: {exc}") from None
    return value_version(json_pointer(doc, how_version[5:]))
