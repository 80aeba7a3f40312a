"""The lean path on SQLite (the standard library's ``sqlite3``) writes what SQLAlchemy's writes.

``SqlLedger`` on a SQLite file creates, writes and reads it through one ``sqlite3`` connection
(``ledger/dbapi_conn.py``) unless opened with ``lean=False``. Both paths run the same statements
(``tests/ledger/test_statements.py`` compares their text); these tests prove it from the
outside: the same sequence of events — accepted ones, refused transitions, a busy branch, a hold
another run owns, a closed plan — gives the same answer event by event (the stored event, or
the same error with the same message) and leaves the same rows in every table. The whole
conformance suite (``test_conformance.py``) also runs on both paths.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefect_waymark.ledger import EventKind, ProgressEvent, SqlLedger

PLAN = "lean-plan"
KINDS = [
    EventKind.step_started,
    EventKind.step_completed,
    EventKind.step_failed,
    EventKind.step_interrupted,
    EventKind.step_needs_review,
    EventKind.step_review_accepted,
    EventKind.step_rerun_requested,
    EventKind.step_skipped,
    EventKind.step_blocked,
    EventKind.run_started,
]
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

op = st.tuples(
    st.sampled_from(KINDS),
    st.sampled_from(["a", "b", "c"]),  # step
    st.sampled_from(["main", "side"]),  # branch
    st.sampled_from(["r1", "r2"]),  # run
)


def _event(i: int, kind: EventKind, step: str, branch: str, run: str) -> ProgressEvent:
    data: dict[str, Any] = {"host": "h", "pid": 7}
    if kind == EventKind.step_interrupted:
        data = {"dead_run": run, "reason": "the run died"}
    elif kind in (EventKind.step_skipped, EventKind.step_blocked, EventKind.step_needs_review):
        data = {"reason": "because"}
    elif kind == EventKind.step_failed:
        data = {"error": "boom"}
    return ProgressEvent(
        plan_id=PLAN,
        kind=kind,
        step_id=None if kind == EventKind.run_started else step,
        branch=branch,
        run_id=run,
        at=T0 + timedelta(seconds=i),
        data=data,
    )


def _answer(led: SqlLedger, ev: ProgressEvent) -> tuple[str, str, int | None]:
    try:
        stored = led.append(ev)
    except Exception as exc:  # noqa: BLE001 - the answer compared is the error itself
        return type(exc).__name__, str(exc), None
    return "ok", stored.model_dump_json(), stored.seq


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table; a hold's lease deadline (now + lease) left out."""
    con = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        ]
        out: dict[str, list[tuple[Any, ...]]] = {}
        for name in names:
            cur = con.execute(f"SELECT * FROM {name}")  # noqa: S608 - table names from the schema
            cols = [d[0] for d in cur.description]
            rows = [
                tuple(v for c, v in zip(cols, row, strict=True) if c != "lease_until")
                for row in cur.fetchall()
            ]
            if name == "waymark_meta":  # the ledger's own id and birth differ file to file
                rows = [r for r in rows if r[0] not in ("ledger_id", "created")]
            out[name] = sorted(rows, key=repr)
        return out
    finally:
        con.close()


def _pair(folder: Path) -> tuple[SqlLedger, SqlLedger, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    lean_db, plain_db = folder / "lean.db", folder / "plain.db"
    for db in (lean_db, plain_db):
        db.unlink(missing_ok=True)
    lean = SqlLedger(f"sqlite:///{lean_db}")
    plain = SqlLedger(f"sqlite:///{plain_db}", lean=False)
    assert lean._lean is not None and plain._lean is None
    return lean, plain, lean_db, plain_db


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_both_paths_answer_and_write_the_same(tmp_path: Path, ops: list[Any]) -> None:
    lean, plain, lean_db, plain_db = _pair(tmp_path / "pair")
    try:
        for i, (kind, step, branch, run) in enumerate(ops):
            ev = _event(i, kind, step, branch, run)
            got = _answer(lean, ev)
            assert got == _answer(plain, ev), (i, ev)
        assert lean.step_states(PLAN) == plain.step_states(PLAN)
    finally:
        lean.close()
        plain.close()
    assert _tables(lean_db) == _tables(plain_db)


def test_a_closed_plan_is_refused_alike_and_a_refusal_leaves_no_row(tmp_path: Path) -> None:
    lean, plain, lean_db, plain_db = _pair(tmp_path)
    try:
        for led in (lean, plain):
            for i, kind in enumerate((EventKind.step_started, EventKind.step_completed)):
                led.append(_event(i, kind, "a", "main", "r1"))
            led.close_plan(PLAN, lambda _states: {"by": "tester", "reason": "done"})
        ev = _event(99, EventKind.step_started, "b", "main", "r1")
        refused = _answer(lean, ev)
        assert refused[0] == "PlanClosedError" and "was closed" in refused[1]
        assert _answer(plain, ev)[0:2] == refused[0:2]
    finally:
        lean.close()
        plain.close()
    lean_rows, plain_rows = _tables(lean_db), _tables(plain_db)
    assert len(lean_rows["waymark_events"]) == 3  # started, completed, plan_closed: no more
    for rows in (lean_rows, plain_rows):  # the close's own time differs between the two files
        rows.pop("waymark_meta")
        rows["waymark_events"] = [r[:6] for r in rows["waymark_events"]]
    assert lean_rows == plain_rows


def test_threads_share_the_lean_connection_one_transaction_at_a_time(tmp_path: Path) -> None:
    """Step bodies record from task threads: each append is its own transaction, none lost."""
    led = SqlLedger(f"sqlite:///{tmp_path / 'threads.db'}")
    errors: list[BaseException] = []

    def work(branch: str) -> None:
        try:
            for i in range(40):
                sid = f"{branch}-{i}"
                led.record(PLAN, EventKind.step_started, step_id=sid, branch=branch, run_id="r")
                led.record(PLAN, EventKind.step_completed, step_id=sid, branch=branch, run_id="r")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"b{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        states = led.step_states(PLAN)
        assert len(states) == 160 and {s.status for s in states.values()} == {"completed"}
        assert led.count_events(PLAN) == 320 and led.holds(PLAN) == []
    finally:
        led.close()


def test_a_write_error_on_the_lean_path_is_a_ledger_error(tmp_path: Path) -> None:
    from prefect_waymark import LedgerError

    db = tmp_path / "locked.db"
    led = SqlLedger(f"sqlite:///{db}")
    blocker = sqlite3.connect(db, timeout=0)
    blocker.execute("PRAGMA busy_timeout=0")
    led._lean._connection().execute("PRAGMA busy_timeout=50")  # type: ignore[union-attr]
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        try:
            led.record(PLAN, EventKind.run_started, run_id="r")
        except LedgerError as exc:
            assert "cannot write the ledger" in str(exc) and "locked" in str(exc)
        else:
            raise AssertionError("a locked ledger was written")
    finally:
        blocker.rollback()
        blocker.close()
    assert led.count_events(PLAN) == 0
    led.record(PLAN, EventKind.run_started, run_id="r")  # the lock gone: the path works again
    assert led.count_events(PLAN) == 1
    led.close()


def test_an_interrupt_inside_a_lean_transaction_leaves_no_lock_and_no_row(tmp_path: Path) -> None:
    db = tmp_path / "interrupted.db"
    led = SqlLedger(f"sqlite:///{db}")
    assert led._lean is not None
    try:
        with led._lean.begin() as conn:
            conn.execute(sa.text("INSERT INTO waymark_meta (key, value) VALUES ('probe', 'x')"))
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    other = sqlite3.connect(db, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the write lock is free at once
    assert other.execute("SELECT count(*) FROM waymark_meta WHERE key='probe'").fetchone() == (0,)
    other.rollback()
    other.close()
    led.record(PLAN, EventKind.run_started, run_id="r")  # and the ledger goes on
    assert led.count_events(PLAN) == 1
    led.close()


def test_a_forked_child_appends_on_its_own_connection(tmp_path: Path) -> None:
    import os

    led = SqlLedger(f"sqlite:///{tmp_path / 'fork.db'}")
    led.record(PLAN, EventKind.run_started, run_id="parent-1")
    pid = os.fork()
    if pid == 0:  # the child: its own connection, then exit without running pytest's teardown
        code = 0
        try:
            led.record(PLAN, EventKind.run_started, run_id="child")
            led.close()
        except BaseException:  # noqa: BLE001 - reported by the exit code
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    led.record(PLAN, EventKind.run_started, run_id="parent-2")  # the parent's still works
    assert [e.run_id for e in led.events(PLAN)] == ["parent-1", "child", "parent-2"]
    led.close()


def test_a_nested_use_on_the_same_thread_is_refused_not_a_deadlock(tmp_path: Path) -> None:
    """The one ``sqlite3`` connection is one thread's at a time; a read or a write begun inside
    the ledger's own transaction on that thread would wait for itself: a LedgerError instead,
    the outer transaction rolled back, the ledger usable afterwards."""
    from prefect_waymark import LedgerError

    led = SqlLedger(f"sqlite:///{tmp_path / 'nested.db'}")
    assert led._lean is not None
    try:
        with led._lean.begin() as conn:
            conn.execute(sa.text("INSERT INTO waymark_meta (key, value) VALUES ('probe', 'x')"))
            led.step_states(PLAN)
    except LedgerError as exc:
        assert "inside one of its own transactions" in str(exc)
    else:
        raise AssertionError("a nested read ran")
    with pytest.raises(LedgerError, match="nested"):
        with led._lean.read():
            led.record(PLAN, EventKind.run_started, run_id="r")
    led.record(PLAN, EventKind.run_started, run_id="r")
    assert led.count_events(PLAN) == 1
    with led._lean.read() as conn:
        assert (
            conn.execute(
                sa.text("SELECT count(*) FROM waymark_meta WHERE key='probe'")
            ).scalar_one()
            == 0
        )
    led.close()
