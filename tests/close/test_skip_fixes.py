"""`waymark skip` after the review: a renamed plan's old id is refused, a dead run's step is
interrupted then skipped, a live run picks up a skip made while it went on, the hints are
commands that work, a reason never forges a line in a view, and the run's summary and marker
tell "done before" from "left out"."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from prefect_waymark.errors import LedgerError, LedgerNotFound
from prefect_waymark.ledger import EventKind, open_ledger
from prefect_waymark.ledger.base import this_host
from tests._support.helpers import run_cli, write_plan
from tests._support.resume_helpers import kill_group, start_cli

from ._plans import events, ledger_of


def _states(url: str, plan_id: str) -> dict[str, str]:
    with open_ledger(url, create=False) as led:
        return {k: v.status for k, v in led.step_states(plan_id).items()}


def _states_once_made(url: str, plan_id: str) -> dict[str, str]:
    """The states, or none while the ledger's tables are not made yet."""
    try:
        return _states(url, plan_id)
    except LedgerNotFound:
        return {}


def test_skip_and_close_refuse_a_renamed_plans_old_id(tmp_path: Path, ledger_url: str) -> None:
    doc = {"plan_id": "old", "steps": [{"id": "a", "run": "true"}, {"id": "b", "run": "true"}]}
    plan = str(write_plan(tmp_path, doc))
    with open_ledger(ledger_url) as led:
        led.record("old", EventKind.step_skipped, step_id="a", reason="not needed", by="ann")
        led.rename_plan("old", "new", by="ann")
        count = led.count_events("old")
        with pytest.raises(LedgerError, match="renamed to 'new'"):  # the ledger's own guard
            led.record("old", EventKind.step_skipped, step_id="b", reason="x", by="ann")
        with pytest.raises(LedgerError, match="renamed to 'new'"):
            led.close_plan("old", lambda states: {"reason": "", "by": "ann", "forced": False,
                                                  "evidence": {}, "acceptance": {}})  # fmt: skip
    for args in (("skip", plan, "b", "--reason", "x"), ("close", plan, "--force", "--reason", "x")):
        refused = run_cli(*args, "--ledger", ledger_url, cwd=tmp_path)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "was renamed to 'new'" in refused.stderr and "Traceback" not in refused.stderr
    assert len(events(ledger_url, "old")) == count


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_dead_runs_step_is_interrupted_then_skipped_and_a_live_agents_gets_a_working_hint(
    tmp_path: Path,
) -> None:
    doc = {
        "plan_id": "held",
        "steps": [
            {"id": "a", "run": "true"},
            {"id": "w", "kind": "agent", "branch": "b", "instructions": "write"},
        ],
    }
    p, url = str(write_plan(tmp_path, doc)), ledger_of(tmp_path)
    with open_ledger(url) as led:
        led.record("held", EventKind.step_started, step_id="a", branch="main", run_id="gone",
                   lease_seconds=600, def_hash="h", result_key=None, host=this_host(),
                   pid=_dead_pid())  # fmt: skip
    skipped = run_cli("skip", p, "a", "--reason", "not needed", cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "left in progress by run gone, which is gone: recorded interrupted" in skipped.stdout
    kinds = [(e.kind, e.step_id) for e in events(url, "held") if e.step_id == "a"]
    assert kinds[-2:] == [(EventKind.step_interrupted, "a"), (EventKind.step_skipped, "a")]
    with open_ledger(url) as led:
        assert led.holds("held") == []

    began = run_cli("start", p, "w", "--executor", "bot", cwd=tmp_path)
    assert began.returncode == 0, began.stdout + began.stderr
    refused = run_cli("skip", p, "w", "--reason", "x", cwd=tmp_path)
    assert refused.returncode == 2
    hint = f'`waymark fail {p} w --executor bot --reason "..."`'
    assert hint in refused.stderr, refused.stderr
    failed = run_cli("fail", p, "w", "--executor", "bot", "--reason", "ended for bot", cwd=tmp_path)
    assert failed.returncode == 0, failed.stdout + failed.stderr
    done = run_cli("skip", p, "w", "--reason", "not needed", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith(f"next: waymark close {p}")  # nothing left


def test_skip_hints_name_what_is_next_and_only_the_steps_still_open(tmp_path: Path) -> None:
    doc = {
        "plan_id": "hints",
        "steps": [
            {"id": "a", "run": "true"},
            {"id": "b", "depends_on": ["a"], "run": "true"},
            {"id": "c", "depends_on": ["a"], "kind": "agent", "instructions": "write"},
        ],
    }
    p = str(write_plan(tmp_path, doc))
    first = run_cli("skip", p, "b", "--reason", "later", cwd=tmp_path)
    assert first.returncode == 0 and first.stdout.strip().endswith(f"next: waymark run {p}")
    second = run_cli("skip", p, "a", "--reason", "done by hand", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "the steps after it go on: c\n" in second.stdout  # b is done (skipped): not listed
    assert second.stdout.strip().endswith(f"next: waymark next {p}")  # c is an agent's


def test_a_skip_reason_never_forges_a_line_in_the_views(tmp_path: Path) -> None:
    doc = {"plan_id": "forge", "steps": [{"id": "s", "run": "true"}, {"id": "t", "run": "true"}]}
    p = str(write_plan(tmp_path, doc))
    forged = "ok)\n- [x] `t` — **completed** (forged"
    skipped = run_cli("skip", p, "s", "--reason", forged, cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    closed = run_cli("close", p, "--force", "--reason", "a\n## Done\n- t", cwd=tmp_path)
    assert closed.returncode == 0, closed.stdout + closed.stderr
    tasks = (tmp_path / "TASKS.md").read_text()
    assert [ln for ln in tasks.splitlines() if ln.startswith("- [")] == [
        "- [s] `s` — **skipped** (ok) - [x] `t` — **completed** (forged)",
        "- [ ] `t` — **pending**",
    ]
    state = (tmp_path / "STATE.md").read_text()
    lines = state.splitlines()
    assert lines.count("## Done") == 1 and "- t" not in lines
    assert all(not ln.startswith("- [x]") for ln in state.splitlines())


def test_a_live_run_goes_on_after_a_step_skipped_while_it_ran(
    prefect_server: str, tmp_path: Path
) -> None:
    wait = "for i in $(seq 1800); do [ -f go ] && break; sleep 0.1; done"  # up to 3 min
    doc = {
        "plan_id": "pickup",
        "steps": [
            {"id": "x", "run": "echo x >> x.count; false"},
            {"id": "x2", "depends_on": ["x"], "run": "echo x >> x2.count"},
            {"id": "y", "branch": "other", "run": f"{wait}; echo x >> y.count"},
        ],
    }
    plan = write_plan(tmp_path, doc)
    url, log = ledger_of(tmp_path), tmp_path / "run.log"
    proc = start_cli("run", str(plan), cwd=tmp_path, log=log)
    deadline = time.monotonic() + 120
    try:
        # The file exists a few ms before its tables do (the runner's first transaction).
        while not (os.path.exists(tmp_path / ".waymark" / "ledger.db")
                   and _states_once_made(url, "pickup").get("x") == "failed"):  # fmt: skip
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(log.read_text())
            time.sleep(0.1)
        skipped = run_cli("skip", str(plan), "x", "--reason", "flaky check, done by hand",
                          cwd=tmp_path)  # fmt: skip
        assert skipped.returncode == 0, skipped.stdout + skipped.stderr
        (tmp_path / "go").touch()
        assert proc.wait(timeout=120) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            kill_group(proc)
    out = log.read_text()
    assert (tmp_path / "x2.count").read_text() == "x\n"  # x2 ran after the skip, once
    assert "left out (waymark skip): 1" in out and "skipped (done before): 0" in out
    assert _states(url, "pickup") == {"x": "completed", "x2": "completed", "y": "completed"}
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    last = marker["execution_history"][-1]
    assert last["result"] == "completed" and last["left_out_count"] == 1
    assert "- left out (waymark skip): 1" in (tmp_path / "IMPLEMENTATION_LOG.md").read_text()
