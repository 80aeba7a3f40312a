"""What a SQLite ledger's own appends wrote last, so that the next append need not read it back.

An append of a step event reads the step's projection row (and decodes its JSON), and an event
that starts new work looks up the plan's ``renamed:``/``closed:`` rows. In a run, the same
connection wrote that row a moment ago (a step's ``step_started``, then its ``step_completed``)
and found the plan open. :class:`RowCache` keeps both, for the connection that wrote them
(:class:`~.dbapi_conn.LeanSqlite`), and only while nothing else can have changed them:

- SQLite's ``PRAGMA data_version`` (read inside each append's ``BEGIN IMMEDIATE``) changes when
  any *other* connection, of this process or another, has committed since; then everything
  kept is dropped;
- any other write transaction on the same connection (a receipt, a rename, a close, a rebuild,
  a lease renewal) drops everything kept before it begins;
- a transaction that fails drops everything; what an append keeps counts only once its
  transaction has committed.
- a new connection (after ``close()``, a failure, a fork) drops everything: ``data_version``
  counts per connection, so what the old one kept cannot be checked.

A row is kept as the fields the fold left (what its JSON says, without decoding it again),
except where JSON would not give them back as they are (a float that is not finite: the row
stores ``null``). At most :data:`MAX_ROWS` rows, the most recently written.
"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["MAX_ROWS", "RowCache"]

#: Rows kept at most: a run writes a few steps' rows at a time (one per branch in progress).
MAX_ROWS = 64


class RowCache:
    """The projection rows and open plans one connection's appends wrote and saw last."""

    __slots__ = ("_new_open", "_new_rows", "_seen", "_version", "open_plans", "rows")

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.open_plans: set[str] = set()
        self._version: int | None = None  # data_version when what is kept was last current
        self._seen: int | None = None
        self._new_rows: dict[tuple[str, str], dict[str, Any]] = {}
        self._new_open: set[str] = set()

    def clear(self) -> None:
        """Forget everything (another write on this connection, a failure, a new connection)."""
        self.rows.clear()
        self.open_plans.clear()
        self._new_rows.clear()
        self._new_open.clear()
        self._version = None

    def enter(self, raw: sqlite3.Connection) -> None:
        """At the start of an append's write transaction (the write lock held): drop what was
        kept if another connection has committed since."""
        row = raw.execute("PRAGMA data_version").fetchone()
        self._seen = int(row[0])
        self._new_rows.clear()
        self._new_open.clear()
        if self._seen != self._version:
            self.rows.clear()
            self.open_plans.clear()

    def take(self, plan_id: str, step_id: str) -> dict[str, Any] | None:
        """The step's row as kept (the caller's to fold in place), or ``None``: read it."""
        return self.rows.pop((plan_id, step_id), None)

    def keep(self, plan_id: str, step_id: str, fields: dict[str, Any], data_json: str) -> None:
        """The step's row as this transaction writes it, folded from an event whose stored
        ``data`` is ``data_json``; kept once the transaction commits."""
        if "NaN" in data_json or "Infinity" in data_json:  # JSON gives null back, not the float
            return
        self._new_rows[(plan_id, step_id)] = fields

    def is_open(self, plan_id: str) -> bool:
        """True if an earlier append found the plan neither renamed nor closed."""
        return plan_id in self.open_plans

    def saw_open(self, plan_id: str) -> None:
        self._new_open.add(plan_id)

    def committed(self) -> None:
        """The append's transaction committed: what it wrote is what the database holds."""
        self.rows.update(self._new_rows)
        while len(self.rows) > MAX_ROWS:
            del self.rows[next(iter(self.rows))]
        self.open_plans |= self._new_open
        self._new_rows.clear()
        self._new_open.clear()
        self._version = self._seen
