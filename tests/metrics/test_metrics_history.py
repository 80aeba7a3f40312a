"""The metrics after a long history read what they need, and say what the fold over every event
says: a plan's history with resumes that did work (one re-executes a completed step, one repeats
an applied action), a rerun request, a skip, re-anchors and many runs that found nothing to do —
on SQLite and PostgreSQL. A run's metrics (and ``waymark metrics``) read a bounded number of
``run_started`` events however many runs the plan had."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefect_waymark.ledger import Ledger, open_ledger
from prefect_waymark.ledger.events import EventKind
from prefect_waymark.metrics import compute_metrics
from prefect_waymark.metrics.compute import metric_events
from prefect_waymark.plan.loader import load_plan
from tests._support.helpers import write_plan

PLAN_ID = "metrics-history"
RUN_START = {"flow_run_id": None, "executor": "t", "workdir": ".", "host": "h", "pid": 1,
             "plan_hash": "p", "step_hashes": {"a": "1", "b": "2", "c": "3"},
             "started_from": None, "max_steps": None, "until": None}  # fmt: skip
STARTED = {"def_hash": "d", "result_key": "k", "host": "h", "pid": 1}
DONE = {"def_hash": "d", "result_key": "k", "cached": False, "output_tail": None, "outputs": {}}


def _plan(folder: Path) -> Path:
    steps = [
        {"id": "a", "run": "echo a", "action": "pay", "reads": ["terms"]},
        {"id": "b", "run": "echo b", "depends_on": ["a"], "verify": True},
        {"id": "c", "run": "echo c", "branch": "side"},
    ]
    refs = [{"name": "terms", "kind": "file", "path": "terms.md"}]
    return write_plan(folder, {"plan_id": PLAN_ID, "steps": steps, "state_refs": refs})


def _idle_runs(led: Ledger, first: int, count: int) -> None:
    """``count`` runs that found nothing to do: start, finish, marker."""
    for n in range(first, first + count):
        rid = f"idle-{n}"
        led.record(PLAN_ID, EventKind.run_started, run_id=rid, **RUN_START)
        led.record(PLAN_ID, EventKind.run_finished, run_id=rid, result="completed")
        led.record(PLAN_ID, EventKind.marker_written, run_id=rid, entries=1)


def _step(led: Ledger, kind: EventKind, step: str, run: str, **data: Any) -> None:
    branch = "side" if step == "c" else "main"
    led.record(PLAN_ID, kind, step_id=step, branch=branch, run_id=run, **data)


def _history(led: Ledger, idle: int) -> None:
    terms = [{"name": "terms", "kind": "file", "current": "v1", "result": "same"}]
    led.record(PLAN_ID, EventKind.run_started, run_id="r1", **RUN_START)
    led.record(PLAN_ID, EventKind.reanchor, run_id="r1", point="resume", refs=terms, conflicts=[])
    _step(led, EventKind.step_started, "a", "r1", **STARTED)
    claim = led.claim_action(plan_id=PLAN_ID, step_id="a", action="pay", key="K", run_id="r1")
    led.settle_action("K", outcome="applied", token=claim.record.token, run_id="r1")
    _step(led, EventKind.step_completed, "a", "r1", **DONE)
    _idle_runs(led, 0, idle)
    # A resume that re-executes a (completed, no rerun asked) and claims the applied key again.
    led.record(PLAN_ID, EventKind.run_started, run_id="r2", **RUN_START)
    _step(led, EventKind.step_started, "c", "r2", **STARTED)
    _step(led, EventKind.step_completed, "c", "r2", **DONE)
    led.record(PLAN_ID, EventKind.action_intent, step_id="a", run_id="r2", key="K", action="pay")
    _idle_runs(led, idle, idle)
    _step(led, EventKind.step_rerun_requested, "c", "person", by="me", reason="again")
    led.record(PLAN_ID, EventKind.run_started, run_id="r3", **RUN_START)  # a good resume
    led.record(PLAN_ID, EventKind.reanchor, run_id="r3", point="resume", refs=terms, conflicts=[])
    _step(led, EventKind.step_started, "c", "r3", **STARTED)
    _step(led, EventKind.step_completed, "c", "r3", **DONE)
    _step(led, EventKind.step_started, "b", "r3", **STARTED)
    _step(led, EventKind.step_completed, "b", "r3", **DONE)
    _idle_runs(led, 2 * idle, idle)


@pytest.mark.parametrize("idle", [0, 2, 40])
def test_metrics_after_a_long_history_are_those_of_the_full_fold(
    ledger_url: str, tmp_path: Path, idle: int
) -> None:
    spec = load_plan(_plan(tmp_path))
    with open_ledger(ledger_url) as led:
        _history(led, idle)
        every = led.events(PLAN_ID)
        bounded = compute_metrics(spec, led)
        full = compute_metrics(spec, led, events=every)
        read, runs = metric_events(led, PLAN_ID)
    assert bounded == full
    assert runs == 3 + 3 * idle == sum(1 for e in every if e.kind == EventKind.run_started)
    resume = bounded["resume_success_rate"]
    assert (resume["runs"], resume["resumed"], resume["failed"]) == (runs, runs - 1, 1)
    assert resume["detail"][0]["run_id"] == "r2"
    assert resume["detail"][0]["re_executed"] == [] and resume["detail"][0]["repeated_actions"]
    assert bounded["duplicate_side_effects"]["value"] == 1
    fresh = bounded["ref_freshness"]
    assert (fresh["decisions"], fresh["fresh"]) == (3, 2)  # r2 claimed without a re-read
    # The run_started read: the first run's and those of the runs that did something.
    starts = [e.run_id for e in read if e.kind == EventKind.run_started]
    assert starts == ["r1", "r2", "r3"]
    assert not any(e.kind in (EventKind.run_finished, EventKind.marker_written) for e in read)
    assert all("step_hashes" not in e.data for e in read)


def test_a_long_history_of_idle_runs_reads_as_little_as_a_short_one(tmp_path: Path) -> None:
    spec = load_plan(_plan(tmp_path))
    read: dict[int, Counter[str]] = {}
    for idle in (3, 300):
        with open_ledger(f"sqlite:///{tmp_path / f'{idle}.db'}") as led:
            _history(led, idle)
            events, runs = metric_events(led, PLAN_ID)
            assert compute_metrics(spec, led) == compute_metrics(
                spec, led, events=led.events(PLAN_ID)
            )
        assert runs == 3 + 3 * idle
        read[idle] = Counter(str(e.kind) for e in events)
    assert read[300] == read[3]
