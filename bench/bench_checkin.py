"""Check-in benchmark: an agent's `waymark next`, `start` and `done`, each a whole process.

Run: ``.venv/bin/python bench/bench_checkin.py [--runs 7] [--json]``

An agent (or a person) working a plan asks for its next step, starts it and checks it in: three
``waymark`` processes per step, each opening the ledger for writing (``next`` reads) and, with a
Prefect server known, publishing the plan page and steps table. Measured on a plan of
independent agent steps (round *i* works step *i*) against the default SQLite ledger and one
local Prefect server (``PREFECT_API_URL`` if set, else started as ``bench_resume.py`` starts
it), interleaved with ``python -c pass`` (median of ``--runs``; wall and CPU of the child).

``--json``: the last line of stdout is one JSON object: ``checkin_{next,start,done}_seconds``,
``checkin_cycle_seconds`` (the three together), ``checkin_cycle_vs_bare_python`` and
``bare_python_seconds``. The machine has 2 cores and is noisy: read the ratios, not the third
digit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_resume import _server as prefect_server  # noqa: E402 - beside this file
from bytecode import compile_package  # noqa: E402 - beside this file
from whole_process import timed_child  # noqa: E402 - beside this file

from tests._support.helpers import write_plan  # noqa: E402

WAYMARK = str(Path(sys.executable).with_name("waymark"))
EXECUTOR = "bench-agent"


def _plan(folder: Path, n: int) -> Path:
    steps = [
        {"id": f"s{i:02d}", "kind": "agent", "owner": EXECUTOR, "instructions": f"Do part {i}."}
        for i in range(n)
    ]
    return write_plan(folder, {"plan_id": "checkin-bench", "steps": steps})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=7, help="check-in cycles (one step each)")
    ap.add_argument("--json", action="store_true", help="last line: the figures as one JSON object")
    args = ap.parse_args()
    compile_package()  # whole processes load cached bytecode, as an installed package does
    stop = prefect_server()
    try:
        with tempfile.TemporaryDirectory(prefix="waymark-bench-checkin-") as tmp:
            plan = str(_plan(Path(tmp), args.runs + 1))
            who = ["--executor", EXECUTOR]
            timed_child([sys.executable, "-c", "pass"])  # warm the file cache, not counted
            timed_child([WAYMARK, "validate", plan])
            walls: dict[str, list[float]] = {k: [] for k in ("bare", "next", "start", "done")}
            cpus: dict[str, list[float]] = {k: [] for k in walls}
            for i in range(args.runs + 1):
                step = f"s{i:02d}"
                commands = {
                    "bare": [sys.executable, "-c", "pass"],
                    "next": [WAYMARK, "next", plan, *who],
                    "start": [WAYMARK, "start", plan, step, *who],
                    "done": [WAYMARK, "done", plan, step, *who],
                }
                for label, cmd in commands.items():
                    wall, cpu = timed_child(cmd)
                    if i:  # the first cycle warms the caches
                        walls[label].append(wall)
                        cpus[label].append(cpu)
    finally:
        stop()
    med = {k: statistics.median(v) for k, v in walls.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    cycle = med["next"] + med["start"] + med["done"]
    print(f"\n== one agent check-in cycle, whole processes, median of {args.runs} ==")
    print(f"{'command':<40}{'wall s':>8}{'CPU s':>8}")
    for label in walls:
        name = "python -c pass" if label == "bare" else f"waymark {label}"
        print(f"{name:<40}{med[label]:>8.3f}{cpu[label]:>8.3f}")
    print(f"next + start + done: {cycle:.3f} s ({cycle / med['bare']:.1f}x bare python start-up)")
    if args.json:
        figures = {
            "checkin_next_seconds": med["next"],
            "checkin_start_seconds": med["start"],
            "checkin_done_seconds": med["done"],
            "checkin_cycle_seconds": cycle,
            "checkin_cycle_cpu_seconds": cpu["next"] + cpu["start"] + cpu["done"],
            "checkin_cycle_vs_bare_python": cycle / med["bare"],
            "bare_python_seconds": med["bare"],
        }
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
