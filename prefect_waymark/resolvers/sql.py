"""``sql`` refs: a row's version column (table + key), or the first column of a query's first
row, read through SQLAlchemy. A missing row is a version too: ``absent``."""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .base import ABSENT, ResolveContext, ResolverError, SecretRefConfig, value_version

__all__ = ["SqlRefConfig", "SqlResolver"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_TABLE_FIELDS = ("table", "key_column", "key", "version_column")
_INT64 = 2**63  # a SQL integer is a signed 64-bit one, or the database refuses it at run time


class SqlRefConfig(SecretRefConfig):
    """A row in a SQL database, or a query returning one value."""

    locator_field: ClassVar[str] = "url"
    version_field: ClassVar[str | None] = "version_column"

    kind: Literal["sql"] = Field(default="sql", description="Resolver kind.")
    url: str = Field(description="SQLAlchemy URL; relative SQLite paths are inside the workdir.")
    table: str | None = Field(default=None, description="Table (optionally schema.table).")
    key_column: str | None = Field(default=None, description="Column that identifies the row.")
    key: str | int | None = Field(default=None, description="Value of key_column for the row.")
    version_column: str | None = Field(default=None, description="Column holding the version.")
    query: str | None = Field(default=None, description="SQL returning the version (1st column).")
    params: dict[str, Any] = Field(default_factory=dict, description="Bound query parameters.")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            make_url(value)
        except ArgumentError:
            raise ValueError(
                f"expected a SQLAlchemy URL such as sqlite:///data.db or "
                f"postgresql+psycopg://user@host/db, got {value[:200]!r}"
            ) from None
        return value

    @field_validator("table", "key_column", "version_column")
    @classmethod
    def _ident(cls, value: str | None) -> str | None:
        if value is not None and not _IDENT.match(value):
            raise ValueError(
                f"expected a plain SQL identifier (letters, digits, _), got {value[:200]!r}"
            )
        return value

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"expected a string or an integer, got the boolean {value!r}")
        if isinstance(value, int) and not -_INT64 <= value < _INT64:
            raise ValueError(
                f"expected a 64-bit integer (from -2**63 to 2**63-1), got one with "
                f"{len(str(abs(value)))} digits"
            )
        return value

    @field_validator("params")
    @classmethod
    def _numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        """A number the database cannot bind (inf, nan, past 64 bits) is refused here, not when
        the ref is first read."""
        for name, item in value.items():
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"parameter {name[:100]!r}: expected a finite number, not {item}")
            if isinstance(item, int) and not isinstance(item, bool):
                if not -_INT64 <= item < _INT64:
                    raise ValueError(
                        f"parameter {name[:100]!r}: expected a 64-bit integer "
                        f"(from -2**63 to 2**63-1), got one with {len(str(abs(item)))} digits"
                    )
        return value

    @model_validator(mode="after")
    def _shape(self) -> SqlRefConfig:
        given = [f for f in _TABLE_FIELDS if getattr(self, f) is not None]
        if self.query is not None:
            if given:
                raise ValueError(
                    "give either query or table/key_column/key/version_column, not both "
                    f"({', '.join(given)} given)"
                )
            return self
        missing = [f for f in _TABLE_FIELDS if getattr(self, f) is None]
        if missing:
            raise ValueError(
                f"expected query, or all of table, key_column, key, version_column "
                f"(missing: {', '.join(missing)})"
            )
        if self.params:
            raise ValueError("params are only used with query")
        return self

    def describe(self) -> str:
        from sqlalchemy.engine import make_url

        where = make_url(self.url).render_as_string(hide_password=True)
        if self.query is not None:
            return f"{where}: query"
        return f"{where}: {self.table}.{self.version_column} where {self.key_column} = {self.key!r}"


def _engine_url(config: SqlRefConfig, workdir: Path, password: str | None) -> Any:
    from sqlalchemy.engine import make_url

    url = make_url(config.url)
    if password is not None:
        url = url.set(password=password)
    if url.get_backend_name() == "sqlite":
        db = url.database or ""
        if db and db != ":memory:" and not db.startswith("file:"):
            path = Path(db) if Path(db).is_absolute() else workdir / db
            if not path.exists():
                raise ResolverError(f"no SQLite database at {path}")
            url = url.set(database=str(path))
    return url


def _read(config: SqlRefConfig, workdir: Path, password: str | None) -> str:
    from sqlalchemy import column, create_engine, select, table, text
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    engine = create_engine(_engine_url(config, workdir, password), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            if config.query is not None:
                row = conn.execute(text(config.query), config.params).first()
            else:
                assert config.table and config.key_column and config.version_column
                schema, _, name = config.table.rpartition(".")
                tbl = table(
                    name,
                    column(config.key_column),
                    column(config.version_column),
                    schema=schema or None,
                )
                row = conn.execute(
                    select(tbl.c[config.version_column]).where(
                        tbl.c[config.key_column] == config.key
                    )
                ).first()
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        raise ResolverError(f"{config.describe()}: {orig or exc}".strip()) from None
    finally:
        engine.dispose()
    if row is None:
        return ABSENT
    return value_version(row[0])


class SqlResolver:
    kind = "sql"
    config_model = SqlRefConfig

    async def read_version(self, config: SqlRefConfig, ctx: ResolveContext) -> str:
        password = await ctx.secret(config)
        return await asyncio.to_thread(_read, config, ctx.workdir, password)
