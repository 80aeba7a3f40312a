"""History that stays cheap: a run's record holds counts of what it skipped or left out, the
marker file keeps the newest runs (the ledger all of them), and a run after many runs reads the
same number of markers, run starts and run ends as a run after a few (counted in rows read, not
time); the ledger's bounded reads (``first``, ``last``, ``run_ids``, ``count_events``)."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import default_ledger_url, open_ledger
from prefect_waymark.ledger.event_payloads import skip_counts
from prefect_waymark.ledger.events import EventKind, ProgressEvent
from prefect_waymark.markers.marker_file import MARKER_ENTRIES, MARKER_FILE
from prefect_waymark.markers.plan_page.render import PAGE_RUNS_READ
from prefect_waymark.run.summary import RunSummary
from tests._support.helpers import run_cli, write_plan
from tests._support.inprocess import run_inprocess
from tests._support.plans import counting_chain

_RUN_KINDS = (EventKind.run_started, EventKind.run_finished, EventKind.marker_written)


def _synthesize(folder: Path, plan_id: str, runs: int) -> None:
    """``runs`` more runs like the plan's last one, appended through the ledger API."""
    with open_ledger(default_ledger_url(folder)) as led:
        model = [e for e in led.events(plan_id, kinds=list(_RUN_KINDS))][-3:]
        for _ in range(runs):
            rid = uuid.uuid4().hex
            for e in model:
                data = json.loads(json.dumps(e.data).replace(str(e.run_id), rid))
                led.append(ProgressEvent(plan_id=plan_id, kind=e.kind, run_id=rid, data=data))


def test_a_run_records_counts_not_lists(prefect_server: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, counting_chain("counts", ["a", "b", "c", "d"]))
    assert run_cli("run", str(plan), "--max-steps", "2").returncode == 3  # stopped
    assert run_cli("skip", str(plan), "c", "--reason", "done by hand").returncode == 0
    proc = run_cli("run", str(plan))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped (done before): 2" in proc.stdout and "left out (waymark skip): 1" in proc.stdout
    with open_ledger(default_ledger_url(tmp_path)) as led:
        finished = led.last_event("counts", [EventKind.run_finished])
        marker = led.last_event("counts", [EventKind.marker_written])
    assert finished is not None and marker is not None
    for data in (finished.data, marker.data):
        assert "skipped_steps" not in data and "left_out" not in data
        assert (data["skipped_count"], data["left_out_count"]) == (2, 1)
        assert skip_counts(data) == (2, 1)
    last = json.loads((tmp_path / MARKER_FILE).read_text())["execution_history"][-1]
    assert last["executed_steps"] == ["d"] and last["skipped_count"] == 2
    assert "- left out (waymark skip): 1" in (tmp_path / "IMPLEMENTATION_LOG.md").read_text()


def test_payloads_with_lists_still_read_as_counts() -> None:
    old: dict[str, Any] = {
        "skipped_steps": ["a", "b", "x"],
        "left_out": {"x": "flaky check, done by hand"},
    }
    assert skip_counts(old) == (2, 1)
    assert skip_counts({"skipped_steps": ["a"]}) == (1, 0)
    assert skip_counts({}) == (0, 0)
    summary = RunSummary.model_validate(
        {
            **old,
            "plan_id": "p",
            "run_id": "r",
            "executor": "me",
            "workdir": "/w",
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
            "result": "completed",
        }
    )
    assert (summary.skipped_count, summary.left_out_count) == (2, 1)
    assert "left out (waymark skip): 1" in summary.text()


def test_the_marker_file_keeps_the_newest_runs_and_the_ledger_all(
    prefect_server: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, counting_chain("capped", ["a", "b", "c"]))
    assert run_cli("run", str(plan), "--max-steps", "1").returncode == 3  # stopped
    _synthesize(tmp_path, "capped", MARKER_ENTRIES + 10)
    assert run_cli("marker", str(plan), "--rebuild").returncode == 0
    proc = run_cli("run", str(plan), "--max-steps", "1")  # the capped file passes the check
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert (tmp_path / "b.count").read_text() == "b\n"
    doc = json.loads((tmp_path / MARKER_FILE).read_text())
    entries = doc["execution_history"]
    assert len(entries) == MARKER_ENTRIES and entries[-1]["executed_steps"] == ["b"]
    proc = run_cli("marker", str(plan), "--history", "--json")
    every = json.loads(proc.stdout)["execution_history"]
    assert len(every) == MARKER_ENTRIES + 12  # the first run, the synthesized ones, the last
    assert every[-MARKER_ENTRIES:] == entries
    assert (
        len(run_cli("marker", str(plan), "--history").stdout.split("next start:")) == len(every) + 1
    )
    log = (tmp_path / "IMPLEMENTATION_LOG.md").read_text()
    assert log.count("## Run ") == MARKER_ENTRIES and "--history" in log

    # Hand-edited in the kept window: still refused, nothing runs.
    entries[-1]["executed_steps"] = ["c"]
    (tmp_path / MARKER_FILE).write_text(json.dumps(doc))
    proc = run_cli("run", str(plan))
    assert proc.returncode == 2 and "edited by hand" in proc.stderr
    assert not (tmp_path / "c.count").exists()


def _rows_read(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts, by kind, the event rows the ledger turns into events (every read goes there)."""
    from prefect_waymark.ledger import sql_ledger

    counted: Counter[str] = Counter()
    real = sql_ledger.event_from_row

    def counting(row: Any) -> ProgressEvent:
        ev = real(row)
        counted[str(ev.kind)] += 1
        return ev

    monkeypatch.setattr(sql_ledger, "event_from_row", counting)
    return counted


def test_a_run_after_many_runs_reads_a_bounded_number_of_markers_and_run_ends(
    prefect_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: dict[int, Counter[str]] = {}
    for runs in (3, 300):
        folder = tmp_path / str(runs)
        folder.mkdir()
        plan = write_plan(folder, counting_chain(f"bounded-{runs}", ["a", "b", "c"]))
        run_inprocess(plan, max_steps=1)
        _synthesize(folder, f"bounded-{runs}", runs - 1)
        run_cli("marker", str(plan), "--rebuild")
        with monkeypatch.context() as patch:
            counted = _rows_read(patch)
            summary = run_inprocess(plan, max_steps=1)
        assert summary.executed_steps == ["b"]
        reads[runs] = counted
    many, few = reads[300], reads[3]
    # markers: the file's check reads twice what the file keeps, then what it keeps, the run
    # its last one; run ends: the plan page's newest runs (twice, live and at the end)
    assert many[EventKind.marker_written] <= 2 * MARKER_ENTRIES + MARKER_ENTRIES + 1 + 2
    assert many[EventKind.run_finished] <= 2 * (PAGE_RUNS_READ + 1) + 2
    assert many[EventKind.marker_written] < 300 and many[EventKind.run_finished] < 300
    # run starts: the plan page's newest runs, then its events since the oldest of them (each
    # twice, live and at the end), the metrics' first run and the runs that did work, the last
    # run's and its step hashes' holder
    assert many[EventKind.run_started] <= 4 * (PAGE_RUNS_READ + 1) + 8 < 300
    # every other kind: what a run after 3 runs reads, not a row more
    others = {str(k) for k in _RUN_KINDS}
    assert {k: n for k, n in many.items() if k not in others} == {
        k: n for k, n in few.items() if k not in others
    }


def test_events_last_reads_the_newest_in_order(ledger_url: str) -> None:
    with open_ledger(ledger_url) as led:
        for i in range(7):
            led.record("p", EventKind.drift, run_id=f"r{i}", n=i)
            led.record("p", EventKind.reanchor, run_id=f"r{i}")
        newest = led.events("p", kinds=[EventKind.drift], last=3)
        assert [e.data["n"] for e in newest] == [4, 5, 6]
        assert [e.kind for e in led.events("p", last=2)] == [EventKind.drift, EventKind.reanchor]
        assert len(led.events("p", kinds=[EventKind.drift], last=50)) == 7


def test_bounded_reads_first_run_ids_and_counts(ledger_url: str) -> None:
    with open_ledger(ledger_url) as led:
        for i in range(7):
            led.record("p", EventKind.drift, run_id=f"r{i}", n=i)
            led.record("p", EventKind.reanchor, run_id=f"r{i}")
        led.record("other", EventKind.drift, run_id="r1", n=99)
        oldest = led.events("p", kinds=[EventKind.drift], first=2)
        assert [e.data["n"] for e in oldest] == [0, 1]
        runs = led.events("p", run_ids=["r5", "r1", "r5", "nobody"])
        assert [(e.run_id, e.kind) for e in runs] == [
            ("r1", EventKind.drift),
            ("r1", EventKind.reanchor),
            ("r5", EventKind.drift),
            ("r5", EventKind.reanchor),
        ]
        assert [e.run_id for e in led.events("p", kinds=["drift"], run_ids=["r6", "r2"])] == [
            "r2",
            "r6",
        ]
        assert [e.run_id for e in led.events("p", run_ids=["r6", "r2"], first=1)] == ["r2"]
        assert [e.run_id for e in led.events("p", run_ids=["r6", "r2"], last=3)] == [
            "r2",
            "r6",
            "r6",
        ]
        assert led.events("p", run_ids=[]) == []
        assert len(led.events("p", run_ids=[f"r{i}" for i in range(1200)])) == 14  # in parts
        assert led.count_events("p") == 14
        assert led.count_events("p", kinds=[EventKind.drift]) == 7
        assert led.count_events("p", kinds=["run_started"]) == 0
        with pytest.raises(ValueError, match="first or last"):
            led.events("p", first=1, last=1)
