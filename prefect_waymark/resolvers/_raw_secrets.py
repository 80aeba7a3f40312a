"""Raw secrets in a ref's plain fields, found and named by field path but never echoed.

A credential belongs in a Prefect ``Secret`` block (``secret_block: NAME``) or in a StateRefs
block's masked ``credentials``. Anywhere else it would be written to logs, markers and the
ledger, so these are refused wherever a ref's fields come from (a plan file, a Python plan, a
StateRefs block's locator and options):

- a URL with a password (``scheme://user:PASSWORD@host``; for http(s), any user info, which
  httpx sends as basic auth); for ``sql`` refs also what SQLAlchemy reads as the password;
- a URL query or fragment parameter whose name says credential (``token``, ``api_key``,
  ``password``, ``secret``, ``sig``, ``X-Amz-Signature``, ... — :func:`is_secret_name`);
- a header whose name says credential (``Authorization``, ``Proxy-Authorization``, ``Cookie``,
  ``X-Api-Key``, ``X-Auth-Token``, ...).

An empty value (``?token=``) holds no secret and passes. The checked data comes back with each
secret replaced by ``***``, so later messages (which quote bad values) cannot echo it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote_plus

__all__ = ["SECRET_FIELDS", "is_secret_name", "raw_secret_problems"]

Loc = tuple[int | str, ...]

SECRET_FIELDS = ("secret", "secret_block")
"""Fields that hold (or name) a credential on purpose; never scanned."""

_SKIP = {"name", "kind", "on_error", *SECRET_FIELDS}
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
_EXACT = {
    "auth",
    "authorization",
    "bearer",
    "credential",
    "credentials",
    "jwt",
    "pass",
    "passwd",
    "password",
    "pwd",
    "secret",
    "session",
    "sessionid",
    "sig",
    "signature",
    "token",
    "apikey",
    "cookie",
}
_SUFFIXES = (
    "accesskey",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "credentials",
    "passwd",
    "password",
    "privatekey",
    "secret",
    "secretkey",
    "sessionid",
    "signature",
    "subscriptionkey",
    "token",
)
# Names ending in "token" that are pagination cursors, not credentials.
_NOT_SECRET = {"pagetoken", "nextpagetoken", "continuationtoken", "synctoken", "nexttoken"}
MASK = "***"


def is_secret_name(name: str) -> bool:
    """Whether a query parameter or header of this name carries a credential."""
    norm = re.sub(r"[^a-z0-9]", "", name.lower())
    if not norm or norm in _NOT_SECRET:
        return False
    return norm in _EXACT or norm.endswith(_SUFFIXES)


def _hint(from_plan_file: bool, how: str) -> str:
    where = (
        "keep the refs in a StateRefs block with the value in its credentials"
        if from_plan_file
        else "put the value in this block's credentials (credential: NAME)"
    )
    return (
        f"a raw secret is refused here: {how}, and name a Prefect Secret block "
        f"(secret_block: NAME) or {where}"
    )


def _params(text: str) -> tuple[list[str], str]:
    """Secret-looking parameter names in ``a=1&token=x`` and the text with their values masked."""
    found: list[str] = []
    pieces = re.split(r"([&;])", text)
    for i in range(0, len(pieces), 2):
        key, eq, value = pieces[i].partition("=")
        name = unquote_plus(key)
        if eq and value and is_secret_name(name):
            found.append(name)
            pieces[i] = f"{key}={MASK}"
    return found, "".join(pieces)


def _url_problems(
    text: str, kind: str, loc: Loc, from_plan_file: bool
) -> tuple[list[tuple[Loc, str]], str]:
    match = _URL.match(text.strip())
    if match is None:
        return [], text
    scheme, rest = match.group(1).lower(), match.group(2)
    problems: list[tuple[Loc, str]] = []
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        user, colon, password = userinfo.partition(":")
        web = scheme in ("http", "https")
        if password or (web and userinfo):
            what = "a password (user:PASSWORD@host)" if password else "user info (USER@host)"
            how = (
                "use auth: basic with username: USER (or auth: bearer for a token)"
                if web
                else "keep user@host in the URL"
            )
            problems.append((loc, f"the URL holds {what}; " + _hint(from_plan_file, how)))
            authority = f"{user}:{MASK}@{host}" if colon or not web else f"{MASK}@{host}"
    elif kind == "sql" and _sqlalchemy_password(text):
        problems.append(
            (
                loc,
                "the URL holds a password (user:PASSWORD@host); "
                + _hint(from_plan_file, "keep user@host in the URL"),
            )
        )
        return problems, f"{scheme}://{MASK}"
    path, hash_, fragment = tail.partition("#")
    path, qmark, query = path.partition("?")
    names, query = _params(query)
    more, fragment = _params(fragment)
    for name in names + more:
        how = (
            "send it as a header (auth: bearer, or auth: header with header_name: NAME)"
            if scheme in ("http", "https")
            else "give it as the ref's credential"
        )
        problems.append(
            (loc, f"the URL's parameter {name!r} holds a credential; " + _hint(from_plan_file, how))
        )
    return problems, f"{scheme}://{authority}{path}{qmark}{query}{hash_}{fragment}"


def _sqlalchemy_password(url: str) -> bool:
    """Whether SQLAlchemy reads a password in ``url`` (its parser lets one hold ``/``)."""
    from sqlalchemy.engine import make_url

    try:
        return bool(make_url(url).password)
    except Exception:  # noqa: BLE001 - a bad URL is reported by the kind's own check
        return False


def _headers(
    value: dict[Any, Any], loc: Loc, from_plan_file: bool
) -> tuple[list[tuple[Loc, str]], dict[Any, Any]]:
    problems: list[tuple[Loc, str]] = []
    out = dict(value)
    for key, item in value.items():
        if isinstance(key, str) and is_secret_name(key) and item not in (None, ""):
            how = (
                "use auth: bearer (or auth: basic with username: USER)"
                if key.lower() == "authorization"
                else f"use auth: header with header_name: {key}"
            )
            problems.append(
                (
                    (*loc, key),
                    f"the header {key!r} holds a credential; " + _hint(from_plan_file, how),
                )
            )
            out[key] = MASK
    return problems, out


def _scan(
    value: Any, kind: str, loc: Loc, from_plan_file: bool, depth: int = 0
) -> tuple[list[tuple[Loc, str]], Any]:
    if isinstance(value, str):
        return _url_problems(value, kind, loc, from_plan_file)
    if depth > 20:  # the loader bounds nesting; a Python caller's deep value is not a URL
        return [], value
    problems: list[tuple[Loc, str]] = []
    if isinstance(value, dict):
        if loc and loc[-1] == "headers":
            found, value = _headers(value, loc, from_plan_file)
            problems += found
        out: dict[Any, Any] = {}
        for key, item in value.items():
            found, out[key] = _scan(item, kind, (*loc, key), from_plan_file, depth + 1)
            problems += found
        return problems, out
    if isinstance(value, list):
        items = []
        for i, item in enumerate(value):
            found, masked = _scan(item, kind, (*loc, i), from_plan_file, depth + 1)
            problems += found
            items.append(masked)
        return problems, items
    return [], value


def raw_secret_problems(
    data: dict[str, Any], *, from_plan_file: bool = True
) -> tuple[list[tuple[Loc, str]], dict[str, Any]]:
    """Every raw secret in one ref's plain fields, as (field path, message), and the ref's data
    with those secrets masked. Messages name the field, never the value."""
    kind = data.get("kind")
    kind = kind if isinstance(kind, str) else ""
    problems: list[tuple[Loc, str]] = []
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _SKIP:
            out[key] = value
            continue
        found, out[key] = _scan(value, kind, (key,), from_plan_file)
        problems += found
    return problems, out
