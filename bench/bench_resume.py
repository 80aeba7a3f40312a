"""Resume benchmark: waymark's overhead on top of Prefect, and what a skipped step costs.

Run: ``.venv/bin/python bench/bench_resume.py [--steps 200] [--completed 1000] [--repeat 5]
[--fixed-repeat 11] [--whole-repeat 5] [--only overhead|resume|fixed|whole] [--json]``

``--json``: the last line of stdout is one JSON object with every figure measured:
``overhead_ratio_net``, ``overhead_ratio_raw``, ``skip_speedup_vs_prefect``,
``whole_process_ratio`` and the absolute seconds they come from.

All parts run against one real local Prefect server (``PREFECT_API_URL`` if set, else a
``prefect server start`` in a temporary ``PREFECT_HOME`` started with
:func:`prefect_waymark.prefect_server.local.ensure_local_server`), in this one process, in the
same run:

1. **Run overhead.** A plan of ``--steps`` no-op ``call:`` steps in a *chain* on one branch
   (step i depends on step i-1, so they run one after another) against a plain Prefect flow of
   the same number of tasks, also a chain (each task called with the previous one's result), with
   persisted results (``persist_result=True``, local storage). waymark adds per step two ledger
   writes (step_started, which takes the branch's hold, and step_completed), the run's guards and
   reading the result back; per run the plan file, the resume checks, marker files and Prefect
   artifacts. Goal: <= 1.2x the plain flow.
2. **Resume cost.** A chain of ``--completed`` completed steps and one pending step: wall time
   of the run that skips the completed ones and runs the last, minus the same for a plan with 10
   completed steps, divided by the difference: the cost of one skipped step. Against Prefect's
   own way to skip work: a flow whose tasks all have a persisted result under a fixed cache key
   (each comes back ``Cached``), measured the same way. Goal: <= 1 ms per skipped step.
3. **Fixed per-run cost.** A 1-step plan run by ``run_plan`` against a plain Prefect flow of one
   task with a persisted result: what waymark costs per run whatever the plan's size (the plan
   file, the resume checks, the ledger's reads, marker files, Prefect artifacts). Two waymark
   sides: a fresh plan each time (its first run: the ledger is created) and the same plan again
   (after a ``waymark rerun`` of its step, as the CLI records it; not timed). Run alone with
   ``--only fixed`` (``--fixed-repeat`` runs per side, default 11).
4. **The example plan, whole process** (``bench/whole_process.py``): ``waymark run`` on a copy
   of ``examples/research_report`` against a plain Prefect flow of the same six tasks, each a
   whole process against the same server. Goal: <= 1.15x wall.

Each figure: median and best of ``--repeat`` runs, interleaved (load from elsewhere hits every
side alike), each started once the server has digested the previous runs' events. Wall times are
given "net": Prefect 3.9 ends every flow run by joining its heartbeat thread, which sleeps in
whole seconds, so raw wall times snap to the next second (0-1 s added to both sides alike; the
raw medians are printed too). CPU is this process's CPU time, which other load disturbs far
less. The machine has 2 cores and is noisy: read the ratios, not the third digit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from bytecode import compile_package  # beside this file

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
    from prefect_waymark.prefect_server.local import ensure_local_server, stop_local_server

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


_HEARTBEAT_JOIN = [0.0]  # seconds spent joining Prefect's flow heartbeat thread, in all


def _count_heartbeat_joins() -> None:
    """Prefect 3.9 joins a flow run's heartbeat thread when the run ends; that thread sleeps in
    whole seconds, so every flow run's wall time is rounded up to a second boundary (0-1 s, for
    both sides alike). Time the join, so the figures can be given without that rounding.
    Installed once per process (``bench/scale_run.py`` calls it too)."""
    original = threading.Thread.join
    if getattr(original, "waymark_timed", False):
        return

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        target = (getattr(self, "_args", None) or (None,))[0]
        if getattr(target, "__name__", "") != "heartbeat_loop":
            return original(self, timeout)
        started = time.perf_counter()
        try:
            return original(self, timeout)
        finally:
            _HEARTBEAT_JOIN[0] += time.perf_counter() - started

    join.waymark_timed = True  # type: ignore[attr-defined]
    threading.Thread.join = join  # type: ignore[method-assign]


class Samples:
    """Repeated runs of one thing: wall seconds without the heartbeat join (``net``), as
    measured (``raw``), and CPU seconds of this process."""

    def __init__(self, label: str, ms: bool = False) -> None:
        self.label = label
        self.ms = ms  # print milliseconds (short runs) instead of seconds
        self.net: list[float] = []
        self.raw: list[float] = []
        self.cpu: list[float] = []

    def measure(self, fn: Callable[[], Any]) -> Any:
        wall, cpu, joined = time.perf_counter(), time.process_time(), _HEARTBEAT_JOIN[0]
        out = fn()
        raw = time.perf_counter() - wall
        self.raw.append(raw)
        self.net.append(raw - (_HEARTBEAT_JOIN[0] - joined))
        self.cpu.append(time.process_time() - cpu)
        return out

    @property
    def median(self) -> float:
        return statistics.median(self.net)

    @property
    def best(self) -> float:
        return min(self.net)

    @property
    def raw_median(self) -> float:
        return statistics.median(self.raw)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    def line(self) -> str:
        if self.ms:
            runs = ", ".join(f"{1000 * v:.0f}" for v in self.net)
            return (
                f"   {self.label:<44} net median {1000 * self.median:4.0f} ms, best "
                f"{1000 * self.best:4.0f} ms (raw median {1000 * self.raw_median:4.0f} ms), "
                f"CPU {1000 * self.cpu_median:4.0f} ms  [net ms: {runs}]"
            )
        runs = ", ".join(f"{v:.2f}" for v in self.net)
        return (
            f"   {self.label:<44} net median {self.median:6.2f} s, best {self.best:6.2f} s "
            f"(raw median {self.raw_median:5.2f} s), CPU {self.cpu_median:5.2f} s  [net: {runs}]"
        )


def _settle(limit: float = 180.0) -> None:
    """Wait until the server has digested the previous runs' events (the count of task runs it
    recorded stops changing): on 2 cores a flow run that starts while the server still writes a
    1,000-task run's events waits for it (up to ~30 s), whichever side it belongs to."""
    import httpx

    url = os.environ["PREFECT_API_URL"].rstrip("/") + "/task_runs/count"
    deadline = time.monotonic() + limit
    last, same = -1, 0
    with httpx.Client(timeout=60) as client:
        while same < 3 and time.monotonic() < deadline:
            count = int(client.post(url, json={}).json())
            same = same + 1 if count == last else 0
            last = count
            time.sleep(0.5)


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


def _plain_single(storage: Path) -> Any:
    from prefect import flow, task

    @task(persist_result=True, result_storage=storage)
    def noop(prev: int) -> int:
        return prev + 1

    @flow(name="bench-plain-single", persist_result=False)
    def plain_single() -> int:
        return int(noop(0))

    return plain_single


# -- part 1 -----------------------------------------------------------------------------------
def run_overhead(root: Path, n: int, repeat: int) -> dict[str, float]:
    from prefect_waymark.flows import run_plan

    plain_chain, _ = _plain_flows(root / "plain-results")
    print(f"\n1. {n} no-op steps, one branch, a chain (step i depends on step i-1)")
    plain_chain(3)  # warm-up: imports, first-time server paths
    run_plan(plan=str(_chain_plan(root / "warm", "warm", 3)))
    plain = Samples(f"plain Prefect flow, {n} tasks, persisted results")
    waymark = Samples(f"waymark run_plan, {n} steps")
    for r in range(repeat):  # alternate the two sides: load from elsewhere hits both
        plan = _chain_plan(root / f"overhead-{r}", f"bench-overhead-{r}", n)
        _settle()
        plain.measure(lambda: plain_chain(n))
        _settle()
        summary = waymark.measure(lambda plan=plan: run_plan(plan=str(plan)))
        assert len(summary["executed_steps"]) == n, summary
    print(plain.line())
    print(waymark.line())
    print(
        f"   per step (median): plain {1000 * plain.median / n:.1f} ms, "
        f"waymark {1000 * waymark.median / n:.1f} ms"
    )
    print(
        f"   ratio waymark / plain: net median {waymark.median / plain.median:.2f}x, "
        f"best {waymark.best / plain.best:.2f}x, raw median "
        f"{waymark.raw_median / plain.raw_median:.2f}x, "
        f"CPU {waymark.cpu_median / plain.cpu_median:.2f}x  (goal <= 1.2x)"
    )
    return {
        "overhead_ratio_net": waymark.median / plain.median,
        "overhead_ratio_raw": waymark.raw_median / plain.raw_median,
        "overhead_ratio_cpu": waymark.cpu_median / plain.cpu_median,
        "overhead_waymark_net_seconds": waymark.median,
        "overhead_plain_net_seconds": plain.median,
        "overhead_waymark_raw_seconds": waymark.raw_median,
        "overhead_plain_raw_seconds": plain.raw_median,
    }


# -- part 2 -----------------------------------------------------------------------------------
def _waymark_resume(root: Path, completed: int) -> Callable[[], None]:
    """Set up a chain of ``completed`` completed steps + 1; return one resume run (which
    skips the completed steps and runs the last one, then asks for a rerun of it)."""
    from prefect_waymark.flows import run_plan
    from prefect_waymark.ledger import SqlLedger, default_ledger_url
    from prefect_waymark.plan.loader import load_plan

    folder = root / f"resume-{completed}"
    plan = _chain_plan(folder, f"bench-resume-{completed}", completed + 1)
    spec = load_plan(plan)
    last = spec.steps[-1].id
    setup = Samples("setup")
    setup.measure(lambda: run_plan(plan=str(plan), max_steps=completed))
    print(f"   (setup: {completed} waymark steps really run in {setup.raw[0]:.1f} s)")
    url = default_ledger_url(folder)

    def resume() -> None:
        summary = run_plan(plan=str(plan))
        assert summary["executed_steps"] == [last], summary
        assert summary["skipped_count"] == completed, summary
        with SqlLedger(url) as led:  # `waymark rerun` of the last step, as the CLI does it
            led.record(spec.plan_id, "step_rerun_requested", step_id=last, branch="main")

    return resume


def _prefect_cached(root: Path, completed: int) -> Callable[[], None]:
    _, plain_cached = _plain_flows(root / f"plain-cached-{completed}")
    setup = Samples("setup")
    setup.measure(lambda: plain_cached(completed, "fresh-setup"))
    print(f"   (setup: {completed} Prefect tasks persisted in {setup.raw[0]:.1f} s)")
    fresh = iter(range(1_000_000))
    return lambda: plain_cached(completed, f"fresh-{next(fresh)}")


def run_resume(root: Path, completed: int, repeat: int, base: int = 10) -> dict[str, float]:
    print(f"\n2. resume: {completed} completed steps + 1 pending (chain), against {base} + 1")
    w_big = Samples(f"waymark resume, {completed} skipped")
    w_small = Samples(f"waymark resume, {base} skipped")
    p_big = Samples(f"Prefect, {completed} tasks Cached")
    p_small = Samples(f"Prefect, {base} tasks Cached")
    runs = {
        "w_big": (w_big, _waymark_resume(root, completed)),
        "w_small": (w_small, _waymark_resume(root, base)),
        "p_big": (p_big, _prefect_cached(root, completed)),
        "p_small": (p_small, _prefect_cached(root, base)),
    }
    _settle()
    for _, fn in runs.values():  # warm-up, not counted
        fn()
    for _ in range(repeat):
        for samples, fn in runs.values():
            _settle()
            samples.measure(fn)
    for samples, _ in runs.values():
        print(samples.line())
    span = completed - base
    wb, ws, pb, ps = w_big, w_small, p_big, p_small
    w_med, w_best = 1000 * (wb.median - ws.median) / span, 1000 * (wb.best - ws.best) / span
    p_med, p_best = 1000 * (pb.median - ps.median) / span, 1000 * (pb.best - ps.best) / span
    w_cpu = 1000 * (wb.cpu_median - ws.cpu_median) / span
    p_cpu = 1000 * (pb.cpu_median - ps.cpu_median) / span
    print(
        f"   per skipped step, waymark: median {w_med:.3f} ms, best {w_best:.3f} ms, "
        f"CPU {w_cpu:.3f} ms  (goal <= 1 ms)"
    )
    print(
        f"   per cached task, Prefect:  median {p_med:.2f} ms, best {p_best:.2f} ms, "
        f"CPU {p_cpu:.2f} ms"
    )
    if w_med > 0 and w_cpu > 0:
        print(
            f"   Prefect cache / waymark skip: {p_med / w_med:.0f}x wall, {p_cpu / w_cpu:.0f}x CPU"
            f"  (goal >= 15x)"
        )
    return {
        "skip_speedup_vs_prefect": p_med / w_med if w_med > 0 else float("inf"),
        "skip_ms_per_step": w_med,
        "prefect_cached_ms_per_task": p_med,
    }


# -- part 3 -----------------------------------------------------------------------------------
def run_fixed(root: Path, repeat: int) -> dict[str, float]:
    from prefect_waymark.flows import run_plan
    from prefect_waymark.ledger import SqlLedger, default_ledger_url

    print("\n3. fixed per-run cost: a 1-step plan against a plain flow of 1 persisted task")
    plain_single = _plain_single(root / "plain-single-results")
    again_plan = _chain_plan(root / "fixed-again", "bench-fixed-again", 1)
    again_url = default_ledger_url(again_plan.parent)

    def rerun() -> None:  # `waymark rerun s0000`, as the CLI records it; not timed
        with SqlLedger(again_url) as led:
            led.record("bench-fixed-again", "step_rerun_requested", step_id="s0000", branch="main")

    fresh = iter(range(1_000_000))

    def run_fresh() -> None:
        i = next(fresh)
        plan = _chain_plan(root / f"fixed-fresh-{i}", f"bench-fixed-fresh-{i}", 1)
        summary = run_plan(plan=str(plan))
        assert summary["executed_steps"] == ["s0000"], summary

    def run_again() -> None:
        summary = run_plan(plan=str(again_plan))
        assert summary["executed_steps"] == ["s0000"], summary

    plain_single()  # warm-up, not counted
    run_fresh()
    run_plan(plan=str(again_plan))
    plain = Samples("plain Prefect flow, 1 task, persisted result", ms=True)
    w_fresh = Samples("waymark run_plan, 1 step, fresh plan", ms=True)
    w_again = Samples("waymark run_plan, 1 step, same plan again", ms=True)
    for _ in range(repeat):  # interleaved: load from elsewhere hits every side alike
        _settle()
        plain.measure(plain_single)
        _settle()
        w_fresh.measure(run_fresh)
        rerun()
        _settle()
        w_again.measure(run_again)
    for samples in (plain, w_fresh, w_again):
        print(samples.line())
    for samples in (w_fresh, w_again):
        print(
            f"   {samples.label.removeprefix('waymark run_plan, 1 step, ')} / plain: "
            f"net median {samples.median / plain.median:.2f}x "
            f"(+{1000 * (samples.median - plain.median):.0f} ms), "
            f"best {samples.best / plain.best:.2f}x "
            f"(+{1000 * (samples.best - plain.best):.0f} ms), "
            f"CPU {samples.cpu_median / plain.cpu_median:.2f}x "
            f"(+{1000 * (samples.cpu_median - plain.cpu_median):.0f} ms)"
        )
    return {
        "fixed_ratio_fresh": w_fresh.median / plain.median,
        "fixed_ratio_again": w_again.median / plain.median,
        "fixed_extra_seconds_again": w_again.median - plain.median,
        "fixed_plain_seconds": plain.median,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of part 1")
    parser.add_argument("--completed", type=int, default=1000, help="completed steps of part 2")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement")
    parser.add_argument("--fixed-repeat", type=int, default=11, help="runs per side of part 3")
    parser.add_argument("--whole-repeat", type=int, default=5, help="runs per side of part 4")
    parser.add_argument("--only", choices=["overhead", "resume", "fixed", "whole"], default=None)
    parser.add_argument("--json", action="store_true", help="last line: the figures as JSON")
    args = parser.parse_args()
    compile_package()  # whole processes load cached bytecode, as Prefect's do
    import prefect_waymark

    print(f"prefect_waymark: {prefect_waymark.__file__}")
    stop = _server()
    _count_heartbeat_joins()
    root = Path(tempfile.mkdtemp(prefix="waymark-bench-resume-"))
    try:
        figures: dict[str, float] = {}
        if args.only in (None, "overhead"):
            figures |= run_overhead(root, args.steps, args.repeat)
        if args.only in (None, "resume"):
            figures |= run_resume(root, args.completed, args.repeat)
        if args.only in (None, "fixed"):
            figures |= run_fixed(root, args.fixed_repeat)
        if args.only in (None, "whole"):
            from whole_process import run_whole  # beside this file

            figures |= run_whole(root, args.whole_repeat)
        if args.json:
            print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        stop()


if __name__ == "__main__":
    sys.exit(main())
