"""Import benchmark: a 2 MB Task Master tasks.json and a 2 MB beads issues.jsonl.

Run: ``.venv/bin/python bench/bench_import.py [--mb 2] [--repeat 3] [--json]``

The sources are generated (``tests/importers/big_sources.py``: tasks with subtasks and
dependencies, a third done; epics with children and ``blocks`` chains). Figures, per format,
the best of ``--repeat`` runs (each into a fresh folder and ledger):

* in-process: ``prepare_import`` (read, parse, plan build, validate, render) and, apart,
  ``record_import`` (the done steps and the ``imported`` event in a fresh SQLite ledger).
* whole process: ``waymark import FILE --from FORMAT -o plan.yaml`` (interpreter start,
  imports, plan file, ledger).

Goal: under 2 s for a 2 MB file, in-process (parse, build and ledger writes).
``--json``: the last line of stdout is one JSON object: ``import_2mb_seconds`` and
``import_2mb_cli_seconds`` (the slower of the two formats) and the per-format figures.
The machine has 2 cores and is noisy: read the figures, not the third digit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prefect_waymark.importers import prepare_import, record_import, write_plan_file  # noqa: E402
from prefect_waymark.ledger import default_ledger_url, open_ledger  # noqa: E402
from tests.importers.big_sources import beads_file, taskmaster_file  # noqa: E402

WAYMARK = str(Path(sys.executable).with_name("waymark"))
GOAL = 2.0
FORMATS: dict[str, tuple[str, Callable[[Path, int], int]]] = {
    "taskmaster": ("tasks.json", taskmaster_file),
    "beads": ("issues.jsonl", beads_file),
}


def in_process(src: Path, fmt: str, folder: Path) -> tuple[float, float, int, int]:
    """Seconds for the plan build and for the ledger writes; steps and completed steps."""
    out = folder / "plan.yaml"
    t0 = time.perf_counter()
    prep = prepare_import(src, fmt, out=out)
    build = time.perf_counter() - t0
    write_plan_file(out, prep.text)
    with open_ledger(default_ledger_url(folder)) as led:
        t0 = time.perf_counter()
        rec = record_import(
            led,
            prep.spec,
            prep.built.done,
            source_format=fmt,
            source_path=str(src),
            sha256=prep.sha256,
        )
        record = time.perf_counter() - t0
    return build, record, len(prep.spec.steps), len(rec.completed)


def whole_process(src: Path, fmt: str, folder: Path) -> float:
    folder.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "WAYMARK_LEDGER_URL"}
    t0 = time.perf_counter()
    res = subprocess.run(
        [WAYMARK, "import", str(src), "--from", fmt, "-o", "plan.yaml"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"waymark import failed ({res.returncode}): {res.stderr.strip()}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--mb", type=float, default=2.0, help="size of each generated source, MB")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side; the best counts")
    ap.add_argument("--json", action="store_true", help="last line: the figures as one JSON object")
    args = ap.parse_args()
    size = int(args.mb * 1024 * 1024)
    figures: dict[str, float] = {}
    tmp = Path(tempfile.mkdtemp(prefix="waymark-bench-import-"))
    try:
        for fmt, (name, generate) in FORMATS.items():
            src = tmp / fmt / name
            src.parent.mkdir(parents=True)
            generate(src, size)
            builds, records, clis = [], [], []
            steps = done = 0
            for i in range(args.repeat):
                build, record, steps, done = in_process(src, fmt, tmp / fmt / f"lib{i}")
                builds.append(build)
                records.append(record)
                clis.append(whole_process(src, fmt, tmp / fmt / f"cli{i}"))
            build, record, cli = min(builds), min(records), min(clis)
            total = build + record
            verdict = "met" if total < GOAL else "NOT met"
            print(
                f"{fmt}: {src.stat().st_size:,} bytes, {steps} steps, {done} done: "
                f"parse+build {build:.3f} s, ledger {record:.3f} s, in-process {total:.3f} s "
                f"(goal < {GOAL:.0f} s: {verdict}); waymark import (whole process) {cli:.3f} s"
            )
            figures |= {
                f"{fmt}_build_seconds": build,
                f"{fmt}_ledger_seconds": record,
                f"{fmt}_seconds": total,
                f"{fmt}_cli_seconds": cli,
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures["import_2mb_seconds"] = max(figures[f"{f}_seconds"] for f in FORMATS)
    figures["import_2mb_cli_seconds"] = max(figures[f"{f}_cli_seconds"] for f in FORMATS)
    if args.json:
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
