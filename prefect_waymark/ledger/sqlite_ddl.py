"""The ledger's tables on SQLite as DDL text, and the append-only triggers of every back-end.

A SQLite ledger is created on the standard library's ``sqlite3`` (no SQLAlchemy import) with
the DDL below: what SQLAlchemy's ``metadata.create_all`` emits for the SQLModel tables
(``ledger/_tables.py``) on SQLite, plus the triggers. ``tests/ledger/test_statements.py``
creates one ledger each way and compares their ``sqlite_master``, statement by statement.
"""

from __future__ import annotations

import sqlite3

from .schema import EVENTS

__all__ = ["SQLITE_TABLES", "TRIGGERS", "create_missing_tables", "existing_tables"]

_E = EVENTS.name
_APPEND_ONLY = f"{_E} is append-only: events are never updated or deleted"
#: Events are append-only in the database too: triggers refuse UPDATE, DELETE (and TRUNCATE),
#: created together with the events table.
TRIGGERS = {
    "sqlite": [
        f"CREATE TRIGGER {_E}_no_update BEFORE UPDATE ON {_E} "
        f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
        f"CREATE TRIGGER {_E}_no_delete BEFORE DELETE ON {_E} "
        f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
    ],
    "postgresql": [
        f"CREATE OR REPLACE FUNCTION {_E}_append_only() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '{_APPEND_ONLY}'; END $$",
        f"CREATE TRIGGER {_E}_no_change BEFORE UPDATE OR DELETE ON {_E} "
        f"FOR EACH ROW EXECUTE FUNCTION {_E}_append_only()",
        f"CREATE TRIGGER {_E}_no_truncate BEFORE TRUNCATE ON {_E} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {_E}_append_only()",
    ],
}

#: Each table's statements, in the order ``create_all`` runs them: the table, its indexes,
#: (the events table) its triggers.
SQLITE_TABLES: dict[str, list[str]] = {
    "waymark_events": [
        "CREATE TABLE waymark_events (\n\tseq INTEGER NOT NULL, \n"
        "\tplan_id VARCHAR(200) NOT NULL, \n\tstep_id VARCHAR(200), \n"
        "\tbranch VARCHAR(200), \n\tkind VARCHAR(64) NOT NULL, \n\trun_id VARCHAR(64), \n"
        "\tat VARCHAR(40) NOT NULL, \n\tdata TEXT NOT NULL, \n\tPRIMARY KEY (seq)\n)",
        "CREATE INDEX ix_waymark_events_plan_seq ON waymark_events (plan_id, seq)",
        "CREATE INDEX ix_waymark_events_plan_step_seq ON waymark_events (plan_id, step_id, seq)",
        *TRIGGERS["sqlite"],
    ],
    "waymark_holds": [
        "CREATE TABLE waymark_holds (\n\tplan_id VARCHAR(200) NOT NULL, \n"
        "\tbranch VARCHAR(200) NOT NULL, \n\tstep_id VARCHAR(200) NOT NULL, \n"
        "\trun_id VARCHAR(64) NOT NULL, \n\thost VARCHAR(255) NOT NULL, \n"
        "\tpid INTEGER NOT NULL, \n\tsince VARCHAR(40) NOT NULL, \n"
        "\tlease_until FLOAT NOT NULL, \n\tPRIMARY KEY (plan_id, branch)\n)",
    ],
    "waymark_meta": [
        'CREATE TABLE waymark_meta (\n\t"key" VARCHAR(64) NOT NULL, \n'
        '\tvalue VARCHAR(256) NOT NULL, \n\tPRIMARY KEY ("key")\n)',
    ],
    "waymark_receipts": [
        'CREATE TABLE waymark_receipts (\n\t"key" VARCHAR(400) NOT NULL, \n'
        "\tplan_id VARCHAR(200) NOT NULL, \n\tstep_id VARCHAR(200) NOT NULL, \n"
        "\taction VARCHAR(200) NOT NULL, \n\tstate VARCHAR(16) NOT NULL, \n"
        '\trun_id VARCHAR(64) NOT NULL, \n\tdata TEXT NOT NULL, \n\tPRIMARY KEY ("key")\n)',
    ],
    "waymark_steps": [
        "CREATE TABLE waymark_steps (\n\tplan_id VARCHAR(200) NOT NULL, \n"
        "\tstep_id VARCHAR(200) NOT NULL, \n\tlast_seq INTEGER NOT NULL, \n"
        "\tstate TEXT NOT NULL, \n\tPRIMARY KEY (plan_id, step_id)\n)",
    ],
}


def existing_tables(raw: sqlite3.Connection) -> set[str]:
    """The names of the tables in the database."""
    rows = raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {str(r[0]) for r in rows}


def create_missing_tables(raw: sqlite3.Connection) -> list[str]:
    """Create each ledger table that does not exist yet, with its indexes and triggers, as
    ``create_all`` does (a table that exists is left as it is); return the tables created.
    Run inside the caller's write transaction."""
    have = existing_tables(raw)
    made = [name for name in SQLITE_TABLES if name not in have]
    for name in made:
        for statement in SQLITE_TABLES[name]:
            raw.execute(statement)
    return made
