"""Ctrl-C (SIGINT), SIGTERM — or SIGHUP (a closed terminal), SIGQUIT, SIGUSR1 — to a real
``waymark run`` during a step: the step's commands stop,
the step is recorded interrupted, and the run still ends on record — ``run_finished``, the
marker event, ``EXECUTION_MARKER.json`` (result ``interrupted``) and the views — before the
process exits by the signal (130 for SIGINT). The next run continues at the interrupted step."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests._support.helpers import run_cli, write_plan
from tests._support.plans import counting_chain
from tests._support.resume_helpers import (
    alive,
    kill_group,
    ledger_events,
    runs_of,
    sqlite_url,
    start_cli,
    wait_for_file,
)

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1]


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_a_signal_mid_step_finishes_the_run_on_record(
    sig: signal.Signals, prefect_server: str, tmp_path: Path
) -> None:
    doc = counting_chain("signals", ["a", "slow", "c"]).to_dict()
    # The slow step starts a child that would run for a minute, then waits for it; its re-run
    # (the second line of slow.count) is quick.
    doc["steps"][1]["run"] = (
        "echo x >> slow.count; if [ $(wc -l < slow.count) -eq 1 ]; then "
        "sleep 60 & echo $! > child.pid; wait; fi"
    )
    plan_path = write_plan(tmp_path, doc)
    log = tmp_path / "runner.log"
    proc = start_cli("run", str(plan_path), cwd=tmp_path, log=log)
    try:
        wait_for_file(tmp_path / "child.pid", proc, log)
        time.sleep(0.5)
        proc.send_signal(sig)  # the runner only, not its process group
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    text = log.read_text(errors="replace")
    assert code in (130, -sig), text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child), "the step's command outlived the interrupted run"

    url = sqlite_url(tmp_path)
    events = ledger_events(url, "signals")
    kinds = [str(e.kind) for e in events]
    assert kinds[-3:] == ["step_interrupted", "run_finished", "marker_written"], kinds
    assert "its command's processes were ended with the run" in events[-3].data["reason"]
    marker = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())
    (entry,) = marker["execution_history"]
    assert entry["result"] == "interrupted"
    assert entry["executed_steps"] == ["a"]
    assert entry["next_start"]["step"] == "slow"
    assert signal.Signals(sig).name in entry["next_start"]["why"]
    for view in ("TASKS.md", "STATE.md", "IMPLEMENTATION_LOG.md"):
        assert (tmp_path / view).exists(), view

    again = run_cli("run", str(plan_path), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [runs_of(tmp_path / f"{s}.count") for s in ("a", "slow", "c")] == [1, 2, 1]
    history = json.loads((tmp_path / "EXECUTION_MARKER.json").read_text())["execution_history"]
    assert [h["result"] for h in history] == ["interrupted", "completed"]
