"""A run after a long history: ``waymark run PLAN --max-steps 1`` after H earlier runs of the
same plan against the same run after one earlier run (``history_10k_ratio``; goal <= 1.2).

Two plans of 60 no-op ``call:`` steps (``scale_run.build_run_plan``), each in its own folder and
ledger, run their first 20 steps in one real run. The long one then gets H - 1 more runs,
synthesized: the real run's ``run_started``, ``run_finished`` and ``marker_written`` events
appended again through the ledger API (``Ledger.append``) under new run ids — what a plan run
every 15 minutes for weeks records when most runs find nothing to do — and its files are
rebuilt (``waymark marker PLAN --rebuild``). Each repeat then runs each plan once more, in
whole processes (interleaved), and takes their wall time and peak RSS (``wait4``'s
``ru_maxrss``). The ratio is the larger of the two medians' ratios (time, memory), long / short.
``history_marker_kb`` is the long plan's ``EXECUTION_MARKER.json`` after its runs (goal <= 1 MB).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from scale_run import _prefect_server, build_run_plan  # beside this file

__all__ = ["measure_history"]

_RUN_KINDS = ("run_started", "run_finished", "marker_written")
STEPS, FIRST_RUN = 60, 20


def _waymark(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "waymark"), *args]


def _synthesize(folder: Path, plan_id: str, runs: int) -> None:
    """``runs`` more runs like the plan's first, appended through the ledger API."""
    from prefect_waymark.ledger import open_ledger
    from prefect_waymark.ledger.events import ProgressEvent

    with open_ledger(f"sqlite:///{folder / '.waymark' / 'ledger.db'}") as led:
        model = [e for e in led.events(plan_id) if e.kind in _RUN_KINDS]
        text = [(e.kind, json.dumps(e.data), str(e.run_id)) for e in model]
        for _ in range(runs):
            rid = uuid.uuid4().hex
            for kind, data, old in text:
                led.append(
                    ProgressEvent(
                        plan_id=plan_id,
                        kind=kind,
                        run_id=rid,
                        data=json.loads(data.replace(old, rid)),
                    )
                )


def _one_run(plan: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``waymark run PLAN --max-steps 1``, a whole process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        _waymark("run", str(plan), "--max-steps", "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode == 3, err[-2000:]  # stopped after its one step
    return seconds, usage.ru_maxrss / 1024


def measure_history(runs: int = 10_000, repeat: int = 3) -> dict[str, float]:
    """``history_10k_ratio`` and its parts (see the module doc)."""
    root = Path(tempfile.mkdtemp(prefix="waymark-bench-history-"))
    try:
        with _prefect_server():
            plans = {}
            for side in ("short", "long"):
                plan = build_run_plan(root / side, STEPS, f"bench-history-{side}")
                first = subprocess.run(
                    _waymark("run", str(plan), "--max-steps", str(FIRST_RUN)), capture_output=True
                )
                assert first.returncode == 3, first.stderr[-2000:]  # stopped after 20 steps
                plans[side] = plan
            started = time.perf_counter()
            _synthesize(plans["long"].parent, "bench-history-long", runs - 1)
            synth = time.perf_counter() - started
            subprocess.run(
                _waymark("marker", str(plans["long"]), "--rebuild"), check=True, capture_output=True
            )
            sides: dict[str, list[tuple[float, float]]] = {"short": [], "long": []}
            for _ in range(repeat):
                for side in ("short", "long"):
                    sides[side].append(_one_run(plans[side]))
            marker = plans["long"].parent / "EXECUTION_MARKER.json"
            marker_kb = marker.stat().st_size / 1024 if marker.exists() else -1.0
            ledger_mb = (plans["long"].parent / ".waymark" / "ledger.db").stat().st_size / 2**20
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = {
        (side, i): statistics.median(r[i] for r in sides[side]) for side in sides for i in (0, 1)
    }
    time_ratio = med["long", 0] / med["short", 0]
    memory_ratio = med["long", 1] / med["short", 1]
    return {
        "history_runs": runs,
        "history_synthesize_seconds": round(synth, 1),
        "history_seconds_long": round(med["long", 0], 3),
        "history_seconds_short": round(med["short", 0], 3),
        "history_peak_mb_long": round(med["long", 1], 1),
        "history_peak_mb_short": round(med["short", 1], 1),
        "history_time_ratio": round(time_ratio, 3),
        "history_memory_ratio": round(memory_ratio, 3),
        "history_10k_ratio": round(max(time_ratio, memory_ratio), 3),
        "history_marker_kb": round(marker_kb, 1),
        "history_ledger_mb": round(ledger_mb, 1),
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure_history(args.runs, args.repeat)))
