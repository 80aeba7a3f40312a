"""What a restore carries beyond the rows: the seq references inside event data moved with the
events (a run's boundary range, a review announcement's stops; a pause key kept as it was), and
the branch holds of the steps left in progress, so a checked-in step can be finished after a
restore (plain and ``--keep-identity``), and ``tick`` never claims a renewal that did not happen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect_waymark.ledger import EventKind, open_ledger
from tests._support.helpers import run_cli, write_plan

NO_PREFECT = {"PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there


def cli(*args: str) -> Any:
    return run_cli(*args, env=NO_PREFECT)


def test_seq_references_in_event_data_move_with_the_events(tmp_path: Path, ledger_url: str) -> None:
    plan = write_plan(tmp_path / "proj", {"plan_id": "refs", "steps": [{"id": "a", "run": "x"}]})
    src = f"sqlite:///{tmp_path / 'src.db'}"
    with open_ledger(src) as led:
        led.record("refs", EventKind.run_started, run_id="r1")
        stop = led.record("refs", EventKind.step_needs_review, step_id="a", run_id="r1")
        assert stop.seq == 2
        led.record("refs", EventKind.review_announced, run_id="r1", stops={"a": 2})
        key = "waymark-review-2"
        led.record("refs", EventKind.review_waiting, run_id="r1", pause_key=key, suspended=True)
        bound = {"seq_start": 0, "seq_end": 4, "created": ["x.txt"]}
        led.record("refs", EventKind.run_finished, run_id="r1", result="x", boundary=bound)
        led.record("refs", EventKind.marker_written, run_id="r1", boundary=bound)
    export = tmp_path / "refs.jsonl"
    proc = cli("export", str(plan), "--ledger", src, "-o", str(export))
    assert proc.returncode == 0, proc.stderr

    with open_ledger(ledger_url) as led:  # another plan took seq 1..3 there
        for _ in range(3):
            led.record("other", EventKind.reanchor, run_id="r0")
    proc = cli("restore", str(export), "--ledger", ledger_url)
    assert proc.returncode == 0 and "every seq moved up by 3" in proc.stdout, proc.stderr
    with open_ledger(ledger_url, create=False) as led:
        by_kind = {e.kind: e for e in led.events("refs")}
    assert by_kind[EventKind.step_needs_review].seq == 5
    assert by_kind[EventKind.review_announced].data["stops"] == {"a": 5}
    assert by_kind[EventKind.review_waiting].data["pause_key"] == key  # Prefect's, kept
    for kind in (EventKind.run_finished, EventKind.marker_written):
        moved = by_kind[kind].data["boundary"]
        assert moved == {"seq_start": 3, "seq_end": 7, "created": ["x.txt"]}, kind
    changes = cli("marker", str(plan), "--changes", "--json", "--ledger", ledger_url)
    assert changes.returncode == 0, changes.stderr
    doc = json.loads(changes.stdout)
    assert (doc["seq_start"], doc["seq_end"]) == (3, 7)


def _held_plan(folder: Path) -> Path:
    return write_plan(
        folder,
        {
            "plan_id": "held",
            "steps": [
                {"id": "w1", "kind": "agent", "instructions": "write w1.txt"},
                {"id": "w2", "kind": "agent", "instructions": "then w2", "depends_on": ["w1"]},
            ],
        },
    )


def test_a_step_in_progress_can_be_finished_after_a_restore(tmp_path: Path) -> None:
    plan = _held_plan(tmp_path / "proj")
    started = cli("start", str(plan), "w1", "--executor", "bob")
    assert started.returncode == 0, started.stdout + started.stderr
    export = tmp_path / "held.jsonl"
    assert cli("export", str(plan), "-o", str(export)).returncode == 0
    src = f"sqlite:///{plan.parent / '.waymark' / 'ledger.db'}"
    with open_ledger(src, create=False) as led:
        (source_hold,) = led.holds("held")

    for extra in ([], ["--keep-identity"]):
        url = f"sqlite:///{tmp_path / f'restored{len(extra)}.db'}"
        proc = cli("restore", str(export), "--ledger", url, *extra)
        assert proc.returncode == 0, proc.stderr
        with open_ledger(url, create=False) as led:
            (hold,) = led.holds("held")
        same = ("plan_id", "branch", "step_id", "run_id", "host", "since")
        assert hold.pid == 0  # the step_started event's (a check-in has no process)
        assert {k: getattr(hold, k) for k in same} == {k: getattr(source_hold, k) for k in same}
        assert hold.is_stale()  # its lease counts as run out at the restore
        tick = cli("tick", str(plan), "w1", "--executor", "bob", "--ledger", url)
        assert tick.returncode == 0 and "hold renewed" in tick.stdout, tick.stderr
        with open_ledger(url, create=False) as led:
            assert not led.holds("held")[0].is_stale()  # renewed: a real renewal
        done = cli("done", str(plan), "w1", "--executor", "bob", "--ledger", url)
        assert done.returncode == 0, done.stdout + done.stderr
        with open_ledger(url, create=False) as led:
            assert led.step_states("held")["w1"].status == "completed"
            assert led.holds("held") == []


def test_tick_without_a_hold_says_nothing_was_renewed(tmp_path: Path) -> None:
    plan = _held_plan(tmp_path / "proj")
    assert cli("start", str(plan), "w1", "--executor", "bob").returncode == 0
    db = plan.parent / ".waymark" / "ledger.db"
    import sqlite3

    with sqlite3.connect(db) as conn:  # the hold row lost (as a restore before this fix did)
        conn.execute("DELETE FROM waymark_holds")
    tick = cli("tick", str(plan), "w1", "--executor", "bob")
    assert tick.returncode == 2, tick.stdout + tick.stderr
    assert "hold renewed" not in tick.stdout and "nothing renewed" in tick.stderr
    assert "Traceback" not in tick.stderr


def test_a_restored_closed_plan_keeps_the_ledgers_guard(tmp_path: Path, ledger_url: str) -> None:
    from prefect_waymark.errors import PlanClosedError

    plan = write_plan(tmp_path / "proj", {"plan_id": "shut", "steps": [{"id": "a", "run": "x"}]})
    src = f"sqlite:///{tmp_path / 'src.db'}"
    with open_ledger(src) as led:
        led.record("shut", EventKind.run_started, run_id="r1")
    closed = cli("close", str(plan), "--ledger", src, "--force", "--reason", "done elsewhere")
    assert closed.returncode == 0, closed.stderr
    export = tmp_path / "shut.jsonl"
    assert cli("export", str(plan), "--ledger", src, "-o", str(export)).returncode == 0
    restored = cli("restore", str(export), "--ledger", ledger_url)
    assert restored.returncode == 0, restored.stderr
    with open_ledger(ledger_url) as led:
        try:
            led.record("shut", EventKind.step_started, step_id="a", branch="main", run_id="r2")
        except PlanClosedError:
            pass
        else:
            raise AssertionError("a step started in a restored closed plan")
        assert led.step_states("shut").get("a") is None  # nothing was recorded
