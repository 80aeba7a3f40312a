"""A 5-step run against plan size: ``run_plan(plan=..., max_steps=5)`` on a plan of N steps.

What ``waymark run --max-steps 5`` costs on a multi-week plan that advances a few steps a day,
against the same 5-step run on a 10-step plan (goal: <= 1.2x at 10,000 steps).

Each repeat runs, for every size in turn (interleaved: load from elsewhere hits every size
alike), a *fresh* plan (its own folder and ledger, so its first run) of N no-op ``call:`` steps
and times ``run_plan(plan=<file>, max_steps=5)`` in this process, which ran the same flow before
(imports and Prefect's first-time paths are not counted). Each plan file is written, and
validated once by ``waymark validate`` in another process (as the plan's earlier days did),
before the clock starts; the run parses and validates it again, as every process does. The
plan: a chain (step i depends on step i-1), every fifth step on a second branch ``docs``, a
milestone per hundred steps, a title and an acceptance line on each (about 140 bytes a step of
YAML). The 5 steps that run are the first five of the chain on both sizes: the work of the steps
is the same, what differs is what the run does with the rest of the plan (load it, hash it,
order it, render its views).

Right after, the same plans run again, steps 6-10 (``run5_later_*``): a later day's run, whose
ledger already holds the first run. ``--history H`` adds a 1-step run of a 10,000-step plan after
H earlier runs against the same run of another 10,000-step plan after one (``run1_history_*``;
10,000 steps whatever ``--sizes`` says):
what a plan's history costs each new run (a run's cost should not grow with the days behind it).

Wall times are "net" as in ``bench_resume.py``: Prefect 3.9 ends every flow run by joining its
heartbeat thread, which sleeps in whole seconds; the time spent in that join is left out (the
raw medians are returned too). Against a running Prefect server: ``PREFECT_API_URL`` if set,
else a local ``prefect server start`` in a temporary ``PREFECT_HOME``
(:func:`prefect_waymark.prefect_server.local.ensure_local_server`), stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from bench_resume import _HEARTBEAT_JOIN, _count_heartbeat_joins, _settle  # beside this file

__all__ = ["build_run_plan", "measure_run5"]

# Per-task INFO lines would dominate a no-op step's cost (bench_resume.py does the same).
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

NOOP_MODULE = "def step(ctx):\n    return len(ctx.upstream)\n"
RUN_STEPS = 5


def build_run_plan(folder: Path, n_steps: int, plan_id: str) -> Path:
    """A plan of ``n_steps`` no-op ``call:`` steps (see the module doc); returns its file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_noop.py").write_text(NOOP_MODULE)
    steps = []
    for i in range(n_steps):
        step: dict[str, object] = {
            "id": f"s{i:05d}",
            "title": f"Step {i} of the plan",
            "milestone": f"m{i // 100}",
            "call": "bench_noop:step",
            "acceptance": [f"step {i} returns"],
        }
        if i % 5 == 4:
            step["branch"] = "docs"
        if i:
            step["depends_on"] = [f"s{i - 1:05d}"]
        steps.append(step)
    path = folder / "plan.yaml"
    doc = {"plan_id": plan_id, "title": f"{n_steps}-step run bench plan", "steps": steps}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@contextmanager
def _prefect_server() -> Iterator[None]:
    """``PREFECT_API_URL`` if set, else a local server in a temporary home, stopped after."""
    if os.environ.get("PREFECT_API_URL"):
        yield
        return
    home = Path(tempfile.mkdtemp(prefix="waymark-bench-scale-prefect-"))
    saved = {k: os.environ.get(k) for k in ("PREFECT_HOME", "PREFECT_API_URL")}
    os.environ["PREFECT_HOME"] = str(home)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect_waymark.prefect_server.local import ensure_local_server, stop_local_server

    os.environ["PREFECT_API_URL"] = ensure_local_server().api_url
    try:
        yield
    finally:
        stop_local_server()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(net, raw) wall seconds of ``fn()``."""
    joined = _HEARTBEAT_JOIN[0]
    started = time.perf_counter()
    fn()
    raw = time.perf_counter() - started
    return raw - (_HEARTBEAT_JOIN[0] - joined), raw


def measure_run5(sizes: list[int], repeat: int, history: int = 0) -> dict[str, float]:
    """Median seconds of a 5-step run on a fresh plan of each size, ``repeat`` interleaved runs
    per size: ``run5_seconds_<N>`` (net), ``run5_raw_seconds_<N>``, and
    ``run5_ratio_10k_vs_10`` (median over repeats of 10,000 / 10 in the same repeat) when both
    sizes are measured; the same of the plan's second 5-step run, a later day's
    (``run5_later_*``); with ``history``, :func:`_history`'s figures."""
    from prefect_waymark.flows import run_plan

    root = Path(tempfile.mkdtemp(prefix="waymark-bench-scale-run-"))
    net: dict[int, list[float]] = {n: [] for n in sizes}
    raw: dict[int, list[float]] = {n: [] for n in sizes}
    later: dict[int, list[float]] = {n: [] for n in sizes}
    ratios: list[float] = []
    later_ratios: list[float] = []
    out: dict[str, float] = {}
    try:
        _count_heartbeat_joins()
        with _prefect_server():

            def plan_file(n: int, tag: str) -> Path:
                """Written before the clock starts (``yaml.safe_dump`` of 10,000 steps takes
                seconds); validated once in another process, as the plan's earlier days did."""
                plan = build_run_plan(root / f"{tag}-{n}", n, f"bench-run5-{tag}-{n}")
                waymark = str(Path(sys.executable).parent / "waymark")
                subprocess.run([waymark, "validate", str(plan)], check=True, capture_output=True)
                return plan

            def run5(plan: Path, n: int) -> None:
                summary = run_plan(plan=str(plan), max_steps=RUN_STEPS)
                executed = summary["executed_steps"]
                assert len(executed) == min(RUN_STEPS, n), summary

            for n in sorted(set(sizes)):  # warm-up, not counted: imports, first-time paths
                run5(plan_file(n, "warm"), n)
            for r in range(repeat):
                plans = {n: plan_file(n, f"r{r}") for n in sizes}
                for n in sizes:  # the plan's first run
                    _settle()
                    one_net, one_raw = _timed(lambda p=plans[n], n=n: run5(p, n))  # type: ignore[misc]
                    net[n].append(one_net)
                    raw[n].append(one_raw)
                for n in sizes:  # a later day's run: the next 5 steps of the same plan
                    _settle()
                    later[n].append(_timed(lambda p=plans[n], n=n: run5(p, max(n - 5, 0)))[0])  # type: ignore[misc]
                if 10_000 in sizes and 10 in sizes:
                    ratios.append(net[10_000][-1] / net[10][-1])
                    later_ratios.append(later[10_000][-1] / later[10][-1])
            if history:
                out.update(_history(plan_file, history, repeat))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for n in sizes:
        out[f"run5_seconds_{n}"] = round(statistics.median(net[n]), 4)
        out[f"run5_raw_seconds_{n}"] = round(statistics.median(raw[n]), 4)
        out[f"run5_later_seconds_{n}"] = round(statistics.median(later[n]), 4)
    if ratios:
        out["run5_ratio_10k_vs_10"] = round(statistics.median(ratios), 3)
        out["run5_later_ratio_10k_vs_10"] = round(statistics.median(later_ratios), 3)
    return out


def _history(plan_file: Callable[[int, str], Path], history: int, repeat: int) -> dict[str, float]:
    """A 1-step run of a 10,000-step plan after ``history`` earlier runs, against the same run
    of another 10,000-step plan after one: ``run1_history_ratio`` (median of ``repeat``
    interleaved pairs; flat history: 1.0x), the seconds of each side, and the size of the long
    history's ledger file at the end (``ledger.db`` and its WAL)."""
    from prefect_waymark.flows import run_plan

    long_plan, short_plan = plan_file(10_000, "history-long"), plan_file(10_000, "history-short")
    for plan in [long_plan] * history + [short_plan]:  # not timed: the plans' earlier days
        run_plan(plan=str(plan), max_steps=1)
    sides: dict[str, list[float]] = {"long": [], "short": []}
    ratios = []
    for _ in range(repeat):
        for side, plan in (("short", short_plan), ("long", long_plan)):
            _settle()
            sides[side].append(_timed(lambda p=plan: run_plan(plan=str(p), max_steps=1))[0])  # type: ignore[misc]
        ratios.append(sides["long"][-1] / sides["short"][-1])
    ledger_bytes = sum(f.stat().st_size for f in (long_plan.parent / ".waymark").glob("ledger.db*"))
    return {
        "run1_history_runs": history,
        "run1_history_ledger_mb_long": round(ledger_bytes / 2**20, 2),
        "run1_history_ratio": round(statistics.median(ratios), 3),
        "run1_history_seconds_long": round(statistics.median(sides["long"]), 4),
        "run1_history_seconds_short": round(statistics.median(sides["short"]), 4),
    }


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,10000", help="plan sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--history", type=int, default=0, help="earlier runs (run1_history_*)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(json.dumps(measure_run5(sizes, args.repeat, args.history)))
