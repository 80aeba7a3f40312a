"""The floor of a ledger append: the statements a step event runs, through bare ``sqlite3``.

Run: ``.venv/bin/python bench/append_floor.py [--events 4000] [--repeat 3]``

Replays, with no Python of the ledger around them, the statements one ``step_started`` and one
``step_completed`` run in their transactions (``ledger/sql.py``: take the branch's hold, read the
step's row, check the plan's stop rows, insert the event, insert the step's row; then read it,
release the hold, insert the event, update the row), on a file with the ledger's schema and
pragmas, against one bare INSERT per transaction (``bench_ledger.py``'s floor), interleaved.
What the ledger's own path adds is ``bench_ledger.py``'s ratio against this one's.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from prefect_waymark.ledger import sql
from prefect_waymark.ledger.connection import set_ledger_pragmas

STATE = json.dumps({"status": "in_progress", "title": "x" * 400})  # a step row's ~0.5 KB
AT = "2026-12-06T00:00:00+00:00"


def _fresh(path: Path, statements: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    set_ledger_pragmas(conn)
    for statement in statements:
        conn.execute(statement)
    return conn


def statements_rate(path: Path, n: int) -> float:
    """Step events a second: the ledger's statements for started/completed pairs."""
    c = _fresh(path, sql.create_statements("sqlite"))
    hold = {"plan_id": "p", "branch": "main", "run_id": "r", "host": "h", "pid": 1}
    event = {"plan_id": "p", "branch": "main", "run_id": "r", "at": AT, "data": '{"a": 1}'}
    t0 = time.perf_counter()
    for i in range(n // 2):
        sid = f"s{i}"
        c.execute("BEGIN IMMEDIATE")
        c.execute(sql.TAKE_HOLD, {**hold, "step_id": sid, "since": AT, "lease_until": 1.0})
        c.execute(sql.STEP_STATE, {"p_plan": "p", "p_step": sid}).fetchall()
        c.execute(sql.STOP_ROWS, {"p_renamed": "renamed:p", "p_closed": "closed:p"}).fetchall()
        c.execute(sql.INSERT_EVENT, {**event, "step_id": sid, "kind": "step_started"}).fetchall()
        row = {"plan_id": "p", "step_id": sid, "last_seq": 1, "state": STATE}
        c.execute(sql.INSERT_STEP_IGNORING, row)
        c.execute("COMMIT")
        c.execute("BEGIN IMMEDIATE")
        c.execute(sql.STEP_STATE, {"p_plan": "p", "p_step": sid}).fetchall()
        c.execute(
            sql.RELEASE_HOLD, {"p_plan": "p", "p_branch": "main", "p_step": sid, "p_run": "r"}
        )
        c.execute(sql.INSERT_EVENT, {**event, "step_id": sid, "kind": "step_completed"}).fetchall()
        c.execute(sql.UPDATE_STEP, {"p_plan": "p", "p_step": sid, "last_seq": 2, "state": STATE})
        c.execute("COMMIT")
    rate = (n // 2 * 2) / (time.perf_counter() - t0)
    c.close()
    return rate


def bare_rate(path: Path, n: int) -> float:
    """One bare INSERT per transaction, same pragmas."""
    table = "CREATE TABLE t (seq INTEGER PRIMARY KEY, plan_id TEXT, kind TEXT, at TEXT, data TEXT)"
    c = _fresh(path, [table])
    t0 = time.perf_counter()
    for _ in range(n):
        c.execute("BEGIN")
        c.execute("INSERT INTO t (plan_id, kind, at, data) VALUES ('p', 'k', ?, '{}')", (AT,))
        c.execute("COMMIT")
    rate = n / (time.perf_counter() - t0)
    c.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ours: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            ours.append(statements_rate(Path(tmp) / f"s{i}.db", args.events))
            bare.append(bare_rate(Path(tmp) / f"b{i}.db", args.events))
    med_ours, med_bare = statistics.median(ours), statistics.median(bare)
    print(f"the ledger's statements: {med_ours:,.0f} step events/s; bare INSERT {med_bare:,.0f}/s")
    print(f"statements / bare INSERT: {med_ours / med_bare:.3f}x")
    if args.json:
        figures = {
            "statements_per_s": round(med_ours),
            "bare_insert_per_s": round(med_bare),
            "statements_vs_bare_insert": round(med_ours / med_bare, 4),
        }
        print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
