"""The ledger's everyday statements, each once: its SQLite text and its SQLAlchemy form.

A SQLite ledger runs a run's and a check-in's statements on the standard library's ``sqlite3``
(``ledger/dbapi_conn.py``), so a ``waymark run`` or ``waymark done`` never imports SQLAlchemy
(~0.2 s of CPU per process here). Each statement keeps its SQLAlchemy form beside the text, built
on first use, for PostgreSQL and for a ledger opened with ``lean=False``; on SQLAlchemy's own
connection a :class:`Stmt` executes as that form. ``tests/ledger/test_statements.py`` compiles
every form for SQLite and checks it is the text here, and the conformance suite runs both paths.

The rare commands (rename, close, archive, restore, migrate) build their statements with
SQLAlchemy where they run; on the lean path they are compiled for SQLite the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Table
    from sqlalchemy.sql.expression import Executable as _Executable
else:  # at run time a plain class: SQLAlchemy is not imported for it
    _Executable = object

__all__ = ["ALL", "Stmt", "table"]


def table(name: str) -> Table:
    """The SQLAlchemy table ``name`` of the ledger (imports SQLAlchemy and SQLModel)."""
    from ._tables import metadata

    return metadata.tables[name]


class Stmt(_Executable):
    """One statement: ``sqlite`` (what the lean path runs, named parameters) and ``sa(dialect)``
    (the same statement for SQLAlchemy; ``None`` where a dialect has no form of it, e.g. an
    ``INSERT ... ON CONFLICT DO NOTHING`` on a back-end other than SQLite and PostgreSQL)."""

    __slots__ = ("_build", "_built", "name", "sqlite")

    def __init__(self, name: str, sqlite: str, build: Callable[[str], Any]) -> None:
        self.name = name
        self.sqlite = " ".join(sqlite.split())
        self._build = build
        self._built: dict[str, Any] = {}

    def sa(self, dialect: str) -> Any:
        """The SQLAlchemy statement for ``dialect``, built once (SQLAlchemy then reuses its
        compiled form)."""
        if dialect not in self._built:
            self._built[dialect] = self._build(dialect)
        return self._built[dialect]

    def _execute_on_connection(self, connection: Any, params: Any, options: Any) -> Any:
        """``Connection.execute(stmt, ...)`` on SQLAlchemy's connection runs ``sa(dialect)``
        (SQLAlchemy dispatches every executable through this method)."""
        built = self.sa(connection.dialect.name)
        if built is None:
            raise TypeError(f"{self.name} has no form for {connection.dialect.name}")
        return built._execute_on_connection(connection, params, options)

    def __repr__(self) -> str:
        return f"Stmt({self.name})"


def _upsert(name: str, returning: str | None = None) -> Callable[[str], Any]:
    """``INSERT ... ON CONFLICT DO NOTHING`` into ``name`` (``None`` for another back-end)."""

    def build(dialect: str) -> Any:
        from .upserts import insert_ignoring_conflict

        t = table(name)
        return insert_ignoring_conflict(dialect, t, t.c[returning] if returning else None)

    return build


def _either(built: Any, fallback: Callable[[str], Any]) -> Any:
    return fallback("") if built is None else built


def _insert(name: str, returning: str | None = None) -> Callable[[str], Any]:
    def build(_dialect: str) -> Any:
        from sqlalchemy import insert

        t = table(name)
        return insert(t).returning(t.c[returning]) if returning else insert(t)

    return build


def _select(name: str, *columns: str, lock: bool = False, **where: str) -> Callable[[str], Any]:
    """``SELECT columns (every column if none) FROM name WHERE col = :param AND ...``."""

    def build(_dialect: str) -> Any:
        from sqlalchemy import bindparam, select

        t = table(name)
        q = select(*(t.c[c] for c in columns)) if columns else select(t)
        q = q.where(*(t.c[c] == bindparam(p) for c, p in where.items()))
        return q.with_for_update() if lock else q

    return build


def _update(name: str, values: tuple[str, ...], **where: str) -> Callable[[str], Any]:
    def build(_dialect: str) -> Any:
        from sqlalchemy import bindparam, update

        t = table(name)
        return (
            update(t)
            .where(*(t.c[c] == bindparam(p) for c, p in where.items()))
            .values({c: bindparam(c) for c in values})
        )

    return build


def _delete(name: str, **where: str) -> Callable[[str], Any]:
    def build(_dialect: str) -> Any:
        from sqlalchemy import bindparam, delete

        t = table(name)
        return delete(t).where(*(t.c[c] == bindparam(p) for c, p in where.items()))

    return build


def _count(name: str, **where: str) -> Callable[[str], Any]:
    def build(_dialect: str) -> Any:
        from sqlalchemy import bindparam, func, select

        t = table(name)
        return (
            select(func.count())
            .select_from(t)
            .where(*(t.c[c] == bindparam(p) for c, p in where.items()))
        )

    return build


def _stop_rows(_dialect: str) -> Any:
    from sqlalchemy import bindparam, select

    t = table("waymark_meta")
    keys: list[Any] = [bindparam("p_renamed"), bindparam("p_closed")]
    return select(t.c.key, t.c.value).where(t.c.key.in_(keys))


_EVENT_COLUMNS = "plan_id, step_id, branch, kind, run_id, at, data"
_EVENT_VALUES = ":plan_id, :step_id, :branch, :kind, :run_id, :at, :data"
_HOLD_COLUMNS = "plan_id, branch, step_id, run_id, host, pid, since, lease_until"
_HOLD_VALUES = ":plan_id, :branch, :step_id, :run_id, :host, :pid, :since, :lease_until"
_RECEIPT_COLUMNS = '"key", plan_id, step_id, action, state, run_id, data'
_RC = "waymark_receipts"
_RECEIPT_SELECT = ", ".join(f"{_RC}.{c.strip()}" for c in _RECEIPT_COLUMNS.split(","))
_RECEIPT_SET = ("plan_id", "step_id", "action", "state", "run_id", "data")

# -- an append ----------------------------------------------------------------------------
INSERT_EVENT = Stmt(
    "INSERT_EVENT",
    f"INSERT INTO waymark_events ({_EVENT_COLUMNS}) VALUES ({_EVENT_VALUES}) RETURNING seq",
    _insert("waymark_events", "seq"),
)
#: The step's projection row, locked (PostgreSQL ``FOR UPDATE``; SQLite holds the write lock).
STEP_STATE = Stmt(
    "STEP_STATE",
    "SELECT waymark_steps.state FROM waymark_steps "
    "WHERE waymark_steps.plan_id = :p_plan AND waymark_steps.step_id = :p_step",
    _select("waymark_steps", "state", lock=True, plan_id="p_plan", step_id="p_step"),
)
#: A step's empty placeholder row (another back-end: a plain INSERT).
CLAIM_STEP = Stmt(
    "CLAIM_STEP",
    "INSERT INTO waymark_steps (plan_id, step_id, last_seq, state) "
    "VALUES (:plan_id, :step_id, :last_seq, :state) ON CONFLICT DO NOTHING",
    lambda d: _either(_upsert("waymark_steps")(d), _insert("waymark_steps")),
)
UPDATE_STEP = Stmt(
    "UPDATE_STEP",
    "UPDATE waymark_steps SET last_seq=:last_seq, state=:state "
    "WHERE waymark_steps.plan_id = :p_plan AND waymark_steps.step_id = :p_step",
    _update("waymark_steps", ("last_seq", "state"), plan_id="p_plan", step_id="p_step"),
)
TAKE_HOLD = Stmt(
    "TAKE_HOLD",
    f"INSERT INTO waymark_holds ({_HOLD_COLUMNS}) VALUES ({_HOLD_VALUES}) "
    "ON CONFLICT DO NOTHING RETURNING branch",
    _upsert("waymark_holds", "branch"),
)
HOLDER = Stmt(
    "HOLDER",
    "SELECT waymark_holds.step_id, waymark_holds.run_id FROM waymark_holds "
    "WHERE waymark_holds.plan_id = :p_plan AND waymark_holds.branch = :p_branch",
    _select("waymark_holds", "step_id", "run_id", plan_id="p_plan", branch="p_branch"),
)
RELEASE_HOLD = Stmt(
    "RELEASE_HOLD",
    "DELETE FROM waymark_holds WHERE waymark_holds.plan_id = :p_plan AND "
    "waymark_holds.branch = :p_branch AND waymark_holds.step_id = :p_step AND "
    "waymark_holds.run_id = :p_run",
    _delete("waymark_holds", plan_id="p_plan", branch="p_branch", step_id="p_step", run_id="p_run"),
)
RENEW = Stmt(
    "RENEW",
    "UPDATE waymark_holds SET lease_until=:lease_until WHERE waymark_holds.run_id = :p_run",
    _update("waymark_holds", ("lease_until",), run_id="p_run"),
)
#: A plan's ``renamed:`` and ``closed:`` meta rows (plan_close.refuse_if_stopped).
STOP_ROWS = Stmt(
    "STOP_ROWS",
    'SELECT waymark_meta."key", waymark_meta.value FROM waymark_meta '
    'WHERE waymark_meta."key" IN (:p_renamed, :p_closed)',
    _stop_rows,
)

# -- reads ------------------------------------------------------------------------------
STEP_STATES = Stmt(
    "STEP_STATES",
    "SELECT waymark_steps.state FROM waymark_steps WHERE waymark_steps.plan_id = :p_plan",
    _select("waymark_steps", "state", plan_id="p_plan"),
)
HOLDS = Stmt(
    "HOLDS",
    f"SELECT {', '.join(f'waymark_holds.{c.strip()}' for c in _HOLD_COLUMNS.split(','))} "
    "FROM waymark_holds WHERE waymark_holds.plan_id = :p_plan",
    _select("waymark_holds", plan_id="p_plan"),
)
COUNT_EVENTS = Stmt(
    "COUNT_EVENTS",
    "SELECT count(*) AS count_1 FROM waymark_events WHERE waymark_events.plan_id = :p_plan",
    _count("waymark_events", plan_id="p_plan"),
)

# -- meta rows --------------------------------------------------------------------------
META_VALUE = Stmt(
    "META_VALUE",
    'SELECT waymark_meta.value FROM waymark_meta WHERE waymark_meta."key" = :p_key',
    _select("waymark_meta", "value", key="p_key"),
)
META_VALUE_LOCKED = Stmt(
    "META_VALUE_LOCKED",
    'SELECT waymark_meta.value FROM waymark_meta WHERE waymark_meta."key" = :p_key',
    _select("waymark_meta", "value", lock=True, key="p_key"),
)
INSERT_META = Stmt(
    "INSERT_META",
    'INSERT INTO waymark_meta ("key", value) VALUES (:key, :value)',
    _insert("waymark_meta"),
)
#: A new ledger's meta rows: a concurrent creator may have written them first (another
#: back-end: a plain INSERT).
CLAIM_META = Stmt(
    "CLAIM_META",
    'INSERT INTO waymark_meta ("key", value) VALUES (:key, :value) ON CONFLICT DO NOTHING',
    lambda d: _either(_upsert("waymark_meta")(d), _insert("waymark_meta")),
)
UPDATE_META = Stmt(
    "UPDATE_META",
    'UPDATE waymark_meta SET value=:value WHERE waymark_meta."key" = :p_key',
    _update("waymark_meta", ("value",), key="p_key"),
)

# -- receipts ---------------------------------------------------------------------------
INSERT_RECEIPT = Stmt(
    "INSERT_RECEIPT",
    f"INSERT INTO {_RC} ({_RECEIPT_COLUMNS}) VALUES "
    "(:key, :plan_id, :step_id, :action, :state, :run_id, :data) "
    'ON CONFLICT DO NOTHING RETURNING "key"',
    _upsert(_RC, "key"),
)
PLAIN_INSERT_RECEIPT = Stmt(
    "PLAIN_INSERT_RECEIPT",
    f"INSERT INTO {_RC} ({_RECEIPT_COLUMNS}) VALUES "
    "(:key, :plan_id, :step_id, :action, :state, :run_id, :data)",
    _insert(_RC),
)
RECEIPT = Stmt(
    "RECEIPT",
    f'SELECT {_RECEIPT_SELECT} FROM {_RC} WHERE {_RC}."key" = :p_key',
    _select(_RC, key="p_key"),
)
RECEIPT_LOCKED = Stmt(
    "RECEIPT_LOCKED",
    f'SELECT {_RECEIPT_SELECT} FROM {_RC} WHERE {_RC}."key" = :p_key',
    _select(_RC, lock=True, key="p_key"),
)
RECEIPTS_OF_PLAN = Stmt(
    "RECEIPTS_OF_PLAN",
    f"SELECT {_RECEIPT_SELECT} FROM {_RC} WHERE {_RC}.plan_id = :p_plan",
    _select(_RC, plan_id="p_plan"),
)
RECEIPTS_OF_STEP = Stmt(
    "RECEIPTS_OF_STEP",
    f"SELECT {_RECEIPT_SELECT} FROM {_RC} "
    f"WHERE {_RC}.plan_id = :p_plan AND {_RC}.step_id = :p_step",
    _select(_RC, plan_id="p_plan", step_id="p_step"),
)
UPDATE_RECEIPT = Stmt(
    "UPDATE_RECEIPT",
    f"UPDATE {_RC} SET plan_id=:plan_id, step_id=:step_id, action=:action, state=:state, "
    f'run_id=:run_id, data=:data WHERE {_RC}."key" = :p_key',
    _update(_RC, _RECEIPT_SET, key="p_key"),
)

#: Every statement (the test compiles each for SQLite).
ALL: tuple[Stmt, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Stmt))
