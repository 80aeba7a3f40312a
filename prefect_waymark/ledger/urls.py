"""Ledger URLs are checked before anything opens them: a ledger that cannot keep a record is
refused (an in-memory SQLite database, in any of its spellings), a malformed URL gives one line
instead of a driver's traceback, and a server database must be named.

Checked with the standard library: a command that only checks a URL imports no SQLAlchemy.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote

from ..errors import LedgerUrlError

__all__ = [
    "LEDGER_URL_FORMS",
    "LedgerTarget",
    "check_ledger_url",
    "has_password",
    "is_relative_sqlite",
    "ledger_target",
    "shown_url",
    "sqlite_path",
]

#: What a ledger URL looks like, for the error messages.
LEDGER_URL_FORMS = (
    "sqlite:////ABSOLUTE/PATH/ledger.db (a file) or postgresql+psycopg://user@host:5432/DBNAME"
)
_PG_FORM = "postgresql+psycopg://user@host:5432/DBNAME"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.DOTALL)
# As SQLAlchemy reads a URL: the user name stops at ':' or '/', the password at the last '@'
# before the host (it may hold '/', '?', '#': SQLAlchemy takes them as part of it).
_PASSWORD = re.compile(r"(://[^/@:]*):[^@]*@")
_SHOWN_MAX = 200


def sqlite_path(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL (unquoted); ``None``
    for anything else, including URLs with query options."""
    if not url.startswith("sqlite:///") or "?" in url:
        return None
    path = unquote(url.removeprefix("sqlite:///"))
    return Path(path) if path and path != ":memory:" else None


def has_password(url: str) -> bool:
    """True if ``url`` carries a password (``scheme://user:PASSWORD@host``)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/@:]*:[^@]*@", url) is not None


def is_relative_sqlite(url: str) -> bool:
    """True for a SQLite URL with a relative path (``sqlite:///ledger.db``): a different file
    in each folder a run starts from."""
    scheme, sep, rest = url.partition("://")
    return bool(sep) and scheme.split("+", 1)[0].lower() == "sqlite" and not rest.startswith("//")


def shown_url(url: str) -> str:
    """``url`` fit for a message: the password masked, at most ~200 characters."""
    text = _PASSWORD.sub(r"\1:***@", url)
    if len(text) > _SHOWN_MAX:
        text = text[:_SHOWN_MAX] + f"... ({len(url)} characters)"
    return text


def _refuse(url: str, source: str, why: str) -> LedgerUrlError:
    where = f" (from {source})" if source else ""
    return LedgerUrlError(f"ledger URL {shown_url(url)!r}{where}: {why}")


def check_ledger_url(url: str, *, source: str = "") -> str:
    """Return ``url`` if a ledger there keeps its records; raise :class:`LedgerUrlError` if not.

    ``source`` says where the URL came from (``--ledger``, ``$WAYMARK_LEDGER_URL``) for the
    message.
    """
    if not isinstance(url, str) or not url.strip():
        raise _refuse(str(url), source, f"empty; expected {LEDGER_URL_FORMS}")
    match = _SCHEME.match(url)
    if match is None:
        raise _refuse(url, source, f"not a database URL; expected {LEDGER_URL_FORMS}")
    scheme, rest = match.group(1).lower(), match.group(2)
    backend = scheme.split("+", 1)[0]
    if backend == "sqlite":
        _check_sqlite(url, rest, source)
    else:
        _check_server(url, scheme, backend, source)
    return url


def _check_sqlite(url: str, rest: str, source: str) -> None:
    memory = (
        "an in-memory SQLite database forgets every record when the run ends (an action "
        "would run again); give the ledger a file (sqlite:////ABSOLUTE/PATH/ledger.db), or "
        "leave the ledger URL out for the default <workdir>/.waymark/ledger.db"
    )
    if rest == "":
        raise _refuse(url, source, memory)
    if not rest.startswith("/"):
        raise _refuse(
            url,
            source,
            "a SQLite URL has three slashes before a relative path and four before an absolute "
            "one: sqlite:////ABSOLUTE/PATH/ledger.db",
        )
    path, _, query = rest[1:].partition("?")
    database = unquote(path)
    options = {k.lower(): v.lower() for k, v in parse_qsl(query, keep_blank_values=True)}
    in_memory = (
        database in ("", ":memory:")
        or options.get("mode") == "memory"
        or options.get("vfs") == "memdb"
        or (database.startswith("file:") and (":memory:" in database or "mode=memory" in database))
    )
    if in_memory:
        raise _refuse(url, source, memory)


#: A server URL's parts, read as SQLAlchemy read them (the form the docs have always shown).
_SERVER = re.compile(
    r"""(?P<name>[\w+]+)://
    (?:(?P<username>[^:/]*)(?::(?P<password>[^@]*))?@)?
    (?:(?:\[(?P<ipv6host>[^/?]+)\]|(?P<ipv4host>[^/:?]+))?(?::(?P<port>[^/?]*))?)?
    (?:/(?P<database>[^?]*))?
    (?:\?(?P<query>.*))?""",
    re.X | re.DOTALL,
)
#: The schemes of a PostgreSQL ledger: the driver is psycopg 3.
_PG_SCHEMES = ("postgresql", "postgresql+psycopg")


@dataclass(frozen=True)
class LedgerTarget:
    """Where a checked ledger URL points, as its driver is given it."""

    backend: str  # "sqlite" or "postgresql"
    database: str  # SQLite: the file (or a ``file:`` URI); PostgreSQL: the database's name
    uri: bool = False  # SQLite: ``database`` is a ``file:`` URI (``?uri=true``)
    conninfo: str = ""  # PostgreSQL: libpq's connection string
    password: str | None = None

    @property
    def path(self) -> Path | None:
        """A SQLite ledger's file (``None`` for a ``file:`` URI)."""
        if self.backend != "sqlite" or self.uri:
            return None
        return Path(self.database)


def ledger_target(url: str) -> LedgerTarget:
    """The target of a URL :func:`check_ledger_url` accepted."""
    scheme, _, rest = url.partition("://")
    if scheme.split("+", 1)[0].lower() == "sqlite":
        path, _, query = rest[1:].partition("?")
        options = {k.lower(): v for k, v in parse_qsl(query, keep_blank_values=True)}
        uri = options.get("uri", "").lower() == "true"
        database = unquote(path)
        if uri and query:  # the URI's own options (mode=rwc, cache, …) go with it
            kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "uri"]
            database += "?" + "&".join(f"{k}={v}" for k, v in kept) if kept else ""
        return LedgerTarget("sqlite", database, uri=uri)
    parts = _server_parts(url)
    assert parts is not None  # checked
    from psycopg.conninfo import make_conninfo

    params: dict[str, str] = {}
    for key, value in parse_qsl(parts["query"] or "", keep_blank_values=True):
        # A repeated host (or port) is libpq's list of hosts to try, in order.
        listed = key in ("host", "port") and key in params
        params[key] = f"{params[key]},{value}" if listed else value
    for key, part in (("user", "username"), ("password", "password"), ("port", "port")):
        found = parts[part]
        if found:
            params[key] = unquote(found)
    host = parts["ipv6host"] or parts["ipv4host"]
    if host:
        params["host"] = unquote(host)
    database = unquote(parts["database"] or "")
    password = unquote(parts["password"]) if parts["password"] else None
    return LedgerTarget(
        "postgresql", database, conninfo=make_conninfo(dbname=database, **params), password=password
    )


def _server_parts(url: str) -> dict[str, str | None] | None:
    m = _SERVER.fullmatch(url)
    return m.groupdict() if m is not None else None


def _check_server(url: str, scheme: str, backend: str, source: str) -> None:
    if backend == "postgres":
        raise _refuse(url, source, f"'postgres://' is not a ledger scheme; write {_PG_FORM}")
    if scheme not in _PG_SCHEMES:
        raise _refuse(
            url,
            source,
            f"a ledger is a SQLite file or a PostgreSQL database (psycopg 3); {scheme}:// is "
            f"neither: write {_PG_FORM}",
        )
    parts = _server_parts(url)
    if parts is None:
        raise _refuse(url, source, f"malformed (it cannot be parsed); expected {_PG_FORM}")
    if "dbname" in dict(parse_qsl(parts["query"] or "")):
        raise _refuse(
            url, source, f"names its database twice (the path and ?dbname=); expected {_PG_FORM}"
        )
    if parts["port"] and not parts["port"].isdigit():
        raise _refuse(url, source, f"malformed (its port is not a number); expected {_PG_FORM}")
    if not parts["database"]:
        raise _refuse(
            url,
            source,
            "names no database (the tables would go into whatever database the server "
            f"defaults to); name it: {_PG_FORM}",
        )
    if importlib.util.find_spec("psycopg") is None:
        raise _refuse(
            url,
            source,
            "a PostgreSQL ledger needs psycopg 3, which is not installed: "
            "pip install 'prefect-waymark[postgres]'",
        )
