"""``INSERT ... ON CONFLICT DO NOTHING`` per SQL dialect, built on first use.

The two dialects' ``insert`` constructs live in ``sqlalchemy.dialects.sqlite`` and
``sqlalchemy.dialects.postgresql``; importing the second loads SQLAlchemy's psycopg driver
module (~0.1 s), which a SQLite ledger never needs. So each statement is built the first time a
connection of that dialect asks for it, then kept: SQLAlchemy (and the lean SQLite path,
``ledger/dbapi_conn.py``) reuse its compiled form.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

from sqlalchemy import Column, Table

__all__ = ["insert_ignoring_conflict"]

_DIALECTS = {"sqlite": "sqlalchemy.dialects.sqlite", "postgresql": "sqlalchemy.dialects.postgresql"}


@cache
def insert_ignoring_conflict(
    dialect: str, table: Table, returning: Column[Any] | None = None
) -> Any:
    """The statement for ``dialect`` (a connection's ``dialect.name``), or ``None`` for another
    back-end (the caller then lets the primary key raise inside a savepoint)."""
    module = _DIALECTS.get(dialect)
    if module is None:
        return None
    stmt = import_module(module).insert(table).on_conflict_do_nothing()
    return stmt if returning is None else stmt.returning(returning)
