"""The read commands against plan size: ``waymark validate`` and ``waymark status`` (table and
``--json``), each a whole process, against its floor measured in the same run.

* validate: a ``python -c`` process that loads the same file with
  ``yaml.load(..., Loader=yaml.CSafeLoader)``.
* status (table and ``--json``): a stdlib ``sqlite3`` script process that reads the same
  projection rows (``waymark_steps``) and prints them as JSON.
* ``status --json`` start-up (:func:`status_json_vs_bare_python`, the ledger bench's key): a
  200-step plan whose ledger holds ``n_events`` events, against ``python -c pass``.

Plans are chains with a second branch and milestones; their ledgers are written directly through
:class:`~prefect_waymark.ledger.SqlLedger` (``step_started`` / ``step_completed`` for the first
half of the steps, one in progress): no Prefect server. Every figure is the median of
interleaved repeats; ratios are medians over repeats of (command / floor) within one repeat.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from prefect_waymark.ledger import SqlLedger, default_ledger_url
from prefect_waymark.plan.loader import load_plan

__all__ = [
    "build_ledger",
    "build_plan",
    "measure_reads",
    "status_json_vs_bare_python",
]

PY = sys.executable
WAYMARK = str(Path(sys.executable).parent / "waymark")

YAML_FLOOR = (
    "import sys, yaml\n"
    "with open(sys.argv[1], 'rb') as fh:\n"
    "    yaml.load(fh, Loader=yaml.CSafeLoader)\n"
)
# The projection rows of one plan, printed as one JSON document (what status reads, no plan).
SQLITE_FLOOR = (
    "import json, sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1])\n"
    "rows = conn.execute('SELECT step_id, last_seq, state FROM waymark_steps WHERE plan_id = ?',"
    " (sys.argv[2],))\n"
    "print(json.dumps([{'step_id': s, 'last_seq': q, 'state': json.loads(st)}"
    " for s, q, st in rows], indent=2))\n"
)


def build_plan(folder: Path, n_steps: int, plan_id: str = "bench-scale") -> Path:
    """A plan of ``n_steps`` steps: a chain on ``main``, every fifth step on a ``docs`` branch,
    a milestone per hundred steps, acceptance and outputs on some (about 150 bytes a step)."""
    steps = []
    for i in range(n_steps):
        step: dict[str, object] = {
            "id": f"s{i:05d}",
            "title": f"Step {i} of the plan",
            "owner": "bench",
            "milestone": f"m{i // 100}",
            "run": f"echo step {i}",
        }
        if i % 5 == 4:
            step["branch"] = "docs"
        if i:
            step["depends_on"] = [f"s{i - 1:05d}"]
        if i % 10 == 0:
            step["acceptance"] = [f"step {i} output exists"]
            step["outputs"] = [f"out/s{i:05d}.txt"]
        steps.append(step)
    path = folder / "plan.yaml"
    doc = {"plan_id": plan_id, "title": f"{n_steps}-step bench plan", "steps": steps}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def build_ledger(plan: Path, done: int | None = None) -> Path:
    """The plan's default ledger with its first ``done`` steps completed (half by default) and
    the next one in progress; returns the ledger file."""
    spec = load_plan(plan)
    hashes = spec.step_hashes()
    done = len(spec.steps) // 2 if done is None else done
    led = SqlLedger(default_ledger_url(plan.parent))
    try:
        led.record(spec.plan_id, "run_started", run_id="r1", step_hashes=hashes)
        for s in spec.steps[: done + 1]:
            common = {"step_id": s.id, "branch": s.branch, "run_id": "r1"}
            led.record(spec.plan_id, "step_started", def_hash=hashes[s.id], **common)
            if s is not spec.steps[done]:
                led.record(spec.plan_id, "step_completed", def_hash=hashes[s.id], **common)
    finally:
        led.close()
    return plan.parent / ".waymark" / "ledger.db"


_ENV = dict(os.environ, PREFECT_API_URL="http://127.0.0.1:9/api")  # nothing listens there


def wall(cmd: Sequence[str], ok: tuple[int, ...] = (0,)) -> float:
    """One whole process's wall time; refuses a command that fails."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_ENV)
    took = time.perf_counter() - t0
    if proc.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return took


def interleaved(cmds: dict[str, list[str]], repeat: int) -> dict[str, list[float]]:
    """Each command ``repeat`` times, round-robin (load from elsewhere hits all alike)."""
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for cmd in cmds.values():  # warm the page cache and .pyc files; not counted
        wall(cmd)
    for _ in range(repeat):
        for label, cmd in cmds.items():
            times[label].append(wall(cmd))
    return times


def _ratio(times: dict[str, list[float]], top: str, floor: str) -> float:
    return statistics.median(a / b for a, b in zip(times[top], times[floor], strict=True))


def measure_reads(sizes: list[int], repeat: int, log: bool = True) -> dict[str, float]:
    """validate and status (table, --json) at each plan size, against their floors.

    Keys per size N: ``validate_seconds_N``, ``yaml_seconds_N``, ``status_seconds_N``,
    ``status_json_seconds_N``, ``sqlite_seconds_N`` and the three ratios ``..._N``; for the
    largest size (10,000 in the issue) also the unsuffixed ``validate_ratio_vs_yaml``,
    ``status_ratio_vs_sqlite`` and ``status_json_ratio_vs_sqlite``."""
    out: dict[str, float] = {}
    med = statistics.median
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="waymark-scale-") as tmp:
            plan = build_plan(Path(tmp), n)
            db = build_ledger(plan)
            cmds = {
                "yaml": [PY, "-c", YAML_FLOOR, str(plan)],
                "validate": [WAYMARK, "validate", str(plan)],
                "sqlite": [PY, "-c", SQLITE_FLOOR, str(db), "bench-scale"],
                "status": [WAYMARK, "status", str(plan)],
                "status_json": [WAYMARK, "status", str(plan), "--json"],
            }
            t = interleaved(cmds, repeat)
        for label, runs in t.items():
            out[f"{label}_seconds_{n}"] = med(runs)
        out[f"validate_ratio_vs_yaml_{n}"] = _ratio(t, "validate", "yaml")
        out[f"status_ratio_vs_sqlite_{n}"] = _ratio(t, "status", "sqlite")
        out[f"status_json_ratio_vs_sqlite_{n}"] = _ratio(t, "status_json", "sqlite")
        if log:
            print(
                f"{n:>7} steps: validate {med(t['validate']):6.3f} s / yaml {med(t['yaml']):.3f} s"
                f" = {out[f'validate_ratio_vs_yaml_{n}']:.2f}x;  status {med(t['status']):6.3f} s,"
                f" --json {med(t['status_json']):6.3f} s / sqlite3 {med(t['sqlite']):.3f} s"
                f" = {out[f'status_ratio_vs_sqlite_{n}']:.2f}x,"
                f" {out[f'status_json_ratio_vs_sqlite_{n}']:.2f}x",
                flush=True,
            )
    if sizes:
        top = max(sizes)
        for key in (
            "validate_ratio_vs_yaml",
            "status_ratio_vs_sqlite",
            "status_json_ratio_vs_sqlite",
        ):
            out[key] = out[f"{key}_{top}"]
        out["reads_plan_steps"] = top
    return out


def _status_ledger(folder: Path, n_events: int, n_steps: int) -> Path:
    """The ledger ``bench_ledger.py`` times ``status --json`` on (one builder for both)."""
    from bench_ledger import build_ledger as build_status_ledger  # beside this file

    return build_status_ledger(folder, n_events, n_steps)


def status_json_vs_bare_python(
    n_events: int, repeat: int, n_steps: int = 200, log: bool = False
) -> dict[str, float]:
    """``waymark status PLAN --json`` on a ledger of ``n_events`` events (a ``n_steps``-step
    plan) against a bare ``python -c pass``, interleaved; the issue's goal is <= 5x.

    The timed calls are what an agent that polls its plan pays (every call parses and validates
    the plan); ``status_json_full_*`` is the same command with ``--ledger`` given (the ledger
    opened through SQLAlchemy)."""
    with tempfile.TemporaryDirectory(prefix="waymark-status-") as tmp:
        plan = _status_ledger(Path(tmp), n_events, n_steps)
        url = default_ledger_url(plan.parent.resolve())
        cmds = {
            "bare": [PY, "-c", "pass"],
            "status_json": [WAYMARK, "status", str(plan), "--json"],
            "status_json_full": [WAYMARK, "status", str(plan), "--json", "--ledger", url],
        }
        t = interleaved(cmds, repeat)
    out = {
        "status_json_vs_bare_python": _ratio(t, "status_json", "bare"),
        "status_json_seconds": statistics.median(t["status_json"]),
        "status_json_full_vs_bare_python": _ratio(t, "status_json_full", "bare"),
        "status_json_full_seconds": statistics.median(t["status_json_full"]),
        "bare_python_seconds": statistics.median(t["bare"]),
    }
    if log:
        print(
            f"status --json, {n_events} events: {out['status_json_seconds']:.3f} s / bare python "
            f"{out['bare_python_seconds']:.3f} s = {out['status_json_vs_bare_python']:.2f}x "
            f"(with --ledger: {out['status_json_full_seconds']:.3f} s = "
            f"{out['status_json_full_vs_bare_python']:.2f}x)",
            flush=True,
        )
    return out
