"""An append on a SQLite ledger uses what the same connection's appends wrote last
(``ledger/row_cache.py``) only while nothing else can have changed it.

Each test runs real ledger files through two ``SqlLedger`` objects (two connections, as two
runs or a run and a ``waymark`` command have) or through one with its other kinds of writes in
between, and checks what the stale copy would get wrong: a transition refused or allowed, a
renamed or closed plan taking new work, a projection that is not the fold of the events.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_waymark.errors import LedgerError, PlanClosedError
from prefect_waymark.ledger import SqlLedger
from prefect_waymark.ledger.dbapi_conn import LeanSqlite
from prefect_waymark.ledger.row_cache import MAX_ROWS, RowCache

PLAN = "cache-plan"


def _url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def led(tmp_path: Path) -> Iterator[SqlLedger]:
    """A ledger file and one connection to it (one ``SqlLedger``)."""
    ledger = SqlLedger(_url(tmp_path))
    yield ledger
    ledger.close()


@pytest.fixture
def other(tmp_path: Path, led: SqlLedger) -> Iterator[SqlLedger]:
    """A second connection to ``led``'s file: another run, or a ``waymark`` command."""
    ledger = SqlLedger(_url(tmp_path))
    yield ledger
    ledger.close()


def _start(led: SqlLedger, sid: str, run: str = "r1", plan: str = PLAN) -> None:
    led.record(plan, "step_started", step_id=sid, branch="main", run_id=run)


def _complete(led: SqlLedger, sid: str, run: str = "r1", plan: str = PLAN) -> None:
    led.record(plan, "step_completed", step_id=sid, branch="main", run_id=run, cached=False)


def _same_as_rebuild(led: SqlLedger, plan: str = PLAN) -> None:
    """The projection rows are the fold of the stored events, byte for byte."""
    rows = {sid: s.model_dump_json() for sid, s in led.step_states(plan).items()}
    assert rows == {sid: s.model_dump_json() for sid, s in led.rebuild(plan).items()}


def _statements(led: SqlLedger) -> list[str]:
    """Every statement the ledger's connection runs from now on (``sqlite3``'s trace)."""
    lean = led._lean
    assert isinstance(lean, LeanSqlite)
    seen: list[str] = []
    lean._connection().set_trace_callback(seen.append)
    return seen


def test_an_append_reads_back_neither_its_own_row_nor_the_plans_meta(led: SqlLedger) -> None:
    _start(led, "s1")
    seen = _statements(led)
    _complete(led, "s1")
    _start(led, "s2")
    reads = [s for s in seen if "FROM waymark_steps" in s]
    assert len(reads) == 1 and "'s2'" in reads[0], reads  # s1's row: kept; s2: new
    assert not [s for s in seen if "waymark_meta" in s], seen  # the plan: open, kept
    assert sum("INSERT INTO waymark_steps" in s for s in seen) == 1  # s2's row, once
    assert not [s for s in seen if "state) VALUES" in s and "''" in s]  # no placeholder
    _same_as_rebuild(led)


def test_another_connections_commit_is_seen(led: SqlLedger, other: SqlLedger) -> None:
    """Run A starts s1; B completes it; A's cached row says in_progress, the file completed."""
    _start(led, "s1")
    _complete(other, "s1")
    # completed -> rerun is allowed; in_progress (A's stale copy) -> rerun is refused
    led.record(PLAN, "step_rerun_requested", step_id="s1", by="tester")
    _start(led, "s1", run="r2")
    _same_as_rebuild(led)
    assert led.step_states(PLAN)["s1"].status == "in_progress"
    assert led.step_states(PLAN)["s1"].run_id == "r2"


def test_another_process_commit_is_seen(tmp_path: Path, led: SqlLedger) -> None:
    """The same through another process's plain ``sqlite3`` write: a step's row changed."""
    _start(led, "s1")
    _complete(led, "s1")
    # Another writer (a newer waymark, a repair by hand) sets the row's attempts to 7.
    script = (
        "import json, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "q = \"SELECT state FROM waymark_steps WHERE step_id='s1'\"\n"
        "(text,) = c.execute(q).fetchone()\n"
        "state = json.loads(text); state['attempts'] = 7\n"
        "c.execute(\"UPDATE waymark_steps SET state=? WHERE step_id='s1'\", "
        "(json.dumps(state),))\n"
        "c.commit()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "ledger.db")], check=True)
    led.record(PLAN, "step_rerun_requested", step_id="s1", by="tester")
    # The fold went on from the file's row (attempts 7), not from the kept copy (1).
    raw = sqlite3.connect(tmp_path / "ledger.db")
    (text,) = raw.execute("SELECT state FROM waymark_steps WHERE step_id='s1'").fetchone()
    raw.close()
    assert '"attempts":7' in text


def test_a_close_by_another_connection_stops_new_work(led: SqlLedger, other: SqlLedger) -> None:
    _start(led, "s1")  # A found the plan open
    _complete(led, "s1")
    other.close_plan(PLAN, lambda states: {"by": "bob", "reason": "done"})
    with pytest.raises(PlanClosedError):
        _start(led, "s2")
    assert "s2" not in led.step_states(PLAN)


def test_a_rename_on_the_same_connection_stops_new_work_under_the_old_id(led: SqlLedger) -> None:
    _start(led, "s1")
    _complete(led, "s1")
    led.rename_plan(PLAN, "renamed-plan", by="tester")
    with pytest.raises(LedgerError, match="renamed"):
        _start(led, "s2")
    assert "s2" not in led.step_states(PLAN)
    _start(led, "s2", plan="renamed-plan")
    _same_as_rebuild(led, "renamed-plan")


def test_a_refused_append_leaves_nothing_stale(led: SqlLedger) -> None:
    _start(led, "s1")
    with pytest.raises(LedgerError):
        _start(led, "s1", run="r2")  # in_progress already: refused, rolled back
    _complete(led, "s1")
    _same_as_rebuild(led)
    assert [e.kind for e in led.events(PLAN)] == ["step_started", "step_completed"]


def test_a_ledger_closed_and_used_again_reads_what_others_wrote_meanwhile(
    led: SqlLedger, other: SqlLedger
) -> None:
    """``close()`` then another append: a new connection, whose data_version says nothing
    about the old one's; the other connection's run in between must count."""
    _start(led, "s1")
    _complete(led, "s1")
    led.close()
    other.record(PLAN, "step_rerun_requested", step_id="s1", by="bob")
    _start(other, "s1", run="r2")
    _complete(other, "s1", run="r2")
    led.record(PLAN, "step_rerun_requested", step_id="s1", by="alice")
    _same_as_rebuild(led)
    assert led.step_states(PLAN)["s1"].generation == 2


def test_the_cache_keeps_the_most_recent_rows_only() -> None:
    cache = RowCache()
    raw = sqlite3.connect(":memory:")
    for i in range(MAX_ROWS + 20):
        cache.enter(raw)
        cache.keep(PLAN, f"s{i}", {"i": i}, "{}")
        cache.committed()
    assert len(cache.rows) == MAX_ROWS
    assert (PLAN, f"s{MAX_ROWS + 19}") in cache.rows
    assert (PLAN, "s0") not in cache.rows
    cache.enter(raw)
    cache.keep(PLAN, "nan", {"x": float("nan")}, '{"x": NaN}')  # JSON gives back null
    cache.committed()
    assert (PLAN, "nan") not in cache.rows
    cache.enter(raw)
    cache.keep(PLAN, "uncommitted", {}, "{}")
    cache.clear()  # the transaction failed
    cache.enter(raw)
    cache.committed()
    assert (PLAN, "uncommitted") not in cache.rows
