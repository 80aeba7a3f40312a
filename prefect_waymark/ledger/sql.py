"""The ledger's storage schema and every statement the ledger runs, written once as SQL.

One text serves SQLite and PostgreSQL: parameters are named ``:name`` (:class:`~.connection.
DbConnection` turns them into psycopg's ``%(name)s`` on PostgreSQL), ``INSERT ... ON CONFLICT
DO NOTHING`` and ``RETURNING`` are both back-ends' own. What differs is said where it differs:
the ``seq`` column's type, the append-only triggers, ``FOR UPDATE`` (PostgreSQL locks the row;
SQLite's ``BEGIN IMMEDIATE`` holds the whole database already) and ``LOCK TABLE``.

Standard library only: opening a ledger imports no SQL toolkit (issue 36). Schema versions and
what each migration step does are in :mod:`.migrations`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .connection import DbConnection
    from .step_state import StepState

__all__ = [
    "EVENT_COLUMNS",
    "EVENTS",
    "HOLD_COLUMNS",
    "HOLDS",
    "META",
    "RECEIPT_COLUMNS",
    "RECEIPTS",
    "STEPS",
    "create_statements",
    "in_list",
    "insert_step_states",
    "lock_tables",
]

EVENTS = "waymark_events"
STEPS = "waymark_steps"
HOLDS = "waymark_holds"
RECEIPTS = "waymark_receipts"
META = "waymark_meta"

EVENT_COLUMNS = ("seq", "plan_id", "step_id", "branch", "kind", "run_id", "at", "data")
#: A hold's columns, in the order of :class:`~.base.Hold`'s fields.
HOLD_COLUMNS = ("plan_id", "branch", "step_id", "run_id", "host", "pid", "since", "lease_until")
#: A receipt row's columns; the rest of a record is ``data`` (JSON).
RECEIPT_COLUMNS = ("key", "plan_id", "step_id", "action", "state", "run_id", "data")

_APPEND_ONLY = f"{EVENTS} is append-only: events are never updated or deleted"

#: The events table's indexes (schema 3): a plan's events in order, those of a kind (the
#: newest of a kind a plan rarely has), those of a run. Schema 2's ``(plan_id, step_id, seq)``
#: index served no read and cost a page of every append: :mod:`.migrations` drops it.
EVENT_INDEXES = {
    "ix_waymark_events_plan_seq": "(plan_id, seq)",
    "ix_waymark_events_plan_kind_seq": "(plan_id, kind, seq)",
    "ix_waymark_events_plan_run_seq": "(plan_id, run_id, seq)",
}


def _tables(seq_type: str) -> list[str]:
    return [
        f'CREATE TABLE IF NOT EXISTS {META} ("key" VARCHAR(64) NOT NULL, '
        'value VARCHAR(256) NOT NULL, PRIMARY KEY ("key"))',
        f"CREATE TABLE IF NOT EXISTS {EVENTS} (seq {seq_type} NOT NULL, "
        "plan_id VARCHAR(200) NOT NULL, step_id VARCHAR(200), branch VARCHAR(200), "
        "kind VARCHAR(64) NOT NULL, run_id VARCHAR(64), at VARCHAR(40) NOT NULL, "
        "data TEXT NOT NULL, PRIMARY KEY (seq))",
        f"CREATE TABLE IF NOT EXISTS {STEPS} (plan_id VARCHAR(200) NOT NULL, "
        "step_id VARCHAR(200) NOT NULL, last_seq INTEGER NOT NULL, state TEXT NOT NULL, "
        "PRIMARY KEY (plan_id, step_id))",
        f"CREATE TABLE IF NOT EXISTS {HOLDS} (plan_id VARCHAR(200) NOT NULL, "
        "branch VARCHAR(200) NOT NULL, step_id VARCHAR(200) NOT NULL, "
        "run_id VARCHAR(64) NOT NULL, host VARCHAR(255) NOT NULL, pid INTEGER NOT NULL, "
        "since VARCHAR(40) NOT NULL, lease_until FLOAT NOT NULL, PRIMARY KEY (plan_id, branch))",
        f'CREATE TABLE IF NOT EXISTS {RECEIPTS} ("key" VARCHAR(400) NOT NULL, '
        "plan_id VARCHAR(200) NOT NULL, step_id VARCHAR(200) NOT NULL, "
        "action VARCHAR(200) NOT NULL, state VARCHAR(16) NOT NULL, run_id VARCHAR(64) NOT NULL, "
        'data TEXT NOT NULL, PRIMARY KEY ("key"))',
    ]


def index_statements() -> list[str]:
    """``CREATE INDEX IF NOT EXISTS`` each index of the events table."""
    return [
        f"CREATE INDEX IF NOT EXISTS {name} ON {EVENTS} {cols}"
        for name, cols in EVENT_INDEXES.items()
    ]


def trigger_statements(backend: str) -> list[str]:
    """The events table's append-only triggers: UPDATE, DELETE (and TRUNCATE) refused."""
    if backend == "sqlite":
        return [
            f"CREATE TRIGGER IF NOT EXISTS {EVENTS}_no_update BEFORE UPDATE ON {EVENTS} "
            f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
            f"CREATE TRIGGER IF NOT EXISTS {EVENTS}_no_delete BEFORE DELETE ON {EVENTS} "
            f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
        ]
    return [
        f"CREATE OR REPLACE FUNCTION {EVENTS}_append_only() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '{_APPEND_ONLY}'; END $$",
        f"DROP TRIGGER IF EXISTS {EVENTS}_no_change ON {EVENTS}",
        f"CREATE TRIGGER {EVENTS}_no_change BEFORE UPDATE OR DELETE ON {EVENTS} "
        f"FOR EACH ROW EXECUTE FUNCTION {EVENTS}_append_only()",
        f"DROP TRIGGER IF EXISTS {EVENTS}_no_truncate ON {EVENTS}",
        f"CREATE TRIGGER {EVENTS}_no_truncate BEFORE TRUNCATE ON {EVENTS} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {EVENTS}_append_only()",
    ]


def create_statements(backend: str) -> list[str]:
    """Every statement that creates a new ledger's tables, indexes and triggers on
    ``backend`` (``sqlite`` or ``postgresql``); each one a no-op where its object exists."""
    seq_type = "INTEGER" if backend == "sqlite" else "SERIAL"
    return _tables(seq_type) + index_statements() + trigger_statements(backend)


def lock_tables(backend: str, *tables: str) -> list[str]:
    """PostgreSQL: lock ``tables`` against concurrent writes until the transaction ends (SQLite's
    ``BEGIN IMMEDIATE`` holds the whole database already: nothing to add)."""
    if backend != "postgresql":
        return []
    return [f"LOCK TABLE {t} IN SHARE ROW EXCLUSIVE MODE" for t in tables]


def in_list(column: str, prefix: str, values: list[str], params: dict[str, object]) -> str:
    """``column IN (:prefix0, :prefix1, …)`` with each value added to ``params``."""
    names = []
    for i, value in enumerate(values):
        params[f"{prefix}{i}"] = value
        names.append(f":{prefix}{i}")
    return f"{column} IN ({', '.join(names) or 'NULL'})"


# -- an append ----------------------------------------------------------------------------
INSERT_EVENT = (
    f"INSERT INTO {EVENTS} (plan_id, step_id, branch, kind, run_id, at, data) "
    "VALUES (:plan_id, :step_id, :branch, :kind, :run_id, :at, :data) RETURNING seq"
)
INSERT_EVENT_WITH_SEQ = (
    f"INSERT INTO {EVENTS} (seq, plan_id, step_id, branch, kind, run_id, at, data) "
    "VALUES (:seq, :plan_id, :step_id, :branch, :kind, :run_id, :at, :data)"
)
#: The step's projection row (locked ``FOR UPDATE`` on PostgreSQL: :data:`FOR_UPDATE`).
STEP_STATE = f"SELECT state FROM {STEPS} WHERE plan_id = :p_plan AND step_id = :p_step"
INSERT_STEP = (
    f"INSERT INTO {STEPS} (plan_id, step_id, last_seq, state) "
    "VALUES (:plan_id, :step_id, :last_seq, :state)"
)
INSERT_STEP_IGNORING = INSERT_STEP + " ON CONFLICT DO NOTHING"
UPDATE_STEP = (
    f"UPDATE {STEPS} SET last_seq = :last_seq, state = :state "
    "WHERE plan_id = :p_plan AND step_id = :p_step"
)
TAKE_HOLD = (
    f"INSERT INTO {HOLDS} ({', '.join(HOLD_COLUMNS)}) VALUES "
    f"({', '.join(':' + c for c in HOLD_COLUMNS)}) ON CONFLICT DO NOTHING RETURNING branch"
)
INSERT_HOLD = (
    f"INSERT INTO {HOLDS} ({', '.join(HOLD_COLUMNS)}) VALUES "
    f"({', '.join(':' + c for c in HOLD_COLUMNS)})"
)
HOLDER = f"SELECT step_id, run_id FROM {HOLDS} WHERE plan_id = :p_plan AND branch = :p_branch"
RELEASE_HOLD = (
    f"DELETE FROM {HOLDS} WHERE plan_id = :p_plan AND branch = :p_branch "
    "AND step_id = :p_step AND run_id = :p_run"
)
RENEW = f"UPDATE {HOLDS} SET lease_until = :lease_until WHERE run_id = :p_run"
#: A plan's ``renamed:`` and ``closed:`` meta rows (plan_close.refuse_if_stopped).
STOP_ROWS = f'SELECT "key", value FROM {META} WHERE "key" IN (:p_renamed, :p_closed)'

# -- reads ------------------------------------------------------------------------------
_EVENT_FIELDS = ", ".join(EVENT_COLUMNS)
#: A plan's events (conditions, order and limit added by the reader).
PLAN_EVENTS = f"SELECT {_EVENT_FIELDS} FROM {EVENTS} WHERE plan_id = :p_plan"
STEP_STATES = f"SELECT state FROM {STEPS} WHERE plan_id = :p_plan"
PLAN_HOLDS = f"SELECT {', '.join(HOLD_COLUMNS)} FROM {HOLDS} WHERE plan_id = :p_plan"
#: A plan's events counted in the database (``kind IN`` added by the reader).
COUNT_EVENTS = f"SELECT count(*) FROM {EVENTS} WHERE plan_id = :p_plan"

# -- meta rows --------------------------------------------------------------------------
META_VALUE = f'SELECT value FROM {META} WHERE "key" = :p_key'
INSERT_META = f'INSERT INTO {META} ("key", value) VALUES (:key, :value)'
INSERT_META_IGNORING = INSERT_META + " ON CONFLICT DO NOTHING"
UPDATE_META = f'UPDATE {META} SET value = :value WHERE "key" = :p_key'

# -- receipts ---------------------------------------------------------------------------
_RECEIPT_FIELDS = ", ".join(f'"{c}"' if c == "key" else c for c in RECEIPT_COLUMNS)
RECEIPT = f'SELECT {_RECEIPT_FIELDS} FROM {RECEIPTS} WHERE "key" = :p_key'
RECEIPTS_OF_PLAN = f"SELECT {_RECEIPT_FIELDS} FROM {RECEIPTS} WHERE plan_id = :p_plan"
RECEIPTS_OF_STEP = RECEIPTS_OF_PLAN + " AND step_id = :p_step"
INSERT_RECEIPT = (
    f"INSERT INTO {RECEIPTS} ({_RECEIPT_FIELDS}) VALUES "
    f"({', '.join(':' + c for c in RECEIPT_COLUMNS)})"
)
CLAIM_RECEIPT = INSERT_RECEIPT + ' ON CONFLICT DO NOTHING RETURNING "key"'
UPDATE_RECEIPT = (
    f"UPDATE {RECEIPTS} SET "
    + ", ".join(f"{c} = :{c}" for c in RECEIPT_COLUMNS if c != "key")
    + ' WHERE "key" = :p_key'
)

#: Appended to a SELECT that locks its rows until the transaction ends, on PostgreSQL.
FOR_UPDATE = " FOR UPDATE"


def insert_step_states(
    conn: DbConnection, plan_id: str, states: Mapping[str, StepState], last: Mapping[str, int]
) -> int:
    """Write folded step states as the plan's projection rows (after a rebuild, a rename or a
    restore); return how many."""
    rows = [
        {
            "plan_id": plan_id,
            "step_id": step_id,
            "last_seq": last[step_id],
            "state": st.model_dump_json(),
        }
        for step_id, st in states.items()
    ]
    conn.executemany(INSERT_STEP, rows)  # one statement for all
    return len(rows)
