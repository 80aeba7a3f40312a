"""Resume benchmark: waymark's overhead on top of Prefect, and what a skipped step costs.

Run: ``.venv/bin/python bench/bench_resume.py [--steps 200] [--completed 1000] [--repeat 3]``

Both parts run against one real local Prefect server (``PREFECT_API_URL`` if set, else a
``prefect server start`` in a temporary ``PREFECT_HOME`` started with
:func:`prefect_waymark.local_server.ensure_local_server`), in this one process, in the same run:

1. **Run overhead.** A plan of ``--steps`` no-op ``call:`` steps in a *chain* on one branch
   (step i depends on step i-1, so they run one after another) against a plain Prefect flow of
   the same number of tasks, also a chain (each task gets the previous one's result), with
   persisted results (``persist_result=True``, local storage). waymark adds per step: the ledger
   writes (step_started with the branch's hold, step_completed), the step's own task options and
   cache key, the run's guards, marker files and Prefect artifacts. Goal: <= 1.2x the plain flow.
2. **Resume cost.** A chain of ``--completed`` completed steps and one pending step: wall time
   of the run that skips the completed ones and runs the last, minus the same for a plan with 10
   completed steps, divided by the difference: the cost of one skipped step. Against Prefect's
   own way to skip work: a flow whose tasks all have a persisted result under a fixed cache key
   (each comes back ``Cached``), measured the same way. Goal: <= 1 ms per skipped step.

Medians of ``--repeat`` runs, alternating the two sides. The machine has 2 cores and is noisy:
read the ratios, not the third digit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

# Both sides log at the same level; per-task INFO lines would dominate a no-op step's cost.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

NOOP_MODULE = "def step(ctx):\n    return len(ctx.upstream)\n"


def _server() -> Callable[[], None]:
    """Point this process at a running Prefect server; returns how to stop what we started."""
    if os.environ.get("PREFECT_API_URL"):
        print(f"Prefect server: {os.environ['PREFECT_API_URL']} (PREFECT_API_URL)")
        return lambda: None
    home = Path(tempfile.mkdtemp(prefix="waymark-bench-prefect-"))
    os.environ["PREFECT_HOME"] = str(home)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect_waymark.local_server import ensure_local_server, stop_local_server

    started = time.perf_counter()
    info = ensure_local_server()
    os.environ["PREFECT_API_URL"] = info.api_url
    print(f"Prefect server: {info.api_url} (started in {time.perf_counter() - started:.1f} s)")

    def stop() -> None:
        stop_local_server()
        shutil.rmtree(home, ignore_errors=True)

    return stop


def _chain_plan(folder: Path, plan_id: str, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_noop.py").write_text(NOOP_MODULE)
    steps = [
        {
            "id": f"s{i:04d}",
            "call": "bench_noop:step",
            **({"depends_on": [f"s{i - 1:04d}"]} if i else {}),
        }
        for i in range(n)
    ]
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan_id": plan_id, "steps": steps}, sort_keys=False))
    return path


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


# -- the plain Prefect side -----------------------------------------------------------------
def _plain_flows(storage: Path) -> tuple[Any, Any]:
    from prefect import flow, task

    @task(persist_result=True, result_storage=storage)
    def noop(prev: int) -> int:
        return prev + 1

    @flow(name="bench-plain-chain", persist_result=False)
    def plain_chain(n: int) -> int:
        value = 0
        for _ in range(n):
            value = noop(value)
        return value

    @task(persist_result=True, result_storage=storage)
    def keyed(i: int, prev: int) -> int:
        return prev + 1

    @flow(name="bench-plain-cached", persist_result=False)
    def plain_cached(n: int, fresh_key: str) -> int:
        # Tasks 0..n-1 have fixed keys (Cached after the first run); the last one a fresh key.
        value = 0
        for i in range(n):
            value = keyed.with_options(cache_key_fn=lambda *_a, i=i: f"bench-k{n}-{i}")(i, value)
        return int(keyed.with_options(cache_key_fn=lambda *_a: fresh_key)(n, value))

    return plain_chain, plain_cached


# -- part 1 -----------------------------------------------------------------------------------
def run_overhead(root: Path, n: int, repeat: int) -> None:
    from prefect_waymark.flows import run_plan

    plain_chain, _ = _plain_flows(root / "plain-results")
    print(f"\n1. {n} no-op steps, one branch, a chain (step i depends on step i-1)")
    # Warm-up: imports, first-time server paths.
    plain_chain(3)
    run_plan(plan=str(_chain_plan(root / "warm", "warm", 3)))
    waymark_times: list[float] = []
    plain_times: list[float] = []
    for r in range(repeat):
        plan = _chain_plan(root / f"overhead-{r}", f"bench-overhead-{r}", n)
        plain_times.append(_timed(lambda: plain_chain(n)))
        started = time.perf_counter()
        summary = run_plan(plan=str(plan))
        waymark_times.append(time.perf_counter() - started)
        assert len(summary["executed_steps"]) == n, summary
    w, p = statistics.median(waymark_times), statistics.median(plain_times)
    print(f"   plain Prefect flow, {n} tasks, persisted results: {p:6.2f} s  ({_fmt(plain_times)})")
    print(
        f"   waymark run_plan, {n} steps:                      {w:6.2f} s  ({_fmt(waymark_times)})"
    )
    print(f"   per step: plain {1000 * p / n:.1f} ms, waymark {1000 * w / n:.1f} ms")
    print(f"   ratio waymark / plain: {w / p:.2f}x  (goal <= 1.2x)")


# -- part 2 -----------------------------------------------------------------------------------
def _waymark_resume_times(root: Path, completed: int, repeat: int) -> list[float]:
    """Wall time of runs that skip ``completed`` steps and execute the last one."""
    from prefect_waymark.flows import run_plan
    from prefect_waymark.ledger import SqlLedger, default_ledger_url
    from prefect_waymark.plan_loader import load_plan

    folder = root / f"resume-{completed}"
    plan = _chain_plan(folder, f"bench-resume-{completed}", completed + 1)
    spec = load_plan(plan)
    last = spec.steps[-1].id
    setup = _timed(lambda: run_plan(plan=str(plan), max_steps=completed))
    print(f"   (setup: {completed} steps really run in {setup:.1f} s)")
    times = []
    url = default_ledger_url(folder)
    for r in range(repeat):
        if r:
            with SqlLedger(url) as led:  # `waymark rerun` of the last step, as the CLI does it
                led.record(spec.plan_id, "step_rerun_requested", step_id=last, branch="main")
        started = time.perf_counter()
        summary = run_plan(plan=str(plan))
        times.append(time.perf_counter() - started)
        assert summary["executed_steps"] == [last], summary
        assert len(summary["skipped_steps"]) == completed, summary
    return times


def _prefect_cached_times(root: Path, completed: int, repeat: int) -> list[float]:
    _, plain_cached = _plain_flows(root / f"plain-cached-{completed}")
    setup = _timed(lambda: plain_cached(completed, "fresh-setup"))
    print(f"   (setup: {completed} Prefect tasks persisted in {setup:.1f} s)")
    return [_timed(lambda r=r: plain_cached(completed, f"fresh-{r}")) for r in range(repeat)]


def run_resume(root: Path, completed: int, repeat: int, base: int = 10) -> None:
    print(f"\n2. resume: {completed} completed steps + 1 pending (chain), against {base} + 1")
    w_big = _waymark_resume_times(root, completed, repeat)
    w_small = _waymark_resume_times(root, base, repeat)
    p_big = _prefect_cached_times(root, completed, repeat)
    p_small = _prefect_cached_times(root, base, repeat)
    wb, ws, pb, ps = (statistics.median(x) for x in (w_big, w_small, p_big, p_small))
    w_per = 1000 * (wb - ws) / (completed - base)
    p_per = 1000 * (pb - ps) / (completed - base)
    print(f"   waymark resume, {completed} skipped: {wb:6.2f} s  (runs: {_fmt(w_big)})")
    print(f"   waymark resume, {base} skipped:   {ws:6.2f} s  (runs: {_fmt(w_small)})")
    print(f"   Prefect cached, {completed} tasks:   {pb:6.2f} s  (runs: {_fmt(p_big)})")
    print(f"   Prefect cached, {base} tasks:     {ps:6.2f} s  (runs: {_fmt(p_small)})")
    print(
        f"   per skipped step: waymark {w_per:.3f} ms, Prefect cache {p_per:.2f} ms (goal <= 1 ms)"
    )
    if w_per > 0:
        print(f"   ratio Prefect cache / waymark skip: {p_per / w_per:.0f}x")


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of part 1")
    parser.add_argument("--completed", type=int, default=1000, help="completed steps of part 2")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement")
    parser.add_argument("--only", choices=["overhead", "resume"], default=None)
    args = parser.parse_args()
    stop = _server()
    root = Path(tempfile.mkdtemp(prefix="waymark-bench-resume-"))
    try:
        if args.only in (None, "overhead"):
            run_overhead(root, args.steps, args.repeat)
        if args.only in (None, "resume"):
            run_resume(root, args.completed, args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        stop()


if __name__ == "__main__":
    sys.exit(main())
