"""Scale benchmark: what ``waymark`` costs as plans grow to 10,000 steps, each figure against its
floor measured side by side in the same run.

Run: ``.venv/bin/python bench/bench_scale.py [--sizes 10,100,1000,10000] [--repeat 5] [--no-run]
[--history 20] [--json]``

* ``validate_ratio_vs_yaml``: ``waymark validate PLAN`` (whole process) / a ``python -c`` process
  loading the same file with ``yaml.load(..., Loader=yaml.CSafeLoader)``. Goal: <= 3x.
* ``status_ratio_vs_sqlite``, ``status_json_ratio_vs_sqlite``: ``waymark status PLAN`` (table) and
  ``--json`` / a stdlib ``sqlite3`` script process printing the same projection rows as JSON.
  Goal: <= 3x each.
* ``status_json_vs_bare_python``: ``waymark status --json`` on 10,000 events / ``python -c pass``.
  Goal: <= 5x.
* ``run5_ratio_10k_vs_10``: a 5-step run of the 10,000-step plan / of a 10-step plan
  (``bench/scale_run.py``; ``--no-run`` leaves it out). Goal: <= 1.2x.
  ``run5_later_ratio_10k_vs_10``: the same of each plan's second run (a later day's; no goal).
* ``run1_history_ratio``: a 1-step run of a 10,000-step plan after ``--history`` (20) earlier runs
  / after one (no goal: a flat history is 1.0x).
* ``history_10k_ratio``: ``waymark run --max-steps 1`` (whole process) after ``--history-runs``
  (10,000) earlier runs, synthesized through the ledger API, / after one: the larger of the
  time and peak-memory ratios (``bench/history_run.py``). Goal: <= 1.2x; ``history_marker_kb``
  (the marker file then): <= 1 MB.

The unsuffixed ratios are at the largest size; ``*_seconds_N`` and ``*_N`` are per size.
Each is the median over interleaved repeats. With ``--json`` the last line of stdout is one
JSON object. The machine has 2 cores and is noisy: read the ratios, not the third digit.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bytecode import compile_package  # beside this file
from scale_reads import measure_reads, status_json_vs_bare_python  # noqa: E402

GOALS = {
    "validate_ratio_vs_yaml": 3.0,
    "status_ratio_vs_sqlite": 3.0,
    "status_json_ratio_vs_sqlite": 3.0,
    "status_json_vs_bare_python": 5.0,
    "run5_ratio_10k_vs_10": 1.2,
    "history_10k_ratio": 1.2,
}


def _run5(sizes: list[int], repeat: int, history: int) -> dict[str, Any]:
    """The 5-step run part (bench/scale_run.py, another module); missing if it cannot run."""
    try:
        from scale_run import measure_run5  # type: ignore[import-not-found]
    except Exception as exc:  # noqa: BLE001 - the module is missing or broken: say so
        return {"run5_missing": f"bench/scale_run.py not usable: {exc!r}"}
    try:
        return dict(measure_run5(sizes, repeat, history))
    except Exception as exc:  # noqa: BLE001 - report the other parts anyway
        traceback.print_exc()
        return {"run5_missing": f"measure_run5 failed: {exc!r}"}


def _history_runs(runs: int, repeat: int) -> dict[str, Any]:
    """The long-history part (bench/history_run.py); missing if it cannot run."""
    try:
        from history_run import measure_history

        return dict(measure_history(runs, repeat))
    except Exception as exc:  # noqa: BLE001 - report the other parts anyway
        traceback.print_exc()
        return {"history_missing": f"measure_history failed: {exc!r}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sizes", default="10,100,1000,10000", help="plan sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved repeats of each command")
    ap.add_argument("--status-events", type=int, default=10_000, help="events for status --json")
    ap.add_argument("--no-run", action="store_true", help="leave out the 5-step run part")
    ap.add_argument(
        "--history", type=int, default=20, help="earlier runs for run1_history_ratio (0: none)"
    )
    ap.add_argument(
        "--history-runs", type=int, default=10_000, help="runs for history_10k_ratio (0: none)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()
    compile_package()  # whole processes load cached bytecode, as Prefect's do
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})

    print(f"== validate and status against plan size, median of {args.repeat} (interleaved) ==")
    result: dict[str, Any] = {"sizes": sizes, "repeat": args.repeat}
    result.update(measure_reads(sizes, args.repeat))
    print(f"\n== waymark status --json on {args.status_events:,} events vs python -c pass ==")
    result.update(status_json_vs_bare_python(args.status_events, args.repeat, log=True))
    if args.no_run:
        result["run5_missing"] = "left out (--no-run)"
    else:
        print("\n== a 5-step run against plan size ==", flush=True)
        result.update(_run5(sizes, args.repeat, args.history))

    if args.history_runs:
        print(f"\n== a run after {args.history_runs:,} runs vs after one ==", flush=True)
        result.update(_history_runs(args.history_runs, max(args.repeat, 3)))

    print("\n== goals ==")
    for key, goal in GOALS.items():
        value = result.get(key)
        if value is None:
            print(f"{key:<30} missing")
            continue
        verdict = "met" if value <= goal else "NOT met"
        print(f"{key:<30} {value:6.2f}x  (goal <= {goal}x: {verdict})")
    if args.json:
        print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
