"""Part 4 of ``bench_resume.py``: the example plan, whole process, against plain Prefect.

``waymark run plan.yaml`` on a fresh copy of ``examples/research_report`` (six steps: four
commands, two ``call:`` functions; its figure check's fail-once flag set beforehand, so each run
completes the plan) against ``python plain_flow.py``: a plain Prefect flow with the same six
tasks, persisted results, the same commands and the same file work, the two collection tasks
submitted side by side as waymark runs its two branches. Both are whole processes (Python
start-up, imports, the flow run) against the same Prefect server, interleaved, a fresh folder
each time. Wall time, and the process's CPU time (user + sys of the child).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "research_report"
WAYMARK = str(Path(sys.executable).parent / "waymark")

PLAIN_FLOW = """
import json, os, pathlib, subprocess, sys
from prefect import flow, task

STORE = pathlib.Path(".plain-results").resolve()  # a path: local storage, as waymark's


def sh(cmd):
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stdout + done.stderr)
    return {"returncode": 0, "stdout": done.stdout[-2000:]}


@task(persist_result=True, result_storage=STORE)
def collect(which):
    return sh(f"python steps/collect.py {which}")


@task(persist_result=True, result_storage=STORE)
def analyse(_sources, _market):
    sources = json.loads(pathlib.Path("data/sources.json").read_text())
    market = json.loads(pathlib.Path("data/market.json").read_text())
    growth = round(100 * (market[1]["revenue"] / market[0]["revenue"] - 1), 1)
    result = {"sources": len(sources), "words": sum(s["words"] for s in sources),
              "growth_pct": growth}
    pathlib.Path("data/analysis.json").write_text(json.dumps(result, indent=2))
    return result


@task(persist_result=True, result_storage=STORE)
def check(_analysis):
    return sh("python steps/check_figures.py")


@task(persist_result=True, result_storage=STORE)
def draft(analysis, _check):
    text = (f"# Q4 research report\\n\\nRevenue grew {analysis['growth_pct']}% quarter on "
            f"quarter.\\nBased on {analysis['sources']} sources ({analysis['words']} words).\\n")
    out = pathlib.Path("report/draft.md")
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    return str(out)


@task(persist_result=True, result_storage=STORE)
def publish(_draft):
    return sh("python steps/publish.py")


@flow(name="plain-research-report")
def report():
    sources, market = collect.submit("sources"), collect.submit("market")
    analysis = analyse(sources.result(), market.result())
    publish(draft(analysis, check(analysis)))


if __name__ == "__main__":
    os.environ.setdefault("WAYMARK_RUN_ID", "plain")
    report()
"""


def _fresh(root: Path, name: str) -> Path:
    folder = root / name
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".waymark", "__pycache__"))
    (folder / ".demo-failed-once").write_text("set by the benchmark: the check passes\n")
    (folder / "plain_flow.py").write_text(PLAIN_FLOW)
    return folder


def timed_child(
    cmd: list[str],
    cwd: Path | None = None,
    *,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys) of one child process, given ``stdin``; it must exit 0.
    ``env``: this process's environment unless given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=cwd, input=stdin, capture_output=True, env=dict(os.environ) if env is None else env
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace")[-3000:]
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{err}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run_whole(root: Path, repeat: int) -> dict[str, float]:
    """Interleaved whole-process runs of both sides; medians and their ratio."""
    print("\n4. the example plan (6 steps), whole process: `waymark run` against a plain flow")
    sides: dict[str, list[tuple[float, float]]] = {"plain": [], "waymark": []}
    commands = {
        "plain": [sys.executable, "plain_flow.py"],
        "waymark": [WAYMARK, "run", "plan.yaml"],
    }
    for i in range(repeat + 1):  # the first round warms the server and the file cache
        for side, cmd in commands.items():
            folder = _fresh(root, f"whole-{side}-{i}")
            took = timed_child(cmd, folder)
            if side == "waymark":
                assert (folder / "published" / "report.md").exists(), "the plan did not finish"
            if i:
                sides[side].append(took)
    med = {s: statistics.median(w for w, _ in v) for s, v in sides.items()}
    cpu = {s: statistics.median(c for _, c in v) for s, v in sides.items()}
    for side in commands:
        walls = " ".join(f"{w:.2f}" for w, _ in sides[side])
        print(f"   {side:<8} wall median {med[side]:.2f} s, CPU {cpu[side]:.2f} s  [{walls}]")
    ratio = med["waymark"] / med["plain"]
    print(
        f"   ratio waymark / plain: wall {ratio:.2f}x, CPU {cpu['waymark'] / cpu['plain']:.2f}x"
        f"  (goal <= 1.15x wall: {'met' if ratio <= 1.15 else 'NOT met'})"
    )
    return {
        "whole_process_ratio": ratio,
        "whole_process_cpu_ratio": cpu["waymark"] / cpu["plain"],
        "whole_process_waymark_seconds": med["waymark"],
        "whole_process_plain_seconds": med["plain"],
    }
