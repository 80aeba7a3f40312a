"""One conformance suite for the ledger interface, run on each implementation: the ``ledger``
fixture is an opened :class:`Ledger` on SQLite and on PostgreSQL.

Every test that reads runs twice, through the ``reader`` fixture: once reading through the ledger
itself, once through :func:`open_reader` on the same location (a ledger that creates nothing).

It proves: events are append-only and ordered; every status change is checked; one in_progress
step per (plan, branch), enforced by the database's primary key; a refused event leaves no trace;
the active view rebuilt from the events equals the one kept on every append; the schema version
is stored and a newer one is refused; bad locations say so; only known event kinds are written,
as their plain names.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from prefect_waymark import (
    BranchBusyError,
    LedgerError,
    LedgerNotFound,
    LedgerVersionError,
    TransitionError,
)
from prefect_waymark.ledger import (
    SCHEMA_VERSION,
    EventKind,
    Ledger,
    LedgerReader,
    ProgressEvent,
    SqlLedger,
    open_ledger,
    open_reader,
)
from prefect_waymark.models import StepStatus
from tests._support.postgres import PgServer

PLAN = "conf-plan"


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """SQLite and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[Ledger]:
    """The implementation under test, opened (and created) on SQLite or on PostgreSQL."""
    led = SqlLedger(ledger_url)
    yield led
    led.close()


@pytest.fixture(params=["ledger", "open_reader"])
def reader(request: pytest.FixtureRequest, ledger: Ledger) -> Iterator[LedgerReader]:
    """Who reads what ``ledger`` wrote: the ledger itself, or the read-only reader of its location
    (a :class:`SqlLedger` that creates nothing)."""
    if request.param == "ledger":
        yield ledger
        return
    with open_reader(ledger.url) as read_only:
        assert isinstance(read_only, SqlLedger)
        yield read_only


def raw(url: str, sql: str, **params: Any) -> list[Any]:
    """Run SQL on the ledger's database directly, outside the ledger API."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            result = conn.execute(sa.text(sql), params)
            return list(result) if result.returns_rows else []
    finally:
        engine.dispose()


def raw_events(url: str) -> list[tuple[Any, ...]]:
    rows = raw(
        url,
        "SELECT seq, plan_id, step_id, branch, kind, run_id, at, data "
        "FROM waymark_events ORDER BY seq",
    )
    return [tuple(r) for r in rows]


def start(led: Ledger, step: str, branch: str = "main", run: str = "run-1", **data: Any) -> Any:
    return led.record(PLAN, "step_started", step_id=step, branch=branch, run_id=run, **data)


def complete(led: Ledger, step: str, branch: str = "main", run: str = "run-1", **data: Any) -> Any:
    return led.record(PLAN, "step_completed", step_id=step, branch=branch, run_id=run, **data)


def fail(led: Ledger, step: str, branch: str = "main", run: str = "run-1") -> Any:
    return led.record(PLAN, "step_failed", step_id=step, branch=branch, run_id=run, error="boom")


def status(led: LedgerReader, step: str) -> str:
    return led.step_states(PLAN)[step].status


# -- events ---------------------------------------------------------------------------------------
def test_new_ledger_is_empty_and_stores_its_schema_version(
    ledger: Ledger, reader: LedgerReader
) -> None:
    assert reader.events(PLAN) == []
    assert reader.step_states(PLAN) == {}
    assert reader.holds(PLAN) == []
    assert reader.last_event(PLAN, ["run_finished"]) is None
    rows = raw(ledger.url, "SELECT value FROM waymark_meta WHERE key = 'schema_version'")
    assert [r[0] for r in rows] == [str(SCHEMA_VERSION)]


def test_append_assigns_increasing_seq_and_keeps_everything(
    ledger: Ledger, reader: LedgerReader
) -> None:
    first = ledger.record(PLAN, "run_started", run_id="r1", executor="ana@host", n=1)
    second = ledger.append(
        ProgressEvent(plan_id=PLAN, kind="drift", run_id="r1", data={"nested": {"a": [1, 2]}})
    )
    start(ledger, "a", run="r1", def_hash="h1")
    events = reader.events(PLAN)
    assert [e.kind for e in events] == ["run_started", "drift", "step_started"]
    assert first.seq is not None and second.seq is not None and first.seq < second.seq
    assert [e.seq for e in events] == sorted(e.seq for e in events if e.seq is not None)
    assert events[0].data == {"executor": "ana@host", "n": 1}
    assert events[1].data == {"nested": {"a": [1, 2]}}
    assert events[2].step_id == "a" and events[2].branch == "main" and events[2].run_id == "r1"
    assert events[0].at.tzinfo is not None
    assert abs(events[0].at.timestamp() - time.time()) < 600  # stored as an aware UTC time
    assert reader.events(PLAN, after_seq=first.seq) == events[1:]
    assert [e.kind for e in reader.events(PLAN, kinds=["drift"])] == ["drift"]
    last = reader.last_event(PLAN, ["run_started", "drift"])
    assert last is not None and last.kind == "drift"


def test_kinds_are_checked_and_stored_as_their_plain_names(
    ledger: Ledger, reader: LedgerReader
) -> None:
    """A kind is an EventKind member or its name; the database stores the bare name."""
    ledger.record(PLAN, EventKind.run_started, run_id="r1")
    ledger.record(PLAN, "run_finished", run_id="r1", result="completed")
    with pytest.raises(LedgerError) as info:
        ledger.record(PLAN, "note", run_id="r1")
    assert "'note'" in str(info.value) and "step_started" in str(info.value)
    stored = [r[4] for r in raw_events(ledger.url)]
    assert stored == ["run_started", "run_finished"]
    assert {type(k) for k in stored} == {str}
    events = reader.events(PLAN, kinds=[EventKind.run_finished, "run_started"])
    assert [e.kind for e in events] == [EventKind.run_started, EventKind.run_finished]
    assert all(type(e.kind) is EventKind for e in events)
    last = reader.last_event(PLAN, [EventKind.run_started])
    assert last is not None and last.kind is EventKind.run_started


def test_plans_are_isolated(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a")
    ledger.record("other-plan", "step_started", step_id="a", branch="main", run_id="r9")
    assert [e.plan_id for e in reader.events(PLAN)] == [PLAN]
    assert set(reader.step_states("other-plan")) == {"a"}
    assert [h.run_id for h in reader.holds("other-plan")] == ["r9"]  # its own branch slot


def test_events_are_never_updated_or_deleted(ledger: Ledger) -> None:
    ledger.record(PLAN, "run_started", run_id="run-1")
    start(ledger, "a")
    complete(ledger, "a")
    snapshot = raw_events(ledger.url)
    # Everything else the API can do: more events, refusals, review, rerun, rebuild, renew.
    start(ledger, "b")
    with pytest.raises(BranchBusyError):
        start(ledger, "c")
    fail(ledger, "b")
    with pytest.raises(TransitionError):
        start(ledger, "a")
    ledger.record(PLAN, "step_needs_review", step_id="a", branch="main", reason="changed")
    ledger.record(PLAN, "step_rerun_requested", step_id="a", branch="main", reason="again")
    ledger.renew("run-1", 30)
    ledger.rebuild(PLAN, write=True)
    after = raw_events(ledger.url)
    assert after[: len(snapshot)] == snapshot  # old rows untouched
    assert [r[4] for r in after[len(snapshot) :]] == [
        "step_started",
        "step_failed",
        "step_needs_review",
        "step_rerun_requested",
    ]
    assert not hasattr(ledger, "update_event") and not hasattr(ledger, "delete_event")


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE waymark_events SET kind = 'step_completed' WHERE kind = 'step_started'",
        "UPDATE waymark_events SET data = '{}'",
        "DELETE FROM waymark_events",
        "DELETE FROM waymark_events WHERE seq = (SELECT MAX(seq) FROM waymark_events)",
    ],
)
def test_the_database_refuses_to_change_events(ledger: Ledger, sql: str) -> None:
    """Append-only is enforced by the database, not only by the API: raw SQL is refused too."""
    start(ledger, "a")
    complete(ledger, "a")
    snapshot = raw_events(ledger.url)
    with pytest.raises(sa.exc.DatabaseError, match="append-only"):
        raw(ledger.url, sql)
    assert raw_events(ledger.url) == snapshot


def test_postgresql_refuses_to_truncate_events(pg_url: str) -> None:
    """SQLite has no TRUNCATE (its DELETE is refused above)."""
    with open_ledger(pg_url) as led:
        start(led, "a")
    with pytest.raises(sa.exc.DatabaseError, match="append-only"):
        raw(pg_url, "TRUNCATE waymark_events")
    assert len(raw_events(pg_url)) == 1


def test_reopening_keeps_the_events(ledger_url: str) -> None:
    with open_ledger(ledger_url) as led:
        start(led, "a")
        complete(led, "a")
    with open_ledger(ledger_url) as again:
        assert [e.kind for e in again.events(PLAN)] == ["step_started", "step_completed"]
        assert status(again, "a") == "completed"
    with open_ledger(ledger_url, create=False) as existing:
        assert status(existing, "a") == "completed"


# -- status transitions -------------------------------------------------------------------------
def test_lifecycle_and_projection(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a", def_hash="h-a", result_key="k-a")
    st = reader.step_states(PLAN)["a"]
    assert (st.status, st.run_id, st.branch, st.def_hash) == ("in_progress", "run-1", "main", "h-a")
    ledger.record(
        PLAN,
        "step_attempt_failed",
        step_id="a",
        branch="main",
        run_id="run-1",
        attempt=1,
        error="flaky",
    )
    assert reader.step_states(PLAN)["a"].attempts == 1
    complete(ledger, "a", attempts=2, def_hash="h-a", outputs={"out.txt": "sha"})
    st = reader.step_states(PLAN)["a"]
    assert st.status == "completed" and st.attempts == 2 and st.outputs == {"out.txt": "sha"}
    assert st.error is None and st.completed_at is not None
    assert st.last_event == "step_completed"


def test_completed_step_restarts_only_through_an_explicit_rerun(
    ledger: Ledger, reader: LedgerReader
) -> None:
    start(ledger, "a")
    complete(ledger, "a")
    with pytest.raises(TransitionError) as info:
        start(ledger, "a", run="run-2")
    assert info.value.current == "completed" and info.value.step_id == "a"
    assert "waymark rerun" in str(info.value)
    ledger.record(PLAN, "step_rerun_requested", step_id="a", branch="main", by="ana", reason="x")
    st = reader.step_states(PLAN)["a"]
    assert st.status == "pending" and st.generation == 1
    start(ledger, "a", run="run-2")
    complete(ledger, "a", run="run-2")
    kinds = [e.kind for e in reader.events(PLAN)]
    assert kinds == [
        "step_started",
        "step_completed",
        "step_rerun_requested",
        "step_started",
        "step_completed",
    ]


@pytest.mark.parametrize(
    ("setup", "kind", "current"),
    [
        ([], "step_completed", "pending"),
        ([], "step_failed", "pending"),
        ([], "step_attempt_failed", "pending"),
        ([], "step_review_accepted", "pending"),
        (["step_started"], "step_started", "in_progress"),
        (["step_started", "step_completed"], "step_completed", "completed"),
        (["step_started", "step_completed"], "step_refused", "completed"),
        (["step_started", "step_failed"], "step_completed", "failed"),
    ],
)
def test_forbidden_transitions_are_refused_and_leave_no_event(
    ledger: Ledger, reader: LedgerReader, setup: list[str], kind: str, current: str
) -> None:
    for k in setup:
        ledger.record(PLAN, k, step_id="a", branch="main", run_id="run-1")
    before = reader.events(PLAN)
    if current == "in_progress":
        # Starting the running step again meets its own branch slot first.
        with pytest.raises(BranchBusyError) as busy:
            ledger.record(PLAN, kind, step_id="a", branch="main", run_id="run-1")
        assert busy.value.holder_step == "a"
        with pytest.raises(TransitionError) as info:  # on another branch: the status check
            ledger.record(PLAN, kind, step_id="a", branch="side", run_id="run-1")
        assert reader.holds(PLAN)[0].branch == "main" and len(reader.holds(PLAN)) == 1
    else:
        with pytest.raises(TransitionError) as info:
            ledger.record(PLAN, kind, step_id="a", branch="main", run_id="run-1")
    assert info.value.current == current
    assert reader.events(PLAN) == before
    if setup:
        assert status(reader, "a") == current


def test_failed_step_may_start_again_without_rerun(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a")
    fail(ledger, "a")
    assert status(reader, "a") == "failed"
    start(ledger, "a", run="run-2")
    assert status(reader, "a") == "in_progress"


def test_review_then_accept_returns_to_the_previous_status(
    ledger: Ledger, reader: LedgerReader
) -> None:
    start(ledger, "a")
    complete(ledger, "a", def_hash="old")
    ledger.record(
        PLAN,
        "step_needs_review",
        step_id="a",
        branch="main",
        reason="definition changed",
        details={"recorded": "old", "current": "new"},
    )
    st = reader.step_states(PLAN)["a"]
    assert st.status == "needs_review" and st.review_reason == "definition changed"
    assert st.review_data == {"recorded": "old", "current": "new"}
    with pytest.raises(TransitionError):
        start(ledger, "a", run="run-2")
    ledger.record(PLAN, "step_review_accepted", step_id="a", branch="main", def_hash="new")
    st = reader.step_states(PLAN)["a"]
    assert st.status == "completed" and st.def_hash == "new" and st.review_reason is None


def test_step_event_without_step_id_is_refused(ledger: Ledger, reader: LedgerReader) -> None:
    with pytest.raises(LedgerError, match="needs a step_id"):
        ledger.record(PLAN, "step_started", branch="main", run_id="r")
    assert reader.events(PLAN) == []


# -- one in_progress step per branch ------------------------------------------------------------
def test_one_in_progress_step_per_branch(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a", run="run-1")
    before = reader.events(PLAN)
    with pytest.raises(BranchBusyError) as info:
        start(ledger, "b", run="run-2")
    err = info.value
    assert (err.plan_id, err.branch, err.holder_step, err.holder_run) == (
        PLAN,
        "main",
        "a",
        "run-1",
    )
    assert "branch 'main' already has step 'a' in_progress" in str(err)
    assert reader.events(PLAN) == before  # the refused start left nothing
    assert "b" not in reader.step_states(PLAN)
    start(ledger, "x", branch="side", run="run-2")  # another branch has its own slot
    holds = {h.branch: (h.step_id, h.run_id) for h in reader.holds(PLAN)}
    assert holds == {"main": ("a", "run-1"), "side": ("x", "run-2")}
    complete(ledger, "a", run="run-1")  # releases main
    start(ledger, "b", run="run-2")
    holds = {h.branch: (h.step_id, h.run_id) for h in reader.holds(PLAN)}
    assert holds == {"main": ("b", "run-2"), "side": ("x", "run-2")}
    in_progress = [s for s, st in reader.step_states(PLAN).items() if st.status == "in_progress"]
    assert sorted(in_progress) == ["b", "x"]


@pytest.mark.parametrize("release", ["step_completed", "step_failed", "step_needs_review"])
def test_leaving_in_progress_releases_the_branch(
    ledger: Ledger, reader: LedgerReader, release: str
) -> None:
    start(ledger, "a")
    ledger.record(PLAN, release, step_id="a", branch="main", run_id="run-1", reason="r")
    assert reader.holds(PLAN) == []
    start(ledger, "b")
    assert [h.step_id for h in reader.holds(PLAN)] == ["b"]


def test_only_the_holding_run_can_finish_the_step(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a", run="run-1")
    with pytest.raises(LedgerError, match="not held by run run-2"):
        complete(ledger, "a", run="run-2")
    assert status(reader, "a") == "in_progress"
    assert [e.kind for e in reader.events(PLAN)] == ["step_started"]


def test_interrupting_a_dead_run_frees_its_branch(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a", run="dead", pid=999_999_999)
    hold = reader.holds(PLAN)[0]
    assert hold.run_id == "dead" and hold.pid == 999_999_999
    assert hold.is_stale()  # on this host, and no such process
    ledger.record(
        PLAN,
        "step_interrupted",
        step_id="a",
        branch="main",
        run_id="new",
        dead_run="dead",
        reason="run dead stopped",
    )
    st = reader.step_states(PLAN)["a"]
    assert st.status == "pending" and st.interrupted == 1
    assert reader.holds(PLAN) == []
    start(ledger, "a", run="new")
    assert status(reader, "a") == "in_progress"


def test_renew_extends_the_lease_of_the_run(ledger: Ledger, reader: LedgerReader) -> None:
    start(ledger, "a", run="run-1")
    start(ledger, "x", branch="side", run="run-2")
    old = {h.branch: h.lease_until for h in reader.holds(PLAN)}
    assert ledger.renew("run-1", 3600) == 1
    new = {h.branch: h.lease_until for h in reader.holds(PLAN)}
    assert new["main"] > old["main"] + 3000
    assert new["side"] == old["side"]
    assert not reader.holds(PLAN)[0].is_stale()


def test_the_database_itself_refuses_a_second_hold(ledger: Ledger, reader: LedgerReader) -> None:
    """The slot is a primary key, not a check in Python: a raw INSERT is refused too."""
    start(ledger, "a")
    with pytest.raises(sa.exc.IntegrityError):
        raw(
            ledger.url,
            "INSERT INTO waymark_holds (plan_id, branch, step_id, run_id, host, pid, since, "
            "lease_until) VALUES (:p, 'main', 'b', 'sneaky', 'h', 1, 'now', 0)",
            p=PLAN,
        )
    assert [h.step_id for h in reader.holds(PLAN)] == ["a"]


# -- rebuild ---------------------------------------------------------------------------------------
def _busy_history(led: Ledger) -> None:
    led.record(PLAN, "run_started", run_id="run-1")
    start(led, "a", def_hash="ha", result_key="ka")
    complete(led, "a", def_hash="ha", outputs={"a.txt": "1"})
    start(led, "b")
    led.record(PLAN, "step_attempt_failed", step_id="b", branch="main", run_id="run-1", attempt=1)
    fail(led, "b")
    start(led, "x", branch="side")
    led.record(PLAN, "step_needs_review", step_id="x", branch="side", run_id="run-1", reason="r")
    led.record(PLAN, "step_rerun_requested", step_id="a", branch="main", reason="again")
    start(led, "a", run="run-2")
    led.record(
        PLAN, "step_interrupted", step_id="a", branch="main", run_id="run-3", dead_run="run-2"
    )
    start(led, "c", branch="other", run="run-3")


def test_rebuild_from_events_equals_the_kept_view(ledger: Ledger, reader: LedgerReader) -> None:
    _busy_history(ledger)
    kept = reader.step_states(PLAN)
    assert {s: st.status for s, st in kept.items()} == {
        "a": "pending",
        "b": "failed",
        "x": "needs_review",
        "c": "in_progress",
    }
    assert ledger.rebuild(PLAN) == kept
    assert reader.step_states(PLAN) == kept  # rebuild without write changes nothing
    # Lose the active view entirely; the events alone bring it back, identical.
    raw(ledger.url, "DELETE FROM waymark_steps WHERE plan_id = :p", p=PLAN)
    assert reader.step_states(PLAN) == {}
    assert ledger.rebuild(PLAN, write=True) == kept
    assert reader.step_states(PLAN) == kept
    # And the rebuilt view keeps working: transitions are checked against it.
    with pytest.raises(TransitionError):
        complete(ledger, "b")
    start(ledger, "a", run="run-4")


def test_rebuild_repairs_a_tampered_view(ledger: Ledger, reader: LedgerReader) -> None:
    _busy_history(ledger)
    kept = reader.step_states(PLAN)
    raw(
        ledger.url,
        "UPDATE waymark_steps SET state = :s WHERE plan_id = :p AND step_id = 'b'",
        s=kept["a"]
        .model_copy(update={"step_id": "b", "status": StepStatus.completed})
        .model_dump_json(),
        p=PLAN,
    )
    assert reader.step_states(PLAN)["b"].status == "completed"
    assert ledger.rebuild(PLAN, write=True) == kept
    assert reader.step_states(PLAN)["b"].status == "failed"


# -- the read-only reader --------------------------------------------------------------------------
def test_reader_sees_what_the_ledger_sees(ledger: Ledger) -> None:
    _busy_history(ledger)
    ledger.record(PLAN, "run_finished", run_id="run-3", result="stopped")
    with open_reader(ledger.url) as reader:
        assert reader.step_states(PLAN) == ledger.step_states(PLAN)
        assert reader.events(PLAN) == ledger.events(PLAN)
        assert reader.holds(PLAN) == ledger.holds(PLAN)
        assert reader.last_event(PLAN, ["run_finished"]) == ledger.last_event(
            PLAN, ["run_finished"]
        )
        assert reader.last_event(PLAN, ["run_started", "step_started"]) == ledger.last_event(
            PLAN, ["run_started", "step_started"]
        )
        assert reader.last_event(PLAN, ["nothing"]) is None
        assert reader.step_states("unknown-plan") == {}


def test_reader_creates_nothing(ledger_url: str) -> None:
    with pytest.raises(LedgerError) as info:
        open_reader(ledger_url)
    assert isinstance(info.value, LedgerNotFound)
    if ledger_url.startswith("sqlite"):
        assert not Path(ledger_url.removeprefix("sqlite:///")).exists()
    else:
        assert raw(ledger_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'") == []


# -- schema version and locations ------------------------------------------------------------------
def test_a_newer_schema_is_refused(ledger: Ledger) -> None:
    start(ledger, "a")
    ledger.close()
    newer = SCHEMA_VERSION + 1
    raw(ledger.url, "UPDATE waymark_meta SET value = :v WHERE key = 'schema_version'", v=str(newer))
    for opener in (
        lambda: open_ledger(ledger.url),
        lambda: open_ledger(ledger.url, create=False),
        lambda: open_reader(ledger.url),
    ):
        with pytest.raises(LedgerVersionError) as info:
            opener()
        msg = str(info.value)
        assert f"schema version {newer}" in msg and "newer" in msg
        assert "upgrade prefect-waymark" in msg
    # Nothing was touched: the version is still the newer one and the event is still there.
    rows = raw(ledger.url, "SELECT value FROM waymark_meta WHERE key = 'schema_version'")
    assert [r[0] for r in rows] == [str(newer)]
    assert len(raw_events(ledger.url)) == 1


def test_opening_without_create_needs_an_existing_ledger(ledger_url: str) -> None:
    with pytest.raises(LedgerError) as info:
        open_ledger(ledger_url, create=False)
    assert isinstance(info.value, LedgerNotFound)
    if ledger_url.startswith("sqlite"):
        assert not Path(ledger_url.removeprefix("sqlite:///")).exists()
    else:
        assert raw(ledger_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'") == []


def test_a_path_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(LedgerError) as info:
        SqlLedger(f"sqlite:///{blocker / 'ledger.db'}")
    assert "cannot create the ledger folder" in str(info.value)
    assert str(blocker) in str(info.value)
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError) as info2:
        SqlLedger(f"sqlite:///{not_a_db}")
    assert str(not_a_db) in str(info2.value)


def test_an_unreachable_database_says_so(pg_server: PgServer) -> None:
    url = pg_server.url("waymark_no_such_database")
    with pytest.raises(LedgerError) as info:
        SqlLedger(url)
    assert "cannot open the ledger" in str(info.value)
    assert "waymark_no_such_database" in str(info.value)


# -- the connection layer (moved from the lean path's own tests) ---------------------------------
def test_a_closed_plan_refuses_new_work_and_a_refusal_leaves_no_row(ledger: Ledger) -> None:
    start(ledger, "a")
    ledger.record(PLAN, "step_completed", step_id="a", branch="main", run_id="run-1")
    ledger.close_plan(PLAN, lambda _states: {"by": "tester", "reason": "done"})
    from prefect_waymark import PlanClosedError

    with pytest.raises(PlanClosedError, match="was closed"):
        ledger.record(PLAN, "step_started", step_id="b", branch="main", run_id="run-1")
    kinds = [r[4] for r in raw_events(ledger.url)]
    assert kinds == ["step_started", "step_completed", "plan_closed"]  # no more
    assert ledger.holds(PLAN) == [] and set(ledger.step_states(PLAN)) == {"a"}


def test_threads_append_one_transaction_at_a_time(ledger: Ledger) -> None:
    """Step bodies record from task threads: each append is its own transaction, none lost."""
    import threading

    errors: list[BaseException] = []

    def work(branch: str) -> None:
        try:
            for i in range(40):
                sid = f"{branch}-{i}"
                ledger.record(PLAN, "step_started", step_id=sid, branch=branch, run_id="r")
                ledger.record(PLAN, "step_completed", step_id=sid, branch=branch, run_id="r")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"b{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    states = ledger.step_states(PLAN)
    assert len(states) == 160 and {s.status for s in states.values()} == {"completed"}
    assert ledger.count_events(PLAN) == 320 and ledger.holds(PLAN) == []


def test_a_locked_sqlite_ledger_is_a_ledger_error_and_works_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    db = tmp_path / "locked.db"
    monkeypatch.setenv("WAYMARK_LEDGER_LOCK_SECONDS", "0.05")  # each new connection's timeout
    led = SqlLedger(f"sqlite:///{db}")
    blocker = sqlite3.connect(db, timeout=0)
    blocker.execute("PRAGMA busy_timeout=0")
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with pytest.raises(LedgerError) as info:
            led.record(PLAN, "run_started", run_id="r")
        assert "cannot write the ledger" in str(info.value) and "locked" in str(info.value)
    finally:
        blocker.rollback()
        blocker.close()
    assert led.count_events(PLAN) == 0
    led.record(PLAN, "run_started", run_id="r")  # the lock gone: the ledger works again
    assert led.count_events(PLAN) == 1
    led.close()


def test_an_interrupt_inside_a_write_leaves_no_lock_and_no_row(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "interrupted.db"
    led = SqlLedger(f"sqlite:///{db}")
    with pytest.raises(KeyboardInterrupt):
        with led._write() as conn:
            conn.execute("INSERT INTO waymark_meta (key, value) VALUES ('probe', 'x')")
            raise KeyboardInterrupt
    other = sqlite3.connect(db, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the write lock is free at once
    assert other.execute("SELECT count(*) FROM waymark_meta WHERE key='probe'").fetchone() == (0,)
    other.rollback()
    other.close()
    led.record(PLAN, "run_started", run_id="r")  # and the ledger goes on
    assert led.count_events(PLAN) == 1
    led.close()


def test_a_forked_child_appends_on_its_own_connection(ledger: Ledger) -> None:
    import os

    ledger.record(PLAN, "run_started", run_id="parent-1")
    pid = os.fork()
    if pid == 0:  # the child: its own connection, then exit without running pytest's teardown
        code = 0
        try:
            ledger.record(PLAN, "run_started", run_id="child")
            ledger.close()
        except BaseException:  # noqa: BLE001 - reported by the exit code
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    ledger.record(PLAN, "run_started", run_id="parent-2")  # the parent's still works
    assert [e.run_id for e in ledger.events(PLAN)] == ["parent-1", "child", "parent-2"]


def test_a_nested_use_on_the_same_thread_is_refused_not_a_deadlock(ledger: Ledger) -> None:
    """A read or a write begun inside the ledger's own transaction on the same thread would wait
    for itself: a LedgerError instead, the outer transaction rolled back, the ledger usable
    afterwards."""
    assert isinstance(ledger, SqlLedger)
    with pytest.raises(LedgerError, match="inside one of its own transactions"):
        with ledger._write() as conn:
            conn.execute("INSERT INTO waymark_meta (key, value) VALUES ('probe', 'x')")
            ledger.step_states(PLAN)
    with pytest.raises(LedgerError, match="nested"):
        with ledger._read():
            ledger.record(PLAN, "run_started", run_id="r")
    ledger.record(PLAN, "run_started", run_id="r")
    assert ledger.count_events(PLAN) == 1
    assert raw(ledger.url, "SELECT count(*) FROM waymark_meta WHERE key='probe'")[0][0] == 0


# -- two ledgers on one location (two runs, or a run and a command) -------------------------------
@pytest.fixture
def other(ledger: Ledger) -> Iterator[Ledger]:
    """A second ledger on ``ledger``'s location: another run, or a ``waymark`` command."""
    led = SqlLedger(ledger.url)
    yield led
    led.close()


def _same_as_rebuild(led: Ledger, plan: str = PLAN) -> None:
    """The projection rows are the fold of the stored events, byte for byte."""
    rows = {sid: s.model_dump_json() for sid, s in led.step_states(plan).items()}
    assert rows == {sid: s.model_dump_json() for sid, s in led.rebuild(plan).items()}


def test_another_ledgers_commit_is_seen(ledger: Ledger, other: Ledger) -> None:
    """Run A starts s1; B completes it; A's next event folds onto B's row."""
    start(ledger, "s1")
    complete(other, "s1")
    # completed -> rerun is allowed; in_progress (what A wrote last) -> rerun is refused
    ledger.record(PLAN, "step_rerun_requested", step_id="s1", by="tester")
    start(ledger, "s1", run="run-2")
    _same_as_rebuild(ledger)
    assert ledger.step_states(PLAN)["s1"].status == "in_progress"
    assert ledger.step_states(PLAN)["s1"].run_id == "run-2"


def test_a_row_changed_outside_the_ledger_is_folded_on(ledger: Ledger) -> None:
    """Another writer (a newer waymark, a repair by hand) set a step's attempts to 7: the next
    append folds on from the stored row."""
    start(ledger, "s1")
    complete(ledger, "s1")
    (text,) = raw(ledger.url, "SELECT state FROM waymark_steps WHERE step_id = 's1'")[0]
    changed = text.replace('"attempts":1', '"attempts":7')
    assert changed != text
    raw(ledger.url, "UPDATE waymark_steps SET state = :s WHERE step_id = 's1'", s=changed)
    ledger.record(PLAN, "step_rerun_requested", step_id="s1", by="tester")
    (text,) = raw(ledger.url, "SELECT state FROM waymark_steps WHERE step_id = 's1'")[0]
    assert '"attempts":7' in text


def test_a_close_by_another_ledger_stops_new_work(ledger: Ledger, other: Ledger) -> None:
    from prefect_waymark import PlanClosedError

    start(ledger, "s1")  # A found the plan open
    complete(ledger, "s1")
    other.close_plan(PLAN, lambda states: {"by": "bob", "reason": "done"})
    with pytest.raises(PlanClosedError):
        start(ledger, "s2")
    assert "s2" not in ledger.step_states(PLAN)


def test_a_rename_stops_new_work_under_the_old_id(ledger: Ledger) -> None:
    start(ledger, "s1")
    complete(ledger, "s1")
    ledger.rename_plan(PLAN, "renamed-plan", by="tester")
    with pytest.raises(LedgerError, match="renamed"):
        start(ledger, "s2")
    assert "s2" not in ledger.step_states(PLAN)
    ledger.record("renamed-plan", "step_started", step_id="s2", branch="main", run_id="run-1")
    _same_as_rebuild(ledger, "renamed-plan")


def test_a_refused_append_leaves_nothing_behind(ledger: Ledger) -> None:
    start(ledger, "s1")
    with pytest.raises(LedgerError):
        start(ledger, "s1", run="run-2")  # in_progress already: refused, rolled back
    complete(ledger, "s1")
    _same_as_rebuild(ledger)
    assert [e.kind for e in ledger.events(PLAN)] == ["step_started", "step_completed"]


def test_a_ledger_closed_and_used_again_reads_what_others_wrote_meanwhile(
    ledger: Ledger, other: Ledger
) -> None:
    start(ledger, "s1")
    complete(ledger, "s1")
    ledger.close()
    other.record(PLAN, "step_rerun_requested", step_id="s1", by="bob")
    start(other, "s1", run="run-2")
    complete(other, "s1", run="run-2")
    ledger.record(PLAN, "step_rerun_requested", step_id="s1", by="alice")
    _same_as_rebuild(ledger)
    assert ledger.step_states(PLAN)["s1"].generation == 2
