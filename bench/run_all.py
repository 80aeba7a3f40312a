"""Every benchmark, then one table of the goals they measure (``make bench``).

Run: ``.venv/bin/python bench/run_all.py [--only ledger,resume,...] [--quick] [--json]``

Runs each bench of this folder as its own process with ``--json``, one after the other, its
output shown as it comes; takes the last line of each (one JSON object of figures) and prints,
at the end, every goal with the figure measured in this run and whether it is met
(:data:`GOALS`). A bench that fails or prints no figures is named at the end, its goals show
"not measured", and the exit code is 1; goals not met do not change the exit code (a benchmark
reports, it does not judge the machine).

``--quick`` hands each bench small arguments (fewer repeats, smaller sizes): a check that they
all run, not figures to keep (the goal table then says so). ``--json``: the last line of stdout
is one JSON object: ``{"benches": {name: figures}, "goals": [...], "failed": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BENCHES", "GOALS", "Goal", "evaluate", "goal_table", "last_json"]

HERE = Path(__file__).resolve().parent

#: name -> (script, a full run's arguments, a ``--quick`` run's); in ``make bench``'s order.
BENCHES: dict[str, tuple[str, list[str], list[str]]] = {
    "ledger": ("bench_ledger.py", [], ["--events", "500", "--repeat", "1", "--runs", "3"]),
    "resume": (
        "bench_resume.py",
        [],
        ["--steps", "20", "--completed", "50", "--repeat", "2", "--fixed-repeat", "2"]
        + ["--whole-repeat", "2"],
    ),
    "http_refs": ("bench_http_refs.py", [], ["--rounds", "2", "--refs", "20"]),
    "scale": (
        "bench_scale.py",
        [],
        ["--sizes", "10,1000", "--repeat", "2", "--history", "2", "--history-runs", "200"],
    ),
    "import": ("bench_import.py", [], ["--mb", "0.2", "--repeat", "1"]),
    "hook": ("bench_hook.py", [], ["--runs", "2"]),
    "checkin": ("bench_checkin.py", [], ["--runs", "2"]),
}


@dataclass(frozen=True)
class Goal:
    """A figure (``key``, printed by ``bench``) and the limit it should stay within."""

    bench: str
    key: str
    op: str  # "<=" or ">="
    limit: float
    what: str
    issue: str

    def met(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit


#: Every goal a bench measures: the nine speed goals (the chain's is two figures, net and raw),
#: then the earlier goals that the same benches still check.
GOALS: tuple[Goal, ...] = (
    Goal("resume", "overhead_ratio_net", "<=", 1.2, "200-step chain / plain Prefect, net", "3, 16"),
    Goal("resume", "overhead_ratio_raw", "<=", 1.2, "200-step chain / plain Prefect, raw", "3, 16"),
    Goal("resume", "whole_process_ratio", "<=", 1.15, "example plan, whole process", "16"),
    Goal("resume", "skip_speedup_vs_prefect", ">=", 15, "resume skip / Prefect's cache", "16"),
    Goal("ledger", "append_ratio_vs_bare_insert", ">=", 0.2, "SQLite appends / bare INSERT", "16"),
    Goal("ledger", "status_json_vs_bare_python", "<=", 5, "`status --json` / bare Python", "16"),
    Goal("scale", "validate_ratio_vs_yaml", "<=", 3, "`validate`, 10,000 steps / yaml.load", "16"),
    Goal("scale", "status_ratio_vs_sqlite", "<=", 3, "`status`, 10,000 steps / sqlite3", "16"),
    Goal("scale", "status_json_ratio_vs_sqlite", "<=", 3, "`status --json` / sqlite3", "16"),
    Goal("scale", "run5_ratio_10k_vs_10", "<=", 1.2, "5-step run, 10,000 / 10 steps", "16"),
    Goal("scale", "history_10k_ratio", "<=", 1.2, "run after 10,000 runs / after one", "32"),
    Goal("scale", "history_marker_kb", "<=", 1024, "marker file after 10,000 runs, KB", "32"),
    Goal("resume", "skip_ms_per_step", "<=", 1.0, "resume skip, ms per completed step", "3"),
    Goal("ledger", "sqlite_step_events_per_s", ">=", 2000, "SQLite step events a second", "2"),
    Goal("ledger", "status_json_seconds", "<=", 0.5, "`status --json`, 10,000 events, s", "2"),
    Goal("http_refs", "refs_concurrent_best_seconds", "<=", 0.3, "100 HTTP refs at 50 ms, s", "4"),
    Goal("hook", "hook_pretooluse_vs_bare_python", "<=", 4, "hook PreToolUse / bare Python", "34"),
)


def last_json(stdout: str) -> dict[str, Any] | None:
    """The JSON object on the last non-empty line of a bench's output, if it is one."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    try:
        got = json.loads(lines[-1])
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def evaluate(benches: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each goal with this run's figure and whether it is met; a goal without a figure says
    why (``missing``: its bench did not run, or ran without printing it)."""
    rows = []
    for goal in GOALS:
        value = benches.get(goal.bench, {}).get(goal.key)
        measured = isinstance(value, (int, float)) and not isinstance(value, bool)
        row: dict[str, Any] = {
            "bench": goal.bench,
            "key": goal.key,
            "what": goal.what,
            "issue": goal.issue,
            "goal": f"{goal.op} {goal.limit:g}",
            "value": value if measured else None,
            "met": goal.met(float(value)) if measured else None,
        }
        if not measured:
            ran = goal.bench in benches
            row["missing"] = f"not in {goal.bench}'s figures" if ran else f"{goal.bench} not run"
        rows.append(row)
    return rows


def _figure(value: float) -> str:
    """Three significant digits (the machines' noise is in the second), thousands grouped."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def goal_table(rows: list[dict[str, Any]], *, quick: bool = False) -> str:
    """The goals as a Markdown table, and how many are met."""
    out = [
        "| goal (issue) | key | this run | goal | met? |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        value = r["missing"] if r["value"] is None else _figure(r["value"])
        met = "-" if r["met"] is None else ("yes" if r["met"] else "**no**")
        out.append(f"| {r['what']} ({r['issue']}) | `{r['key']}` | {value} | {r['goal']} | {met} |")
    measured = [r for r in rows if r["met"] is not None]
    met = sum(1 for r in measured if r["met"])
    out.append("")
    out.append(f"{met} of {len(measured)} measured goals met ({len(rows)} goals in all).")
    if quick:
        out.append("--quick: small arguments, a check that every bench runs; not figures to keep.")
    return "\n".join(out)


def _run(name: str, quick: bool) -> tuple[dict[str, Any] | None, str | None]:
    script, full, small = BENCHES[name]
    cmd = [sys.executable, str(HERE / script), *(small if quick else full), "--json"]
    print(f"\n######## {name}: {' '.join(cmd[1:])}", flush=True)
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    code = proc.wait()
    print(f"######## {name}: exit {code}, {time.perf_counter() - began:.0f} s", flush=True)
    figures = last_json("".join(lines))
    if code != 0:
        return figures, f"{name}: exit code {code}"
    if figures is None:
        return None, f"{name}: no JSON object on its last line"
    return figures, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--only", default=",".join(BENCHES), help="benches to run, comma-separated")
    ap.add_argument("--quick", action="store_true", help="small arguments: a check, not figures")
    ap.add_argument("--json", action="store_true", help="last line: everything as one JSON object")
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        known = ", ".join(BENCHES)
        print(f"run_all: no bench named {', '.join(unknown)} (known: {known})", file=sys.stderr)
        return 2
    benches: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for name in names:
        figures, problem = _run(name, args.quick)
        if figures is not None:
            benches[name] = figures
        if problem is not None:
            failed.append(problem)
    rows = evaluate(benches)
    print("\n######## goals\n")
    print(goal_table(rows, quick=args.quick))
    for problem in failed:
        print(f"FAILED: {problem}")
    if args.json:
        print(json.dumps({"benches": benches, "goals": rows, "failed": failed}, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
