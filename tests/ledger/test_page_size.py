"""A SQLite ledger file is created with 2 KiB pages (``connection.PAGE_SIZE``: fewer bytes per
append's commit); a file created with SQLite's default 4 KiB pages (every
ledger before this version) keeps them and is read and written as before."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from prefect_waymark.ledger import SqlLedger, connection


def _pragma(db: Path, name: str) -> object:
    with closing(sqlite3.connect(db)) as raw:
        return raw.execute(f"PRAGMA {name}").fetchone()[0]


def _steps(led: SqlLedger, plan: str, ids: list[str]) -> None:
    for sid in ids:
        led.record(plan, "step_started", step_id=sid, branch="main", run_id="r1")
        led.record(plan, "step_completed", step_id=sid, branch="main", run_id="r1", cached=False)


def test_a_new_ledger_file_has_the_ledger_page_size(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    led = SqlLedger(f"sqlite:///{db}")
    try:
        _steps(led, "p", ["a"])
    finally:
        led.close()
    assert connection.PAGE_SIZE == 2048
    assert _pragma(db, "page_size") == 2048
    assert _pragma(db, "journal_mode") == "wal"


def test_a_ledger_made_with_4k_pages_keeps_them_and_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    url = f"sqlite:///{db}"
    with monkeypatch.context() as m:  # what every version before this one created
        m.setattr(connection, "PAGE_SIZE", 4096)
        old = SqlLedger(url)
        try:
            _steps(old, "p", ["a", "b"])
            old.record("p", "step_started", step_id="c", branch="main", run_id="r1")
        finally:
            old.close()
    assert _pragma(db, "page_size") == 4096

    led = SqlLedger(url)  # today's connections
    try:
        states = led.step_states("p")
        assert {k: v.status for k, v in states.items()} == {
            "a": "completed",
            "b": "completed",
            "c": "in_progress",
        }
        assert led.rebuild("p") == states  # the projection is what its events fold to
    finally:
        led.close()
    led = SqlLedger(url)
    try:
        led.record("p", "step_completed", step_id="c", branch="main", run_id="r1", cached=False)
        _steps(led, "p", ["d"])
        assert [e.step_id for e in led.events("p") if e.kind == "step_completed"] == list("abcd")
    finally:
        led.close()
    assert _pragma(db, "page_size") == 4096  # an existing file is never converted
    assert _pragma(db, "integrity_check") == "ok"


def test_the_wal_is_checkpointed_after_the_same_bytes_whatever_the_page_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite counts its checkpoint threshold in pages: 1000 of 2 KiB pages would checkpoint
    # (fsync) twice as often as the 4 KiB files before (measured: inside a big plan's run).
    with monkeypatch.context() as m:
        m.setattr(connection, "PAGE_SIZE", 4096)
        SqlLedger(f"sqlite:///{tmp_path / 'old.db'}").close()
    for name, pages in (("new.db", 2000), ("old.db", 1000)):
        led = SqlLedger(f"sqlite:///{tmp_path / name}")
        try:
            with led._read() as conn:
                assert conn.execute_raw("PRAGMA wal_autocheckpoint").scalar_one() == pages
                size = conn.execute_raw("PRAGMA page_size").scalar_one()
            assert pages * size == connection.CHECKPOINT_BYTES
        finally:
            led.close()
